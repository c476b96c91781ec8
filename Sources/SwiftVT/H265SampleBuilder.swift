import H265
import MediaCore

/// H.265 access units as containers and parsers hand them over (`hvc1`/`hev1` with 1-, 2- or
/// 4-byte lengths and an hvcC record, or Annex B with in-band VPS/SPS/PPS), in; sample buffers
/// for a ``DecompressionSession`` (4-byte lengths), and the `hvc1` format description the
/// stream's parameter sets make, out: the shared ``NALSampleBuilder`` over H.265's NAL unit types
/// and parameter sets.
public typealias H265SampleBuilder = NALSampleBuilder<H265SampleCodec>

/// What the sample builder needs to know of H.265: the NAL unit header (7.3.1.2, Table 7-1),
/// VPS/SPS/PPS storage and the `hvc1` description.
public struct H265SampleCodec: NALSampleCodec {
    public typealias Failure = H265Error
    private var parameterSets = H265ParameterSetStore()

    public init() {}

    /// The NAL unit's header, nil when too short or of a layer other than the base layer
    /// (nuh_layer_id > 0: 7.4.2.2, a decoder of the base layer ignores them).
    private static func baseLayerType(of nalUnit: UnsafeRawBufferPointer) -> H265NALUnitType? {
        guard let header = try? H265NALUnitHeader(parsing: nalUnit), header.nuhLayerID == 0 else { return nil }
        return header.nalUnitType
    }

    public static func role(of nalUnit: UnsafeRawBufferPointer) -> NALUnitRole {
        guard let type = baseLayerType(of: nalUnit) else { return .other }
        switch type {
        case .videoParameterSet, .sequenceParameterSet, .pictureParameterSet: return .parameterSet
        case .prefixSEI, .suffixSEI: return .supplementalEnhancementInformation
        // An IRAP picture (BLA, IDR, CRA) is where an SPS may be activated (7.4.2.4.2).
        case let vcl where vcl.isIRAP: return .randomAccessSlice
        default: return .other
        }
    }

    /// forbidden_zero_bit 0 and nuh_temporal_id_plus1 not 0 (7.4.2.2), and a type that is neither
    /// reserved nor unspecified.
    public static func hasPlausibleHeader(_ nalUnit: UnsafeRawBufferPointer) -> Bool {
        guard nalUnit.count >= 2, nalUnit[0] & 0x80 == 0, nalUnit[1] & 0x07 != 0 else { return false }
        return !H265NALUnitType(sixBits: nalUnit[0] >> 1).isReservedOrUnspecified
    }

    public func changedSequenceParameterSetID(_ nalUnit: UnsafeRawBufferPointer) -> Int? {
        guard Self.baseLayerType(of: nalUnit) == .sequenceParameterSet,
            let parsed = try? H265SequenceParameterSet.parse(nalUnit: nalUnit),
            let current = parameterSets.rawSequenceParameterSet(id: parsed.seqParameterSetID),
            !current.elementsEqual(nalUnit)
        else { return nil }
        return parsed.seqParameterSetID
    }

    public mutating func store(_ nalUnit: UnsafeRawBufferPointer) throws(H265Error) -> Bool {
        switch Self.baseLayerType(of: nalUnit) {
        case .videoParameterSet?: return try parameterSets.storeVideoParameterSet(nalUnit).change != .unchanged
        case .sequenceParameterSet?: return try parameterSets.storeSequenceParameterSet(nalUnit).change != .unchanged
        case .pictureParameterSet?: return try parameterSets.storePictureParameterSet(nalUnit).change != .unchanged
        default: return false
        }
    }

    /// `FormatDescription(hevcParameterSets:)` over every VPS, every SPS and every PPS whose SPS
    /// is known (a PPS before its SPS waits for it).
    public func formatDescription() -> FormatDescription? {
        let store = parameterSets
        let pictureParameterSets = store.pictureParameterSetIDs.compactMap { id -> [UInt8]? in
            guard let pps = store.pictureParameterSet(id: id),
                store.sequenceParameterSet(id: pps.seqParameterSetID) != nil
            else { return nil }
            return store.rawPictureParameterSet(id: id)
        }
        let sets =
            store.videoParameterSetIDs.compactMap { store.rawVideoParameterSet(id: $0) }
            + store.sequenceParameterSetIDs.compactMap { store.rawSequenceParameterSet(id: $0) } + pictureParameterSets
        return try? FormatDescription(hevcParameterSets: sets)
    }
}

extension NALSampleBuilder where Codec == H265SampleCodec {
    /// New input caps: how frames carry NAL units, and codec_data's hvcC record. Returns whether
    /// the parameter sets now describe another format.
    @discardableResult
    public mutating func setInput(_ format: InputFormat, configuration record: HEVCDecoderConfigurationRecord?) -> Bool
    {
        setInput(
            format,
            parameterSets: (record?.videoParameterSets ?? []) + (record?.sequenceParameterSets ?? [])
                + (record?.pictureParameterSets ?? []),
            codecDataNALUnitHeaderLength: record?.nalUnitHeaderLength)
    }

    /// The frames a decoder of `description` holds before a picture comes out: the stream's
    /// reorder depth (sps_max_num_reorder_pics of the highest sub-layer, 7.4.3.2.1: how many
    /// pictures may precede one in decoding order and follow it in output order;
    /// sps_max_latency_increase_plus1 only makes pictures leave earlier, C.5.2.2, so it adds
    /// nothing), plus a frame per extra frame thread (``decoderDelay(reorderDepth:frameThreads:)``,
    /// the rule H.264 uses). nil without a readable SPS.
    public static func decoderDelay(for description: FormatDescription, frameThreads: Int) -> Int? {
        guard let depth = description.hevcOutputReorderDepth else { return nil }
        return decoderDelay(reorderDepth: depth, frameThreads: frameThreads)
    }
}
