import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Testing

/// MultiPassDriver in process: a real CompressionSession over x264 (one thread, so the figures do
/// not vary from run to run), a frame silo and an analysis storage, fed by a simulated upstream
/// that delivers the whole clip in pass 1 and, after each seek the driver asks for, what the
/// test decides (by default exactly the frames of the range). No corpus needed: the pictures
/// are made here.
@Suite("MultiPassDriver", .serialized)
struct MultiPassDriverTests {
    static let width = 128, height = 96
    static let frameCount = 120
    static let frameDuration = MediaTime(value: 1, timescale: 30)
    static let bitRate = 200_000

    /// A gradient sliding right, with two busy half-seconds (a texture over it), so that pass 1's
    /// ABR spends the bits otherwise than the two-pass allocation wants, in two separate ranges.
    static let pictures: [PixelBuffer] = (0..<frameCount).compactMap { picture(index: $0, noisy: false) }

    /// Other pictures at the same times: a source that does not give the same frames again.
    static let noisePictures: [PixelBuffer] = (0..<frameCount).compactMap { picture(index: $0, noisy: true) }

    static func picture(index: Int, noisy: Bool) -> PixelBuffer? {
        var bytes = [UInt8](repeating: 0, count: width * height * 3 / 2)
        var random = SeededGenerator(seed: UInt64(index) &+ (noisy ? 1000 : 0))
        let busy = (15..<30).contains(index) || (75..<90).contains(index)
        for y in 0..<height {
            for x in 0..<width {
                var value = (x * 2 + y + index * 3) & 0xFF
                if noisy {
                    value = Int(random.next() & 0xFF)
                } else if busy {
                    value ^= Int((x * 7 + y * 13 + index * 5) * (x ^ y) & 0x3F)
                }
                bytes[y * width + x] = UInt8(value)
            }
        }
        let chroma = width / 2 * (height / 2)
        for offset in 0..<(2 * chroma) {
            let x = offset % (width / 2)
            bytes[width * height + offset] = noisy ? UInt8(random.next() & 0xFF) : UInt8(128 + (x + index) % 32)
        }
        return try? Clips.makeI420(bytes, width: width, height: height)
    }

    static func time(_ index: Int) -> MediaTime { frameDuration.multiplied(by: index) }

    // MARK: The harness

    /// One encode: its files, session and driver.
    final class Encode {
        let directory: TemporaryDirectory
        let silo: FrameSilo
        let storage: MultiPassStorage
        let session: CompressionSession
        let driver: MultiPassDriver

        init(maximumPasses: Int, bitRate: Int = MultiPassDriverTests.bitRate, codec: FourCharCode = .h264) throws {
            directory = try TemporaryDirectory("driver")
            silo = try FrameSilo(directory: directory.path)
            storage = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid)
            let feed = FrameSiloFeed(silo: silo)
            let backend: any EncoderBackendFactory = codec == .hevc ? X265EncoderFactory() : X264EncoderFactory()
            session = try CompressionSession(
                width: MultiPassDriverTests.width, height: MultiPassDriverTests.height, codecType: codec,
                encoderSpecification: EncoderSpecification(threadCount: 1), sourcePixelFormat: .i420,
                properties: CompressionProperties(
                    averageBitRate: bitRate, maxKeyFrameInterval: 15, expectedFrameRate: 30),
                backends: [backend], outputHandler: feed.outputHandler)
            driver = try MultiPassDriver(
                session: session, feed: feed, storage: storage, maximumPasses: maximumPasses,
                expectedFramesInFirstPass: MultiPassDriverTests.frameCount)
        }

        deinit {
            session.invalidate()
            try? silo.close()
            try? storage.close()
        }

