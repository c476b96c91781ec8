import Glibc
import H264
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Synchronization

/// Test inputs (made at run time from the corpus) and the checks every test shares: encoding a
/// clip, parsing the output's parameter sets and slice headers with the H264 module, decoding it
/// back with SwiftVT's own decoder, and PSNR.
enum Clips {
    static let ciscoFile = "yuv/CiscoVT2people_320x192_12fps.yuv"
    static let ciscoWidth = 320, ciscoHeight = 192

    /// The 9 I420 frames of the corpus's raw clip.
    static let cisco: [PixelBuffer]? = {
        guard let directory = Corpus.directory, let bytes = Corpus.readFile(directory + "/" + ciscoFile) else {
            return nil
        }
        let frameSize = ciscoWidth * ciscoHeight * 3 / 2
        return (0..<(bytes.count / frameSize)).compactMap { index in
            try? makeI420(
                Array(bytes[index * frameSize..<(index + 1) * frameSize]), width: ciscoWidth, height: ciscoHeight)
        }
    }()

    /// `count` frames of the Cisco clip played forwards and backwards (no jump, so no scene cut).
    static func ciscoLoop(_ count: Int) -> [PixelBuffer]? {
        guard let cisco, !cisco.isEmpty else { return nil }
        let cycle = cisco + cisco.reversed().dropFirst().dropLast()
        return (0..<count).map { cycle[$0 % cycle.count] }
    }

    static func makeI420(_ bytes: [UInt8], width: Int, height: Int) throws -> PixelBuffer {
        let picture = try PixelBuffer(width: width, height: height, pixelFormat: .i420)
        var offset = 0
        for plane in picture.planes {
            for row in 0..<plane.height {
                bytes.withUnsafeBytes { source in
                    (plane.baseAddress + row * plane.bytesPerRow).copyMemory(
                        from: source.baseAddress! + offset, byteCount: plane.width)
                }
                offset += plane.width
            }
        }
        return picture
    }

    /// The 300 frames of the corpus's 720p stream, decoded by SwiftVT's DecompressionSession
    /// (libavcodec) in process: the source of the bit-rate tests.
    static let hd720: [PixelBuffer]? = {
        guard let entry = Corpus.entry("VID_1280x720_cabac_temporal_direct.264"), let bytes = Corpus.bytes(of: entry),
            let stream = try? AnnexBStream(bytes)
        else { return nil }
        return try? decode(stream.samples, format: stream.format).map(\.picture)
    }()

    /// Decodes AVCC samples; pictures in output order with their PTS.
    static func decode(_ samples: [SampleBuffer], format: FormatDescription) throws -> [(
        picture: PixelBuffer, pts: MediaTime
    )] {
        let frames = Mutex<[(picture: PixelBuffer, pts: MediaTime)]>([])
        let session = try DecompressionSession(
            formatDescription: format, backends: [LibavcodecDecoderFactory()]
        ) { frame in
            if let image = frame.imageBuffer { frames.withLock { $0.append((image, frame.presentationTimeStamp)) } }
        }
        for sample in samples { try session.decode(sample) }
        try session.finishDelayedFrames()
        session.invalidate()
        return frames.withLock { $0 }
    }
}

/// An Annex B corpus stream as AVCC samples (SPS/PPS moved to the format description).
struct AnnexBStream {
    var format: FormatDescription
    var samples: [SampleBuffer]

    init(_ bytes: [UInt8]) throws {
        var assembler = AccessUnitAssembler()
        var units: [[[UInt8]]] = []
        var sets: [[UInt8]] = []
        bytes.withUnsafeBytes { data in
            AnnexB.forEachNALUnit(in: data) { unit in
                let nal = Array(bytes[unit.payloadRange])
                let step = assembler.push(nalUnit: UnsafeRawBufferPointer(rebasing: data[unit.payloadRange]))
                if step.startsNewAccessUnit || units.isEmpty { units.append([]) }
                let type = nal[0] & 0x1F
                if type == 7 || type == 8 {
                    if !sets.contains(nal) { sets.append(nal) }
                } else {
                    units[units.count - 1].append(nal)
                }
            }
        }
        let format = try FormatDescription(h264ParameterSets: sets)
        self.format = format
        let duration = MediaTime(value: 1, timescale: 25)
        samples = try units.filter { !$0.isEmpty }.enumerated().map { index, unit in
            var avcc: [UInt8] = []
            for nal in unit {
                avcc += [
                    UInt8(nal.count >> 24 & 0xFF), UInt8(nal.count >> 16 & 0xFF), UInt8(nal.count >> 8 & 0xFF),
                    UInt8(nal.count & 0xFF)
                ]
                avcc += nal
            }
            return try SampleBuffer(
                dataBuffer: BlockBuffer(avcc), formatDescription: format,
                timings: .uniform(
                    SampleTimingInfo(duration: duration, presentationTimeStamp: duration.multiplied(by: index))))
        }
    }
}

/// The result of encoding a clip.
struct Encoded {
    var frames: [EncodedFrame]
    /// Frames output so far after each encode call (for latency checks).
    var outputsAfterEncode: [Int]
    var frameDelay: Int
    var formatDescription: FormatDescription?

