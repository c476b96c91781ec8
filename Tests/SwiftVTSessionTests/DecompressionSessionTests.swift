import Glibc
import H264
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Synchronization
import Testing

/// Serialized: the memory test reads process-wide heap counters, and the corpus decodes already
/// use every core through libavcodec's threads.
@Suite("DecompressionSession over libavcodec", .serialized)
struct DecompressionSessionTests {
    static let software: [any DecoderBackendFactory] = [LibavcodecDecoderFactory()]

    /// A corpus file's manifest entry and its samples.
    static func load(_ file: String) throws -> (entry: Corpus.Entry, stream: CorpusStream) {
        let entry = try #require(Corpus.entry(file))
        let bytes = try #require(Corpus.bytes(of: entry))
        return (entry, try CorpusStream.load(bytes))
    }

    static func decodeAll(
        _ stream: CorpusStream, asynchronous: Bool, attributes: DestinationImageBufferAttributes = .init(),
        collector: OutputCollector, specification: DecoderSpecification = .init()
    ) throws(VTError) -> DecompressionSession {
        let session = try DecompressionSession(
            formatDescription: stream.format, decoderSpecification: specification,
            destinationImageBufferAttributes: attributes, backends: software, outputHandler: collector.handler)
        let flags: DecodeFrameFlags = asynchronous ? [.enableAsynchronousDecompression, .enableTemporalProcessing] : []
        for (index, sample) in stream.samples.enumerated() {
            let info = try session.decode(sample, flags: flags, frameReference: UInt64(index))
            if asynchronous != info.contains(.asynchronous) {
                throw VTError(.decoderFailed, "info flags \(info) for asynchronous=\(asynchronous)")
            }
        }
        try session.finishDelayedFrames()
        return session
    }

