import H264
import MediaCore
import SwiftVT
import SwiftVTTestSupport
import Synchronization

/// A corpus stream as a decompression session sees it: an H.264 format description and one AVCC
/// sample per access unit.
struct CorpusStream {
    var format: FormatDescription
    var samples: [SampleBuffer]
    /// The NAL units of each access unit (Annex B payloads), for tests that damage them.
    var accessUnits: [[[UInt8]]]

    static let frameDuration = MediaTime(value: 1, timescale: 25)

    /// Splits an Annex B stream into access units (7.4.1.2.3, with the H264 module's assembler)
    /// and makes AVCC samples. The SPS and PPS go into the format description (all distinct
    /// ones); when the stream redefines an id with different content they also stay in the
    /// samples, described as `avc3` (in-band parameter sets), since a decoder needs the change
    /// at the point where it happens.
    static func load(_ bytes: [UInt8]) throws -> CorpusStream {
        var assembler = AccessUnitAssembler()
        var accessUnits: [[[UInt8]]] = []
        var parameterSets: [[UInt8]] = []
        var parameterSetsByKey: [String: [UInt8]] = [:]
        var redefined = false
        bytes.withUnsafeBytes { data in
            AnnexB.forEachNALUnit(in: data) { unit in
                let nal = Array(bytes[unit.payloadRange])
                let step = assembler.push(nalUnit: UnsafeRawBufferPointer(rebasing: data[unit.payloadRange]))
                if step.startsNewAccessUnit || accessUnits.isEmpty { accessUnits.append([]) }
                accessUnits[accessUnits.count - 1].append(nal)
                let type = NALUnitType(rawValue: nal[0])
                if type == .sequenceParameterSet || type == .pictureParameterSet {
                    let key = "\(type.rawValue)/\(Self.parameterSetID(nal, type: type))"
                    if let known = parameterSetsByKey[key] {
                        if known != nal { redefined = true }
                    } else {
                        parameterSetsByKey[key] = nal
                        parameterSets.append(nal)
                    }
                }
            }
        }
        let format = try FormatDescription(h264ParameterSets: parameterSets, inBandParameterSets: redefined)
        var samples: [SampleBuffer] = []
        var kept: [[[UInt8]]] = []
        for (index, unit) in accessUnits.enumerated() {
            var avcc: [UInt8] = []
            for nal in unit {
                let type = NALUnitType(rawValue: nal[0])
                if !redefined && (type == .sequenceParameterSet || type == .pictureParameterSet) { continue }
                avcc += [
                    UInt8(nal.count >> 24 & 0xFF), UInt8(nal.count >> 16 & 0xFF), UInt8(nal.count >> 8 & 0xFF),
                    UInt8(nal.count & 0xFF)
                ]
                avcc += nal
            }
            guard !avcc.isEmpty else { continue }
            kept.append(unit)
            samples.append(try makeSample(avcc, index: samples.count, format: format))
            _ = index
        }
        return CorpusStream(format: format, samples: samples, accessUnits: kept)
    }

    static func makeSample(_ avcc: [UInt8], index: Int, format: FormatDescription) throws -> SampleBuffer {
        try SampleBuffer(
            dataBuffer: BlockBuffer(avcc), formatDescription: format,
            timings: .uniform(
                SampleTimingInfo(
                    duration: frameDuration, presentationTimeStamp: frameDuration.multiplied(by: index))))
    }

    /// The id in an SPS (first ue(v) after 3 bytes) or PPS (first ue(v)): enough to tell
    /// redefinitions apart. Reads Exp-Golomb directly (no emulation prevention this early).
    private static func parameterSetID(_ nal: [UInt8], type: NALUnitType) -> Int {
        var bit = (type == .sequenceParameterSet ? 4 : 1) * 8
        func readBit() -> Int {
            guard bit / 8 < nal.count else { return 1 }
            defer { bit += 1 }
            return Int(nal[bit / 8] >> (7 - UInt8(bit % 8)) & 1)
        }
        var zeros = 0
        while readBit() == 0 && zeros < 32 { zeros += 1 }
        var value = 0
        for _ in 0..<zeros { value = value << 1 | readBit() }
        return (1 << zeros) - 1 + value
    }
}

/// MD5 of pictures as the corpus's `ref_md5` is computed: every plane, row by row, only the
/// picture's samples (no row padding), pictures in output order.
struct PictureDigest {
    private var md5 = MD5()
    private(set) var pictureCount = 0

    mutating func add(_ picture: PixelBuffer) {
        for (index, plane) in picture.planes.enumerated() {
            let bytesPerSample = picture.pixelFormat.planeLayout(at: index)?.bytesPerSample ?? 1
            for row in 0..<plane.height {
                md5.update(
                    UnsafeRawBufferPointer(
                        start: plane.baseAddress + row * plane.bytesPerRow, count: plane.width * bytesPerSample))
            }
        }
        pictureCount += 1
    }

    /// Adds a bi-planar picture as the planar one it was converted from: chroma deinterleaved,
    /// and P010's high-bit samples shifted back to I010's low bits.
    mutating func addDeinterleaved(_ picture: PixelBuffer) {
        let tenBit = picture.pixelFormat.bitDepth > 8
        func sample(_ row: UnsafeMutableRawPointer, _ index: Int) -> [UInt8] {
            guard tenBit else { return [row.load(fromByteOffset: index, as: UInt8.self)] }
            let value = UInt16(littleEndian: row.loadUnaligned(fromByteOffset: 2 * index, as: UInt16.self)) >> 6
            return [UInt8(value & 0xFF), UInt8(value >> 8)]
        }
        let luma = picture.planes[0]
        for row in 0..<luma.height {
            let base = luma.baseAddress + row * luma.bytesPerRow
            md5.update((0..<luma.width).flatMap { sample(base, $0) })
        }
        let chroma = picture.planes[1]
        for component in 0..<2 {
            for row in 0..<chroma.height {
                let base = chroma.baseAddress + row * chroma.bytesPerRow
                md5.update((0..<chroma.width).flatMap { sample(base, 2 * $0 + component) })
            }
        }
        pictureCount += 1
    }

    mutating func finalize() -> String { md5.finalize() }
}

/// Collects what a session's output handler receives, from any thread.
final class OutputCollector: Sendable {
    struct Collected {
        var digest = PictureDigest()
        var frames: [DecodedFrame] = []
        var failures: [VTError] = []
        var keepFrames: Bool
    }

    let state: Mutex<Collected>
    let deinterleave: Bool

    init(keepFrames: Bool = false, deinterleave: Bool = false) {
        state = Mutex(Collected(keepFrames: keepFrames))
        self.deinterleave = deinterleave
    }

    var handler: DecompressionOutputHandler {
        { [self] frame in
            state.withLock { collected in
                if let status = frame.status { collected.failures.append(status) }
                if let picture = frame.imageBuffer {
                    if deinterleave {
                        collected.digest.addDeinterleaved(picture)
                    } else {
                        collected.digest.add(picture)
                    }
                }
                if collected.keepFrames { collected.frames.append(frame) }
            }
        }
    }

    var pictureCount: Int { state.withLock { $0.digest.pictureCount } }
    var failures: [VTError] { state.withLock { $0.failures } }
    var frames: [DecodedFrame] { state.withLock { $0.frames } }
    func digest() -> String { state.withLock { $0.digest.finalize() } }
}
