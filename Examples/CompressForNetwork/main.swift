// Seed case 4, "compress for the network", without GStreamer: a CompressionSession set up as in
// the Eyevinn walkthrough of VTCompressionSession (real time, a profile, no frame reordering, an
// expected frame rate) encodes generated pictures; its output handler writes an Annex B byte
// stream with SPS and PPS before every key frame, as the seed's output callback does before
// handing the bytes to the network.
//
//   swiftvt-example-compress OUTPUT.h264 [--frames 150] [--width 640] [--height 360]
//                            [--bitrate 1000000] [--hardware auto|require|disable]
//
// The seed's VideoToolbox calls and what stands for them here:
//   VTCompressionSessionCreate                         CompressionSession(width:height:encoderSpecification:sourcePixelFormat:properties:backends:outputHandler:)
//   kVTCompressionPropertyKey_RealTime                 CompressionProperties.realTime
//   kVTCompressionPropertyKey_ProfileLevel (Main)      CompressionProperties.profileLevel
//   kVTCompressionPropertyKey_AllowFrameReordering     CompressionProperties.allowFrameReordering
//   kVTCompressionPropertyKey_ExpectedFrameRate        CompressionProperties.expectedFrameRate
//   kVTCompressionPropertyKey_MaxKeyFrameInterval      CompressionProperties.maxKeyFrameInterval
//   kVTCompressionPropertyKey_AverageBitRate           CompressionProperties.averageBitRate
//   VTCompressionSessionPrepareToEncodeFrames          session.prepareToEncodeFrames()
//   VTCompressionSessionEncodeFrame                    session.encode(_:presentationTimeStamp:duration:)
//   VTCompressionSessionCompleteFrames                 session.completeFrames()
//   the output callback: NotSync attachment, parameter sets, AVCC -> Annex B   AnnexBSampleWriter
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTFileSupport
import Synchronization
import VAAPICodecs
import ExampleSupport

let options = CommandLineOptions()
guard options.positional.count == 1 else {
    exitWithError("usage: swiftvt-example-compress OUTPUT.h264 [--frames N] [--width W] [--height H] [--bitrate BITS_PER_SECOND] "
        + "[--hardware auto|require|disable]")
}
let outputPath = options.positional[0]
let frameCount = options.integer("frames", default: 150)
let pictures = SyntheticPictures(width: options.integer("width", default: 640), height: options.integer("height", default: 360))
let frameRate = 30
guard let output = OutputFile(creating: outputPath) else {
    exitWithError("swiftvt-example-compress: cannot create \(outputPath): \(OutputFile.lastErrorDescription)")
}

/// What the output handler shares with the main thread.
struct AnnexBStream: ~Copyable {
    var file: OutputFile
    var writer = AnnexBSampleWriter()
    var failure: String?
}
let annexB = Mutex(AnnexBStream(file: output))

let properties = CompressionProperties(
    averageBitRate: options.integer("bitrate", default: 1_000_000), realTime: true,
    profileLevel: H264ProfileLevel(profile: .main), allowFrameReordering: false, maxKeyFrameInterval: 2 * frameRate,
    expectedFrameRate: Double(frameRate))
let frameDuration = MediaTime(value: 1, timescale: Int32(frameRate))
do {
    let session = try CompressionSession(
        width: pictures.width, height: pictures.height,
        encoderSpecification: EncoderSpecification(hardwarePolicy: options.hardwarePolicy),
        sourcePixelFormat: .i420, properties: properties, backends: [VAH264EncoderFactory(), X264EncoderFactory()]
    ) { frame in
        annexB.withLock { stream in
            guard let sample = frame.sampleBuffer else {
                if stream.failure == nil { stream.failure = frame.status.map { "\($0)" } ?? "a frame was dropped" }
                return
            }
            do {
                if try !stream.writer.write(sample, to: stream.file), stream.failure == nil {
                    stream.failure = "cannot write \(outputPath): \(OutputFile.lastErrorDescription)"
                }
            } catch {
                if stream.failure == nil { stream.failure = "an encoded frame does not parse: \(error)" }
            }
        }
    }
    defer { session.invalidate() }
    try session.prepareToEncodeFrames()
    print("encoding \(frameCount) frames of \(pictures.width)x\(pictures.height) with \(session.activeBackendName)")
    for index in 0..<frameCount {
        try session.encode(try pictures.picture(index), presentationTimeStamp: frameDuration.multiplied(by: index), duration: frameDuration)
    }
    try session.completeFrames()
} catch {
    annexB.withLock { $0.file.discard() }
    exitWithError("swiftvt-example-compress: \(error)")
}
if let failure = annexB.withLock({ $0.failure }) {
    annexB.withLock { $0.file.discard() }
    exitWithError("swiftvt-example-compress: \(failure)")
}
let (frames, keyFrames, bytes, written) = annexB.withLock {
    ($0.writer.frames, $0.writer.keyFrames, $0.writer.payloadBytes, $0.file.commit())
}
guard written else { exitWithError("swiftvt-example-compress: could not write \(outputPath): \(OutputFile.lastErrorDescription)") }
let kilobitsPerSecond = Double(bytes * 8) / (Double(frames) / Double(frameRate)) / 1000
print("\(frames) frames (\(keyFrames) key frames, each after its SPS and PPS) written to \(outputPath), "
    + "\(Int(kilobitsPerSecond.rounded())) kbit/s")
