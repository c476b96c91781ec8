/// nal_unit_type, Table 7-1 of ITU-T H.265: every one of the 64 values, by the spec's mnemonic
/// (TRAIL_N is `.trailN`, RSV_VCL_N10 is `.reservedVCLN10`, UNSPEC48 is `.unspecified48`).
///
/// All 64 values are cases so that any six bits are a value of the enum: a reserved or
/// unspecified type is data a decoder must ignore (7.4.2.2), not an error.
public enum H265NALUnitType: UInt8, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    // VCL: coded slice segments of non-IRAP pictures. The _N types are sub-layer non-reference
    // pictures, the _R types sub-layer reference pictures (Table 7-1).
    case trailN = 0
    case trailR = 1
    /// Temporal sub-layer access.
    case tsaN = 2
    case tsaR = 3
    /// Step-wise temporal sub-layer access.
    case stsaN = 4
    case stsaR = 5
    /// Random access decodable leading.
    case radlN = 6
    case radlR = 7
    /// Random access skipped leading.
    case raslN = 8
    case raslR = 9
    case reservedVCLN10 = 10
    case reservedVCLR11 = 11
    case reservedVCLN12 = 12
    case reservedVCLR13 = 13
    case reservedVCLN14 = 14
    case reservedVCLR15 = 15
    // VCL: coded slice segments of IRAP pictures (16...23).
    /// Broken link access, which may have RASL and RADL pictures.
    case blaWithLeadingPictures = 16
    /// Broken link access, which may have RADL but no RASL pictures.
    case blaWithRADL = 17
    /// Broken link access without leading pictures.
    case blaNoLeadingPictures = 18
    /// Instantaneous decoding refresh, which may have RADL pictures.
    case idrWithRADL = 19
    /// Instantaneous decoding refresh without leading pictures.
    case idrNoLeadingPictures = 20
    /// Clean random access.
    case cra = 21
    case reservedIRAPVCL22 = 22
    case reservedIRAPVCL23 = 23
    case reservedVCL24 = 24
    case reservedVCL25 = 25
    case reservedVCL26 = 26
    case reservedVCL27 = 27
    case reservedVCL28 = 28
    case reservedVCL29 = 29
    case reservedVCL30 = 30
    case reservedVCL31 = 31
    // Non-VCL.
    case videoParameterSet = 32
    case sequenceParameterSet = 33
    case pictureParameterSet = 34
    case accessUnitDelimiter = 35
    case endOfSequence = 36
    case endOfBitstream = 37
    case fillerData = 38
    case prefixSEI = 39
    case suffixSEI = 40
    case reservedNonVCL41 = 41
    case reservedNonVCL42 = 42
    case reservedNonVCL43 = 43
    case reservedNonVCL44 = 44
    case reservedNonVCL45 = 45
    case reservedNonVCL46 = 46
    case reservedNonVCL47 = 47
    case unspecified48 = 48
    case unspecified49 = 49
    case unspecified50 = 50
    case unspecified51 = 51
    case unspecified52 = 52
    case unspecified53 = 53
    case unspecified54 = 54
    case unspecified55 = 55
    case unspecified56 = 56
    case unspecified57 = 57
    case unspecified58 = 58
    case unspecified59 = 59
    case unspecified60 = 60
    case unspecified61 = 61
    case unspecified62 = 62
    case unspecified63 = 63

    /// The type in the low six bits of `bits` (the field is u(6), so every value has a case).
    public init(sixBits bits: UInt8) {
        self = H265NALUnitType(rawValue: bits & 0x3F) ?? .unspecified63
    }

    /// Coded slice segment NAL units (7.4.2.2: nal_unit_type 0...31 are VCL NAL units).
    public var isVCL: Bool { rawValue <= 31 }

    /// Intra random access point picture (Table 7-1: nal_unit_type BLA_W_LP...RSV_IRAP_VCL23).
    public var isIRAP: Bool { (16...23).contains(rawValue) }
    /// Instantaneous decoding refresh picture (Table 7-1: IDR_W_RADL or IDR_N_LP).
    public var isIDR: Bool { self == .idrWithRADL || self == .idrNoLeadingPictures }
    /// Broken link access picture (Table 7-1: BLA_W_LP, BLA_W_RADL or BLA_N_LP).
    public var isBLA: Bool { (16...18).contains(rawValue) }
    /// Clean random access picture.
    public var isCRA: Bool { self == .cra }
    /// Random access skipped leading picture (Table 7-1: RASL_N or RASL_R).
    public var isRASL: Bool { self == .raslN || self == .raslR }
    /// Random access decodable leading picture (Table 7-1: RADL_N or RADL_R).
    public var isRADL: Bool { self == .radlN || self == .radlR }
    /// Leading pictures precede their IRAP picture in output order.
    public var isLeading: Bool { isRASL || isRADL }
    /// Temporal sub-layer access (TSA_N, TSA_R).
    public var isTSA: Bool { self == .tsaN || self == .tsaR }
    /// Step-wise temporal sub-layer access (STSA_N, STSA_R).
    public var isSTSA: Bool { self == .stsaN || self == .stsaR }

    /// Sub-layer non-reference picture (Table 7-1): TRAIL_N, TSA_N, STSA_N, RADL_N, RASL_N
    /// and RSV_VCL_N10/N12/N14, the even types up to 14. Such a picture is never used for
    /// reference by pictures of the same sub-layer, so it never serves as prevTid0Pic (8.3.1).
    public var isSubLayerNonReference: Bool { rawValue <= 14 && rawValue & 1 == 0 }

    /// Reserved and unspecified types, which decoders ignore (7.4.2.2).
    public var isReservedOrUnspecified: Bool {
        (10...15).contains(rawValue) || (22...31).contains(rawValue) || rawValue >= 41
    }

    /// The non-VCL types of which the first after the last VCL NAL unit of a picture starts a new
    /// access unit (7.4.2.4.4): AUD, VPS, SPS, PPS, prefix SEI, RSV_NVCL41...44, UNSPEC48...55.
    public var startsAccessUnitAfterPicture: Bool {
        switch rawValue {
        case 32...35, 39, 41...44, 48...55: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .trailN: return "TRAIL_N"
        case .trailR: return "TRAIL_R"
        case .tsaN: return "TSA_N"
        case .tsaR: return "TSA_R"
        case .stsaN: return "STSA_N"
        case .stsaR: return "STSA_R"
        case .radlN: return "RADL_N"
        case .radlR: return "RADL_R"
        case .raslN: return "RASL_N"
        case .raslR: return "RASL_R"
        case .blaWithLeadingPictures: return "BLA_W_LP"
        case .blaWithRADL: return "BLA_W_RADL"
        case .blaNoLeadingPictures: return "BLA_N_LP"
        case .idrWithRADL: return "IDR_W_RADL"
        case .idrNoLeadingPictures: return "IDR_N_LP"
        case .cra: return "CRA_NUT"
        case .videoParameterSet: return "VPS_NUT"
        case .sequenceParameterSet: return "SPS_NUT"
        case .pictureParameterSet: return "PPS_NUT"
        case .accessUnitDelimiter: return "AUD_NUT"
        case .endOfSequence: return "EOS_NUT"
        case .endOfBitstream: return "EOB_NUT"
        case .fillerData: return "FD_NUT"
        case .prefixSEI: return "PREFIX_SEI_NUT"
        case .suffixSEI: return "SUFFIX_SEI_NUT"
        default:
            switch rawValue {
            case 10...15: return "RSV_VCL_\(rawValue & 1 == 0 ? "N" : "R")\(rawValue)"
            case 22, 23: return "RSV_IRAP_VCL\(rawValue)"
            case 24...31: return "RSV_VCL\(rawValue)"
            case 41...47: return "RSV_NVCL\(rawValue)"
            default: return "UNSPEC\(rawValue)"
            }
        }
    }
}

