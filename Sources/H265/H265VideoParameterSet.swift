/// The DPB sizes of one temporal sub-layer, as the VPS (7.3.2.1) and SPS (7.3.2.2) list them.
public struct H265SubLayerOrdering: Hashable, Sendable {
    /// *_max_dec_pic_buffering_minus1[i]: the DPB holds at most this + 1 pictures
    /// (0...MaxDpbSize - 1, MaxDpbSize at most 16, A.4.2).
    public var maxDecPicBufferingMinus1: Int
    /// *_max_num_reorder_pics[i]: how many pictures may precede one in decoding order and follow
    /// it in output order (0...max_dec_pic_buffering_minus1[i]).
    public var maxNumReorderPics: Int
    /// *_max_latency_increase_plus1[i] (0...2^32 - 2); 0 means no limit.
    public var maxLatencyIncreasePlus1: UInt32

    public init(maxDecPicBufferingMinus1: Int, maxNumReorderPics: Int, maxLatencyIncreasePlus1: UInt32) {
        self.maxDecPicBufferingMinus1 = maxDecPicBufferingMinus1
        self.maxNumReorderPics = maxNumReorderPics
        self.maxLatencyIncreasePlus1 = maxLatencyIncreasePlus1
    }

    /// SpsMaxLatencyPictures[i] = max_num_reorder_pics + max_latency_increase_plus1 - 1 (7-9):
    /// a picture is output at the latest when this many pictures follow it; nil for no limit.
    public var maxLatencyPictures: Int? {
        maxLatencyIncreasePlus1 == 0 ? nil : maxNumReorderPics &+ Int(maxLatencyIncreasePlus1) &- 1
    }

    /// The largest DPB any profile allows (MaxDpbSize, A.4.2: at most 16 pictures).
    static let maxDpbSize = 16

    /// The loop of 7.3.2.1 / 7.3.2.2 over sub-layers with the semantics of 7.4.3.1 / 7.4.3.2.1:
    /// every list has maxSubLayersMinus1 + 1 entries; without *_sub_layer_ordering_info_present_flag
    /// only the highest is sent and the lower ones take its values.
    static func parseList(
        _ r: inout H265BitReader, prefix: String, maxSubLayersMinus1: Int, infoPresentForEachSubLayer: Bool
    ) throws(H265Error) -> [H265SubLayerOrdering] {
        var list: [H265SubLayerOrdering] = []
        let first = infoPresentForEachSubLayer ? 0 : maxSubLayersMinus1
        for index in first...maxSubLayersMinus1 {
            let buffering = try r.readUE("\(prefix)_max_dec_pic_buffering_minus1", max: maxDpbSize &- 1)
            let reorder = try r.readUE("\(prefix)_max_num_reorder_pics", max: buffering)
            let latency = try r.readUE("\(prefix)_max_latency_increase_plus1")
            // 7.4.3.2.1: for i > 0, neither may be smaller than for sub-layer i - 1 (a higher
            // sub-layer holds the lower ones' pictures too).
            if let previous = list.last, index > first {
                if buffering < previous.maxDecPicBufferingMinus1 {
                    throw H265Error.invalidValue(
                        field: "\(prefix)_max_dec_pic_buffering_minus1[\(index)]", value: Int64(buffering))
                }
                if reorder < previous.maxNumReorderPics {
                    throw H265Error.invalidValue(
                        field: "\(prefix)_max_num_reorder_pics[\(index)]", value: Int64(reorder))
                }
            }
            list.append(
                H265SubLayerOrdering(
                    maxDecPicBufferingMinus1: buffering, maxNumReorderPics: reorder, maxLatencyIncreasePlus1: latency))
        }
        if let highest = list.first, !infoPresentForEachSubLayer {
            list = [H265SubLayerOrdering](repeating: highest, count: maxSubLayersMinus1 &+ 1)
        }
        return list
    }

