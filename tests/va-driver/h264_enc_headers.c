/* The headers the software encoder writes itself when a client does not send them as packed
 * headers: SPS (7.3.2.1.1, VUI E.1.1), PPS (7.3.2.2) and slice header (7.3.3), from the
 * VAEncSequence/Picture/SliceParameterBufferH264 the client rendered.
 *
 * Choices where VA does not carry a syntax element:
 * - constraint_set0_flag and constraint_set1_flag for Constrained Baseline (A.2.2),
 *   constraint_set1_flag for Main, none for High; no scaling matrices (VA H.264 encoding has no
 *   matrix buffer), no qpprime_y_zero_transform_bypass_flag, no gaps in frame_num;
 * - VUI: only aspect ratio, timing and bitstream restriction, as flagged in vui_fields; the
 *   restriction's max_num_reorder_frames is ip_period - 1 and max_dec_frame_buffering
 *   max_num_ref_frames (at least the reorder depth): an upper bound for the GOP the client
 *   describes, so a decoder never outputs a picture too early;
 * - pic_init_qs_minus26 0; redundant_pic_cnt 0; dec_ref_pic_marking() sliding window
 *   (no_output_of_prior_pics_flag 0, long_term_reference_flag 0, adaptive_ref_pic_marking_mode_flag 0);
 * - ref_pic_list_modification() reorders the default lists (8.2.4.2) into the client's
 *   RefPicList0/1, so the stream names the references the client meant. (Every macroblock this
 *   driver writes is I_PCM, so the decoded pictures do not depend on them.) */
#include "h264.h"
#include "bits.h"

int h264_profile_idc(VAProfile profile)
{
    switch (profile) {
    case VAProfileH264ConstrainedBaseline: return 66;
    case VAProfileH264Main: return 77;
    default: return 100;
    }
}

/* nal_unit() header (7.3.1): forbidden_zero_bit, nal_ref_idc, nal_unit_type. */
static void write_nal_header(struct bitwriter *bw, uint32_t nal_ref_idc, uint32_t nal_unit_type)
{
    bw_u(bw, 1, 0);
    bw_u(bw, 2, nal_ref_idc);
    bw_u(bw, 5, nal_unit_type);
}

/* vui_parameters() (E.1.1) with the fields VA carries. */
static void write_vui(struct bitwriter *bw, const VAEncSequenceParameterBufferH264 *seq)
{
    bw_u(bw, 1, seq->vui_fields.bits.aspect_ratio_info_present_flag);
    if (seq->vui_fields.bits.aspect_ratio_info_present_flag) {
        bw_u(bw, 8, seq->aspect_ratio_idc);
        if (seq->aspect_ratio_idc == 255) { /* Extended_SAR (Table E-1) */
            bw_u(bw, 16, seq->sar_width);
            bw_u(bw, 16, seq->sar_height);
        }
    }
    bw_u(bw, 1, 0); /* overscan_info_present_flag */
    bw_u(bw, 1, 0); /* video_signal_type_present_flag */
    bw_u(bw, 1, 0); /* chroma_loc_info_present_flag */
    bw_u(bw, 1, seq->vui_fields.bits.timing_info_present_flag);
    if (seq->vui_fields.bits.timing_info_present_flag) {
        bw_u(bw, 32, seq->num_units_in_tick);
        bw_u(bw, 32, seq->time_scale);
        bw_u(bw, 1, seq->vui_fields.bits.fixed_frame_rate_flag);
    }
    bw_u(bw, 1, 0); /* nal_hrd_parameters_present_flag */
    bw_u(bw, 1, 0); /* vcl_hrd_parameters_present_flag: so no low_delay_hrd_flag */
    bw_u(bw, 1, 0); /* pic_struct_present_flag */
    bw_u(bw, 1, seq->vui_fields.bits.bitstream_restriction_flag);
    if (seq->vui_fields.bits.bitstream_restriction_flag) {
        uint32_t reorder = seq->ip_period > 1 ? seq->ip_period - 1 : 0;
        uint32_t buffering = seq->max_num_ref_frames > reorder ? seq->max_num_ref_frames : reorder;
        bw_u(bw, 1, seq->vui_fields.bits.motion_vectors_over_pic_boundaries_flag);
        bw_ue(bw, 0); /* max_bytes_per_pic_denom: no limit */
        bw_ue(bw, 0); /* max_bits_per_mb_denom: no limit */
        bw_ue(bw, seq->vui_fields.bits.log2_max_mv_length_horizontal);
        bw_ue(bw, seq->vui_fields.bits.log2_max_mv_length_vertical);
        bw_ue(bw, reorder);   /* max_num_reorder_frames */
        bw_ue(bw, buffering); /* max_dec_frame_buffering */
    }
}

