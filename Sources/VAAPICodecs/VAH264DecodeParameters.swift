import CVA
import H264

/// Fills libva's H.264 decoding structures (va.h: `VAPictureParameterBufferH264`,
/// `VAIQMatrixBufferH264`, `VASliceParameterBufferH264`) from what the decoding state machine
/// passes to the accelerator. Nothing here reads decoder state: every value comes from the
/// arguments.
enum VAH264DecodeParameters {
    /// A VA picture entry: `surface` is the picture's VA surface (VA_INVALID_SURFACE for a
    /// picture without one: a frame inferred for a frame_num gap, 8.2.5.2).
    static func picture(_ picture: H264Picture, surface: VASurfaceID) -> VAPictureH264 {
        var entry = VAPictureH264()
        entry.picture_id = surface
        // va.h: frame_idx is frame_num for a short-term reference and LongTermFrameIdx for a
        // long-term one (8.2.4.1).
        if let longTerm = picture.longTermFrameIndex {
            entry.frame_idx = UInt32(truncatingIfNeeded: longTerm)
            entry.flags = UInt32(VA_PICTURE_H264_LONG_TERM_REFERENCE)
        } else {
            entry.frame_idx = UInt32(truncatingIfNeeded: picture.frameNum)
            entry.flags = picture.isShortTermReference ? UInt32(VA_PICTURE_H264_SHORT_TERM_REFERENCE) : 0
        }
        entry.TopFieldOrderCnt = Int32(truncatingIfNeeded: picture.topFieldOrderCnt)
        entry.BottomFieldOrderCnt = Int32(truncatingIfNeeded: picture.bottomFieldOrderCnt)
        return entry
    }

    static var invalidPicture: VAPictureH264 {
        var entry = VAPictureH264()
        entry.picture_id = VASurfaceID(VA_INVALID_SURFACE)
        entry.flags = UInt32(VA_PICTURE_H264_INVALID)
        return entry
    }

