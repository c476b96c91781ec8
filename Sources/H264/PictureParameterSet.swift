/// A picture parameter set: pic_parameter_set_rbsp() of 7.3.2.2 with the semantics of 7.4.2.2.
///
/// Parsing needs the SPS it refers to: the number of 8x8 scaling lists depends on its
/// chroma_format_idc, the slice group maps on its picture size, and fall-back rule B on its
/// scaling matrix.
public struct PictureParameterSet: Hashable, Sendable {
    /// pic_parameter_set_id, 0...255.
    public var picParameterSetID = 0
    /// seq_parameter_set_id, 0...31.
    public var seqParameterSetID = 0
    /// entropy_coding_mode_flag: CABAC when true, CAVLC otherwise.
    public var entropyCodingModeFlag = false
    /// bottom_field_pic_order_in_frame_present_flag (slice headers carry
    /// delta_pic_order_cnt_bottom / delta_pic_order_cnt[1]).
    public var bottomFieldPicOrderInFramePresentFlag = false
    /// num_slice_groups_minus1, 0...7 (A.2: non-zero only in Baseline and Extended).
    public var numSliceGroupsMinus1 = 0
    /// slice_group_map_type, 0...6 (only meaningful with slice groups).
    public var sliceGroupMapType = 0
    /// run_length_minus1[iGroup] (map type 0), num_slice_groups_minus1 + 1 entries.
    public var runLengthMinus1: [Int] = []
    /// top_left[iGroup] (map type 2), num_slice_groups_minus1 entries.
    public var topLeft: [Int] = []
    /// bottom_right[iGroup] (map type 2).
    public var bottomRight: [Int] = []
    /// slice_group_change_direction_flag (map types 3...5).
    public var sliceGroupChangeDirectionFlag = false
    /// slice_group_change_rate_minus1 (map types 3...5), 0...PicSizeInMapUnits - 1.
    public var sliceGroupChangeRateMinus1 = 0
    /// pic_size_in_map_units_minus1 (map type 6).
    public var picSizeInMapUnitsMinus1 = 0
    /// slice_group_id[i] (map type 6), PicSizeInMapUnits entries.
    public var sliceGroupID: [UInt8] = []
    /// num_ref_idx_l0_default_active_minus1, 0...31.
    public var numRefIdxL0DefaultActiveMinus1 = 0
    /// num_ref_idx_l1_default_active_minus1, 0...31.
    public var numRefIdxL1DefaultActiveMinus1 = 0
    public var weightedPredFlag = false
    /// weighted_bipred_idc, 0...2.
    public var weightedBipredIdc = 0
    /// pic_init_qp_minus26, -(26 + QpBdOffsetY)...25.
    public var picInitQpMinus26 = 0
    /// pic_init_qs_minus26, -26...25.
    public var picInitQsMinus26 = 0
    /// chroma_qp_index_offset, -12...12.
    public var chromaQpIndexOffset = 0
    public var deblockingFilterControlPresentFlag = false
    public var constrainedIntraPredFlag = false
    public var redundantPicCntPresentFlag = false
    /// transform_8x8_mode_flag (0 when the optional tail is absent).
    public var transform8x8ModeFlag = false
    public var picScalingMatrixPresentFlag = false
    /// The scaling lists in force for pictures using this PPS: the PPS's own lists resolved by
    /// fall-back rule B when pic_scaling_matrix_present_flag, else the SPS's (7.4.2.2).
    public var scalingMatrix = ScalingMatrix.flat
    /// second_chroma_qp_index_offset, -12...12; equal to chroma_qp_index_offset when absent.
    public var secondChromaQpIndexOffset = 0

    public init() {}

