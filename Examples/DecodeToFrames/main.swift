// Seed case 2, "decode to buffers you can touch", without GStreamer: an H.264 Annex B file is
// decoded by a DecompressionSession into pixel buffers, whose planes are written as raw frames.
//
//   swiftvt-example-decode INPUT.h264 OUTPUT.yuv [--hardware auto|require|disable]
//
// The seed's VideoToolbox calls and what stands for them here:
//   CMVideoFormatDescriptionCreateFromH264ParameterSets   H264SampleBuilder (FormatDescription(h264ParameterSets:))
//   VTDecompressionSessionCreate                          DecompressionSession(formatDescription:decoderSpecification:backends:outputHandler:)
//   kVTVideoDecoderSpecification_EnableHardwareAccelerated…  DecoderSpecification(hardwarePolicy:)
//   CMBlockBufferCreateWithMemoryBlock, CMSampleBufferCreate  H264SampleBuilder.sampleBuffer(...)
//   VTDecompressionSessionDecodeFrame (asynchronous)      session.decode(_:flags: .enableAsynchronousDecompression)
//   VTDecompressionSessionWaitForAsynchronousFrames       session.finishDelayedFrames()
//   CVPixelBufferLockBaseAddress / GetBaseAddressOfPlane  frame.imageBuffer.planes[i].baseAddress
//   VTDecompressionSessionInvalidate                      session.invalidate()
//
// Frames are written in the order the session outputs them (display order), each plane row by
// row without row padding: I420 for 8-bit 4:2:0 streams, as `ffmpeg -f rawvideo` writes them.
import H264
import MediaCore
import NVDECCodecs
import SoftwareCodecs
import SwiftVT
import SwiftVTFileSupport
import Synchronization
import VAAPICodecs
import ExampleSupport

let options = CommandLineOptions()
guard options.positional.count == 2 else {
    exitWithError("usage: swiftvt-example-decode INPUT.h264 OUTPUT.yuv [--hardware auto|require|disable]")
}
let (inputPath, outputPath) = (options.positional[0], options.positional[1])
guard let stream = FileContents.read(inputPath) else {
    exitWithError("swiftvt-example-decode: cannot read \(inputPath): \(OutputFile.lastErrorDescription)")
}
guard let output = OutputFile(creating: outputPath) else {
    exitWithError("swiftvt-example-decode: cannot create \(outputPath): \(OutputFile.lastErrorDescription)")
}

/// What the output handler (on the session's decoding thread) shares with the main thread.
struct DecodedFramesSink: ~Copyable {
    var file: OutputFile
    var frames = 0
    var failure: String?
}
let sink = Mutex(DecodedFramesSink(file: output))

/// The byte range of each access unit in the file (7.4.1.2.3, by the H264 module's assembler):
/// the session decodes one access unit per sample.
var accessUnitRanges: [Range<Int>] = []
stream.withUnsafeBytes { bytes in
    var assembler = AccessUnitAssembler()
    AnnexB.forEachNALUnit(in: bytes) { unit in
        let step = assembler.push(nalUnit: UnsafeRawBufferPointer(rebasing: bytes[unit.payloadRange]))
        if step.continuesPreviousPicture, accessUnitRanges.count >= 2, let last = accessUnitRanges.popLast() {
            // Parameter sets between two slices of one picture (as RTP payloaders write them):
            // they and the slice after them belong to the previous access unit.
            let previous = accessUnitRanges[accessUnitRanges.count - 1]
            accessUnitRanges[accessUnitRanges.count - 1] = previous.lowerBound..<last.upperBound
        }
        if step.startsNewAccessUnit || accessUnitRanges.isEmpty {
            accessUnitRanges.append(unit.startCodeOffset..<unit.payloadRange.upperBound)
        } else if let last = accessUnitRanges.last {
            accessUnitRanges[accessUnitRanges.count - 1] = last.lowerBound..<unit.payloadRange.upperBound
        }
    }
}

let frameDuration = MediaTime(value: 1, timescale: 25)  // an Annex B file carries no time stamps
var builder = H264SampleBuilder()
var session: DecompressionSession?
do {
    for (index, range) in accessUnitRanges.enumerated() {
        let unit = try stream.withUnsafeBytes { bytes in try builder.read(UnsafeRawBufferPointer(rebasing: bytes[range])) }
        guard let format = builder.formatDescription else { continue }  // nothing decodable before an SPS and a PPS
        if unit.formatChanged, let running = session, !running.canAccept(format) {
            try running.finishDelayedFrames()  // the frames of the old format first
            running.invalidate()
            session = nil
        }
        if session == nil {
            session = try DecompressionSession(
                formatDescription: format, decoderSpecification: DecoderSpecification(hardwarePolicy: options.hardwarePolicy),
                backends: [VAH264DecoderFactory(), NVDECH264DecoderFactory(), LibavcodecDecoderFactory()]
            ) { frame in
                sink.withLock { sink in
                    guard let picture = frame.imageBuffer else {
                        if let status = frame.status, sink.failure == nil { sink.failure = "\(status)" }
                        return
                    }
                    for (planeIndex, plane) in picture.planes.enumerated() {
                        let bytesPerSample = picture.pixelFormat.planeLayout(at: planeIndex)?.bytesPerSample ?? 1
                        for row in 0..<plane.height {
                            sink.file.write(UnsafeRawBufferPointer(
                                start: plane.baseAddress + row * plane.bytesPerRow, count: plane.width * bytesPerSample))
                        }
                    }
                    sink.frames += 1
                }
            }
            if let session { print("decoding \(inputPath) with \(session.activeBackendName)") }
        }
        let isKeyFrame = stream[range].withUnsafeBytes { bytes in
            var idr = false
            AnnexB.forEachNALUnit(in: bytes) { idr = idr || bytes[$0.payloadOffset] & 0x1F == 5 }
            return idr
        }
        let sample = try H264SampleBuilder.sampleBuffer(
            unit, original: BlockBuffer(Array(stream[range])), inBandParameterSets: [], formatDescription: format,
            timing: SampleTimingInfo(duration: frameDuration, presentationTimeStamp: frameDuration.multiplied(by: index)),
            isSync: isKeyFrame)
        try session?.decode(sample, flags: .enableAsynchronousDecompression)
    }
    try session?.finishDelayedFrames()
} catch {
    sink.withLock { $0.file.discard() }
    exitWithError("swiftvt-example-decode: \(inputPath): \(error)")
}
let backend = session?.activeBackendName ?? "no decoder (the file holds no SPS and PPS)"
session?.invalidate()
let (frames, failure) = sink.withLock { ($0.frames, $0.failure) }
if failure != nil || frames == 0 { sink.withLock { $0.file.discard() } }
if let failure { exitWithError("swiftvt-example-decode: \(inputPath): a frame failed to decode: \(failure)") }
guard frames > 0 else {
    exitWithError("swiftvt-example-decode: \(inputPath): no frame decoded (\(accessUnitRanges.count) access units; "
        + "\(backend)); is it an H.264 Annex B stream?")
}
guard sink.withLock({ $0.file.commit() }) else {
    exitWithError("swiftvt-example-decode: could not write \(outputPath): \(OutputFile.lastErrorDescription)")
}
print("\(frames) frames from \(accessUnitRanges.count) access units written to \(outputPath) (\(backend))")
