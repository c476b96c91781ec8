import Glibc
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTFileSupport

/// `swiftvt-farm encode`: one pass of one chunk on a worker, through MultiPassDriver with the
/// caller's planning: pass 1 (every frame), or the pass a plan over the whole file gave this
/// chunk. The frames come on standard input (``FrameStreamReader``); the chunk directory keeps
/// the analysis and the compressed frames for the next step.
///
/// Software (x264 for H.264, x265 for H.265) only: the chunks of one file may run on hosts with
/// different GPUs or none, and a splice needs every chunk coded with the same parameter sets and
/// the same encoder's idea of quality.
struct EncodeCommand {
    let chunk: ChunkDirectory
    let bitRate: Int
    let threads: Int
    let keyFrameInterval: Int
    let planPath: String?
    let codec: FarmCodec

    init(_ options: FarmOptions) throws(FarmFailure) {
        guard options.positional.count == 1 else { throw .usage("encode takes one CHUNK_DIR") }
        chunk = ChunkDirectory(path: options.positional[0])
        bitRate = try options.integer("bitrate", in: 1...2_000_000_000)
        threads = try options.integer("threads", in: 0...256, default: 0)
        keyFrameInterval = try options.integer("max-keyframe-interval", in: 0...Int(Int32.max), default: 0)
        guard keyFrameInterval == 0 || keyFrameInterval >= MultiPassGOP.minimumLength else {
            throw .usage(
                "--max-keyframe-interval \(keyFrameInterval) is too short for multi-pass encoding; use 0 or at least \(MultiPassGOP.minimumLength)"
            )
        }
        planPath = options.string("plan")
        codec = try FarmCodec(options.string("codec") ?? "h264")
    }

    func run() throws(FarmFailure) {
        var reader = try FrameStreamReader(descriptor: 0)
        let planned = try planPath.map { (path) throws(FarmFailure) in try ChunkPlanFile.read(path) }
        let (storage, silo, manifest) = try openFiles(for: planned)
        var properties = CompressionProperties(averageBitRate: bitRate)
        properties.expectedFrameRate = reader.header.frameRate
        // High, unlike baseline (A.2.1), allows interlaced coding; the SPS saying so
        // (frame_mbs_only_flag 0) reaches the file as the chunks have it: the splice copies it.
        if codec == .h264 { properties.profileLevel = H264ProfileLevel(profile: .high) }
        if reader.header.fieldCoding != .progressive && codec == .h265 {
            throw .failed(
                "the chunk in \(chunk.path) is interlaced, and SwiftVT's HEVC encoder (x265) codes progressive pictures only; encode it with --codec h264"
            )
        }
        properties.fieldCoding = reader.header.fieldCoding
        MultiPassGOP.applyKeyFrameInterval(keyFrameInterval, frameRate: reader.header.frameRate, to: &properties)
        let feed = FrameSiloFeed(silo: silo)
        let session: CompressionSession
        let driver: MultiPassDriver
        do throws(VTError) {
            session = try CompressionSession(
                width: reader.header.width, height: reader.header.height, codecType: codec.codecType,
                encoderSpecification: EncoderSpecification(hardwarePolicy: .disable, threadCount: threads),
                sourcePixelFormat: .i420, properties: properties, backends: [codec.backend],
                outputHandler: feed.outputHandler)
            driver = try MultiPassDriver(
                session: session, feed: feed, storage: storage, maximumPasses: 1,
                planning: .byCaller(plan: planned?.plan, completedPasses: planned?.completedPasses ?? 0))
        } catch {
            throw .vt(error, "cannot start encoding the chunk in \(chunk.path)")
        }
        defer { session.invalidate() }
        let pool: PixelBufferPool
        do throws(PixelBufferPoolError) {
            pool = try PixelBufferPool(
                attributes: PixelBufferPool.Attributes(
                    width: reader.header.width, height: reader.header.height, pixelFormat: .i420, rowAlignment: 4))
        } catch {
            throw .failed("cannot allocate pictures of \(reader.header.width)x\(reader.header.height): \(error)")
        }

        var encoded = 0
        var outcome: MultiPassDriver.Outcome?
        while outcome == nil {
            let record = try reader.next()
            switch record {
            case .frame(let presentationTime, let duration):
                let picture: PixelBuffer
                do throws(PixelBufferPoolError) {
                    picture = try pool.makePixelBuffer()
                } catch {
                    throw .failed("cannot allocate a picture: \(error)")
                }
                // Read whether or not the driver encodes it: the bytes are in the pipe.
                try reader.readPicture(into: picture)
                switch driver.frame(presentationTime: presentationTime, duration: duration, image: { picture }) {
                case .encoded: encoded += 1
                case .skipped: break
                case .failed(let failure): throw Self.failure(failure, driver: driver)
                }
            case .endOfRange, .endOfStream:
                // At the end of the input every range still expected ends too (the driver then
                // finds the pass cut short).
                var action = driver.endOfStream(upstreamCanSeek: { true })
                while case .seek = action, case .endOfStream = record {
                    action = driver.endOfStream(upstreamCanSeek: { true })
                }
                switch action {
                case .seek: continue
                case .writeFile(let ended): outcome = ended
                case .failed(let failure): throw Self.failure(failure, driver: driver)
                }
            }
        }
        if case .passCutShort(let cut) = outcome?.ending {
            FileContents.printError(
                "swiftvt-farm: warning: pass \(cut.pass) of the chunk in \(chunk.path) got \(cut.framesReceived) of \(cut.framesExpected) frames; "
                    + "\(cut.restoration.rangesRestored) range(s) keep their frames of the pass before")
        }
        guard encoded > 0 || planned != nil else {
            throw .failed("the chunk has no frames: the input delivered none in its time range")
        }
        session.invalidate()
        do throws(VTError) {
            try silo.close()
            try storage.close()
        } catch {
            throw .vt(error, "cannot keep the chunk's files in \(chunk.path)")
        }
        var updated = manifest
        updated.passes = driver.pass
        try chunk.writeManifest(updated)
        let records = storage.records()
        let bits = records.reduce(0) { $0 + $1.bits }
        // The chunk's first picture is an IDR picture a one-host encode may not have: the job
        // weighs what it costs against the chunk's other frames.
        let firstPicture = records.min { $0.presentationTimeStamp < $1.presentationTimeStamp }
        print("result frames=\(encoded) bits=\(bits) first_picture_bits=\(firstPicture?.bits ?? 0)")
    }