    /// `VAPictureParameterBufferH264` for the current picture: its SPS/PPS fields (7.4.2.1,
    /// 7.4.2.2), CurrPic, and ReferenceFrames, the DPB's reference frames that have a surface.
    static func pictureParameters(
        current: H264Picture, currentSurface: VASurfaceID, firstSlice: SliceHeader,
        parameterSets: H264ActiveParameterSets, referenceFrames: [(H264Picture, VASurfaceID)]
    ) -> VAPictureParameterBufferH264 {
        let sps = parameterSets.sequence
        let pps = parameterSets.picture
        var parameters = VAPictureParameterBufferH264()
        var currentEntry = picture(current, surface: currentSurface)
        // CurrPic: a frame (neither field flag); a reference picture is flagged short-term, as
        // its marking is only decided after it is decoded (8.2.5.1).
        currentEntry.flags = current.nalRefIdc != 0 ? UInt32(VA_PICTURE_H264_SHORT_TERM_REFERENCE) : 0
        currentEntry.frame_idx = UInt32(truncatingIfNeeded: firstSlice.frameNum)
        parameters.CurrPic = currentEntry
        withUnsafeMutableBytes(of: &parameters.ReferenceFrames) { raw in
            let entries = raw.bindMemory(to: VAPictureH264.self)
            for index in entries.indices { entries[index] = invalidPicture }
            for (index, (reference, surface)) in referenceFrames.prefix(entries.count).enumerated() {
                entries[index] = picture(reference, surface: surface)
            }
        }
        parameters.picture_width_in_mbs_minus1 = UInt16(truncatingIfNeeded: sps.picWidthInMbsMinus1)
        // Frames only: FrameHeightInMbs - 1 (7-18).
        parameters.picture_height_in_mbs_minus1 = UInt16(truncatingIfNeeded: sps.frameHeightInMbs - 1)
        parameters.bit_depth_luma_minus8 = UInt8(truncatingIfNeeded: sps.bitDepthLumaMinus8)
        parameters.bit_depth_chroma_minus8 = UInt8(truncatingIfNeeded: sps.bitDepthChromaMinus8)
        parameters.num_ref_frames = UInt8(truncatingIfNeeded: sps.maxNumRefFrames)
        parameters.seq_fields.bits.chroma_format_idc = UInt32(truncatingIfNeeded: sps.chromaFormatIdc)
        parameters.seq_fields.bits.residual_colour_transform_flag = sps.separateColourPlaneFlag ? 1 : 0
        parameters.seq_fields.bits.gaps_in_frame_num_value_allowed_flag = sps.gapsInFrameNumValueAllowedFlag ? 1 : 0
        parameters.seq_fields.bits.frame_mbs_only_flag = sps.frameMbsOnlyFlag ? 1 : 0
        parameters.seq_fields.bits.mb_adaptive_frame_field_flag = sps.mbAdaptiveFrameFieldFlag ? 1 : 0
        parameters.seq_fields.bits.direct_8x8_inference_flag = sps.direct8x8InferenceFlag ? 1 : 0
        // A.3.3.2: from level 3.1 on, bi-prediction is limited to 8x8 and larger luma blocks.
        parameters.seq_fields.bits.MinLumaBiPredSize8x8 = sps.levelIdc >= 31 ? 1 : 0
        parameters.seq_fields.bits.log2_max_frame_num_minus4 = UInt32(truncatingIfNeeded: sps.log2MaxFrameNumMinus4)
        parameters.seq_fields.bits.pic_order_cnt_type = UInt32(truncatingIfNeeded: sps.picOrderCntType)
        parameters.seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 = UInt32(
            truncatingIfNeeded: sps.log2MaxPicOrderCntLsbMinus4)
        parameters.seq_fields.bits.delta_pic_order_always_zero_flag = sps.deltaPicOrderAlwaysZeroFlag ? 1 : 0
        parameters.pic_init_qp_minus26 = Int8(truncatingIfNeeded: pps.picInitQpMinus26)
        parameters.pic_init_qs_minus26 = Int8(truncatingIfNeeded: pps.picInitQsMinus26)
        parameters.chroma_qp_index_offset = Int8(truncatingIfNeeded: pps.chromaQpIndexOffset)
        parameters.second_chroma_qp_index_offset = Int8(truncatingIfNeeded: pps.secondChromaQpIndexOffset)
        parameters.pic_fields.bits.entropy_coding_mode_flag = pps.entropyCodingModeFlag ? 1 : 0
        parameters.pic_fields.bits.weighted_pred_flag = pps.weightedPredFlag ? 1 : 0
        parameters.pic_fields.bits.weighted_bipred_idc = UInt32(truncatingIfNeeded: pps.weightedBipredIdc)
        parameters.pic_fields.bits.transform_8x8_mode_flag = pps.transform8x8ModeFlag ? 1 : 0
        parameters.pic_fields.bits.field_pic_flag = 0
        parameters.pic_fields.bits.constrained_intra_pred_flag = pps.constrainedIntraPredFlag ? 1 : 0
        parameters.pic_fields.bits.pic_order_present_flag = pps.bottomFieldPicOrderInFramePresentFlag ? 1 : 0
        parameters.pic_fields.bits.deblocking_filter_control_present_flag =
            pps.deblockingFilterControlPresentFlag ? 1 : 0
        parameters.pic_fields.bits.redundant_pic_cnt_present_flag = pps.redundantPicCntPresentFlag ? 1 : 0
        parameters.pic_fields.bits.reference_pic_flag = current.nalRefIdc != 0 ? 1 : 0
        parameters.frame_num = UInt16(truncatingIfNeeded: firstSlice.frameNum)
        return parameters
    }

