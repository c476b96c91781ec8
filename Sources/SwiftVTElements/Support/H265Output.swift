import CGStreamer
import CSwiftVTShim
import H265
import MediaCore

/// What vtenc_h265 makes from the session's HEVC sample buffers (hvc1: 4-byte length-prefixed
/// NAL units, VPS/SPS/PPS in the description's hvcC only): `video/x-h265` caps and access units
/// in the three stream formats h265parse and x265enc speak.
enum H265Output {
    enum StreamFormat: String, Sendable {
        /// The samples as the session makes them; the parameter sets only in `codec_data`
        /// (ISO/IEC 14496-15 8.4.1, array_completeness 1).
        case hvc1
        /// `codec_data` too, and the parameter sets in band before every IRAP picture (8.4.1:
        /// array_completeness 0, the sample entry is `hev1`).
        case hev1
        /// Annex B (start codes), parameter sets before every IRAP picture, no `codec_data`: what
        /// x265enc writes and rtph265pay and MPEG-TS take.
        case byteStream = "byte-stream"
    }

    /// `video/x-h265` for the description's active SPS with the fields h265parse writes
    /// (``H265OutputCaps``: size, chroma format, bit depths, profile, tier, level), the input's
    /// frame rate and pixel aspect ratio, and `codec_data` for hvc1 and hev1; `profile` and
    /// `level` replace the stream's own labels (``H265DownstreamConstraints/labels(for:format:)``:
    /// a profile it conforms to, a higher level). nil when the description holds no SPS that
    /// parses or no hvcC record.
    static func caps(
        _ description: FormatDescription, streamFormat: StreamFormat, frameRate: FrameRate,
        pixelAspectRatio: (Int32, Int32)?, profile: String? = nil, level: String? = nil
    ) -> UnsafeMutablePointer<GstCaps>? {
        guard let spsBytes = description.hevcSequenceParameterSets.first,
            let sps = try? H265SequenceParameterSet.parse(nalUnit: spsBytes),
            let codecData = hvcC(description, streamFormat: streamFormat)
        else { return nil }
        var fields = H265OutputCaps(
            sps: sps, codecData: codecData, streamFormat: streamFormat == .hvc1 ? .hvc1 : .hev1,
            picturesAreFields: false, upstreamFrameRate: frameRate.isKnown ? frameRate : nil)
        if let profile { fields.profile = profile }
        if let level { fields.level = level }
        guard let caps = fields.makeCaps() else { return nil }
        let structure = gst_caps_get_structure(caps, 0)
        // An encoder's caps, as vtenc's and x265enc's: no `parsed` (a parser's field).
        gst_structure_remove_field(structure, "parsed")
        if streamFormat == .byteStream {
            swiftvt_caps_set_string(caps, "stream-format", streamFormat.rawValue)
            gst_structure_remove_field(structure, "codec_data")
        }
        // The input's aspect ratio, as vtenc gives it: x265 writes no sample aspect ratio in the
        // VUI (E.3.1) unless told, so the SPS alone would say nothing.
        if let (n, d) = pixelAspectRatio { swiftvt_caps_set_fraction(caps, "pixel-aspect-ratio", max(1, n), max(1, d)) }
        return caps
    }

    /// The hvcC record for `streamFormat`: the description's own for hvc1; for hev1 the same sets
    /// with array_completeness 0 (14496-15 8.3.3.1.3: 1 would say no parameter set is in band).
    /// Unused for byte-stream, but checked, so every format fails alike on a bad description.
    private static func hvcC(_ description: FormatDescription, streamFormat: StreamFormat) -> [UInt8]? {
        guard streamFormat == .hev1 else { return description.hevcDecoderConfigurationRecord }
        return try? FormatDescription(
            hevcParameterSets: description.parameterSets, nalUnitHeaderLength: description.nalUnitHeaderLength,
            inBandParameterSets: true
        ).hevcDecoderConfigurationRecord
    }