void h264_write_enc_sps(struct bitwriter *bw, VAProfile profile, const VAEncSequenceParameterBufferH264 *seq)
{
    int profile_idc = h264_profile_idc(profile);
    write_nal_header(bw, 3, 7);
    bw_u(bw, 8, (uint32_t)profile_idc);
    bw_u(bw, 1, profile_idc == 66);                      /* constraint_set0_flag */
    bw_u(bw, 1, profile_idc == 66 || profile_idc == 77); /* constraint_set1_flag */
    bw_u(bw, 6, 0);                                      /* constraint_set2..5_flag, reserved_zero_2bits */
    bw_u(bw, 8, seq->level_idc);
    bw_ue(bw, seq->seq_parameter_set_id);
    if (profile_idc == 100) {
        bw_ue(bw, seq->seq_fields.bits.chroma_format_idc);
        bw_ue(bw, seq->bit_depth_luma_minus8);
        bw_ue(bw, seq->bit_depth_chroma_minus8);
        bw_u(bw, 1, 0); /* qpprime_y_zero_transform_bypass_flag */
        bw_u(bw, 1, 0); /* seq_scaling_matrix_present_flag */
    }
    bw_ue(bw, seq->seq_fields.bits.log2_max_frame_num_minus4);
    bw_ue(bw, seq->seq_fields.bits.pic_order_cnt_type);
    if (seq->seq_fields.bits.pic_order_cnt_type == 0) {
        bw_ue(bw, seq->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4);
    } else if (seq->seq_fields.bits.pic_order_cnt_type == 1) {
        bw_u(bw, 1, seq->seq_fields.bits.delta_pic_order_always_zero_flag);
        bw_se(bw, seq->offset_for_non_ref_pic);
        bw_se(bw, seq->offset_for_top_to_bottom_field);
        bw_ue(bw, seq->num_ref_frames_in_pic_order_cnt_cycle);
        for (uint32_t i = 0; i < seq->num_ref_frames_in_pic_order_cnt_cycle; i++)
            bw_se(bw, seq->offset_for_ref_frame[i]);
    }
    bw_ue(bw, seq->max_num_ref_frames);
    bw_u(bw, 1, 0); /* gaps_in_frame_num_value_allowed_flag */
    bw_ue(bw, seq->picture_width_in_mbs - 1u);
    /* pic_height_in_map_units_minus1: map units are macroblocks for frames only (7.4.2.1.1). */
    bw_ue(bw, seq->picture_height_in_mbs - 1u);
    bw_u(bw, 1, 1); /* frame_mbs_only_flag: the encoder refuses anything else */
    bw_u(bw, 1, seq->seq_fields.bits.direct_8x8_inference_flag);
    bw_u(bw, 1, seq->frame_cropping_flag);
    if (seq->frame_cropping_flag) {
        bw_ue(bw, seq->frame_crop_left_offset);
        bw_ue(bw, seq->frame_crop_right_offset);
        bw_ue(bw, seq->frame_crop_top_offset);
        bw_ue(bw, seq->frame_crop_bottom_offset);
    }
    bw_u(bw, 1, seq->vui_parameters_present_flag);
    if (seq->vui_parameters_present_flag)
        write_vui(bw, seq);
    bw_trailing(bw);
}

void h264_write_enc_pps(struct bitwriter *bw, VAProfile profile, const VAEncPictureParameterBufferH264 *pic)
{
    write_nal_header(bw, 3, 8);
    bw_ue(bw, pic->pic_parameter_set_id);
    bw_ue(bw, pic->seq_parameter_set_id);
    bw_u(bw, 1, pic->pic_fields.bits.entropy_coding_mode_flag);
    bw_u(bw, 1, pic->pic_fields.bits.pic_order_present_flag);
    bw_ue(bw, 0); /* num_slice_groups_minus1 */
    bw_ue(bw, pic->num_ref_idx_l0_active_minus1);
    bw_ue(bw, pic->num_ref_idx_l1_active_minus1);
    bw_u(bw, 1, pic->pic_fields.bits.weighted_pred_flag);
    bw_u(bw, 2, pic->pic_fields.bits.weighted_bipred_idc);
    bw_se(bw, (int32_t)pic->pic_init_qp - 26);
    bw_se(bw, 0); /* pic_init_qs_minus26 */
    bw_se(bw, pic->chroma_qp_index_offset);
    bw_u(bw, 1, pic->pic_fields.bits.deblocking_filter_control_present_flag);
    bw_u(bw, 1, pic->pic_fields.bits.constrained_intra_pred_flag);
    bw_u(bw, 1, pic->pic_fields.bits.redundant_pic_cnt_present_flag);
    /* The High profile tail (7.3.2.2, more_rbsp_data()), when it says something its absence does
     * not (7.4.2.2: transform_8x8_mode_flag 0, second_chroma_qp_index_offset = chroma_qp_index_offset). */
    if (h264_profile_idc(profile) == 100 &&
        (pic->pic_fields.bits.transform_8x8_mode_flag || pic->second_chroma_qp_index_offset != pic->chroma_qp_index_offset)) {
        bw_u(bw, 1, pic->pic_fields.bits.transform_8x8_mode_flag);
        bw_u(bw, 1, 0); /* pic_scaling_matrix_present_flag */
        bw_se(bw, pic->second_chroma_qp_index_offset);
    }
    bw_trailing(bw);
}