    /// `VAIQMatrixBufferH264`: the scaling lists in force (7.4.2.2: the PPS's when it has
    /// pic_scaling_matrix_present_flag, else the SPS's, which are flat without
    /// seq_scaling_matrix_present_flag), in raster order as va.h wants them (the bitstream
    /// sends them in zig-zag order). Only the two 8x8 luma lists fit; 4:4:4 is not decoded here.
    static func inverseQuantizationMatrix(_ parameterSets: H264ActiveParameterSets) -> VAIQMatrixBufferH264 {
        let matrix = parameterSets.scalingMatrixInForce
        var buffer = VAIQMatrixBufferH264()
        withUnsafeMutableBytes(of: &buffer.ScalingList4x4) { lists4x4 in
            withUnsafeMutableBytes(of: &buffer.ScalingList8x8) { lists8x8 in
                matrix.writeRasterOrder(lists4x4: lists4x4, lists8x8: lists8x8)
            }
        }
        return buffer
    }

    /// `VASliceParameterBufferH264` for one slice whose whole NAL unit (header byte included,
    /// escaped) is the slice data buffer.
    static func sliceParameters(
        _ slice: H264SliceData, parameterSets: H264ActiveParameterSets,
        list0: [(H264Picture, VASurfaceID)?], list1: [(H264Picture, VASurfaceID)?]
    ) -> VASliceParameterBufferH264 {
        let header = slice.header
        var parameters = VASliceParameterBufferH264()
        parameters.slice_data_size = UInt32(truncatingIfNeeded: slice.nalUnit.count)
        parameters.slice_data_offset = 0
        parameters.slice_data_flag = UInt32(VA_SLICE_DATA_FLAG_ALL)
        // va.h: the bit offset of slice_data() from the start of the NAL unit, counted after
        // emulation prevention bytes are removed: the NAL unit header byte plus slice_header()
        // (7.3.3), before any cabac_alignment_one_bit.
        parameters.slice_data_bit_offset = UInt16(truncatingIfNeeded: 8 + header.headerBitSize)
        parameters.first_mb_in_slice = UInt16(truncatingIfNeeded: header.firstMbInSlice)
        parameters.slice_type = UInt8(truncatingIfNeeded: header.sliceType % 5)
        parameters.direct_spatial_mv_pred_flag = header.directSpatialMvPredFlag ? 1 : 0
        // The effective counts (the PPS defaults unless overridden, 7.4.3), not the syntax
        // elements: a driver cannot see the PPS defaults.
        parameters.num_ref_idx_l0_active_minus1 = UInt8(truncatingIfNeeded: max(header.numRefIdxL0Active - 1, 0))
        parameters.num_ref_idx_l1_active_minus1 = UInt8(truncatingIfNeeded: max(header.numRefIdxL1Active - 1, 0))
        parameters.cabac_init_idc = UInt8(truncatingIfNeeded: header.cabacInitIdc)
        parameters.slice_qp_delta = Int8(truncatingIfNeeded: header.sliceQpDelta)
        parameters.disable_deblocking_filter_idc = UInt8(truncatingIfNeeded: header.disableDeblockingFilterIdc)
        parameters.slice_alpha_c0_offset_div2 = Int8(truncatingIfNeeded: header.sliceAlphaC0OffsetDiv2)
        parameters.slice_beta_offset_div2 = Int8(truncatingIfNeeded: header.sliceBetaOffsetDiv2)
        fill(&parameters.RefPicList0, with: list0)
        fill(&parameters.RefPicList1, with: list1)
        // Without a pred_weight_table (default weighted prediction, 8.4.2.3.1) the arrays still
        // get the values 7.4.3.2 infers (weight 2^0, offset 0) for the active entries, as FFmpeg
        // fills them: a driver that reads the arrays without looking at the flags computes the
        // default prediction, not a zero-weighted one.
        fillWeights(
            &parameters, table: header.predWeightTable ?? PredWeightTable(), list0Count: list0.count,
            list1Count: list1.count)
        return parameters
    }

    private static func fill<Tuple>(_ list: inout Tuple, with entries: [(H264Picture, VASurfaceID)?]) {
        withUnsafeMutableBytes(of: &list) { raw in
            let slots = raw.bindMemory(to: VAPictureH264.self)
            for index in slots.indices { slots[index] = invalidPicture }
            for (index, entry) in entries.prefix(slots.count).enumerated() {
                if let (picture, surface) = entry { slots[index] = Self.picture(picture, surface: surface) }
            }
        }
    }

