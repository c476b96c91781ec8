import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Testing

/// Passes planned by the caller (MultiPassDriver.Planning.byCaller), as swiftvt-farm runs them:
/// a clip cut into two chunks, pass 1 of each in its own session, one plan over both chunks'
/// records, and each chunk's part of it (through the plan file's text) re-encoded in a new
/// session over the chunk's storage and silo. Real x264, one thread.
@Suite("Passes planned by the caller", .serialized)
struct PlannedByCallerTests {
    typealias Clip = MultiPassDriverTests
    static let half = Clip.frameCount / 2

    static func session(_ feed: FrameSiloFeed) throws -> CompressionSession {
        try CompressionSession(
            width: Clip.width, height: Clip.height, encoderSpecification: EncoderSpecification(threadCount: 1),
            sourcePixelFormat: .i420,
            properties: CompressionProperties(
                averageBitRate: Clip.bitRate, maxKeyFrameInterval: 15, expectedFrameRate: 30),
            backends: [X264EncoderFactory()], outputHandler: feed.outputHandler)
    }

    @Test("two chunks planned over both: each re-encodes exactly its part of the plan, at its quantizers")
    func twoChunks() throws {
        let directory = try TemporaryDirectory("planned")
        var chunks: [(silo: FrameSilo, storage: MultiPassStorage)] = []
        for chunk in 0..<2 {
            let silo = try FrameSilo(directory: directory.path, keepOnClose: true)
            let storage = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid, keepOnClose: true)
            let feed = FrameSiloFeed(silo: silo)
            let session = try Self.session(feed)
            defer { session.invalidate() }
            let driver = try MultiPassDriver(
                session: session, feed: feed, storage: storage, maximumPasses: 1,
                planning: .byCaller(plan: nil, completedPasses: 0))
            for index in chunk * Self.half..<(chunk + 1) * Self.half {
                guard
                    case .encoded = driver.frame(
                        presentationTime: Clip.time(index), duration: Clip.frameDuration,
                        image: { Clip.pictures[index] })
                else {
                    Issue.record("frame \(index) of chunk \(chunk) was not encoded")
                    return
                }
            }
            let action = driver.endOfStream(upstreamCanSeek: {
                Issue.record("a driver planned by the caller asked whether upstream can seek")
                return true
            })
            guard case .writeFile(let outcome) = action, case .plannedByCaller = outcome.ending else {
                Issue.record("pass 1 of chunk \(chunk) ended with \(action)")
                return
            }
            chunks.append((silo, storage))
        }
        let passOne = chunks.flatMap { $0.storage.records() }
        let plan = MultiPassRateControl(targetBitRate: Double(Clip.bitRate), maximumPasses: 3).plan(
            records: passOne, completedPasses: 1)
        try #require(
            plan.wantsAnotherPass,
            "the clip's busy halves should make pass 1 miss its allocation: \(plan.stopReason ?? "")")
        let spans = [
            MediaTimeRange(start: Clip.time(0), end: Clip.time(Self.half)),
            MediaTimeRange(start: Clip.time(Self.half), end: Clip.time(Clip.frameCount))
        ]
        var reencoded = 0
        var chunksReencoded = 0
        for (chunk, span) in spans.enumerated() {
            let restricted = plan.restricted(to: span)
            // Through the text a worker gets: the same plan back, to the bit.
            let part = try MultiPassRateControl.Plan(planFile: restricted.planFile)
            #expect(part.planFile == restricted.planFile)
            #expect(
                part.timeRanges == restricted.timeRanges && part.quantizers == restricted.quantizers
                    && part.keyFrames == restricted.keyFrames)
            #expect(part.timeRanges.allSatisfy { span.contains($0) })
            guard part.wantsAnotherPass else { continue }
            chunksReencoded += 1
            let (silo, storage) = chunks[chunk]
            let feed = FrameSiloFeed(silo: silo)
            let session = try Self.session(feed)
            defer { session.invalidate() }
            let driver = try MultiPassDriver(
                session: session, feed: feed, storage: storage, maximumPasses: 1,
                planning: .byCaller(plan: part, completedPasses: 1))
            #expect(driver.pass == 2 && driver.currentRange == part.timeRanges.first)
            var action: MultiPassDriver.EndOfStreamAction
            var moreRanges = true
            repeat {
                let range = try #require(driver.currentRange)
                for index in 0..<Clip.frameCount where range.contains(Clip.time(index)) {
                    guard
                        case .encoded = driver.frame(
                            presentationTime: Clip.time(index), duration: Clip.frameDuration,
                            image: { Clip.pictures[index] })
                    else {
                        Issue.record("frame \(index) of range \(range) was not encoded")
                        return
                    }
                    reencoded += 1
                }
                action = driver.endOfStream(upstreamCanSeek: { true })
                if case .seek = action {} else { moreRanges = false }
            } while moreRanges
            guard case .writeFile(let outcome) = action, case .plannedByCaller = outcome.ending else {
                Issue.record("pass 2 of chunk \(chunk) ended with \(action)")
                return
            }
            // The frames of the plan are recorded as pass 2, at the plan's quantizers give or take
            // the in-pass feedback (at most 6 QP).
            for (time, quantizer) in part.quantizers {
                let record = try #require(storage.record(at: time))
                #expect(record.pass == 2 && abs(record.quantizer - quantizer) <= 6.5, "\(time.seconds) s: \(record)")
            }
            #expect(silo.sampleCount == Self.half)
        }
        #expect(chunksReencoded >= 1 && reencoded == plan.frameCount)
        for chunk in chunks {
            try chunk.silo.close()
            try chunk.storage.close()
        }
    }

    @Test("a plan file that is damaged is refused with its line")
    func damagedPlanFile() {
        #expect(throws: VTError.self) { try MultiPassRateControl.Plan(planFile: "not a plan\n") }
        do {
            _ = try MultiPassRateControl.Plan(planFile: "swiftvt-plan 1\ntotals 1 1 1 1 0\nrange 5 1 2 1\n")
            Issue.record("a range ending before it starts was accepted")
        } catch {
            #expect(error.code == .corrupt && error.message.contains("line 3"), "\(error)")
        }
        #expect(throws: VTError.self) {
            try MultiPassRateControl.Plan(planFile: "swiftvt-plan 1\ntotals 1 1 1 1 2\nframe 0 30 20 100 1\n")
        }
    }
}