        /// The silo's frames in read-out order: time, bytes.
        func siloContents() throws -> [Frame] {
            var frames: [Frame] = []
            try silo.forEachSample { sample in
                frames.append(Frame(time: sample.presentationTimeStamp, bytes: sample.dataBuffer?.copyToArray() ?? []))
            }
            return frames
        }
    }

    struct Frame: Equatable {
        var time: MediaTime
        var bytes: [UInt8]
    }

    /// A seek the driver asked for.
    struct Seek {
        /// Seeks before this one.
        var number: Int
        var range: MediaTimeRange
        var pass: Int
        /// The ranges of the pass, and which of them this is.
        var rangesOfPass: [MediaTimeRange]
        var rangeIndex: Int
    }

    /// A frame the simulated upstream delivers.
    struct Delivery {
        var index: Int
        var picture: PixelBuffer
    }

    /// What happened in one run of the simulated upstream.
    struct Run {
        var outcome: MultiPassDriver.Outcome?
        var failure: MultiPassDriver.Failure?
        /// The ranges the driver asked for, in order.
        var seeks: [MediaTimeRange] = []
        /// The ranges of each pass >= 2, as the driver reported them when the pass began.
        var plannedRanges: [[MediaTimeRange]] = []
        var events: [MultiPassDriver.Event] = []
        /// Progress reported, and after how many frames delivered in all.
        var progress: [(progress: MultiPassProgress, afterFrames: Int)] = []
        var encodedAfterPassOne = 0
        var skipped: [(time: MediaTime, range: MediaTimeRange)] = []
        /// Pictures read by the driver for frames it skipped (it must read none).
        var picturesReadForSkippedFrames = 0
        var seekabilityQuestions = 0

        var passesStarted: Int { 1 + plannedRanges.count }
    }

    /// Feeds `encode`'s driver: every frame, then after each seek `afterSeek`'s frames (by
    /// default those of the range), each followed by an end of stream, until the driver says to
    /// write the file or fails.
    static func run(
        _ encode: Encode, upstreamCanSeek: Bool = true,
        afterSeek: (Seek) -> [Delivery] = { deliveries(in: $0.range) }
    ) throws -> Run {
        var run = Run()
        var deliveries = pictures.indices.map { Delivery(index: $0, picture: pictures[$0]) }
        var delivered = 0
        func collectEvents() {
            for event in encode.driver.takeEvents() {
                run.events.append(event)
                switch event {
                case .progress(let progress): run.progress.append((progress, delivered))
                case .passStarting(_, let ranges, _): run.plannedRanges.append(ranges)
                default: break
                }
            }
        }
        while run.seeks.count < 100 {
            for delivery in deliveries {
                delivered += 1
                var read = false
                let result = encode.driver.frame(presentationTime: time(delivery.index), duration: frameDuration) {
                    read = true
                    return delivery.picture
                }
                switch result {
                case .encoded:
                    if !run.seeks.isEmpty { run.encodedAfterPassOne += 1 }
                case .skipped(let range):
                    run.skipped.append((time(delivery.index), range))
                    if read { run.picturesReadForSkippedFrames += 1 }
                case .failed(let failure):
                    Issue.record("frame \(delivery.index): \(failure)")
                    run.failure = failure
                    return run
                }
                collectEvents()
            }
            let action = encode.driver.endOfStream {
                run.seekabilityQuestions += 1
                return upstreamCanSeek
            }
            collectEvents()
            switch action {
            case .seek(let range):
                let rangesOfPass = run.plannedRanges.last ?? []
                let seek = Seek(
                    number: run.seeks.count, range: range, pass: encode.driver.pass, rangesOfPass: rangesOfPass,
                    rangeIndex: rangesOfPass.firstIndex(of: range) ?? -1)
                run.seeks.append(range)
                deliveries = afterSeek(seek)
            case .writeFile(let outcome):
                run.outcome = outcome
                return run
            case .failed(let failure):
                run.failure = failure
                return run
            }
        }
        Issue.record("the driver asked for more than 100 seeks")
        return run
    }

    /// The frames an accurate seek to `range` delivers.
    static func deliveries(in range: MediaTimeRange, from source: [PixelBuffer] = pictures) -> [Delivery] {
        source.indices.filter { range.contains(time($0)) }.map { Delivery(index: $0, picture: source[$0]) }
    }

    static func frameIndices(in range: MediaTimeRange) -> [Int] {
        pictures.indices.filter { range.contains(time($0)) }
    }

    /// Every frame of the clip once, in the silo.
    static func expectEveryFrameOnce(_ frames: [Frame], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(frames.count == frameCount, sourceLocation: sourceLocation)
        #expect(Set(frames.map(\.time)) == Set((0..<frameCount).map(time)), sourceLocation: sourceLocation)
    }

    static func bits(_ frames: [Frame]) -> Int { frames.reduce(0) { $0 + $1.bytes.count * 8 } }

    /// The file of a one-pass encode of the clip: what pass 1 gives (x264 with one thread gives
    /// the same bytes every time).
    static func passOneResult() throws -> [Frame] {
        let encode = try Encode(maximumPasses: 1)
        let run = try run(encode)
        guard case .finished = try #require(run.outcome).ending else {
            Issue.record("one pass ended \(String(describing: run.outcome?.ending))")
            return []
        }
        return try encode.siloContents()
    }

    // MARK: Tests

    @Test(
        "a seekable run re-encodes exactly the ranges it plans, ends on target or at the last pass, and counts what it kept"
    )
    func fullRun() throws {
        let encode = try Encode(maximumPasses: 3)
        let run = try Self.run(encode)
        let outcome = try #require(run.outcome)
        guard case .finished(let stopReason) = outcome.ending else {
            Issue.record("the run ended \(outcome.ending), not finished")
            return
        }
        #expect(run.passesStarted >= 2, "pass 1's ABR allocation is not the two-pass one: a second pass is wanted")
        // The seeks are the planned ranges, pass after pass, each range once, in order.
        #expect(run.seeks == run.plannedRanges.flatMap { $0 })
        #expect(run.seekabilityQuestions == 1, "asked once, when pass 2 was first wanted")
        let frames = try encode.siloContents()
        Self.expectEveryFrameOnce(frames)
        let statistics = try #require(encode.session.multiPassStatistics)
        let plan = try #require(statistics.lastPlan)
        #expect(Self.bits(frames) == plan.codedBits, "the silo holds what the last pass's analysis says was coded")
        let error = Double(plan.codedBits) / plan.targetBits - 1
        print(
            "MultiPassDriver full run: \(run.passesStarted) passes, \(run.encodedAfterPassOne) frames re-encoded, \(error * 100) % off the target (\(stopReason ?? "no reason given"))"
        )
        #expect(
            abs(error) <= 0.01 || outcome.passes == 3, "\(error * 100) % off the target after \(outcome.passes) passes")
        // The summary: every pass kept, every frame re-encoded after pass 1 counted.
        #expect(outcome.passes == run.passesStarted)
        #expect(outcome.passes == statistics.passesCompleted)
        #expect(outcome.framesReencoded == run.encodedAfterPassOne)
        #expect(outcome.targetOutOfReach == nil)
        // Progress: pass 1 starts with its first frame, one report per 10 %, then completes;
        // pass 2 starts with its first frame (not at the seek), saying what it re-encodes.
        let texts = run.progress.map(\.progress.description)
        #expect(texts.first == "pass 1 of up to 3: encoding every frame")
        #expect(run.progress.first?.afterFrames == 1)
        let passOneAdvances = run.progress.compactMap { entry -> Int? in
            guard entry.progress.pass == 1, case .advanced(let percent, _, _) = entry.progress.stage else { return nil }
            return percent
        }
        #expect(passOneAdvances == [100 / Self.frameCount] + Array(stride(from: 10, through: 100, by: 10)))
        #expect(texts.contains("pass 1: 100 % done (120 of 120 frames)"))
        #expect(texts.contains("pass 1 complete (120 frames)"))
        let passTwoStart = try #require(run.progress.first { $0.progress.pass == 2 })
        let passTwoRanges = try #require(run.plannedRanges.first)
        let passTwoFrames = passTwoRanges.reduce(0) { $0 + Self.frameIndices(in: $1).count }
        let seconds = passTwoRanges.reduce(0.0) { $0 + $1.duration.seconds }
        #expect(
            passTwoStart.progress.stage
                == .reencoding(frames: passTwoFrames, ranges: passTwoRanges.count, seconds: seconds))
        #expect(
            passTwoStart.progress.description.hasPrefix(
                "pass 2: re-encoding \(passTwoFrames) frames in \(passTwoRanges.count) range(s), "))
        #expect(passTwoStart.afterFrames == Self.frameCount + 1, "pass 2's start is reported with its first frame")
        #expect(texts.contains("pass 2 complete (\(passTwoFrames) frames)"))
    }

    @Test(
        "HEVC (x265): the same run reaches the target as closely, with per-frame QPs forced in the ranges; the silo decodes"
    )
    func fullRunHEVC() throws {
        let encode = try Encode(maximumPasses: 3, codec: .hevc)
        let run = try Self.run(encode)
        let outcome = try #require(run.outcome)
        guard case .finished = outcome.ending else {
            Issue.record("the run ended \(outcome.ending), not finished")
            return
        }
        #expect(run.passesStarted >= 2, "pass 1's ABR allocation is not the multi-pass one: a second pass is wanted")
        #expect(run.seeks == run.plannedRanges.flatMap { $0 })
        let frames = try encode.siloContents()
        Self.expectEveryFrameOnce(frames)
        let statistics = try #require(encode.session.multiPassStatistics)
        let plan = try #require(statistics.lastPlan)
        #expect(Self.bits(frames) == plan.codedBits, "the silo holds what the last pass's analysis says was coded")
        let error = Double(plan.codedBits) / plan.targetBits - 1
        print("MultiPassDriver HEVC run: \(run.passesStarted) passes, \(error * 100) % off the target")
        #expect(
            abs(error) <= 0.01 || outcome.passes == 3, "\(error * 100) % off the target after \(outcome.passes) passes")
        // Re-encoded ranges start with an IRAP picture and refer to nothing before them, so the
        // silo, read out in decode order, is one stream libavcodec decodes whole.
        let description = try #require(encode.session.formatDescription)
        #expect(description.codecType == .hevc)
        var samples: [SampleBuffer] = []
        try encode.silo.forEachSample { samples.append($0) }
        let decoded = try Clips.decode(samples, format: description)
        #expect(decoded.count == Self.frameCount)
        #expect(decoded.map(\.pts) == (0..<Self.frameCount).map(Self.time), "every picture, in presentation order")
    }

    @Test(
        "a pass cut short keeps the ranges it finished; the others get their earlier frames; the cut pass is not counted"
    )
    func cutShort() throws {
        let encode = try Encode(maximumPasses: 4)
        // Every range in full until a pass with two ranges or more; of that pass, range 0 whole,
        // then range 1 but its last frame, and the stream ends (Ctrl-C under gst-launch-1.0 -e).
        // Together they are more frames than range 1 holds: only range 1's own count tells.
        var cutPass: Int?
        var reencodedBeforeTheCut = 0
        let run = try Self.run(encode) { seek in
            let frames = Self.deliveries(in: seek.range)
            if cutPass == nil, seek.rangesOfPass.count >= 2 { cutPass = seek.pass }
            guard seek.pass == cutPass else {
                reencodedBeforeTheCut += frames.count
                return frames
            }
            return seek.rangeIndex == 0 ? frames : Array(frames.dropLast())
        }
        let pass = try #require(cutPass, "no pass had two ranges: the clip does not test a cut after a finished range")
        let ranges = run.plannedRanges[pass - 2]
        let outcome = try #require(run.outcome)
        guard case .passCutShort(let cut) = outcome.ending else {
            Issue.record("the run ended \(outcome.ending), not cut short")
            return
        }
        let received = Self.frameIndices(in: ranges[0]).count + Self.frameIndices(in: ranges[1]).count - 1
        let expected = ranges.reduce(0) { $0 + Self.frameIndices(in: $1).count }
        #expect(cut.pass == pass)
        #expect(cut.framesReceived == received)
        #expect(cut.framesExpected == expected)
        #expect(cut.restoration.rangesKept == 1)
        #expect(cut.restoration.rangesRestored == ranges.count - 1)
        #expect(run.seeks.suffix(2) == ranges.prefix(2), "no seek after the cut")
        #expect(
            run.progress.last?.progress.description == "pass \(pass) cut short after \(received) of \(expected) frames")
        // The file: every frame once; range 0 re-encoded by the cut pass, the other ranges of
        // the pass as before it.
        let frames = try encode.siloContents()
        Self.expectEveryFrameOnce(frames)
        #expect(cut.restoration.framesRestored == ranges.dropFirst().reduce(0) { $0 + Self.frameIndices(in: $1).count })
        #expect(cut.restoration.framesDropped == Self.frameIndices(in: ranges[1]).count - 1)
        // The summary counts the passes completed: the cut one is not.
        #expect(outcome.passes == pass - 1)
        #expect(outcome.framesReencoded == reencodedBeforeTheCut)
    }

    @Test(
        "a source that does not replay after the seek: the pass is cut short at 0 frames and the file is pass 1's, byte for byte"
    )
    func sourceThatDoesNotReplay() throws {
        let encode = try Encode(maximumPasses: 3)
        let run = try Self.run(encode) { _ in [] }
        let outcome = try #require(run.outcome)
        guard case .passCutShort(let cut) = outcome.ending else {
            Issue.record("the run ended \(outcome.ending), not cut short")
            return
        }
        let ranges = try #require(run.plannedRanges.first)
        #expect(cut.pass == 2)
        #expect(cut.framesReceived == 0)
        #expect(cut.framesExpected == ranges.reduce(0) { $0 + Self.frameIndices(in: $1).count })
        #expect(cut.restoration.rangesKept == 0)
        #expect(cut.restoration.rangesRestored == ranges.count)
        #expect(run.seeks.count == 1)
        #expect(try encode.siloContents() == Self.passOneResult())
        #expect(outcome.passes == 1)
        #expect(outcome.framesReencoded == 0)
        // Pass 2 never got a frame, so its start was never reported; its cancellation was.
        #expect(!run.progress.contains { if case .reencoding = $0.progress.stage { true } else { false } })
        #expect(run.progress.last?.progress.stage == .cutShort(frames: 0, expected: cut.framesExpected))
    }

    @Test("an upstream that cannot seek gets the single-pass result; it is asked only when a second pass is wanted")
    func upstreamCannotSeek() throws {
        let encode = try Encode(maximumPasses: 3)
        let run = try Self.run(encode, upstreamCanSeek: false)
        let outcome = try #require(run.outcome)
        guard case .upstreamCannotSeek = outcome.ending else {
            Issue.record("the run ended \(outcome.ending), not for an upstream that cannot seek")
            return
        }
        #expect(run.seekabilityQuestions == 1)
        #expect(run.seeks.isEmpty)
        #expect(try encode.siloContents() == Self.passOneResult())
        #expect(outcome.passes == 1)
        #expect(outcome.framesReencoded == 0)
        // The encode has ended: a late frame is refused without being read, and so is another EOS.
        var read = false
        let late = encode.driver.frame(presentationTime: .zero, duration: Self.frameDuration) {
            read = true
            return Self.pictures[0]
        }
        guard case .failed(.ended(pass: 1)) = late else {
            Issue.record("a frame after the end gave \(late)")
            return
        }
        #expect(!read)
        guard case .failed(.ended) = encode.driver.endOfStream(upstreamCanSeek: { true }) else {
            Issue.record("an end of stream after the end was taken")
            return
        }
        // One pass asked for: nothing to seek, so nothing is asked.
        let single = try Encode(maximumPasses: 1)
        let singleRun = try Self.run(single, upstreamCanSeek: false)
        guard case .finished = try #require(singleRun.outcome).ending else {
            Issue.record("max 1 pass ended \(String(describing: singleRun.outcome?.ending))")
            return
        }
        #expect(singleRun.seekabilityQuestions == 0)
    }

    @Test("frames outside the range being read (an accurate seek's neighbours, another range's) are skipped unread")
    func framesOutsideTheRangeAreSkipped() throws {
        let encode = try Encode(maximumPasses: 2)
        var extras: [MediaTime] = []
        let run = try Self.run(encode) { seek in
            let inside = Self.frameIndices(in: seek.range)
            guard let first = inside.first, let last = inside.last else { return [] }
            // The frame before the range, the range, the frame after it, and the first frame of
            // another range of the pass.
            var indices = [first - 1] + inside + [last + 1]
            if let other = seek.rangesOfPass.first(where: { $0 != seek.range }),
                let frame = Self.frameIndices(in: other).first
            {
                indices.append(frame)
            }
            indices = indices.filter { (0..<Self.frameCount).contains($0) }
            extras += indices.filter { !seek.range.contains(Self.time($0)) }.map(Self.time)
            return indices.map { Delivery(index: $0, picture: Self.pictures[$0]) }
        }
        let outcome = try #require(run.outcome)
        if case .passCutShort = outcome.ending { Issue.record("a pass was cut short") }
        let ranges = try #require(run.plannedRanges.first)
        #expect(ranges.count >= 2, "a frame of another range is delivered only with two ranges")
        #expect(extras.count >= 3)
        #expect(run.skipped.map(\.time) == extras)
        #expect(run.picturesReadForSkippedFrames == 0, "a skipped frame's picture is not read")
        for (time, range) in run.skipped { #expect(!range.contains(time)) }
        #expect(run.encodedAfterPassOne == ranges.reduce(0) { $0 + Self.frameIndices(in: $1).count })
        #expect(outcome.framesReencoded == run.encodedAfterPassOne)
        Self.expectEveryFrameOnce(try encode.siloContents())
    }

    @Test(
        "a pass that lands farther from the target is taken back: the file is the result before it, and the summary does not count it"
    )
    func passTakenBack() throws {
        let encode = try Encode(maximumPasses: 3)
        // Pass 2 gets other pictures (noise) at the same times: at the quantizers planned for
        // the real ones it codes far more bits, farther from the target than pass 1.
        let run = try Self.run(encode) { Self.deliveries(in: $0.range, from: Self.noisePictures) }
        let outcome = try #require(run.outcome)
        guard case .passTakenBack(let taken) = outcome.ending else {
            Issue.record("the run ended \(outcome.ending), not with a pass taken back")
            return
        }
        let statistics = try #require(encode.session.multiPassStatistics)
        let target = try #require(statistics.lastPlan?.targetBits)
        let passOne = try Self.passOneResult()
        #expect(taken.pass == 2)
        #expect(abs(Double(taken.codedBits) - target) > abs(Double(taken.codedBitsKept) - target))
        #expect(taken.codedBitsKept == Self.bits(passOne))
        #expect(abs(taken.seconds - 4) < 0.01)
        // The file: pass 1's, restored whole.
        #expect(try encode.siloContents() == passOne)
        // The session ran 2 passes and re-encoded frames; the file has 1 pass and none of them.
        #expect(statistics.passesCompleted == 2)
        #expect(statistics.framesReencoded == run.encodedAfterPassOne)
        #expect(run.encodedAfterPassOne > 0)
        #expect(outcome.passes == 1)
        #expect(outcome.framesReencoded == 0)
        #expect(outcome.targetOutOfReach == nil)
        #expect(run.seeks == run.plannedRanges.flatMap { $0 }, "no pass after the one taken back")
    }
}
