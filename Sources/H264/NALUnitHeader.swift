/// nal_unit_type, Table 7-1 of ITU-T H.264.
public struct NALUnitType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue & 0x1F }

    public static let unspecified = NALUnitType(rawValue: 0)
    public static let codedSliceNonIDR = NALUnitType(rawValue: 1)
    public static let codedSliceDataPartitionA = NALUnitType(rawValue: 2)
    public static let codedSliceDataPartitionB = NALUnitType(rawValue: 3)
    public static let codedSliceDataPartitionC = NALUnitType(rawValue: 4)
    public static let codedSliceIDR = NALUnitType(rawValue: 5)
    public static let sei = NALUnitType(rawValue: 6)
    public static let sequenceParameterSet = NALUnitType(rawValue: 7)
    public static let pictureParameterSet = NALUnitType(rawValue: 8)
    public static let accessUnitDelimiter = NALUnitType(rawValue: 9)
    public static let endOfSequence = NALUnitType(rawValue: 10)
    public static let endOfStream = NALUnitType(rawValue: 11)
    public static let fillerData = NALUnitType(rawValue: 12)
    public static let sequenceParameterSetExtension = NALUnitType(rawValue: 13)
    public static let prefixNALUnit = NALUnitType(rawValue: 14)
    public static let subsetSequenceParameterSet = NALUnitType(rawValue: 15)
    public static let depthParameterSet = NALUnitType(rawValue: 16)
    public static let codedSliceAuxiliary = NALUnitType(rawValue: 19)
    public static let codedSliceExtension = NALUnitType(rawValue: 20)
    public static let codedSliceExtensionDepthView = NALUnitType(rawValue: 21)

    /// Slices of the primary coded picture (types 1 to 5, 7.4.1.2.3). Partitions B and C carry
    /// slice data of a picture whose header came in partition A.
    public var isVCL: Bool { (1...5).contains(rawValue) }

    /// NAL types that only SVC (Annex G) and MVC (Annex H) decoders use; a base-layer (AVC)
    /// decoder ignores them (7.4.1.2.3: "decoders shall ignore").
    public var isScalableOrMultiviewExtension: Bool {
        rawValue == 14 || rawValue == 15 || rawValue == 20 || rawValue == 21 || rawValue == 16
    }

    public var description: String {
        switch rawValue {
        case 1: return "non-IDR slice"
        case 2: return "slice data partition A"
        case 3: return "slice data partition B"
        case 4: return "slice data partition C"
        case 5: return "IDR slice"
        case 6: return "SEI"
        case 7: return "SPS"
        case 8: return "PPS"
        case 9: return "access unit delimiter"
        case 10: return "end of sequence"
        case 11: return "end of stream"
        case 12: return "filler data"
        case 13: return "SPS extension"
        case 14: return "prefix NAL unit (SVC)"
        case 15: return "subset SPS (SVC/MVC)"
        case 16: return "depth parameter set"
        case 19: return "auxiliary slice"
        case 20: return "slice extension (SVC/MVC)"
        case 21: return "slice extension (3D-AVC depth)"
        default: return "NAL type \(rawValue)"
        }
    }
}

/// The one-byte NAL unit header (7.3.1).
public struct NALUnitHeader: Hashable, Sendable {
    public let forbiddenZeroBit: Bool
    /// nal_ref_idc: non-zero when the NAL unit carries a reference picture or a parameter set.
    public let nalRefIdc: UInt8
    public let nalUnitType: NALUnitType

    public init(byte: UInt8) {
        forbiddenZeroBit = byte & 0x80 != 0
        nalRefIdc = (byte >> 5) & 0x3
        nalUnitType = NALUnitType(rawValue: byte & 0x1F)
    }

    public var byte: UInt8 {
        (forbiddenZeroBit ? 0x80 : 0) | (nalRefIdc << 5) | nalUnitType.rawValue
    }
}
