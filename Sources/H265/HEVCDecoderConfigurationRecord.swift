import MediaCore

/// The hvcC atom: HEVCDecoderConfigurationRecord, ISO/IEC 14496-15 8.3.3.1.
///
/// It carries the parameter sets out of band (MP4 sample descriptions, GStreamer's `codec_data`
/// for `stream-format=hvc1/hev1`), a summary of the stream (profile, tier, level, chroma format,
/// bit depths, frame rate, temporal layers) and the size of the NAL unit length prefixes.
public struct HEVCDecoderConfigurationRecord: Hashable, Sendable {
    /// One array of NAL units of a single type (8.3.3.1: VPS, SPS, PPS, prefix or suffix SEI).
    public struct NALUnitArray: Hashable, Sendable {
        /// array_completeness: every NAL unit of this type the stream uses is in the array (1), or
        /// more may come in the samples (0, as `hev1` allows).
        public var arrayCompleteness: Bool
        public var nalUnitType: H265NALUnitType
        /// The NAL units (header included, escaped, no start code or length).
        public var nalUnits: [[UInt8]]

        public init(arrayCompleteness: Bool, nalUnitType: H265NALUnitType, nalUnits: [[UInt8]]) {
            self.arrayCompleteness = arrayCompleteness
            self.nalUnitType = nalUnitType
            self.nalUnits = nalUnits
        }
    }

    /// configurationVersion: 1 (the only version 14496-15 defines).
    public var configurationVersion: UInt8 = 1
    /// general_profile_space, general_tier_flag, general_profile_idc, the compatibility flags and
    /// the 48 constraint indicator bits, as in the SPS's profile_tier_level (7.3.3).
    public var generalProfile = H265ProfileTierLevel.Profile()
    /// general_level_idc.
    public var generalLevelIdc: UInt8 = 0
    /// min_spatial_segmentation_idc, 0...4095 (E.3.1; 0 when the VUI does not say).
    public var minSpatialSegmentationIdc: Int = 0
    /// parallelismType: 0 mixed or unknown, 1 slices, 2 tiles, 3 wavefront (entropy coding sync).
    public var parallelismType: UInt8 = 0
    /// chromaFormat: chroma_format_idc, 0...3.
    public var chromaFormat: UInt8 = 1
    /// bitDepthLumaMinus8, bitDepthChromaMinus8: 0...7 (the 3-bit fields cannot say 16 bits).
    public var bitDepthLumaMinus8: UInt8 = 0
    public var bitDepthChromaMinus8: UInt8 = 0
    /// avgFrameRate in frames per 256 seconds; 0 for unspecified.
    public var avgFrameRate: UInt16 = 0
    /// constantFrameRate: 0 not known, 1 constant, 2 constant per temporal layer.
    public var constantFrameRate: UInt8 = 0
    /// numTemporalLayers: sps_max_sub_layers_minus1 + 1, or 0 when not known.
    public var numTemporalLayers: UInt8 = 0
    /// temporalIdNested: sps_temporal_id_nesting_flag.
    public var temporalIdNested = false
    /// lengthSizeMinusOne + 1: 1, 2 or 4.
    public var nalUnitHeaderLength: Int = 4
    public var arrays: [NALUnitArray] = []

    public init() {}

    /// The NAL units of every array of `type`, in order.
    public func nalUnits(ofType type: H265NALUnitType) -> [[UInt8]] {
        arrays.filter { $0.nalUnitType == type }.flatMap(\.nalUnits)
    }

    public var videoParameterSets: [[UInt8]] { nalUnits(ofType: .videoParameterSet) }
    public var sequenceParameterSets: [[UInt8]] { nalUnits(ofType: .sequenceParameterSet) }
    public var pictureParameterSets: [[UInt8]] { nalUnits(ofType: .pictureParameterSet) }

    // MARK: Building from parameter sets

