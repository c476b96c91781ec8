import CGStreamer
import CSwiftVTShim
import H264
import MediaCore

/// What vtenc and vtmultipasssink both make from an encoder's sample buffers: H.264 caps and
/// Annex B access units.
enum H264Output {
    enum StreamFormat: String, Sendable {
        case avc
        /// avc with the SPS/PPS also in band before every IDR picture (ISO/IEC 14496-15 `avc3`):
        /// a player joining at any key frame has them, as with byte-stream.
        case avc3
        case byteStream = "byte-stream"
    }

    /// `video/x-h264` with alignment au, size, frame rate and pixel aspect ratio when known,
    /// profile and level from the SPS (labelled as `downstream` takes them: a constrained-baseline
    /// stream is a baseline stream for a capsfilter asking baseline), and for avc and avc3 the
    /// avcC record as codec_data. nil when the description has no avcC for them.
    static func caps(
        _ description: FormatDescription, streamFormat: StreamFormat, width: Int, height: Int,
        frameRate: FrameRate, pixelAspectRatio: (Int32, Int32)? = nil,
        downstream: H264DownstreamConstraints = H264DownstreamConstraints(profiles: nil, levels: nil)
    ) -> UnsafeMutablePointer<GstCaps>? {
        guard let caps = gst_caps_new_empty_simple("video/x-h264") else { return nil }
        swiftvt_caps_set_string(caps, "stream-format", streamFormat.rawValue)
        swiftvt_caps_set_string(caps, "alignment", "au")
        swiftvt_caps_set_int(caps, "width", Int32(clamping: width))
        swiftvt_caps_set_int(caps, "height", Int32(clamping: height))
        frameRate.setField(of: caps)
        if let (n, d) = pixelAspectRatio { swiftvt_caps_set_fraction(caps, "pixel-aspect-ratio", max(1, n), max(1, d)) }
        if let spsBytes = description.h264SequenceParameterSets.first,
            let sps = try? SequenceParameterSet.parse(nalUnit: spsBytes)
        {
            if let profile = downstream.profileLabel(for: sps) { swiftvt_caps_set_string(caps, "profile", profile) }
            if let level = downstream.levelLabel(for: sps) { swiftvt_caps_set_string(caps, "level", level) }
        }
        if streamFormat != .byteStream {
            guard let record = description.avcDecoderConfigurationRecord else {
                gst_caps_unref(caps)
                return nil
            }
            record.withUnsafeBufferPointer {
                swiftvt_caps_set_bytes(caps, "codec_data", $0.baseAddress, gsize($0.count))
            }
        }
        return caps
    }

    /// An AVCC access unit as Annex B (H.264 Annex B, what rtph264pay, MPEG-TS and .h264 files
    /// take): 4-byte start codes instead of the lengths, optionally an access unit delimiter first
    /// (7.3.2.4; see ``AccessUnitDelimiter``), and the SPS/PPS in front of an IDR picture
    /// (7.4.1.2.3: parameter sets precede the pictures that use them, after the delimiter;
    /// repeating them at each IDR lets a player start there). The bytes must be copied once into
    /// this layout.
    struct AnnexBLayout {
        let nalUnits: [Range<Int>]
        let delimiter: [UInt8]?
        let parameterSets: [[UInt8]]
        /// The bytes ``write(_:into:)`` writes.
        let size: Int
        /// 0: 4-byte start codes (Annex B); else the length size of each NAL unit (avc3: the
        /// description's, as its avcC says).
        let lengthSize: Int

        /// nil when `avcc` is not a sequence of `nalUnitHeaderLength`-byte length-prefixed units.
        /// `startCodes` false keeps the lengths (avc3: the same units, parameter sets in band).
        init?(
            _ avcc: UnsafeRawBufferPointer, description: FormatDescription, isKeyFrame: Bool, delimited: Bool = false,
            startCodes: Bool = true
        ) {
            guard let ranges = try? AVCC.nalUnitRanges(in: avcc, nalUnitHeaderLength: description.nalUnitHeaderLength)
            else {
                return nil
            }
            lengthSize = startCodes ? 0 : description.nalUnitHeaderLength
            nalUnits = ranges
            delimiter =
                delimited
                ? AccessUnitDelimiter.nalUnit(forAccessUnit: ranges.map { UnsafeRawBufferPointer(rebasing: avcc[$0]) })
                : nil
            parameterSets = isKeyFrame ? description.parameterSets : []
            let prefix = startCodes ? 4 : description.nalUnitHeaderLength
            size =
                (delimiter.map { prefix + $0.count } ?? 0) + parameterSets.reduce(0) { $0 + prefix + $1.count }
                + ranges.reduce(0) { $0 + prefix + $1.count }
        }

        /// Writes the access unit into `output` (at least ``size`` bytes).
        func write(_ avcc: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
            var offset = 0
            func append(_ nal: UnsafeRawBufferPointer) {
                let prefix = lengthSize == 0 ? 4 : lengthSize
                // A start code, or the length big-endian in `lengthSize` bytes.
                let value = lengthSize == 0 ? 1 : nal.count
                for index in 0..<prefix {
                    output[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * (prefix - 1 - index)))
                }
                UnsafeMutableRawBufferPointer(rebasing: output[(offset + prefix)..<(offset + prefix + nal.count)])
                    .copyMemory(from: nal)
                offset += prefix + nal.count
            }
            if let delimiter { delimiter.withUnsafeBytes { append($0) } }
            for set in parameterSets { set.withUnsafeBytes { append($0) } }
            for range in nalUnits { append(UnsafeRawBufferPointer(rebasing: avcc[range])) }
        }
    }

    /// The access unit delimiter to put in front of an AVCC access unit, with its length in the
    /// description's `nalUnitHeaderLength` bytes (big-endian, as every length in the sample);
    /// nil when `avcc` is not a sequence of length-prefixed units.
    static func delimiterPrefix(_ avcc: UnsafeRawBufferPointer, description: FormatDescription) -> [UInt8]? {
        let lengthSize = description.nalUnitHeaderLength
        guard lengthSize > 0, let ranges = try? AVCC.nalUnitRanges(in: avcc, nalUnitHeaderLength: lengthSize) else {
            return nil
        }
        let delimiter = AccessUnitDelimiter.nalUnit(
            forAccessUnit: ranges.map { UnsafeRawBufferPointer(rebasing: avcc[$0]) })
        let length = (0..<lengthSize).reversed().map { UInt8(truncatingIfNeeded: delimiter.count >> (8 * $0)) }
        return length + delimiter
    }
}
