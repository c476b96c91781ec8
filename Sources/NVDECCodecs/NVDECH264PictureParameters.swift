import CCUDA
import H264

/// Fills NVDEC's H.264 picture parameters (cuviddec.h `CUVIDPICPARAMS` with
/// `CUVIDH264PICPARAMS`) from what the decoding state machine passes to the accelerator, as
/// the Video Codec SDK's parser would from the same stream. Nothing here reads decoder state:
/// every value comes from the arguments.
enum NVDECH264PictureParameters {
    /// The parameters of a frame picture whose first slice is `firstSlice`, decoded into surface
    /// `surfaceIndex`; `referenceFrames` are the DPB's reference frames with their surfaces (none
    /// for a frame inferred for a gap). The bitstream fields are set when the picture is submitted.
    static func make(
        current: H264Picture, surfaceIndex: Int, firstSlice: SliceHeader, parameterSets: H264ActiveParameterSets,
        referenceFrames: [(H264Picture, Int?)]
    ) -> CUVIDPICPARAMS {
        let sps = parameterSets.sequence
        let pps = parameterSets.picture
        var parameters = CUVIDPICPARAMS()
        parameters.PicWidthInMbs = Int32(truncatingIfNeeded: sps.picWidthInMbsMinus1 + 1)
        // Frames only: FrameHeightInMbs (7-18).
        parameters.FrameHeightInMbs = Int32(truncatingIfNeeded: sps.frameHeightInMbs)
        parameters.CurrPicIdx = Int32(truncatingIfNeeded: surfaceIndex)
        parameters.field_pic_flag = 0
        parameters.ref_pic_flag = current.nalRefIdc != 0 ? 1 : 0
        // Cleared by the first slice that is not I or SI (``noteSlice(_:in:)``).
        parameters.intra_pic_flag = 1

        var h264 = CUVIDH264PICPARAMS()
        h264.log2_max_frame_num_minus4 = Int32(truncatingIfNeeded: sps.log2MaxFrameNumMinus4)
        h264.pic_order_cnt_type = Int32(truncatingIfNeeded: sps.picOrderCntType)
        h264.log2_max_pic_order_cnt_lsb_minus4 = Int32(truncatingIfNeeded: sps.log2MaxPicOrderCntLsbMinus4)
        h264.delta_pic_order_always_zero_flag = sps.deltaPicOrderAlwaysZeroFlag ? 1 : 0
        h264.frame_mbs_only_flag = sps.frameMbsOnlyFlag ? 1 : 0
        h264.direct_8x8_inference_flag = sps.direct8x8InferenceFlag ? 1 : 0
        h264.num_ref_frames = Int32(truncatingIfNeeded: sps.maxNumRefFrames)
        h264.residual_colour_transform_flag = sps.separateColourPlaneFlag ? 1 : 0
        h264.bit_depth_luma_minus8 = UInt8(truncatingIfNeeded: sps.bitDepthLumaMinus8)
        h264.bit_depth_chroma_minus8 = UInt8(truncatingIfNeeded: sps.bitDepthChromaMinus8)
        h264.qpprime_y_zero_transform_bypass_flag = sps.qpprimeYZeroTransformBypassFlag ? 1 : 0
        h264.entropy_coding_mode_flag = pps.entropyCodingModeFlag ? 1 : 0
        h264.pic_order_present_flag = pps.bottomFieldPicOrderInFramePresentFlag ? 1 : 0
        // The PPS's defaults: each slice header overrides them in the bitstream the device parses.
        h264.num_ref_idx_l0_active_minus1 = Int32(truncatingIfNeeded: pps.numRefIdxL0DefaultActiveMinus1)
        h264.num_ref_idx_l1_active_minus1 = Int32(truncatingIfNeeded: pps.numRefIdxL1DefaultActiveMinus1)
        h264.weighted_pred_flag = pps.weightedPredFlag ? 1 : 0
        h264.weighted_bipred_idc = Int32(truncatingIfNeeded: pps.weightedBipredIdc)
        h264.pic_init_qp_minus26 = Int32(truncatingIfNeeded: pps.picInitQpMinus26)
        h264.pic_init_qs_minus26 = Int8(truncatingIfNeeded: pps.picInitQsMinus26)
        h264.deblocking_filter_control_present_flag = pps.deblockingFilterControlPresentFlag ? 1 : 0
        h264.redundant_pic_cnt_present_flag = pps.redundantPicCntPresentFlag ? 1 : 0
        h264.transform_8x8_mode_flag = pps.transform8x8ModeFlag ? 1 : 0
        // MbaffFrameFlag = mb_adaptive_frame_field_flag && !field_pic_flag (7-25); frames only.
        h264.MbaffFrameFlag = 0
        h264.constrained_intra_pred_flag = pps.constrainedIntraPredFlag ? 1 : 0
        h264.chroma_qp_index_offset = Int32(truncatingIfNeeded: pps.chromaQpIndexOffset)
        h264.second_chroma_qp_index_offset = Int32(truncatingIfNeeded: pps.secondChromaQpIndexOffset)
        h264.ref_pic_flag = parameters.ref_pic_flag
        h264.frame_num = Int32(truncatingIfNeeded: firstSlice.frameNum)
        h264.CurrFieldOrderCnt = (
            Int32(truncatingIfNeeded: current.topFieldOrderCnt), Int32(truncatingIfNeeded: current.bottomFieldOrderCnt)
        )
        withUnsafeMutableBytes(of: &h264.dpb) { raw in
            let entries = raw.bindMemory(to: CUVIDH264DPBENTRY.self)
            for index in entries.indices { entries[index] = unusedEntry }
            for (index, (reference, surface)) in referenceFrames.prefix(entries.count).enumerated() {
                entries[index] = entry(reference, surfaceIndex: surface)
            }
        }
        fillScalingLists(&h264, parameterSets)
        parameters.CodecSpecific.h264 = h264
        return parameters
    }