    /// Writes the loop back (every sub-layer when `infoPresentForEachSubLayer`, else the last).
    static func writeList(_ list: [H265SubLayerOrdering], to w: inout BitWriter, infoPresentForEachSubLayer: Bool) {
        let sent = infoPresentForEachSubLayer ? list : Array(list.suffix(1))
        for entry in sent {
            w.writeUE(UInt32(truncatingIfNeeded: entry.maxDecPicBufferingMinus1))
            w.writeUE(UInt32(truncatingIfNeeded: entry.maxNumReorderPics))
            w.writeUE(entry.maxLatencyIncreasePlus1)
        }
    }
}

/// A video parameter set: video_parameter_set_rbsp() of 7.3.2.1 with the semantics of 7.4.3.1.
/// The base part only: vps_extension() (multi-layer, Annex F) is not parsed; its presence is
/// recorded in `vpsExtensionFlag`.
public struct H265VideoParameterSet: Hashable, Sendable {
    /// One hrd_parameters() of the VPS timing part.
    public struct LayerSetHRD: Hashable, Sendable {
        /// hrd_layer_set_idx[i]: the layer set the HRD applies to.
        public var layerSetIndex: Int
        /// cprms_present_flag[i] (inferred 1 for i = 0).
        public var commonParametersPresentFlag: Bool
        public var parameters: H265HRDParameters
    }

    /// vps_video_parameter_set_id, u(4).
    public var videoParameterSetID = 0
    public var baseLayerInternalFlag = true
    public var baseLayerAvailableFlag = true
    /// vps_max_layers_minus1, 0...62.
    public var maxLayersMinus1 = 0
    /// vps_max_sub_layers_minus1, 0...6.
    public var maxSubLayersMinus1 = 0
    public var temporalIDNestingFlag = false
    public var profileTierLevel = H265ProfileTierLevel()
    public var subLayerOrderingInfoPresentFlag = false
    /// One entry per sub-layer 0...vps_max_sub_layers_minus1 (inferred ones included).
    public var subLayerOrdering: [H265SubLayerOrdering] = []
    /// vps_max_layer_id, 0...62.
    public var maxLayerID = 0
    /// vps_num_layer_sets_minus1, 0...1023.
    public var numLayerSetsMinus1 = 0
    /// layer_id_included_flag[i][j] for layer sets 1...vps_num_layer_sets_minus1, bit j set when
    /// layer j is in set i (layer set 0 is the base layer alone).
    public var layerIDIncludedFlags: [UInt64] = []
    public var timingInfoPresentFlag = false
    public var numUnitsInTick: UInt32 = 0
    public var timeScale: UInt32 = 0
    public var pocProportionalToTimingFlag = false
    /// vps_num_ticks_poc_diff_one_minus1; nil unless vps_poc_proportional_to_timing_flag.
    public var numTicksPocDiffOneMinus1: UInt32?
    /// vps_num_hrd_parameters entries.
    public var hrdParameters: [LayerSetHRD] = []
    /// vps_extension_flag: a vps_extension() follows, which this parser does not read.
    public var vpsExtensionFlag = false

    public init() {}

    /// Parses a whole VPS NAL unit (nal_unit_type 32): the two-byte header, then the escaped RBSP.
    public static func parse(nalUnit: UnsafeRawBufferPointer) throws(H265Error) -> H265VideoParameterSet {
        // A VPS with 1024 layer sets of 63 flags and an HRD per set is tens of kilobytes; the
        // hvcC record and RTP (RFC 7798) cannot carry more than 64 KiB anyway.
        try H265NALUnitParsing.parse(nalUnit: nalUnit, expecting: .videoParameterSet, maxBytes: 1 << 16) {
            (r: inout H265BitReader, _: H265NALUnitHeader) throws(H265Error) in try parse(&r)
        }
    }

    /// `parse(nalUnit:)` for an array.
    public static func parse(nalUnit: [UInt8]) throws(H265Error) -> H265VideoParameterSet {
        try H265NALUnitParsing.parse(nalUnit: nalUnit, expecting: .videoParameterSet, maxBytes: 1 << 16) {
            (r: inout H265BitReader, _: H265NALUnitHeader) throws(H265Error) in try parse(&r)
        }
    }