    /// The chunk's storage and silo: new ones for pass 1, the chunk's for a planned pass.
    private func openFiles(for planned: ChunkPlanFile?) throws(FarmFailure) -> (
        MultiPassStorage, FrameSilo, ChunkDirectory.Manifest
    ) {
        if let planned {
            let (manifest, storage, silo) = try chunk.open()
            guard manifest.passes <= planned.completedPasses else {
                throw .failed(
                    "the plan \(planPath ?? "") follows pass \(planned.completedPasses), but the chunk in \(chunk.path) has been through \(manifest.passes) pass(es)"
                )
            }
            return (storage, silo, manifest)
        }
        try TextFile.makeDirectory(chunk.path)
        guard !TextFile.exists(chunk.manifestPath) else {
            throw .failed("\(chunk.path) already holds a chunk; pass 1 needs an empty directory")
        }
        do throws(VTError) {
            let storage = try MultiPassStorage(creatingIn: chunk.path, timeRange: .invalid, keepOnClose: true)
            let silo = try FrameSilo(directory: chunk.path, keepOnClose: true)
            let manifest = ChunkDirectory.Manifest(
                storageName: TextFile.baseName(storage.path), siloIndexName: TextFile.baseName(silo.indexPath),
                passes: 0)
            return (storage, silo, manifest)
        } catch {
            throw .vt(error, "cannot create the chunk's files in \(chunk.path)")
        }
    }

    private static func failure(_ failure: MultiPassDriver.Failure, driver: MultiPassDriver) -> FarmFailure {
        switch failure {
        case .encoding(let error, let pass): .vt(error, "encoding failed in pass \(pass)")
        case .endingPass(let error, let pass): .vt(error, "ending pass \(pass) failed")
        case .startingNextPass(let error): .failed("the pass could not start: \(error)")
        case .silo(let error): .vt(error, "the frame silo could not keep a frame")
        case .ended(let pass): .failed("frames arrived after pass \(pass) ended")
        }
    }
}

/// The plan `swiftvt-farm plan` wrote for one chunk: a first line with the passes it follows,
/// then ``MultiPassRateControl/Plan/planFile``.
struct ChunkPlanFile {
    var completedPasses: Int
    var plan: MultiPassRateControl.Plan

    static let prefix = "swiftvt-farm-plan "

    static func read(_ path: String) throws(FarmFailure) -> ChunkPlanFile {
        let text = try TextFile.read(path)
        guard text.hasPrefix(prefix), let newline = text.firstIndex(of: "\n"),
            let passes = Int(text[text.index(text.startIndex, offsetBy: prefix.count)..<newline]), passes >= 1
        else {
            throw .failed("\(path) is not a chunk plan written by swiftvt-farm plan")
        }
        do throws(VTError) {
            let plan = try MultiPassRateControl.Plan(planFile: String(text[text.index(after: newline)...]))
            guard plan.wantsAnotherPass else { throw VTError(.corrupt, "it names no time range") }
            return ChunkPlanFile(completedPasses: passes, plan: plan)
        } catch {
            throw .vt(error, "cannot read the plan \(path)")
        }
    }

    func write(to path: String) throws(FarmFailure) {
        try TextFile.write(Self.prefix + "\(completedPasses)\n" + plan.planFile, to: path)
    }
}

/// The codec a farm job encodes (`--codec`), and what encodes it.
enum FarmCodec: String {
    case h264
    case h265

    init(_ name: String) throws(FarmFailure) {
        guard let codec = FarmCodec(rawValue: name) else { throw .usage("--codec \(name) is neither h264 nor h265") }
        self = codec
    }

    var codecType: FourCharCode { self == .h264 ? .h264 : .hevc }

    var backend: any EncoderBackendFactory { self == .h264 ? X264EncoderFactory() : X265EncoderFactory() }
}
