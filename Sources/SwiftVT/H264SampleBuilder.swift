import H264
import MediaCore

/// H.264 access units as containers and parsers hand them over (Annex B, or length-prefixed with
/// 1-, 2- or 4-byte lengths), in; sample buffers for a ``DecompressionSession`` (4-byte lengths),
/// and the format description the stream's SPS/PPS make, out: the shared ``NALSampleBuilder``
/// over H.264's NAL unit types and parameter sets.
public typealias H264SampleBuilder = NALSampleBuilder<H264SampleCodec>

/// What the sample builder needs to know of H.264: NAL unit types (7.4.1, Table 7-1), SPS/PPS
/// storage and the `avc1`/`avc3` description.
public struct H264SampleCodec: NALSampleCodec {
    public typealias Failure = H264Error
    private var parameterSets = ParameterSetStore()

    public init() {}

    public static func role(of nalUnit: UnsafeRawBufferPointer) -> NALUnitRole {
        guard let header = nalUnit.first else { return .other }
        switch header & 0x1F {
        case 7, 8: return .parameterSet
        case 5: return .randomAccessSlice // a slice of an IDR picture
        case 6: return .supplementalEnhancementInformation
        default: return .other
        }
    }

    /// forbidden_zero_bit 0 (7.4.1) and a type 1-23 (24-31 are unspecified, 0 too).
    public static func hasPlausibleHeader(_ nalUnit: UnsafeRawBufferPointer) -> Bool {
        guard let header = nalUnit.first else { return false }
        let type = header & 0x1F
        return header & 0x80 == 0 && type != 0 && type <= 23
    }

    public func changedSequenceParameterSetID(_ nalUnit: UnsafeRawBufferPointer) -> Int? {
        guard nalUnit.first.map({ NALUnitType(rawValue: $0) }) == .sequenceParameterSet,
            let parsed = try? SequenceParameterSet.parse(nalUnit: nalUnit),
            let current = parameterSets.rawSequenceParameterSet(id: parsed.seqParameterSetID),
            !current.elementsEqual(nalUnit)
        else { return nil }
        return parsed.seqParameterSetID
    }

    public mutating func store(_ nalUnit: UnsafeRawBufferPointer) throws(H264Error) -> Bool {
        switch nalUnit.first.map({ NALUnitType(rawValue: $0) }) {
        case .sequenceParameterSet?: return try parameterSets.storeSequenceParameterSet(nalUnit).change != .unchanged
        case .pictureParameterSet?: return try parameterSets.storePictureParameterSet(nalUnit).change != .unchanged
        default: return false
        }
    }

    /// `FormatDescription(h264ParameterSets:)` over every SPS and every PPS that parsed against
    /// its SPS.
    public func formatDescription() -> FormatDescription? {
        let sets =
            parameterSets.sequenceParameterSetIDs.compactMap { parameterSets.rawSequenceParameterSet(id: $0) }
            + parameterSets.pictureParameterSetIDs.compactMap { id in
                parameterSets.pictureParameterSet(id: id) != nil ? parameterSets.rawPictureParameterSet(id: id) : nil
            }
        return try? FormatDescription(h264ParameterSets: sets)
    }
}

extension NALSampleBuilder where Codec == H264SampleCodec {
    /// New input caps: how frames carry NAL units, and codec_data's avcC record. Returns whether
    /// the parameter sets now describe another format.
    @discardableResult
    public mutating func setInput(_ format: InputFormat, configuration record: AVCDecoderConfigurationRecord?) -> Bool {
        setInput(
            format, parameterSets: (record?.sequenceParameterSets ?? []) + (record?.pictureParameterSets ?? []),
            codecDataNALUnitHeaderLength: record?.nalUnitHeaderLength)
    }

    /// The frames a decoder of `description` holds before a picture comes out: the stream's
    /// reorder depth (max_num_reorder_frames, E.2.1; 0 where pictures cannot be reordered), plus
    /// a frame per extra frame thread (``decoderDelay(reorderDepth:frameThreads:)``). nil without
    /// a readable SPS.
    public static func decoderDelay(for description: FormatDescription, frameThreads: Int) -> Int? {
        guard let depth = description.h264OutputReorderDepth else { return nil }
        return decoderDelay(reorderDepth: depth, frameThreads: frameThreads)
    }
}
