// Multi-pass encoding with the sessions API, the WWDC flow without GStreamer: a CompressionSession
// with MultiPassStorage (the encoder's analysis) and a FrameSilo (the compressed frames); after
// each pass the session says which time ranges it wants again, only those frames are encoded
// again, and the silo's samples are written out at the end as an Annex B stream.
//
//   swiftvt-example-multipass OUTPUT.h264 [--frames 300] [--width 640] [--height 360]
//                             [--bitrate 800000] [--passes 3]
//
// The VideoToolbox calls of the flow and what stands for them here:
//   VTMultiPassStorageCreate                             MultiPassStorage(creatingIn:timeRange:)
//   VTFrameSiloCreate                                    FrameSilo(directory:)
//   kVTCompressionPropertyKey_MultiPassStorage           session.setMultiPassStorage(_:maximumPasses:)
//   VTCompressionSessionBeginPass                        session.beginPass()
//   VTFrameSiloAddSampleBuffer (in the output handler)   silo.add(_:)
//   VTCompressionSessionEndPass(&furtherPassesRequested)  session.endPass() -> Bool
//   VTCompressionSessionGetTimeRangesForNextPass         session.timeRangesForNextPass()
//   VTFrameSiloSetTimeRangesForNextPass                  silo.setTimeRangesForNextPass(_:)
//   VTFrameSiloCallFunctionForEachSampleBuffer           silo.forEachSample(_:)
//   VTMultiPassStorageClose, VTFrameSiloInvalidate       storage.close(), silo.close()
// (the software encoder, x264: multi-pass needs an encoder that takes a quantizer per frame.)
import Glibc
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTFileSupport
import Synchronization
import ExampleSupport

let options = CommandLineOptions()
guard options.positional.count == 1 else {
    exitWithError("usage: swiftvt-example-multipass OUTPUT.h264 [--frames N] [--width W] [--height H] "
        + "[--bitrate BITS_PER_SECOND] [--passes N]")
}
let outputPath = options.positional[0]
let frameCount = options.integer("frames", default: 300)
let bitRate = options.integer("bitrate", default: 800_000)
let pictures = SyntheticPictures(width: options.integer("width", default: 640), height: options.integer("height", default: 360))
let frameRate = 30
let frameDuration = MediaTime(value: 1, timescale: Int32(frameRate))

// The storage and the silo live in a private temporary directory, removed at the end.
var directoryTemplate = Array("/tmp/swiftvt-multipass-XXXXXX".utf8CString)
guard let made = mkdtemp(&directoryTemplate) else {
    exitWithError("swiftvt-example-multipass: cannot create a temporary directory: \(OutputFile.lastErrorDescription)")
}
let directory = String(cString: made)

do {
    let storage = try MultiPassStorage(creatingIn: directory, timeRange: .invalid)
    let silo = try FrameSilo(directory: directory)
    defer {
        try? silo.close()
        try? storage.close()
    }
    let siloFailure = Mutex<String?>(nil)
    let session = try CompressionSession(
        width: pictures.width, height: pictures.height, sourcePixelFormat: .i420,
        properties: CompressionProperties(averageBitRate: bitRate, maxKeyFrameInterval: frameRate, expectedFrameRate: Double(frameRate)),
        backends: [X264EncoderFactory()]
    ) { frame in
        guard let sample = frame.sampleBuffer else {
            siloFailure.withLock { $0 = $0 ?? frame.status.map { "\($0)" } ?? "a frame was dropped" }
            return
        }
        do { try silo.add(sample) } catch { siloFailure.withLock { $0 = $0 ?? "\(error)" } }
    }
    defer { session.invalidate() }
    try session.setMultiPassStorage(storage, maximumPasses: options.integer("passes", default: 3))

    // Pass 1: every frame.
    try session.beginPass()
    for index in 0..<frameCount {
        try session.encode(try pictures.picture(index), presentationTimeStamp: frameDuration.multiplied(by: index), duration: frameDuration)
    }
    var furtherPassRequested = try session.endPass()
    var pass = 1
    print("pass 1: \(frameCount) frames")
    // Further passes: only the frames of the ranges the session asks for.
    while furtherPassRequested {
        let ranges = try session.timeRangesForNextPass()
        try silo.setTimeRangesForNextPass(ranges)
        try session.beginPass()
        var encoded = 0
        for index in 0..<frameCount {
            let time = frameDuration.multiplied(by: index)
            guard ranges.contains(where: { $0.contains(time) }) else { continue }
            try session.encode(try pictures.picture(index), presentationTimeStamp: time, duration: frameDuration)
            encoded += 1
        }
        furtherPassRequested = try session.endPass()
        pass += 1
        print("pass \(pass): \(encoded) frames in \(ranges.count) time range(s)")
    }
    if let failure = siloFailure.withLock({ $0 }) { throw ExampleFailure(failure) }

    guard let output = OutputFile(creating: outputPath) else {
        throw ExampleFailure("cannot create \(outputPath): \(OutputFile.lastErrorDescription)")
    }
    var writer = AnnexBSampleWriter()
    var writeFailed = false
    try silo.forEachSample { sample in writeFailed = try !writer.write(sample, to: output) || writeFailed }
    guard !writeFailed, output.commit() else {
        output.discard()
        throw ExampleFailure("could not write \(outputPath): \(OutputFile.lastErrorDescription)")
    }
    let achieved = Double(writer.payloadBytes * 8) / (Double(writer.frames) / Double(frameRate))
    let statistics = session.multiPassStatistics
    print("\(writer.frames) frames written to \(outputPath) after \(pass) pass(es), "
        + "\(statistics?.framesReencoded ?? 0) frames encoded again; "
        + "\(Int((achieved / 1000).rounded())) kbit/s for a target of \(bitRate / 1000) kbit/s "
        + "(\(((achieved / Double(bitRate) - 1) * 1000).rounded() / 10) %)")
    if let reason = statistics?.lastPlan?.stopReason { print("the passes ended: \(reason)") }
} catch {
    // The storage and the silo removed their files when they were closed (leaving the do block).
    rmdir(directory)
    exitWithError("swiftvt-example-multipass: \(error)")
}
rmdir(directory)