/* ref_pic_list_modification() for one list (7.3.3.1): moves the client's list entries, in order,
 * to the front (8.2.4.3). Short-term pictures by picture number difference (8.2.4.3.1), kept
 * modulo MaxPicNum as picNumLXNoWrap is; long-term ones by LongTermPicNum (8.2.4.3.2), which VA
 * gives as frame_idx. Nothing is written (flag 0) when the list has no valid entry. */
static void write_list_modification(struct bitwriter *bw, const VAPictureH264 *list, int count, uint32_t frame_num,
                                    uint32_t max_frame_num)
{
    int valid = 0;
    /* A short-term entry with the current frame_num has no picture number difference: not a
     * reference a frame picture can name, so the list ends before it. */
    while (valid < count && valid < 32 && !(list[valid].flags & VA_PICTURE_H264_INVALID) &&
           list[valid].picture_id != VA_INVALID_SURFACE &&
           ((list[valid].flags & VA_PICTURE_H264_LONG_TERM_REFERENCE) || list[valid].frame_idx % max_frame_num != frame_num))
        valid++;
    bw_u(bw, 1, valid > 0); /* ref_pic_list_modification_flag_lX */
    if (!valid)
        return;
    uint32_t pred = frame_num; /* picNumLXPred starts at CurrPicNum (frame pictures) */
    for (int i = 0; i < valid; i++) {
        if (list[i].flags & VA_PICTURE_H264_LONG_TERM_REFERENCE) {
            bw_ue(bw, 2);
            bw_ue(bw, list[i].frame_idx); /* long_term_pic_num */
            continue;
        }
        uint32_t target = list[i].frame_idx % max_frame_num;
        uint32_t down = (pred + max_frame_num - target) % max_frame_num; /* pred - target, modulo */
        if (down <= max_frame_num / 2) {
            bw_ue(bw, 0);          /* subtract */
            bw_ue(bw, down - 1);   /* abs_diff_pic_num_minus1 */
        } else {
            bw_ue(bw, 1);          /* add */
            bw_ue(bw, max_frame_num - down - 1);
        }
        pred = target;
    }
    bw_ue(bw, 3); /* end of the modifications */
}

/* pred_weight_table() (7.3.3.2) from the slice parameters. */
static void write_pred_weight_table(struct bitwriter *bw, const VAEncSliceParameterBufferH264 *slice, int lists,
                                    const int count[2])
{
    bw_ue(bw, slice->luma_log2_weight_denom);
    bw_ue(bw, slice->chroma_log2_weight_denom); /* ChromaArrayType 1 */
    for (int list = 0; list < lists; list++) {
        int luma_flags = list ? slice->luma_weight_l1_flag : slice->luma_weight_l0_flag;
        int chroma_flags = list ? slice->chroma_weight_l1_flag : slice->chroma_weight_l0_flag;
        const short *luma_weight = list ? slice->luma_weight_l1 : slice->luma_weight_l0;
        const short *luma_offset = list ? slice->luma_offset_l1 : slice->luma_offset_l0;
        const short (*chroma_weight)[2] = list ? slice->chroma_weight_l1 : slice->chroma_weight_l0;
        const short (*chroma_offset)[2] = list ? slice->chroma_offset_l1 : slice->chroma_offset_l0;
        for (int i = 0; i < count[list] && i < 32; i++) {
            bw_u(bw, 1, luma_flags != 0);
            if (luma_flags) {
                bw_se(bw, luma_weight[i]);
                bw_se(bw, luma_offset[i]);
            }
            bw_u(bw, 1, chroma_flags != 0);
            if (chroma_flags) {
                for (int j = 0; j < 2; j++) {
                    bw_se(bw, chroma_weight[i][j]);
                    bw_se(bw, chroma_offset[i][j]);
                }
            }
        }
    }
}