    @Test(
        "every undamaged corpus stream decodes to its reference MD5, synchronously and asynchronously", .requiresCorpus)
    func corpusMatchesReference() throws {
        guard let manifest = Corpus.manifest() else { return }
        var report: [String] = []
        var matched = 0
        for entry in manifest where !entry.isDamaged {
            let bytes = try #require(Corpus.bytes(of: entry))
            let stream = try CorpusStream.load(bytes)
            var results: [String] = []
            for asynchronous in [false, true] {
                let collector = OutputCollector(keepFrames: true)
                let session = try Self.decodeAll(stream, asynchronous: asynchronous, collector: collector)
                let digest = collector.digest()
                let mode = asynchronous ? "async" : "sync"
                #expect(digest == entry.referenceMD5, "\(entry.file) \(mode): \(digest) != \(entry.referenceMD5)")
                #expect(
                    collector.pictureCount == entry.frames, "\(entry.file) \(mode): \(collector.pictureCount) pictures")
                #expect(collector.failures.isEmpty, "\(entry.file) \(mode): \(collector.failures)")
                let frames = collector.frames
                // Timing and references survive reordering: each picture carries its sample's.
                for frame in frames {
                    let expected = CorpusStream.frameDuration.multiplied(by: Int(frame.frameReference))
                    #expect(frame.presentationTimeStamp == expected && frame.duration == CorpusStream.frameDuration)
                    #expect(frame.infoFlags.contains(.asynchronous) == asynchronous)
                }
                // Native output is the decoder's own picture, not a copy, and exactly cropped.
                if let picture = frames.first?.imageBuffer {
                    #expect(!picture.ownsMemory && picture.pixelFormat == .i420)
                    #expect(picture.width == entry.width && picture.height == entry.height)
                }
                #expect(session.activeBackendName == "libavcodec (software)" && !session.isHardwareAccelerated)
                if digest == entry.referenceMD5 && collector.pictureCount == entry.frames { matched += 1 }
                results.append("\(mode) \(digest == entry.referenceMD5 ? "match" : "MISMATCH \(digest)")")
                session.invalidate()
            }
            report.append(
                "\(entry.file) (\(entry.width)x\(entry.height), \(stream.samples.count) samples, \(entry.frames) frames, ref \(entry.referenceMD5)): \(results.joined(separator: ", "))"
            )
        }
        print("DecompressionSession corpus results:\n  " + report.joined(separator: "\n  "))
        #expect(matched >= 40, "\(matched) stream decodes matched")
    }

    @Test(
        "NV12 output deinterleaves to the I420 reference MD5", .requiresCorpus,
        arguments: [
            "BA1_Sony_D.jsv", "Cisco_Men_whisper_640x320_CABAC_Bframe_9.264", "test_scalinglist_jm.264", "SarVui.264"
        ])
    func nv12MatchesReference(file: String) throws {
        let (entry, stream) = try Self.load(file)
        for asynchronous in [false, true] {
            let collector = OutputCollector(keepFrames: true, deinterleave: true)
            let session = try Self.decodeAll(
                stream, asynchronous: asynchronous,
                attributes: DestinationImageBufferAttributes(pixelFormats: [.nv12VideoRange, .nv12FullRange]),
                collector: collector)
            #expect(collector.digest() == entry.referenceMD5, "\(file)")
            #expect(collector.pictureCount == entry.frames)
            let picture = try #require(collector.frames.first?.imageBuffer)
            #expect(picture.pixelFormat == .nv12VideoRange)
            #expect(collector.frames.first?.infoFlags.contains(.imageBufferModifiable) == true)
            session.invalidate()
        }
    }

    @Test("an output format the decoder cannot produce is refused at creation", .requiresCorpus)
    func unsupportedOutputFormat() throws {
        let (_, stream) = try Self.load("SVA_Base_B.264")
        let error = #expect(throws: VTError.self) {
            _ = try DecompressionSession(
                formatDescription: stream.format,
                destinationImageBufferAttributes: DestinationImageBufferAttributes(pixelFormats: [
                    .bgra, .p010VideoRange
                ]),
                backends: Self.software, outputHandler: { _ in })
        }
        #expect(error?.code == .unsupportedFormat)
        #expect(error?.message.contains("NV12") == true)
    }

    @Test("asynchronous decoding with a slow handler never queues more than maximumFramesInFlight", .requiresCorpus)
    func backPressure() throws {
        let (entry, stream) = try Self.load("LS_SVA_D.264")
        let counters = CountingFactory.Counters()
        let pictures = Atomic<Int>(0)
        let session = try DecompressionSession(
            formatDescription: stream.format, backends: [CountingFactory(counters: counters)],
            outputHandler: { frame in
                if frame.imageBuffer != nil { pictures.add(1, ordering: .relaxed) }
                usleep(1000) // a slow consumer (a display sink, a network sender)
            })
        var largest = 0
        for (index, sample) in stream.samples.enumerated() {
            try session.decode(sample, flags: .enableAsynchronousDecompression, frameReference: UInt64(index))
            let submitted = index + 1
            // Samples accepted and not yet fully decoded by the backend.
            let outstanding = submitted - counters.completed.load(ordering: .acquiring)
            largest = max(largest, outstanding)
            #expect(outstanding <= session.maximumFramesInFlight)
        }
        try session.waitForAsynchronousFrames()
        #expect(counters.completed.load(ordering: .acquiring) == stream.samples.count)
        try session.finishDelayedFrames()
        #expect(pictures.load(ordering: .acquiring) == entry.frames)
        #expect(
            largest >= 2,
            "the queue never filled (largest \(largest)): the handler is not slow enough to test back-pressure")
        print("back-pressure: at most \(largest) samples outstanding, bound \(session.maximumFramesInFlight)")
        session.invalidate()
    }

    @Test("damaged streams finish, report errors through the status, and do not crash", .requiresCorpus)
    func damagedStreams() throws {
        guard let manifest = Corpus.manifest() else { return }
        var statusReports = 0
        for entry in manifest where entry.isDamaged {
            let bytes = try #require(Corpus.bytes(of: entry))
            let stream: CorpusStream
            do {
                stream = try CorpusStream.load(bytes)
            } catch {
                // The SVC stream has only a subset SPS for its pictures: no AVC description.
                print("\(entry.file): no format description (\(error))")
                continue
            }
            for asynchronous in [false, true] {
                let collector = OutputCollector()
                do {
                    let session = try Self.decodeAll(stream, asynchronous: asynchronous, collector: collector)
                    session.invalidate()
                } catch {
                    Issue.record("\(entry.file): \(error)")
                }
                statusReports += collector.failures.count
                print(
                    "\(entry.file) \(asynchronous ? "async" : "sync"): \(collector.pictureCount) pictures, \(collector.failures.count) status reports"
                )
            }
        }
        var generator = SeededGenerator(seed: 1234)
        for file in ["BA_MW_D.264", "Cisco_Men_whisper_640x320_CABAC_Bframe_9.264", "test_qcif_cabac.264"] {
            let (_, stream) = try Self.load(file)
            for variant in 0..<4 {
                var samples: [SampleBuffer] = []
                for (index, sample) in stream.samples.enumerated() {
                    var bytes = try #require(sample.dataBuffer).copyToArray()
                    if index > 0 && Int.random(in: 0..<3, using: &generator) == 0 {
                        for _ in 0..<(1 + variant * 4) {
                            let position = Int.random(in: 0..<bytes.count, using: &generator)
                            bytes[position] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                        }
                    }
                    if variant == 3 && index % 5 == 4 { bytes.removeLast(bytes.count / 2) }
                    samples.append(try CorpusStream.makeSample(bytes, index: index, format: stream.format))
                }
                let damaged = CorpusStream(format: stream.format, samples: samples, accessUnits: stream.accessUnits)
                let collector = OutputCollector()
                let session = try Self.decodeAll(damaged, asynchronous: variant % 2 == 1, collector: collector)
                statusReports += collector.failures.count
                #expect(collector.pictureCount > 0, "\(file) variant \(variant)")
                session.invalidate()
            }
        }
        #expect(statusReports > 0, "no damage was reported at all")
    }

    @Test("hardware policy: require fails naming what was tried; disable and auto use libavcodec", .requiresCorpus)
    func hardwarePolicy() throws {
        let (_, stream) = try Self.load("SVA_Base_B.264")
        let error = #expect(throws: VTError.self) {
            _ = try DecompressionSession(
                formatDescription: stream.format, decoderSpecification: DecoderSpecification(hardwarePolicy: .require),
                backends: Self.software, outputHandler: { _ in })
        }
        #expect(error?.code == .hardwareUnavailable)
        #expect(error?.message.contains("libavcodec (software)") == true)
        #expect(error?.message.contains("VA-API") == true)
        print("require: \(error.map { "\($0)" } ?? "no error")")

        // With a hardware factory that is unavailable, its reason is in the message too; auto
        // falls back past it.
        let backends: [any DecoderBackendFactory] = [UnavailableHardwareFactory()] + Self.software
        let withHardware = #expect(throws: VTError.self) {
            _ = try DecompressionSession(
                formatDescription: stream.format, decoderSpecification: DecoderSpecification(hardwarePolicy: .require),
                backends: backends, outputHandler: { _ in })
        }
        #expect(withHardware?.message.contains(UnavailableHardwareFactory.reason) == true)

        for policy in [HardwarePolicy.disable, .auto] {
            let collector = OutputCollector()
            let session = try DecompressionSession(
                formatDescription: stream.format, decoderSpecification: DecoderSpecification(hardwarePolicy: policy),
                backends: backends, outputHandler: collector.handler)
            #expect(session.activeBackendName == "libavcodec (software)")
            #expect(session.activeBackendName.contains("libavcodec") && !session.isHardwareAccelerated)
            try session.decode(stream.samples[0])
            try session.finishDelayedFrames()
            #expect(collector.pictureCount == 1)
        }
    }

    @Test("canAccept: the same stream yes, another resolution no", .requiresCorpus)
    func canAccept() throws {
        let small = try Self.load("SVA_Base_B.264").stream
        let large = try Self.load("Cisco_Men_whisper_640x320_CABAC_Bframe_9.264").stream
        let session = try DecompressionSession(
            formatDescription: small.format, backends: Self.software, outputHandler: { _ in })
        #expect(session.canAccept(small.format))
        #expect(!session.canAccept(large.format))
        #expect(session.formatDescription == small.format)
    }

    @Test("an invalidated session throws invalidSession; invalidate is idempotent", .requiresCorpus)
    func invalidatedSession() throws {
        let stream = try Self.load("SVA_Base_B.264").stream
        let session = try DecompressionSession(
            formatDescription: stream.format, backends: Self.software, outputHandler: { _ in })
        try session.decode(stream.samples[0], flags: .enableAsynchronousDecompression)
        session.invalidate()
        session.invalidate()
        for flags in [DecodeFrameFlags(), .enableAsynchronousDecompression] {
            let error = #expect(throws: VTError.self) { try session.decode(stream.samples[1], flags: flags) }
            #expect(error?.code == .invalidSession)
        }
        #expect((#expect(throws: VTError.self) { try session.finishDelayedFrames() })?.code == .invalidSession)
        #expect((#expect(throws: VTError.self) { try session.waitForAsynchronousFrames() })?.code == .invalidSession)
        session.flush()
    }

    @Test("the handler may call back into the session; waiting calls are refused, not deadlocked", .requiresCorpus)
    func reentrantHandler() throws {
        let stream = try Self.load("SVA_Base_B.264").stream
        for asynchronous in [false, true] {
            let box = Mutex<DecompressionSession?>(nil)
            let observed = Mutex<[String]>([])
            let session = try DecompressionSession(
                formatDescription: stream.format, backends: Self.software,
                outputHandler: { frame in
                    guard let session = box.withLock({ $0 }) else { return }
                    var notes: [String] = []
                    notes.append("canAccept \(session.canAccept(stream.format))")
                    do throws(VTError) { try session.finishDelayedFrames() } catch {
                        notes.append("finish \(error.code)")
                    }
                    do throws(VTError) { try session.decode(stream.samples[0]) } catch {
                        notes.append("decode \(error.code)")
                    }
                    observed.withLock { $0 += notes }
                })
            box.withLock { $0 = session }
            let flags: DecodeFrameFlags = asynchronous ? .enableAsynchronousDecompression : []
            for sample in stream.samples.prefix(4) { try session.decode(sample, flags: flags) }
            try session.finishDelayedFrames()
            let notes = observed.withLock { $0 }
            #expect(notes.contains("canAccept true"))
            #expect(notes.contains("finish reentrantCall") && notes.contains("decode reentrantCall"))
            box.withLock { $0 = nil }
            session.invalidate()
        }
    }

    @Test("doNotOutputFrame, flush and drain attachments", .requiresCorpus)
    func frameFlagsAndFlush() throws {
        let (entry, stream) = try Self.load("SVA_Base_B.264")
        let collector = OutputCollector(keepFrames: true)
        let session = try DecompressionSession(
            formatDescription: stream.format, backends: Self.software, outputHandler: collector.handler)
        let info = try session.decode(stream.samples[0], flags: .doNotOutputFrame, frameReference: 100)
        #expect(info.contains(.frameDropped))
        for index in 1..<4 { try session.decode(stream.samples[index], frameReference: UInt64(100 + index)) }
        try session.finishDelayedFrames()
        let frames = collector.frames
        #expect(frames.count == 4)
        #expect(
            frames.first { $0.frameReference == 100 }.map {
                $0.infoFlags.contains(.frameDropped) && $0.imageBuffer == nil
            } == true)
        #expect(frames.filter { $0.imageBuffer != nil }.count == 3)

        // A flush drops what is held; decoding restarts at the IDR.
        try session.decode(stream.samples[0], flags: .enableAsynchronousDecompression)
        session.flush()
        let afterFlush = collector.frames.count
        for index in 0..<stream.samples.count {
            try session.decode(stream.samples[index], frameReference: UInt64(index))
        }
        try session.finishDelayedFrames()
        #expect(collector.frames.count - afterFlush == entry.frames)
    }

    @Test("1,000 sessions created, used and invalidated leave memory flat", .requiresCorpus)
    func sessionChurnKeepsMemoryFlat() throws {
        let stream = try Self.load("SVA_Base_B.264").stream
        func churn(_ count: Int) throws {
            for iteration in 0..<count {
                let collector = OutputCollector()
                let session = try DecompressionSession(
                    formatDescription: stream.format, backends: Self.software, outputHandler: collector.handler)
                let flags: DecodeFrameFlags = iteration % 2 == 0 ? [] : .enableAsynchronousDecompression
                for sample in stream.samples.prefix(3) { try session.decode(sample, flags: flags) }
                if iteration % 3 == 0 { try session.finishDelayedFrames() }
                session.invalidate()
            }
        }
        #expect(heapBytesInUse() != nil && mappedHeapBytes() != nil)
        try churn(100) // warm-up: libavcodec's static tables, thread stacks' arenas
        let growths = try heapGrowths(tolerance: 256 * 1024) { try churn(1000 / 3 + 1) }
        print("heap growth per ~334 sessions: \(growths)")
        #expect(growths.contains { $0 <= 256 * 1024 }, "heap growth: \(growths)")
    }
}