    /// access_unit_delimiter_rbsp() (7.3.2.5) for an access unit's NAL units: its TemporalId is
    /// the access unit's (7.4.2.2, that of its VCL NAL units, types 0...31), and pic_type (Table
    /// 7-7) 0 (I slices only) for an IRAP picture, whose slices are all I (7.4.7.1), else 2 (B, P
    /// or I slices may be present), which holds for any picture without reading its slices.
    static func accessUnitDelimiter(for ranges: [Range<Int>], in sample: UnsafeRawBufferPointer) -> [UInt8] {
        var temporalIDPlusOne: UInt8 = 1
        var irap = false
        for range in ranges where range.count >= 2 {
            let type = sample[range.lowerBound] >> 1 & 0x3F
            guard type < 32 else { continue }
            temporalIDPlusOne = max(1, sample[range.lowerBound + 1] & 0x07)
            irap = (16...23).contains(type)
            break
        }
        let picType: UInt8 = irap ? 0 : 2
        // NAL unit header (type 35, layer 0), then pic_type u(3) and rbsp_trailing_bits.
        return [35 << 1, temporalIDPlusOne, picType << 5 | 0x10]
    }

    /// An hvc1 sample rewritten for hev1 or byte-stream: each NAL unit led by a 4-byte length
    /// (hev1) or a 4-byte start code (Annex B, B.2), and for an IRAP picture the VPS, SPS and PPS
    /// first (7.4.2.4.4: parameter sets precede the first VCL NAL unit of the access unit; after
    /// an access unit delimiter if the sample starts with one, which must come first, 7.4.2.4.4).
    /// The bytes must be copied once into this layout (the sample lives in Swift memory GStreamer
    /// cannot own, and the units move).
    struct AccessUnitLayout {
        let nalUnits: [Range<Int>]
        let parameterSets: [[UInt8]]
        /// NAL units of the sample written before the parameter sets (an access unit delimiter).
        let leading: Int
        /// An access unit delimiter written first, when asked for and the sample has none.
        let delimiter: [UInt8]?
        let startCodes: Bool
        /// The bytes ``write(_:into:)`` writes.
        let size: Int

        /// nil when `sample` is not a sequence of `nalUnitHeaderLength`-byte length-prefixed units.
        /// `delimited`: an access unit delimiter first (``accessUnitDelimiter(for:in:)``).
        init?(
            _ sample: UnsafeRawBufferPointer, description: FormatDescription, isKeyFrame: Bool, startCodes: Bool,
            delimited: Bool = false
        ) {
            guard
                let ranges = try? H265LengthPrefixed.nalUnitRanges(
                    in: sample, nalUnitHeaderLength: description.nalUnitHeaderLength)
            else { return nil }
            nalUnits = ranges
            parameterSets = isKeyFrame ? description.parameterSets : []
            // NAL unit type 35 is the access unit delimiter (Table 7-1).
            leading = ranges.first.map { !$0.isEmpty && sample[$0.lowerBound] >> 1 & 0x3F == 35 ? 1 : 0 } ?? 0
            delimiter = delimited && leading == 0 ? H265Output.accessUnitDelimiter(for: ranges, in: sample) : nil
            self.startCodes = startCodes
            size =
                (delimiter.map { 4 + $0.count } ?? 0) + parameterSets.reduce(0) { $0 + 4 + $1.count }
                + ranges.reduce(0) { $0 + 4 + $1.count }
        }

        /// Writes the access unit into `output` (at least ``size`` bytes).
        func write(_ sample: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) {
            var offset = 0
            func append(_ nal: UnsafeRawBufferPointer) {
                let header = startCodes ? UInt32(1) : UInt32(truncatingIfNeeded: nal.count)
                output.storeBytes(of: header.bigEndian, toByteOffset: offset, as: UInt32.self)
                UnsafeMutableRawBufferPointer(rebasing: output[(offset + 4)..<(offset + 4 + nal.count)]).copyMemory(
                    from: nal)
                offset += 4 + nal.count
            }
            if let delimiter { delimiter.withUnsafeBytes { append($0) } }
            for range in nalUnits.prefix(leading) { append(UnsafeRawBufferPointer(rebasing: sample[range])) }
            for set in parameterSets { set.withUnsafeBytes { append($0) } }
            for range in nalUnits.dropFirst(leading) { append(UnsafeRawBufferPointer(rebasing: sample[range])) }
        }
    }
}