void h264_write_enc_slice_header(struct bitwriter *bw, const VAEncSequenceParameterBufferH264 *seq,
                                 const VAEncPictureParameterBufferH264 *pic,
                                 const VAEncSliceParameterBufferH264 *slice)
{
    int idr = pic->pic_fields.bits.idr_pic_flag;
    int reference = pic->pic_fields.bits.reference_pic_flag != 0 || idr;
    uint32_t type = slice->slice_type % 5;
    uint32_t max_frame_num = 1u << (seq->seq_fields.bits.log2_max_frame_num_minus4 + 4);
    write_nal_header(bw, idr ? 3 : reference ? 2 : 0, idr ? 5 : 1);
    bw_ue(bw, slice->macroblock_address); /* first_mb_in_slice */
    bw_ue(bw, slice->slice_type);
    bw_ue(bw, slice->pic_parameter_set_id);
    bw_u(bw, seq->seq_fields.bits.log2_max_frame_num_minus4 + 4, pic->frame_num % max_frame_num);
    if (idr)
        bw_ue(bw, slice->idr_pic_id);
    if (seq->seq_fields.bits.pic_order_cnt_type == 0) {
        bw_u(bw, seq->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 + 4, slice->pic_order_cnt_lsb);
        if (pic->pic_fields.bits.pic_order_present_flag)
            bw_se(bw, slice->delta_pic_order_cnt_bottom);
    }
    if (seq->seq_fields.bits.pic_order_cnt_type == 1 && !seq->seq_fields.bits.delta_pic_order_always_zero_flag) {
        bw_se(bw, slice->delta_pic_order_cnt[0]);
        if (pic->pic_fields.bits.pic_order_present_flag)
            bw_se(bw, slice->delta_pic_order_cnt[1]);
    }
    if (pic->pic_fields.bits.redundant_pic_cnt_present_flag)
        bw_ue(bw, 0); /* redundant_pic_cnt */
    if (type == SLICE_B)
        bw_u(bw, 1, slice->direct_spatial_mv_pred_flag);
    int count[2] = { 0, 0 };
    int lists = type == SLICE_B ? 2 : (type == SLICE_P || type == SLICE_SP) ? 1 : 0;
    if (lists) {
        count[0] = (slice->num_ref_idx_active_override_flag ? slice->num_ref_idx_l0_active_minus1
                                                            : pic->num_ref_idx_l0_active_minus1) + 1;
        count[1] = (slice->num_ref_idx_active_override_flag ? slice->num_ref_idx_l1_active_minus1
                                                            : pic->num_ref_idx_l1_active_minus1) + 1;
        bw_u(bw, 1, slice->num_ref_idx_active_override_flag != 0);
        if (slice->num_ref_idx_active_override_flag) {
            bw_ue(bw, slice->num_ref_idx_l0_active_minus1);
            if (type == SLICE_B)
                bw_ue(bw, slice->num_ref_idx_l1_active_minus1);
        }
        write_list_modification(bw, slice->RefPicList0, count[0], pic->frame_num % max_frame_num, max_frame_num);
        if (type == SLICE_B)
            write_list_modification(bw, slice->RefPicList1, count[1], pic->frame_num % max_frame_num, max_frame_num);
    }
    if ((pic->pic_fields.bits.weighted_pred_flag && (type == SLICE_P || type == SLICE_SP)) ||
        (pic->pic_fields.bits.weighted_bipred_idc == 1 && type == SLICE_B))
        write_pred_weight_table(bw, slice, lists, count);
    if (reference) { /* dec_ref_pic_marking() (7.3.3.3) */
        if (idr) {
            bw_u(bw, 1, 0); /* no_output_of_prior_pics_flag */
            bw_u(bw, 1, 0); /* long_term_reference_flag */
        } else {
            bw_u(bw, 1, 0); /* adaptive_ref_pic_marking_mode_flag: sliding window */
        }
    }
    /* CAVLC only (the encoder refuses entropy_coding_mode_flag 1): no cabac_init_idc. */
    bw_se(bw, slice->slice_qp_delta);
    if (pic->pic_fields.bits.deblocking_filter_control_present_flag) {
        bw_ue(bw, slice->disable_deblocking_filter_idc);
        if (slice->disable_deblocking_filter_idc != 1) {
            bw_se(bw, slice->slice_alpha_c0_offset_div2);
            bw_se(bw, slice->slice_beta_offset_div2);
        }
    }
}