    /// Builds the record for a set of parameter sets (and optional SEI NAL units, e.g. HDR
    /// metadata), taking the summary fields from the first SPS and the PPSs.
    ///
    /// - Parameter arrayCompleteness: the arrays hold every parameter set the stream uses
    ///   (`hvc1`); false when more may come in band (`hev1`).
    public init(
        videoParameterSets: [[UInt8]], sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]],
        seiNALUnits: [[UInt8]] = [], nalUnitHeaderLength: Int = 4, arrayCompleteness: Bool = true
    ) throws(H265Error) {
        guard LengthPrefixedNALUnits.isValidNALUnitHeaderLength(nalUnitHeaderLength) else {
            throw H265Error.invalidValue(field: "lengthSizeMinusOne", value: Int64(nalUnitHeaderLength - 1))
        }
        guard !videoParameterSets.isEmpty else {
            throw H265Error.malformedFraming("an hvcC record needs at least one VPS")
        }
        guard let firstSPS = sequenceParameterSets.first else {
            throw H265Error.malformedFraming("an hvcC record needs at least one SPS")
        }
        guard !pictureParameterSets.isEmpty else {
            throw H265Error.malformedFraming("an hvcC record needs at least one PPS")
        }
        for nal in seiNALUnits {
            let type = try H265NALUnitHeader(parsing: nal).nalUnitType
            guard type == .prefixSEI || type == .suffixSEI else {
                throw H265Error.malformedFraming("NAL unit type \(type) given as an SEI NAL unit for hvcC")
            }
        }
        let sps = try H265SequenceParameterSet.parse(nalUnit: firstSPS)
        var parsedPPSs: [H265PictureParameterSet] = []
        for nal in pictureParameterSets { parsedPPSs.append(try H265PictureParameterSet.parse(nalUnit: nal)) }
        self.init()
        generalProfile = sps.profileTierLevel.general ?? H265ProfileTierLevel.Profile()
        generalLevelIdc = UInt8(truncatingIfNeeded: sps.profileTierLevel.generalLevelIdc)
        minSpatialSegmentationIdc = sps.vui?.minSpatialSegmentationIdc ?? 0
        parallelismType = Self.parallelismType(
            minSpatialSegmentationIdc: minSpatialSegmentationIdc, pictureParameterSets: parsedPPSs)
        chromaFormat = UInt8(truncatingIfNeeded: sps.chromaFormatIdc)
        // The record's fields are 3 bits: a 16-bit stream (bit_depth_*_minus8 8) cannot be
        // described by it.
        guard sps.bitDepthLumaMinus8 <= 7, sps.bitDepthChromaMinus8 <= 7 else {
            throw H265Error.unsupported("an hvcC record cannot describe 16-bit samples")
        }
        bitDepthLumaMinus8 = UInt8(truncatingIfNeeded: sps.bitDepthLumaMinus8)
        bitDepthChromaMinus8 = UInt8(truncatingIfNeeded: sps.bitDepthChromaMinus8)
        avgFrameRate = Self.averageFrameRate(vui: sps.vui)
        constantFrameRate = 0
        numTemporalLayers = UInt8(truncatingIfNeeded: sps.maxSubLayersMinus1 &+ 1)
        temporalIdNested = sps.temporalIDNestingFlag
        self.nalUnitHeaderLength = nalUnitHeaderLength
        arrays = [
            NALUnitArray(
                arrayCompleteness: arrayCompleteness, nalUnitType: .videoParameterSet, nalUnits: videoParameterSets),
            NALUnitArray(
                arrayCompleteness: arrayCompleteness, nalUnitType: .sequenceParameterSet,
                nalUnits: sequenceParameterSets),
            NALUnitArray(
                arrayCompleteness: arrayCompleteness, nalUnitType: .pictureParameterSet, nalUnits: pictureParameterSets)
        ]
        // SEI NAL units go into one array per type (prefix, suffix), in their order.
        for type in [H265NALUnitType.prefixSEI, .suffixSEI] {
            let units = seiNALUnits.filter { $0.count >= 2 && H265NALUnitType(sixBits: $0[0] >> 1) == type }
            if !units.isEmpty {
                arrays.append(NALUnitArray(arrayCompleteness: false, nalUnitType: type, nalUnits: units))
            }
        }
        try checkArrays()
    }

    /// parallelismType (8.3.3.1): what every PPS promises about parallel decoding, given that
    /// the VUI states a spatial segmentation at all (without one, 0: unknown).
    static func parallelismType(minSpatialSegmentationIdc: Int, pictureParameterSets: [H265PictureParameterSet])
        -> UInt8
    {
        guard minSpatialSegmentationIdc > 0, !pictureParameterSets.isEmpty else { return 0 }
        let tiles = pictureParameterSets.allSatisfy { $0.tilesEnabledFlag && !$0.entropyCodingSyncEnabledFlag }
        let wavefront = pictureParameterSets.allSatisfy { $0.entropyCodingSyncEnabledFlag && !$0.tilesEnabledFlag }
        let slices = pictureParameterSets.allSatisfy { !$0.entropyCodingSyncEnabledFlag && !$0.tilesEnabledFlag }
        if slices { return 1 }
        if tiles { return 2 }
        if wavefront { return 3 }
        return 0
    }

    /// avgFrameRate (frames per 256 s) from the VUI timing, 0 when the VUI has none or the value
    /// does not fit 16 bits.
    static func averageFrameRate(vui: H265VUIParameters?) -> UInt16 {
        guard let rate = vui?.frameRate, rate.isKnown else { return 0 }
        let (scaled, overflow) = rate.numerator.multipliedReportingOverflow(by: 256)
        guard !overflow else { return 0 }
        let perSecond256 = (scaled + rate.denominator / 2) / rate.denominator
        return perSecond256 <= Int(UInt16.max) ? UInt16(perSecond256) : 0
    }

    // MARK: Parsing

    /// Parses a record, e.g. GStreamer's `codec_data` or an MP4 `hvcC` box payload.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(H265Error) {
        var reader = H265BitReader(bytes)
        configurationVersion = UInt8(try reader.readBits(8, "configurationVersion"))
        guard configurationVersion == 1 else {
            throw H265Error.invalidValue(field: "configurationVersion", value: Int64(configurationVersion))
        }
        generalProfile.profileSpace = Int(try reader.readBits(2, "general_profile_space"))
        generalProfile.tierFlag = try reader.readFlag("general_tier_flag")
        generalProfile.profileIdc = Int(try reader.readBits(5, "general_profile_idc"))
        generalProfile.compatibilityFlags = try reader.readBits(32, "general_profile_compatibility_flags")
        let high = UInt64(try reader.readBits(16, "general_constraint_indicator_flags"))
        let low = UInt64(try reader.readBits(32, "general_constraint_indicator_flags"))
        generalProfile.constraintIndicatorFlags = high << 32 | low
        generalLevelIdc = UInt8(try reader.readBits(8, "general_level_idc"))
        // The reserved bits are '1's (8.3.3.1); their value is not checked, as readers must
        // accept records from writers that left them 0.
        try reader.skipBits(4, "reserved")
        minSpatialSegmentationIdc = try reader.readBits(12, "min_spatial_segmentation_idc", max: 4095)
        try reader.skipBits(6, "reserved")
        parallelismType = UInt8(try reader.readBits(2, "parallelismType"))
        try reader.skipBits(6, "reserved")
        chromaFormat = UInt8(try reader.readBits(2, "chromaFormat"))
        try reader.skipBits(5, "reserved")
        bitDepthLumaMinus8 = UInt8(try reader.readBits(3, "bitDepthLumaMinus8"))
        try reader.skipBits(5, "reserved")
        bitDepthChromaMinus8 = UInt8(try reader.readBits(3, "bitDepthChromaMinus8"))
        avgFrameRate = UInt16(try reader.readBits(16, "avgFrameRate"))
        constantFrameRate = UInt8(try reader.readBits(2, "constantFrameRate"))
        numTemporalLayers = UInt8(try reader.readBits(3, "numTemporalLayers"))
        temporalIdNested = try reader.readFlag("temporalIdNested")
        let lengthSizeMinusOne = Int(try reader.readBits(2, "lengthSizeMinusOne"))
        // 8.3.3.1: lengthSizeMinusOne 0, 1 or 3 (lengths of 1, 2 or 4 bytes).
        guard lengthSizeMinusOne != 2 else { throw H265Error.invalidValue(field: "lengthSizeMinusOne", value: 2) }
        nalUnitHeaderLength = lengthSizeMinusOne &+ 1
        let arrayCount = Int(try reader.readBits(8, "numOfArrays"))
        for _ in 0..<arrayCount {
            let completeness = try reader.readFlag("array_completeness")
            try reader.skipBits(1, "reserved")
            let type = H265NALUnitType(sixBits: UInt8(try reader.readBits(6, "NAL_unit_type")))
            let unitCount = Int(try reader.readBits(16, "numNalus"))
            var units: [[UInt8]] = []
            for _ in 0..<unitCount {
                let length = Int(try reader.readBits(16, "nalUnitLength"))
                guard length >= H265NALUnitHeader.byteCount else {
                    throw H265Error.malformedFraming("a \(length)-byte NAL unit in the hvcC record's \(type) array")
                }
                // The reader is byte aligned here (every field so far fills whole bytes).
                let offset = reader.bitPosition / 8
                guard length <= bytes.count &- offset else { throw H265Error.truncated(what: "nalUnit (\(type))") }
                // Copy: the NAL units must outlive the record's buffer.
                units.append(Array(bytes[offset..<(offset &+ length)]))
                try reader.skipBits(length &* 8, "nalUnit")
            }
            arrays.append(NALUnitArray(arrayCompleteness: completeness, nalUnitType: type, nalUnits: units))
        }
        try checkArrays()
    }

    public init(parsing bytes: [UInt8]) throws(H265Error) {
        self = try bytes.withUnsafeBytes { raw in
            Result { () throws(H265Error) -> HEVCDecoderConfigurationRecord in
                try HEVCDecoderConfigurationRecord(parsing: raw)
            }
        }.get()
    }

    /// 8.3.3.1: each array holds NAL units of its NAL_unit_type, which is a VPS, SPS, PPS,
    /// prefix SEI or suffix SEI type.
    private func checkArrays() throws(H265Error) {
        let allowed: Set<H265NALUnitType> = [
            .videoParameterSet, .sequenceParameterSet, .pictureParameterSet, .prefixSEI, .suffixSEI
        ]
        for array in arrays {
            guard allowed.contains(array.nalUnitType) else {
                throw H265Error.malformedFraming("the hvcC record has an array of \(array.nalUnitType) NAL units")
            }
            for unit in array.nalUnits {
                let header = try H265NALUnitHeader(parsing: unit)
                guard header.nalUnitType == array.nalUnitType else {
                    throw H265Error.malformedFraming(
                        "the hvcC record's \(array.nalUnitType) array holds a \(header.nalUnitType) NAL unit")
                }
            }
        }
    }

    // MARK: Writing

    /// The serialized record.
    public func serialized() throws(H265Error) -> [UInt8] {
        guard LengthPrefixedNALUnits.isValidNALUnitHeaderLength(nalUnitHeaderLength) else {
            throw H265Error.invalidValue(field: "lengthSizeMinusOne", value: Int64(nalUnitHeaderLength - 1))
        }
        guard arrays.count <= 255 else {
            throw H265Error.invalidValue(field: "numOfArrays", value: Int64(arrays.count))
        }
        guard (0...4095).contains(minSpatialSegmentationIdc) else {
            throw H265Error.invalidValue(field: "min_spatial_segmentation_idc", value: Int64(minSpatialSegmentationIdc))
        }
        var w = BitWriter()
        w.writeBits(UInt32(configurationVersion), count: 8)
        w.writeBits(UInt32(truncatingIfNeeded: generalProfile.profileSpace), count: 2)
        w.writeFlag(generalProfile.tierFlag)
        w.writeBits(UInt32(truncatingIfNeeded: generalProfile.profileIdc), count: 5)
        w.writeBits(generalProfile.compatibilityFlags, count: 32)
        w.writeBits(UInt32(truncatingIfNeeded: generalProfile.constraintIndicatorFlags >> 32), count: 16)
        w.writeBits(UInt32(truncatingIfNeeded: generalProfile.constraintIndicatorFlags), count: 32)
        w.writeBits(UInt32(generalLevelIdc), count: 8)
        w.writeBits(0xF, count: 4)
        w.writeBits(UInt32(truncatingIfNeeded: minSpatialSegmentationIdc), count: 12)
        w.writeBits(0x3F, count: 6)
        w.writeBits(UInt32(parallelismType), count: 2)
        w.writeBits(0x3F, count: 6)
        w.writeBits(UInt32(chromaFormat), count: 2)
        w.writeBits(0x1F, count: 5)
        w.writeBits(UInt32(bitDepthLumaMinus8), count: 3)
        w.writeBits(0x1F, count: 5)
        w.writeBits(UInt32(bitDepthChromaMinus8), count: 3)
        w.writeBits(UInt32(avgFrameRate), count: 16)
        w.writeBits(UInt32(constantFrameRate), count: 2)
        w.writeBits(UInt32(numTemporalLayers), count: 3)
        w.writeFlag(temporalIdNested)
        w.writeBits(UInt32(truncatingIfNeeded: nalUnitHeaderLength &- 1), count: 2)
        w.writeBits(UInt32(truncatingIfNeeded: arrays.count), count: 8)
        for array in arrays {
            guard array.nalUnits.count <= Int(UInt16.max) else {
                throw H265Error.invalidValue(field: "numNalus", value: Int64(array.nalUnits.count))
            }
            w.writeFlag(array.arrayCompleteness)
            w.writeFlag(false)
            w.writeBits(UInt32(array.nalUnitType.rawValue), count: 6)
            w.writeBits(UInt32(truncatingIfNeeded: array.nalUnits.count), count: 16)
            for unit in array.nalUnits {
                guard unit.count <= Int(UInt16.max) else {
                    throw H265Error.invalidValue(field: "nalUnitLength", value: Int64(unit.count))
                }
                w.writeBits(UInt32(truncatingIfNeeded: unit.count), count: 16)
                w.writeBytes(unit)
            }
        }
        return w.bytes
    }
}