/// nal_unit_header(), 7.3.1.2: two bytes in front of every H.265 NAL unit.
public struct H265NALUnitHeader: Hashable, Sendable {
    /// The header's size in bytes.
    public static let byteCount = 2

    public var nalUnitType: H265NALUnitType
    /// nuh_layer_id, 0...63: 0 for the base layer; decoders of the base layer (every profile of
    /// Annex A) ignore NAL units of other layers (7.4.2.2).
    public var nuhLayerID: Int
    /// nuh_temporal_id_plus1, 1...7.
    public var nuhTemporalIDPlus1: Int

    /// TemporalId = nuh_temporal_id_plus1 - 1 (7-1).
    public var temporalID: Int { nuhTemporalIDPlus1 &- 1 }

    /// A header with the given fields (not checked: for writers and tests).
    public init(nalUnitType: H265NALUnitType, nuhLayerID: Int = 0, nuhTemporalIDPlus1: Int = 1) {
        self.nalUnitType = nalUnitType
        self.nuhLayerID = nuhLayerID
        self.nuhTemporalIDPlus1 = nuhTemporalIDPlus1
    }

    /// Reads and checks the first two bytes of a NAL unit (7.4.2.2).
    public init(parsing nalUnit: UnsafeRawBufferPointer) throws(H265Error) {
        guard nalUnit.count >= Self.byteCount else { throw H265Error.truncated(what: "nal_unit_header") }
        let first = nalUnit[0]
        let second = nalUnit[1]
        // forbidden_zero_bit shall be 0: a 1 marks a NAL unit damaged in transport (RFC 7798).
        guard first & 0x80 == 0 else { throw H265Error.invalidValue(field: "forbidden_zero_bit", value: 1) }
        nalUnitType = H265NALUnitType(sixBits: first >> 1)
        nuhLayerID = Int(first & 1) << 5 | Int(second >> 3)
        nuhTemporalIDPlus1 = Int(second & 7)
        // 7.4.2.2: nuh_temporal_id_plus1 shall not be 0 (TemporalId would be -1).
        guard nuhTemporalIDPlus1 != 0 else {
            throw H265Error.invalidValue(field: "nuh_temporal_id_plus1", value: 0)
        }
        // 7.4.2.2: IRAP pictures, and the parameter sets and end markers of the base layer,
        // belong to sub-layer 0; TSA pictures (and STSA pictures of the base layer) switch up to
        // a higher sub-layer, so they are never in sub-layer 0.
        let mustBeSubLayerZero =
            nalUnitType.isIRAP
            || (nuhLayerID == 0
                && [.videoParameterSet, .sequenceParameterSet, .endOfSequence, .endOfBitstream]
                    .contains(nalUnitType))
        if mustBeSubLayerZero && temporalID != 0 {
            throw H265Error.invalidValue(
                field: "nuh_temporal_id_plus1 of \(nalUnitType)", value: Int64(nuhTemporalIDPlus1))
        }
        if (nalUnitType.isTSA || (nalUnitType.isSTSA && nuhLayerID == 0)) && temporalID == 0 {
            throw H265Error.invalidValue(field: "nuh_temporal_id_plus1 of \(nalUnitType)", value: 1)
        }
    }

    /// `init(parsing:)` for an array.
    public init(parsing nalUnit: [UInt8]) throws(H265Error) {
        self = try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H265Error) -> H265NALUnitHeader in try H265NALUnitHeader(parsing: bytes) }
        }.get()
    }

    /// The two header bytes (forbidden_zero_bit 0).
    public var bytes: [UInt8] {
        let layer = UInt8(truncatingIfNeeded: nuhLayerID) & 0x3F
        return [
            nalUnitType.rawValue << 1 | layer >> 5,
            (layer & 0x1F) << 3 | UInt8(truncatingIfNeeded: nuhTemporalIDPlus1) & 7
        ]
    }
}