    /// video_parameter_set_rbsp(), 7.3.2.1.
    static func parse(_ r: inout H265BitReader) throws(H265Error) -> H265VideoParameterSet {
        var vps = H265VideoParameterSet()
        vps.videoParameterSetID = Int(try r.readBits(4, "vps_video_parameter_set_id"))
        vps.baseLayerInternalFlag = try r.readFlag("vps_base_layer_internal_flag")
        vps.baseLayerAvailableFlag = try r.readFlag("vps_base_layer_available_flag")
        // 7.4.3.1: vps_max_layers_minus1 shall be less than 63.
        vps.maxLayersMinus1 = try r.readBits(6, "vps_max_layers_minus1", max: 62)
        // 7.4.3.1: 0...6 (seven temporal sub-layers at most).
        vps.maxSubLayersMinus1 = try r.readBits(3, "vps_max_sub_layers_minus1", max: 6)
        vps.temporalIDNestingFlag = try r.readFlag("vps_temporal_id_nesting_flag")
        // 7.4.3.1: with a single sub-layer, temporal nesting holds trivially and the flag shall be 1.
        if vps.maxSubLayersMinus1 == 0 && !vps.temporalIDNestingFlag {
            throw H265Error.invalidValue(field: "vps_temporal_id_nesting_flag", value: 0)
        }
        // vps_reserved_0xffff_16bits: decoders ignore the value (7.4.3.1).
        try r.skipBits(16, "vps_reserved_0xffff_16bits")
        vps.profileTierLevel = try H265ProfileTierLevel.parse(
            &r, profilePresent: true, maxNumSubLayersMinus1: vps.maxSubLayersMinus1)
        vps.subLayerOrderingInfoPresentFlag = try r.readFlag("vps_sub_layer_ordering_info_present_flag")
        vps.subLayerOrdering = try H265SubLayerOrdering.parseList(
            &r, prefix: "vps", maxSubLayersMinus1: vps.maxSubLayersMinus1,
            infoPresentForEachSubLayer: vps.subLayerOrderingInfoPresentFlag)
        // 7.4.3.1: vps_max_layer_id shall be less than 63.
        vps.maxLayerID = try r.readBits(6, "vps_max_layer_id", max: 62)
        // 7.4.3.1: 0...1023.
        vps.numLayerSetsMinus1 = try r.readUE("vps_num_layer_sets_minus1", max: 1023)
        if vps.numLayerSetsMinus1 > 0 {
            vps.layerIDIncludedFlags.reserveCapacity(vps.numLayerSetsMinus1)
            for _ in 1...vps.numLayerSetsMinus1 {
                var included: UInt64 = 0
                for layer in 0...vps.maxLayerID {
                    if try r.readFlag("layer_id_included_flag") { included |= UInt64(1) << UInt64(layer) }
                }
                vps.layerIDIncludedFlags.append(included)
            }
        }
        vps.timingInfoPresentFlag = try r.readFlag("vps_timing_info_present_flag")
        if vps.timingInfoPresentFlag {
            vps.numUnitsInTick = try r.readBits(32, "vps_num_units_in_tick")
            vps.timeScale = try r.readBits(32, "vps_time_scale")
            vps.pocProportionalToTimingFlag = try r.readFlag("vps_poc_proportional_to_timing_flag")
            if vps.pocProportionalToTimingFlag {
                vps.numTicksPocDiffOneMinus1 = try r.readUE("vps_num_ticks_poc_diff_one_minus1")
            }
            // 7.4.3.1: 0...vps_num_layer_sets_minus1 + 1 (at most one HRD per layer set).
            let hrdCount = try r.readUE("vps_num_hrd_parameters", max: vps.numLayerSetsMinus1 &+ 1)
            var previous: H265HRDParameters?
            for index in 0..<hrdCount {
                // 7.4.3.1: hrd_layer_set_idx[i] in (vps_base_layer_internal_flag ? 0 : 1) ...
                // vps_num_layer_sets_minus1.
                let layerSet = try r.readUE("hrd_layer_set_idx", max: vps.numLayerSetsMinus1)
                if layerSet == 0 && !vps.baseLayerInternalFlag {
                    throw H265Error.invalidValue(field: "hrd_layer_set_idx", value: 0)
                }
                let common = index == 0 ? true : try r.readFlag("cprms_present_flag")
                let parameters = try H265HRDParameters.parse(
                    &r, commonInfoPresent: common, maxNumSubLayersMinus1: vps.maxSubLayersMinus1,
                    inheritingFrom: previous)
                previous = parameters
                vps.hrdParameters.append(
                    LayerSetHRD(
                        layerSetIndex: layerSet, commonParametersPresentFlag: common, parameters: parameters))
            }
        }
        vps.vpsExtensionFlag = try r.readFlag("vps_extension_flag")
        // vps_extension() (F.7.3.2.1.1) is for multi-layer decoders; the base layer needs nothing
        // from it, so parsing stops here and the trailing bits are checked only without it.
        if !vps.vpsExtensionFlag { try r.readRBSPTrailingBits() }
        return vps
    }

