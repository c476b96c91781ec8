/// A subset sequence parameter set, subset_seq_parameter_set_rbsp() of 7.3.2.1.3 (nal_unit_type
/// 15), used by SVC (Annex G) and MVC / 3D-AVC (Annexes H, I, J) enhancement layers.
///
/// Only the embedded seq_parameter_set_data() is parsed (by the same code as the SPS); the
/// extension that follows it (seq_parameter_set_svc_extension(), seq_parameter_set_mvc_extension()
/// and their VUI extensions) is left unparsed: SwiftVT decodes the AVC base layer only, and a
/// base-layer decoder ignores these NAL units (7.4.1.2.3).
public struct SubsetSequenceParameterSet: Hashable, Sendable {
    /// The seq_parameter_set_data() part.
    public var sequenceParameterSetData: SequenceParameterSet

    /// profile_idc: 83/86 for SVC, 118/128 (and 134, 135, 138, 139) for MVC-based profiles.
    public var profileIdc: Int { sequenceParameterSetData.profileIdc }
    /// seq_parameter_set_id, 0...31 (a namespace of its own, separate from the SPS ids).
    public var seqParameterSetID: Int { sequenceParameterSetData.seqParameterSetID }
    /// Scalable Baseline / Scalable High (Annex G).
    public var isScalable: Bool { profileIdc == 83 || profileIdc == 86 }
    /// Multiview / Stereo High and the MVC-based depth and MFC profiles (Annexes H, I, J).
    public var isMultiview: Bool { [118, 128, 134, 135, 138, 139].contains(profileIdc) }

    public init(sequenceParameterSetData: SequenceParameterSet) {
        self.sequenceParameterSetData = sequenceParameterSetData
    }

    /// Parses a subset SPS NAL unit (header byte included, escaped).
    public static func parse(nalUnit: UnsafeRawBufferPointer) throws(H264Error) -> SubsetSequenceParameterSet {
        guard let first = nalUnit.first else { throw H264Error.truncated(what: "nal_unit_header") }
        let header = NALUnitHeader(byte: first)
        guard header.nalUnitType == .subsetSequenceParameterSet else {
            throw H264Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        return try RBSP.withUnescapedPayload(of: nalUnit, from: 1, maxBytes: 4096) { rbsp in
            Result { () throws(H264Error) -> SubsetSequenceParameterSet in
                var reader = BitReader(rbsp)
                return SubsetSequenceParameterSet(sequenceParameterSetData: try SequenceParameterSet.parseData(&reader))
            }
        }.get()
    }

    /// `parse(nalUnit:)` for an array.
    public static func parse(nalUnit: [UInt8]) throws(H264Error) -> SubsetSequenceParameterSet {
        try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H264Error) -> SubsetSequenceParameterSet in try parse(nalUnit: bytes) }
        }.get()
    }
}
