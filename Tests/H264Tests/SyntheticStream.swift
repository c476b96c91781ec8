import H264

/// Builds tiny but valid H.264 NAL units with the bit writer, so access-unit rules can be tested
/// on exactly the case they are about (clause 7.4.1.2.4) rather than on whatever a corpus has.
enum SyntheticStream {
    /// A baseline SPS: 32x32, POC type 0 with 6-bit LSBs, 4-bit frame_num unless asked for
    /// more (7.3.2.1.1).
    static func sequenceParameterSet(
        id: UInt32 = 0, picOrderCntType: UInt32 = 0, log2MaxFrameNumMinus4: UInt32 = 0, widthInMbsMinus1: UInt32 = 1,
        heightInMapUnitsMinus1: UInt32 = 1, levelIdc: UInt32 = 30
    ) -> [UInt8] {
        var w = BitWriter()
        w.writeBits(66, count: 8) // profile_idc: baseline
        w.writeBits(0b1100_0000, count: 8) // constraint_set0/1: constrained baseline
        w.writeBits(levelIdc, count: 8) // level_idc
        w.writeUE(id) // seq_parameter_set_id
        w.writeUE(log2MaxFrameNumMinus4)
        w.writeUE(picOrderCntType)
        if picOrderCntType == 0 { w.writeUE(2) } // log2_max_pic_order_cnt_lsb_minus4
        w.writeUE(1) // max_num_ref_frames
        w.writeFlag(false) // gaps_in_frame_num_value_allowed_flag
        w.writeUE(widthInMbsMinus1)
        w.writeUE(heightInMapUnitsMinus1)
        w.writeFlag(true) // frame_mbs_only_flag
        w.writeFlag(true) // direct_8x8_inference_flag
        w.writeFlag(false) // frame_cropping_flag
        w.writeFlag(false) // vui_parameters_present_flag
        w.writeRBSPTrailingBits()
        return [0x67] + RBSP.insertEmulationPrevention(w.bytes)
    }

    /// A PPS for that SPS (7.3.2.2).
    static func pictureParameterSet(id: UInt32 = 0, redundantPicCntPresent: Bool = false) -> [UInt8] {
        var w = BitWriter()
        w.writeUE(id) // pic_parameter_set_id
        w.writeUE(0) // seq_parameter_set_id
        w.writeFlag(false) // entropy_coding_mode_flag
        w.writeFlag(false) // bottom_field_pic_order_in_frame_present_flag
        w.writeUE(0) // num_slice_groups_minus1
        w.writeUE(0) // num_ref_idx_l0_default_active_minus1
        w.writeUE(0) // num_ref_idx_l1_default_active_minus1
        w.writeFlag(false) // weighted_pred_flag
        w.writeBits(0, count: 2) // weighted_bipred_idc
        w.writeSE(0) // pic_init_qp_minus26
        w.writeSE(0) // pic_init_qs_minus26
        w.writeSE(0) // chroma_qp_index_offset
        w.writeFlag(true) // deblocking_filter_control_present_flag
        w.writeFlag(false) // constrained_intra_pred_flag
        w.writeFlag(redundantPicCntPresent)
        w.writeRBSPTrailingBits()
        return [0x68] + RBSP.insertEmulationPrevention(w.bytes)
    }

    struct Slice {
        var isIDR = false
        var nalRefIdc: UInt8 = 2
        var firstMb: UInt32 = 0
        var sliceType: UInt32 = 5 // P, all slices of the picture P
        var ppsID: UInt32 = 0
        var frameNum: UInt32 = 0
        /// log2_max_frame_num_minus4 + 4 of the SPS.
        var frameNumBits = 4
        var idrPicID: UInt32 = 0
        var picOrderCntLsb: UInt32 = 0
        /// pic_order_cnt_type of the SPS: 0 writes pic_order_cnt_lsb, 2 nothing.
        var picOrderCntType: UInt32 = 0
        var redundantPicCnt: UInt32? = nil
        var memoryManagementControlOperation5 = false
    }

    /// A slice NAL unit for the SPS/PPS above (7.3.3), with one byte of stand-in slice data.
    static func slice(_ s: Slice) -> [UInt8] {
        var w = BitWriter()
        w.writeUE(s.firstMb)
        w.writeUE(s.isIDR ? 7 : s.sliceType)
        w.writeUE(s.ppsID)
        w.writeBits(s.frameNum, count: s.frameNumBits)
        if s.isIDR { w.writeUE(s.idrPicID) }
        if s.picOrderCntType == 0 { w.writeBits(s.picOrderCntLsb, count: 6) }
        if let redundant = s.redundantPicCnt { w.writeUE(redundant) }
        let kind = (s.isIDR ? 7 : s.sliceType) % 5
        if kind == 0 { // P: num_ref_idx_active_override_flag, ref_pic_list_modification_flag_l0
            w.writeFlag(false)
            w.writeFlag(false)
        }
        if s.nalRefIdc != 0 { // dec_ref_pic_marking (7.3.3.3)
            if s.isIDR {
                w.writeFlag(false)
                w.writeFlag(false)
            } else if s.memoryManagementControlOperation5 {
                w.writeFlag(true) // adaptive_ref_pic_marking_mode_flag
                w.writeUE(5)
                w.writeUE(0) // end of the list
            } else {
                w.writeFlag(false)
            }
        }
        w.writeSE(0) // slice_qp_delta
        w.writeUE(1) // disable_deblocking_filter_idc
        w.writeBits(0b1010_1010, count: 8) // stand-in for slice_data()
        w.writeRBSPTrailingBits()
        let header = (s.nalRefIdc << 5) | (s.isIDR ? 5 : 1)
        return [header] + RBSP.insertEmulationPrevention(w.bytes)
    }

    static let accessUnitDelimiter: [UInt8] = [0x09, 0xF0]
    /// An SEI NAL unit with a recovery point message (D.1.8): recovery_frame_cnt 0, exact match.
    static let recoveryPointSEI: [UInt8] = {
        var w = BitWriter()
        w.writeUE(0) // recovery_frame_cnt
        w.writeFlag(true) // exact_match_flag
        w.writeFlag(false) // broken_link_flag
        w.writeBits(0, count: 2) // changing_slice_group_idc
        w.writeFlag(true) // sei_payload: bit_equal_to_one, then zeros to the byte boundary
        w.byteAlignWithZeros()
        let payload = w.bytes
        var sei: [UInt8] = [6, UInt8(payload.count)] + payload
        sei.append(0x80) // rbsp_trailing_bits
        return [0x06] + RBSP.insertEmulationPrevention(sei)
    }()

    /// Joins NAL units into an Annex B byte stream with four-byte start codes.
    static func annexB(_ units: [[UInt8]]) -> [UInt8] {
        units.flatMap { [0, 0, 0, 1] + $0 }
    }
}