    /// The VPS as a NAL unit (header, escaped RBSP), for encoders and tests. The extension is
    /// not written (vps_extension_flag 0).
    public func nalUnit() -> [UInt8] {
        var w = BitWriter()
        w.writeBits(UInt32(truncatingIfNeeded: videoParameterSetID), count: 4)
        w.writeFlag(baseLayerInternalFlag)
        w.writeFlag(baseLayerAvailableFlag)
        w.writeBits(UInt32(truncatingIfNeeded: maxLayersMinus1), count: 6)
        w.writeBits(UInt32(truncatingIfNeeded: maxSubLayersMinus1), count: 3)
        w.writeFlag(temporalIDNestingFlag)
        w.writeBits(0xFFFF, count: 16)
        profileTierLevel.write(to: &w, maxNumSubLayersMinus1: maxSubLayersMinus1)
        w.writeFlag(subLayerOrderingInfoPresentFlag)
        H265SubLayerOrdering.writeList(
            subLayerOrdering, to: &w, infoPresentForEachSubLayer: subLayerOrderingInfoPresentFlag)
        w.writeBits(UInt32(truncatingIfNeeded: maxLayerID), count: 6)
        w.writeUE(UInt32(truncatingIfNeeded: numLayerSetsMinus1))
        for included in layerIDIncludedFlags.prefix(numLayerSetsMinus1) {
            for layer in 0...Swift.min(Swift.max(maxLayerID, 0), 63) {
                w.writeFlag(included & (UInt64(1) << UInt64(layer)) != 0)
            }
        }
        w.writeFlag(timingInfoPresentFlag)
        if timingInfoPresentFlag {
            w.writeBits(numUnitsInTick, count: 32)
            w.writeBits(timeScale, count: 32)
            w.writeFlag(pocProportionalToTimingFlag)
            if pocProportionalToTimingFlag { w.writeUE(numTicksPocDiffOneMinus1 ?? 0) }
            w.writeUE(UInt32(truncatingIfNeeded: hrdParameters.count))
            for (index, hrd) in hrdParameters.enumerated() {
                w.writeUE(UInt32(truncatingIfNeeded: hrd.layerSetIndex))
                if index > 0 { w.writeFlag(hrd.commonParametersPresentFlag) }
                hrd.parameters.write(to: &w, commonInfoPresent: index == 0 || hrd.commonParametersPresentFlag)
            }
        }
        w.writeFlag(false)
        w.writeRBSPTrailingBits()
        return H265NALUnitHeader(nalUnitType: .videoParameterSet).bytes + RBSP.insertEmulationPrevention(w.bytes)
    }
}