    /// Parses a whole PPS NAL unit (nal_unit_type 8, header byte included, escaped).
    /// Throws `.missingParameterSet(kind: "SPS", id:)` when `sequenceParameterSets` does not
    /// know the SPS the PPS refers to.
    public static func parse(
        nalUnit: UnsafeRawBufferPointer, sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> PictureParameterSet {
        guard let first = nalUnit.first else { throw H264Error.truncated(what: "nal_unit_header") }
        let header = NALUnitHeader(byte: first)
        guard header.nalUnitType == .pictureParameterSet else {
            throw H264Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        // Only map type 6 makes a PPS large (one slice_group_id per map unit): unescape all.
        return try RBSP.withUnescapedPayload(of: nalUnit, from: 1, maxBytes: .max) { rbsp in
            Result { () throws(H264Error) -> PictureParameterSet in
                try parse(rbsp: rbsp, sequenceParameterSets: sequenceParameterSets)
            }
        }.get()
    }

    /// `parse(nalUnit:sequenceParameterSets:)` for an array.
    public static func parse(
        nalUnit: [UInt8], sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> PictureParameterSet {
        try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H264Error) -> PictureParameterSet in
                try parse(nalUnit: bytes, sequenceParameterSets: sequenceParameterSets)
            }
        }.get()
    }