    /// pred_weight_table() (7.3.3.2) with the values 7.4.3.2 infers where a flag is 0
    /// (2^denominator for weights, 0 for offsets), which is what va.h's arrays hold.
    private static func fillWeights(
        _ parameters: inout VASliceParameterBufferH264, table: PredWeightTable, list0Count: Int, list1Count: Int
    ) {
        parameters.luma_log2_weight_denom = UInt8(truncatingIfNeeded: table.lumaLog2WeightDenom)
        parameters.chroma_log2_weight_denom = UInt8(truncatingIfNeeded: table.chromaLog2WeightDenom)
        let defaultLuma = Int16(1 << min(table.lumaLog2WeightDenom, 7))
        let defaultChroma = Int16(1 << min(table.chromaLog2WeightDenom, 7))
        func write(
            _ entries: [PredWeightTable.Entry], count: Int,
            lumaWeights: UnsafeMutableRawBufferPointer, lumaOffsets: UnsafeMutableRawBufferPointer,
            chromaWeights: UnsafeMutableRawBufferPointer, chromaOffsets: UnsafeMutableRawBufferPointer
        ) -> (luma: Bool, chroma: Bool) {
            let lw = lumaWeights.bindMemory(to: Int16.self)
            let lo = lumaOffsets.bindMemory(to: Int16.self)
            let cw = chromaWeights.bindMemory(to: Int16.self)
            let co = chromaOffsets.bindMemory(to: Int16.self)
            var anyLuma = false
            var anyChroma = false
            for index in 0..<min(count, lw.count) {
                let entry = index < entries.count ? entries[index] : PredWeightTable.Entry()
                lw[index] = entry.lumaWeightFlag ? entry.lumaWeight : defaultLuma
                lo[index] = entry.lumaWeightFlag ? entry.lumaOffset : 0
                cw[2 * index] = entry.chromaWeightFlag ? entry.chromaWeightCb : defaultChroma
                cw[2 * index + 1] = entry.chromaWeightFlag ? entry.chromaWeightCr : defaultChroma
                co[2 * index] = entry.chromaWeightFlag ? entry.chromaOffsetCb : 0
                co[2 * index + 1] = entry.chromaWeightFlag ? entry.chromaOffsetCr : 0
                anyLuma = anyLuma || entry.lumaWeightFlag
                anyChroma = anyChroma || entry.chromaWeightFlag
            }
            return (anyLuma, anyChroma)
        }
        let flags0 = withUnsafeMutableBytes(of: &parameters.luma_weight_l0) { lw in
            withUnsafeMutableBytes(of: &parameters.luma_offset_l0) { lo in
                withUnsafeMutableBytes(of: &parameters.chroma_weight_l0) { cw in
                    withUnsafeMutableBytes(of: &parameters.chroma_offset_l0) { co in
                        write(
                            table.l0, count: list0Count, lumaWeights: lw, lumaOffsets: lo, chromaWeights: cw,
                            chromaOffsets: co)
                    }
                }
            }
        }
        let flags1 = withUnsafeMutableBytes(of: &parameters.luma_weight_l1) { lw in
            withUnsafeMutableBytes(of: &parameters.luma_offset_l1) { lo in
                withUnsafeMutableBytes(of: &parameters.chroma_weight_l1) { cw in
                    withUnsafeMutableBytes(of: &parameters.chroma_offset_l1) { co in
                        write(
                            table.l1, count: list1Count, lumaWeights: lw, lumaOffsets: lo, chromaWeights: cw,
                            chromaOffsets: co)
                    }
                }
            }
        }
        // va.h's luma_weight_lX_flag / chroma_weight_lX_flag: whether any explicit weight was
        // sent for the list (the arrays hold the inferred values either way).
        parameters.luma_weight_l0_flag = flags0.luma ? 1 : 0
        parameters.chroma_weight_l0_flag = flags0.chroma ? 1 : 0
        parameters.luma_weight_l1_flag = flags1.luma ? 1 : 0
        parameters.chroma_weight_l1_flag = flags1.chroma ? 1 : 0
    }
}