/// Wraps the libavcodec factory to count what reaches the backend.
struct CountingFactory: DecoderBackendFactory {
    final class Counters: Sendable {
        let completed = Atomic<Int>(0)
    }

    final class Backend: DecoderBackend {
        let inner: any DecoderBackend
        let counters: Counters
        init(inner: any DecoderBackend, counters: Counters) {
            self.inner = inner
            self.counters = counters
        }
        func decode(_ sample: SampleBuffer, frameReference: UInt64) throws(VTError) -> [DecodedFrame] {
            defer { counters.completed.add(1, ordering: .releasing) }
            return try inner.decode(sample, frameReference: frameReference)
        }
        func drain() throws(VTError) -> [DecodedFrame] { try inner.drain() }
        func flush() { inner.flush() }
    }

    let counters: Counters
    let inner = LibavcodecDecoderFactory()
    var name: String { inner.name }
    var isHardware: Bool { false }
    func makeBackend(
        format: FormatDescription, specification: DecoderSpecification, attributes: DestinationImageBufferAttributes
    ) throws(VTError) -> any DecoderBackend {
        Backend(
            inner: try inner.makeBackend(format: format, specification: specification, attributes: attributes),
            counters: counters)
    }
    func unavailableReason(for format: FormatDescription) -> VTError.Reason? { inner.unavailableReason(for: format) }
}

/// A hardware backend that is never available, as on a machine without a VA-API device.
struct UnavailableHardwareFactory: DecoderBackendFactory {
    static let reason = "no VA-API device with an H.264 decoder (no /dev/dri/renderD* node)"
    var name: String { "VA-API (test stand-in)" }
    var isHardware: Bool { true }
    func makeBackend(
        format: FormatDescription, specification: DecoderSpecification, attributes: DestinationImageBufferAttributes
    ) throws(VTError) -> any DecoderBackend {
        throw VTError(.hardwareUnavailable, Self.reason)
    }
    func unavailableReason(for format: FormatDescription) -> VTError.Reason? { .other(Self.reason) }
}