    var samples: [SampleBuffer] { frames.compactMap(\.sampleBuffer) }
    var totalBytes: Int { samples.reduce(0) { $0 + $1.totalSampleSize } }

    /// Bits per second over the clip (total bytes over the summed durations).
    var bitRate: Double {
        let seconds = samples.reduce(0.0) { $0 + $1.duration.seconds }
        return Double(totalBytes * 8) / seconds
    }

    /// The SPS and PPS from the format description.
    var parameterSets: (SequenceParameterSet, PictureParameterSet)? {
        guard let format = formatDescription, let spsBytes = format.h264SequenceParameterSets.first,
            let ppsBytes = format.h264PictureParameterSets.first,
            let sps = try? SequenceParameterSet.parse(nalUnit: spsBytes),
            let pps = try? PictureParameterSet.parse(nalUnit: ppsBytes, sequenceParameterSets: { _ in sps })
        else { return nil }
        return (sps, pps)
    }

    /// The first slice header of every sample, in decode order.
    var sliceHeaders: [SliceHeader] {
        guard let (sps, pps) = parameterSets else { return [] }
        return samples.compactMap { sample -> SliceHeader? in
            guard let data = sample.dataBuffer?.copyToArray() else { return nil }
            var header: SliceHeader?
            data.withUnsafeBytes { bytes in
                try? AVCC.forEachNALUnit(in: bytes, nalUnitHeaderLength: 4) { range in
                    let type = bytes[range.lowerBound] & 0x1F
                    guard header == nil, type == 1 || type == 5 else { return }
                    header = try? SliceHeader.parse(
                        nalUnit: UnsafeRawBufferPointer(rebasing: bytes[range]), pictureParameterSets: { _ in pps },
                        sequenceParameterSets: { _ in sps })
                }
            }
            return header
        }
    }

    /// PTS of the IDR samples, in presentation order.
    var idrTimes: [MediaTime] {
        zip(samples, sliceHeaders).filter { $0.1.idrPicFlag }.map(\.0.presentationTimeStamp).sorted()
    }
}

enum Encoder {
    static let frameDuration12 = MediaTime(value: 1, timescale: 12)

    /// Encodes `pictures` with one session and completes them.
    static func encode(
        _ pictures: [PixelBuffer], properties: CompressionProperties = .init(),
        frameDuration: MediaTime = frameDuration12,
        forceKeyFrameAt forced: Set<Int> = [], midway: ((CompressionSession, Int) throws -> Void)? = nil
    ) throws -> Encoded {
        guard let first = pictures.first else { return Encoded(frames: [], outputsAfterEncode: [], frameDelay: 0) }
        let frames = Mutex<[EncodedFrame]>([])
        let session = try CompressionSession(
            width: first.width, height: first.height, sourcePixelFormat: first.pixelFormat, properties: properties,
            backends: [X264EncoderFactory()]
        ) { frame in frames.withLock { $0.append(frame) } }
        defer { session.invalidate() }
        try session.prepareToEncodeFrames()
        var outputs: [Int] = []
        for (index, picture) in pictures.enumerated() {
            try midway?(session, index)
            try session.encode(
                picture, presentationTimeStamp: frameDuration.multiplied(by: index), duration: frameDuration,
                frameProperties: FrameProperties(forceKeyFrame: forced.contains(index)), frameReference: UInt64(index))
            outputs.append(frames.withLock { $0.count })
        }
        try session.completeFrames()
        return Encoded(
            frames: frames.withLock { $0 }, outputsAfterEncode: outputs, frameDelay: session.frameDelay,
            formatDescription: session.formatDescription)
    }
}

/// PSNR of the luma planes of two pictures of the same size.
func psnrY(_ a: PixelBuffer, _ b: PixelBuffer) -> Double {
    let pa = a.planes[0]
    let pb = b.planes[0]
    var sum: UInt64 = 0
    for row in 0..<pa.height {
        let ra = (pa.baseAddress + row * pa.bytesPerRow).assumingMemoryBound(to: UInt8.self)
        let rb = (pb.baseAddress + row * pb.bytesPerRow).assumingMemoryBound(to: UInt8.self)
        for column in 0..<pa.width {
            let d = Int(ra[column]) - Int(rb[column])
            sum &+= UInt64(d * d)
        }
    }
    let mse = Double(sum) / Double(pa.width * pa.height)
    return mse == 0 ? 100 : 10 * log10(255 * 255 / mse)
}

/// Mean luma PSNR of the decoded output against the source, frame by frame in presentation order.
func meanPSNR(_ encoded: Encoded, source: [PixelBuffer]) throws -> (psnr: Double, decodedCount: Int) {
    guard let format = encoded.formatDescription else { return (0, 0) }
    let decoded = try Clips.decode(encoded.samples, format: format)
    let values = zip(decoded, source).map { psnrY($0.picture, $1) }
    return (values.reduce(0, +) / Double(max(values.count, 1)), decoded.count)
}