    /// A DPB entry (cuviddec.h CUVIDH264DPBENTRY): FrameIdx is frame_num for a short-term
    /// reference and LongTermFrameIdx for a long-term one (8.2.4.1); a frame uses both fields. A
    /// frame inferred for a frame_num gap (8.2.5.2) is `not_existing` with PicIdx -1, as
    /// cuviddec.h asks: it has no picture.
    static func entry(_ picture: H264Picture, surfaceIndex: Int?) -> CUVIDH264DPBENTRY {
        var entry = CUVIDH264DPBENTRY()
        entry.PicIdx = picture.isNonExisting ? -1 : Int32(truncatingIfNeeded: surfaceIndex ?? -1)
        if let longTerm = picture.longTermFrameIndex {
            entry.FrameIdx = Int32(truncatingIfNeeded: longTerm)
            entry.is_long_term = 1
        } else {
            entry.FrameIdx = Int32(truncatingIfNeeded: picture.frameNum)
        }
        entry.not_existing = picture.isNonExisting ? 1 : 0
        entry.used_for_reference = 3
        entry.FieldOrderCnt = (
            Int32(truncatingIfNeeded: picture.topFieldOrderCnt), Int32(truncatingIfNeeded: picture.bottomFieldOrderCnt)
        )
        return entry
    }

    static var unusedEntry: CUVIDH264DPBENTRY {
        var entry = CUVIDH264DPBENTRY()
        entry.PicIdx = -1
        return entry
    }

    /// One more slice of the picture: a P, B or SP slice makes it not entirely intra.
    static func noteSlice(_ header: SliceHeader, in parameters: inout CUVIDPICPARAMS) {
        if !header.sliceKind.isIntra { parameters.intra_pic_flag = 0 }
    }

    /// The scaling lists in force (7.4.2.2: the PPS's when it has pic_scaling_matrix_present_flag,
    /// else the SPS's, which are flat without seq_scaling_matrix_present_flag), in raster order
    /// as cuviddec.h wants them (the bitstream sends them in zig-zag order). The two 8x8 luma
    /// lists are NVDEC's WeightScale8x8 (4:2:0 has no chroma 8x8 lists).
    static func fillScalingLists(_ h264: inout CUVIDH264PICPARAMS, _ parameterSets: H264ActiveParameterSets) {
        let matrix = parameterSets.scalingMatrixInForce
        withUnsafeMutableBytes(of: &h264.WeightScale4x4) { lists4x4 in
            withUnsafeMutableBytes(of: &h264.WeightScale8x8) { lists8x8 in
                matrix.writeRasterOrder(lists4x4: lists4x4, lists8x8: lists8x8)
            }
        }
    }
}
