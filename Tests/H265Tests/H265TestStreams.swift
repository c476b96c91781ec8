import H265

/// Hand-built H.265 parameter sets and NAL units for the unit tests: valid defaults that each
/// test changes a field of, written with the module's writers (which write fields unchecked, so
/// invalid values reach the parsers as they would in a damaged stream).
enum H265TestStreams {
    /// A Main-profile 4:2:0 8-bit SPS of 64x64 luma samples with 16x16 CTBs (16 CTBs), a DPB of 5,
    /// 8-bit POC LSBs and two short-term sets.
    static func sequenceParameterSet() -> H265SequenceParameterSet {
        var sps = H265SequenceParameterSet()
        var profile = H265ProfileTierLevel.Profile()
        profile.profileIdc = 1
        profile.compatibilityFlags = 0x6000_0000 // Main and Main 10 compatible
        profile.constraintIndicatorFlags = 0x9000_0000_0000 // progressive, frame only
        sps.profileTierLevel = H265ProfileTierLevel(general: profile, generalLevelIdc: 93)
        sps.picWidthInLumaSamples = 64
        sps.picHeightInLumaSamples = 64
        sps.log2MaxPicOrderCntLsbMinus4 = 4
        sps.subLayerOrdering = [
            H265SubLayerOrdering(maxDecPicBufferingMinus1: 4, maxNumReorderPics: 2, maxLatencyIncreasePlus1: 0)
        ]
        sps.log2MinLumaCodingBlockSizeMinus3 = 0
        sps.log2DiffMaxMinLumaCodingBlockSize = 1
        sps.log2MinLumaTransformBlockSizeMinus2 = 0
        sps.log2DiffMaxMinLumaTransformBlockSize = 2
        sps.shortTermReferencePictureSets = [
            H265ShortTermReferencePictureSet(negative: [(-1, true), (-3, true)], positive: [(2, true)]),
            H265ShortTermReferencePictureSet(negative: [(-1, true)], positive: [])
        ]
        sps.temporalMVPEnabledFlag = true
        return sps
    }

    static func videoParameterSet() -> H265VideoParameterSet {
        var vps = H265VideoParameterSet()
        vps.temporalIDNestingFlag = true
        vps.profileTierLevel = sequenceParameterSet().profileTierLevel
        vps.subLayerOrdering = sequenceParameterSet().subLayerOrdering
        return vps
    }

    static func pictureParameterSet() -> H265PictureParameterSet {
        H265PictureParameterSet()
    }

    /// A slice segment NAL unit: the header's parsed part, then a stand-in for the rest of the
    /// header and the slice data (a few bits and the trailing bits).
    static func sliceNALUnit(
        _ slice: H265SliceSegmentHeader, pps: H265PictureParameterSet = pictureParameterSet(),
        sps: H265SequenceParameterSet = sequenceParameterSet()
    ) -> [UInt8] {
        var w = BitWriter()
        slice.writeParsedPart(to: &w, pps: pps, sps: sps)
        w.writeBits(0x5A, count: 8)
        w.writeRBSPTrailingBits()
        return slice.nalUnitHeader.bytes + RBSP.insertEmulationPrevention(w.bytes)
    }

    /// A slice segment header of the given type with POC LSB `lsb`, using SPS set 0 for non-IDR
    /// pictures.
    static func slice(
        _ type: H265NALUnitType, lsb: Int = 0, first: Bool = true, temporalID: Int = 0, sliceType: H265SliceType? = nil
    ) -> H265SliceSegmentHeader {
        var slice = H265SliceSegmentHeader(
            nalUnitHeader: H265NALUnitHeader(nalUnitType: type, nuhTemporalIDPlus1: temporalID + 1))
        slice.firstSliceSegmentInPicFlag = first
        slice.sliceSegmentAddress = first ? 0 : 8
        slice.sliceType = sliceType ?? (type.isIRAP ? .i : .p)
        slice.slicePicOrderCntLsb = type.isIDR ? 0 : lsb
        slice.shortTermRefPicSetSPSFlag = true
        return slice
    }

    /// An SEI NAL unit (prefix or suffix) holding the given (payloadType, payload) messages.
    static func seiNALUnit(suffix: Bool = false, _ messages: [(type: Int, payload: [UInt8])]) -> [UInt8] {
        var rbsp: [UInt8] = []
        for message in messages {
            var type = message.type
            while type >= 255 {
                rbsp.append(0xFF)
                type -= 255
            }
            rbsp.append(UInt8(type))
            var size = message.payload.count
            while size >= 255 {
                rbsp.append(0xFF)
                size -= 255
            }
            rbsp.append(UInt8(size))
            rbsp += message.payload
        }
        rbsp.append(0x80)
        return H265NALUnitHeader(nalUnitType: suffix ? .suffixSEI : .prefixSEI).bytes
            + RBSP.insertEmulationPrevention(rbsp)
    }

    /// Bits written with a BitWriter, padded to bytes.
    static func bits(_ body: (inout BitWriter) -> Void) -> [UInt8] {
        var w = BitWriter()
        body(&w)
        return w.bytes
    }

    /// The four-byte start code in front of each NAL unit.
    static func annexB(_ nalUnits: [[UInt8]]) -> [UInt8] {
        nalUnits.flatMap { [0, 0, 0, 1] + $0 }
    }
}

/// The H265Error a throwing expression threw, or nil (also for another error, which the H265
/// parsers never throw).
func h265Error(_ body: () throws -> Void) -> H265Error? {
    do {
        try body()
        return nil
    } catch {
        return error as? H265Error
    }
}

/// The syntax element an `.invalidValue` or `.truncated` error names, for short expectations.
extension H265Error {
    var field: String? {
        switch self {
        case .invalidValue(let field, _): return field
        case .truncated(let what): return what
        default: return nil
        }
    }
}