    /// Reads only pic_parameter_set_id and seq_parameter_set_id from a PPS NAL unit (header
    /// byte included): enough to file it, without needing the SPS.
    public static func peekIDs(nalUnit: UnsafeRawBufferPointer) throws(H264Error) -> (ppsID: Int, spsID: Int) {
        guard let first = nalUnit.first else { throw H264Error.truncated(what: "nal_unit_header") }
        let header = NALUnitHeader(byte: first)
        guard header.nalUnitType == .pictureParameterSet else {
            throw H264Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        // Two ue(v) of at most 65 bits each fit in 17 bytes.
        return try RBSP.withUnescapedPayload(of: nalUnit, from: 1, maxBytes: 17) { rbsp in
            Result { () throws(H264Error) -> (ppsID: Int, spsID: Int) in
                var r = BitReader(rbsp)
                let pps = try r.readUE("pic_parameter_set_id", max: 255)
                let sps = try r.readUE("seq_parameter_set_id", max: 31)
                return (pps, sps)
            }
        }.get()
    }

    /// Parses pic_parameter_set_rbsp() from RBSP bytes (after the NAL header byte).
    public static func parse(
        rbsp: UnsafeRawBufferPointer, sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> PictureParameterSet {
        var r = BitReader(rbsp)
        var pps = PictureParameterSet()
        pps.picParameterSetID = try r.readUE("pic_parameter_set_id", max: 255)
        pps.seqParameterSetID = try r.readUE("seq_parameter_set_id", max: 31)
        guard let sps = sequenceParameterSets(pps.seqParameterSetID) else {
            throw H264Error.missingParameterSet(kind: "SPS", id: pps.seqParameterSetID)
        }
        pps.entropyCodingModeFlag = try r.readFlag("entropy_coding_mode_flag")
        pps.bottomFieldPicOrderInFramePresentFlag = try r.readFlag("bottom_field_pic_order_in_frame_present_flag")
        pps.numSliceGroupsMinus1 = try r.readUE("num_slice_groups_minus1", max: 7)
        if pps.numSliceGroupsMinus1 > 0 {
            try pps.parseSliceGroups(&r, sps: sps)
        }
        pps.numRefIdxL0DefaultActiveMinus1 = try r.readUE("num_ref_idx_l0_default_active_minus1", max: 31)
        pps.numRefIdxL1DefaultActiveMinus1 = try r.readUE("num_ref_idx_l1_default_active_minus1", max: 31)
        pps.weightedPredFlag = try r.readFlag("weighted_pred_flag")
        pps.weightedBipredIdc = Int(try r.readBits(2, "weighted_bipred_idc"))
        if pps.weightedBipredIdc == 3 {
            throw H264Error.invalidValue(field: "weighted_bipred_idc", value: 3)
        }
        // 7.4.2.2: pic_init_qp_minus26 in -(26 + QpBdOffsetY)...+25, QpBdOffsetY = 6 * bit_depth_luma_minus8.
        pps.picInitQpMinus26 = try r.readSE("pic_init_qp_minus26", range: -(26 + 6 * sps.bitDepthLumaMinus8)...25)
        pps.picInitQsMinus26 = try r.readSE("pic_init_qs_minus26", range: -26...25)
        pps.chromaQpIndexOffset = try r.readSE("chroma_qp_index_offset", range: -12...12)
        pps.deblockingFilterControlPresentFlag = try r.readFlag("deblocking_filter_control_present_flag")
        pps.constrainedIntraPredFlag = try r.readFlag("constrained_intra_pred_flag")
        pps.redundantPicCntPresentFlag = try r.readFlag("redundant_pic_cnt_present_flag")
        pps.scalingMatrix = sps.scalingMatrix
        pps.secondChromaQpIndexOffset = pps.chromaQpIndexOffset
        if r.moreRBSPData() {
            pps.transform8x8ModeFlag = try r.readFlag("transform_8x8_mode_flag")
            pps.picScalingMatrixPresentFlag = try r.readFlag("pic_scaling_matrix_present_flag")
            if pps.picScalingMatrixPresentFlag {
                let listCount = 6 + (pps.transform8x8ModeFlag ? (sps.chromaFormatIdc != 3 ? 2 : 6) : 0)
                pps.scalingMatrix = try ScalingMatrix.parse(&r, listCount: listCount, fallBack: sps.scalingMatrix)
            }
            pps.secondChromaQpIndexOffset = try r.readSE("second_chroma_qp_index_offset", range: -12...12)
        }
        try r.readRBSPTrailingBits()
        return pps
    }

    /// The slice group part of 7.3.2.2 (num_slice_groups_minus1 > 0), checked per 7.4.2.2.
    mutating func parseSliceGroups(_ r: inout BitReader, sps: SequenceParameterSet) throws(H264Error) {
        let picSizeInMapUnits = sps.picSizeInMapUnits
        sliceGroupMapType = try r.readUE("slice_group_map_type", max: 6)
        switch sliceGroupMapType {
        case 0:
            runLengthMinus1.reserveCapacity(numSliceGroupsMinus1 &+ 1)
            for _ in 0...numSliceGroupsMinus1 {
                runLengthMinus1.append(try r.readUE("run_length_minus1", max: picSizeInMapUnits &- 1))
            }
        case 2:
            topLeft.reserveCapacity(numSliceGroupsMinus1)
            bottomRight.reserveCapacity(numSliceGroupsMinus1)
            let width = sps.widthInMbs
            for _ in 0..<numSliceGroupsMinus1 {
                let tl = try r.readUE("top_left", max: picSizeInMapUnits &- 1)
                let br = try r.readUE("bottom_right", max: picSizeInMapUnits &- 1)
                // 7.4.2.2: top_left <= bottom_right and top_left % PicWidthInMbs <= bottom_right % PicWidthInMbs.
                guard tl <= br, tl % width <= br % width else {
                    throw H264Error.invalidValue(field: "top_left", value: Int64(tl))
                }
                topLeft.append(tl)
                bottomRight.append(br)
            }
        case 3, 4, 5:
            sliceGroupChangeDirectionFlag = try r.readFlag("slice_group_change_direction_flag")
            sliceGroupChangeRateMinus1 = try r.readUE("slice_group_change_rate_minus1", max: picSizeInMapUnits &- 1)
        case 6:
            picSizeInMapUnitsMinus1 = Int(try r.readUE("pic_size_in_map_units_minus1"))
            // 7.4.2.2: shall equal PicSizeInMapUnits - 1, which also bounds the allocation below.
            guard picSizeInMapUnitsMinus1 == picSizeInMapUnits &- 1 else {
                throw H264Error.invalidValue(
                    field: "pic_size_in_map_units_minus1", value: Int64(picSizeInMapUnitsMinus1))
            }
            // slice_group_id is u(v) with Ceil(Log2(num_slice_groups_minus1 + 1)) bits.
            let bits = Self.ceilLog2(numSliceGroupsMinus1 &+ 1)
            guard r.bitsRemaining >= picSizeInMapUnits &* bits else {
                throw H264Error.truncated(what: "slice_group_id")
            }
            sliceGroupID.reserveCapacity(picSizeInMapUnits)
            for _ in 0..<picSizeInMapUnits {
                sliceGroupID.append(UInt8(try r.readBits(bits, "slice_group_id", max: numSliceGroupsMinus1)))
            }
        default: // 1: dispersed, no parameters
            break
        }
    }

    /// Ceil(Log2(x)) for x >= 1.
    static func ceilLog2(_ x: Int) -> Int {
        var bits = 0
        while (1 << bits) < x { bits &+= 1 }
        return bits
    }

    /// SliceGroupChangeRate = slice_group_change_rate_minus1 + 1 (7-23).
    public var sliceGroupChangeRate: Int { sliceGroupChangeRateMinus1 &+ 1 }
}
