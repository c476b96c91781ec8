/* Slice header parsing (H.264 7.3.3) for the software VA driver's own view of each slice. */
#include "h264.h"
#include "bits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void h264_params_from_va(const VAPictureParameterBufferH264 *pp, struct h264_params *params)
{
    memset(params, 0, sizeof(*params));
    params->log2_max_frame_num = pp->seq_fields.bits.log2_max_frame_num_minus4 + 4;
    params->poc_type = pp->seq_fields.bits.pic_order_cnt_type;
    params->log2_max_poc_lsb = pp->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 + 4;
    params->frame_mbs_only = pp->seq_fields.bits.frame_mbs_only_flag;
    params->delta_pic_order_always_zero = pp->seq_fields.bits.delta_pic_order_always_zero_flag;
    params->bottom_field_pic_order_in_frame_present = pp->pic_fields.bits.pic_order_present_flag;
    params->redundant_pic_cnt_present = pp->pic_fields.bits.redundant_pic_cnt_present_flag;
    params->weighted_pred = pp->pic_fields.bits.weighted_pred_flag;
    params->weighted_bipred_idc = pp->pic_fields.bits.weighted_bipred_idc;
    params->entropy_coding_mode = pp->pic_fields.bits.entropy_coding_mode_flag;
    params->deblocking_filter_control_present = pp->pic_fields.bits.deblocking_filter_control_present_flag;
    /* ChromaArrayType (7.4.2.1.1): chroma_format_idc unless separate_colour_plane_flag. */
    params->chroma_array_type =
        pp->seq_fields.bits.residual_colour_transform_flag ? 0 : pp->seq_fields.bits.chroma_format_idc;
    params->max_num_ref_frames = pp->num_ref_frames;
    params->gaps_allowed = pp->seq_fields.bits.gaps_in_frame_num_value_allowed_flag;
    params->num_ref_idx_default[0] = 1;
    params->num_ref_idx_default[1] = 1;
}

static int fail(struct h264_slice_header *sh, const char *message)
{
    snprintf(sh->error, sizeof(sh->error), "%s", message);
    return -1;
}

/* pred_weight_table() (7.3.3.2). Entries whose flag is 0 get the inferred values of 7.4.3.2. */
static int parse_pred_weight_table(struct bitreader *br, const struct h264_params *params,
                                   struct h264_slice_header *sh)
{
    sh->luma_log2_weight_denom = br_ue(br);
    if (sh->luma_log2_weight_denom > 7)
        return -1;
    if (params->chroma_array_type != 0) {
        sh->chroma_log2_weight_denom = br_ue(br);
        if (sh->chroma_log2_weight_denom > 7)
            return -1;
    }
    int lists = sh->slice_type == SLICE_B ? 2 : 1;
    for (int list = 0; list < lists; list++) {
        for (int i = 0; i < sh->num_ref_idx_active[list]; i++) {
            sh->luma_weight[list][i] = 1 << sh->luma_log2_weight_denom;
            sh->luma_offset[list][i] = 0;
            sh->luma_weight_flag[list][i] = (int)br_u(br, 1);
            if (sh->luma_weight_flag[list][i]) {
                sh->luma_weight[list][i] = br_se(br);
                sh->luma_offset[list][i] = br_se(br);
            }
            for (int j = 0; j < 2; j++) {
                sh->chroma_weight[list][i][j] = 1 << sh->chroma_log2_weight_denom;
                sh->chroma_offset[list][i][j] = 0;
            }
            if (params->chroma_array_type != 0) {
                sh->chroma_weight_flag[list][i] = (int)br_u(br, 1);
                if (sh->chroma_weight_flag[list][i]) {
                    for (int j = 0; j < 2; j++) {
                        sh->chroma_weight[list][i][j] = br_se(br);
                        sh->chroma_offset[list][i][j] = br_se(br);
                    }
                }
            }
        }
    }
    return br->overrun ? -1 : 0;
}

/* dec_ref_pic_marking() (7.3.3.3). */
static int parse_dec_ref_pic_marking(struct bitreader *br, struct h264_slice_header *sh)
{
    if (sh->nal_unit_type == 5) {
        sh->no_output_of_prior_pics_flag = (int)br_u(br, 1);
        sh->long_term_reference_flag = (int)br_u(br, 1);
        return 0;
    }
    sh->adaptive_ref_pic_marking_mode_flag = (int)br_u(br, 1);
    if (!sh->adaptive_ref_pic_marking_mode_flag)
        return 0;
    for (;;) {
        uint32_t op = br_ue(br);
        if (br->overrun || op > 6)
            return -1;
        if (op == 0)
            return 0;
        if (sh->num_mmco >= H264_MAX_MMCO)
            return -1;
        struct h264_mmco *m = &sh->mmco[sh->num_mmco++];
        memset(m, 0, sizeof(*m));
        m->op = op;
        if (op == 1 || op == 3)
            m->difference_of_pic_nums_minus1 = br_ue(br);
        if (op == 2)
            m->long_term_pic_num = br_ue(br);
        if (op == 3 || op == 6)
            m->long_term_frame_idx = br_ue(br);
        if (op == 4)
            m->max_long_term_frame_idx_plus1 = br_ue(br);
    }
}

int h264_parse_slice_header(const uint8_t *nal, size_t size, const struct h264_params *params,
                            struct h264_slice_header *sh)
{
    memset(sh, 0, sizeof(*sh));
    if (size < 2)
        return fail(sh, "slice NAL unit shorter than two bytes");
    /* nal_unit() header (7.3.1). */
    if (nal[0] & 0x80)
        return fail(sh, "forbidden_zero_bit set");
    sh->nal_ref_idc = (nal[0] >> 5) & 3;
    sh->nal_unit_type = nal[0] & 0x1f;
    if (sh->nal_unit_type != 1 && sh->nal_unit_type != 5)
        return fail(sh, "slice data buffer holds a NAL unit that is not a slice (type 1 or 5)");

    /* Only the header is needed, but it has no length field: unescape what there is. */
    uint8_t *rbsp = malloc(size);
    if (!rbsp)
        return fail(sh, "out of memory");
    size_t rbsp_size = nal_unescape(rbsp, nal + 1, size - 1);
    struct bitreader br;
    br_init(&br, rbsp, rbsp_size);
    int rc = -1;

    sh->first_mb_in_slice = br_ue(&br);
    sh->slice_type_raw = br_ue(&br);
    if (sh->slice_type_raw > 9) {
        fail(sh, "slice_type out of range");
        goto out;
    }
    sh->slice_type = sh->slice_type_raw % 5;
    sh->pps_id = br_ue(&br);
    if (sh->pps_id > 255) {
        fail(sh, "pic_parameter_set_id out of range");
        goto out;
    }
    /* separate_colour_plane_flag is refused before parsing, so no colour_plane_id. */
    sh->frame_num = br_u(&br, params->log2_max_frame_num);
    if (!params->frame_mbs_only) {
        sh->field_pic_flag = (int)br_u(&br, 1);
        if (sh->field_pic_flag) {
            fail(sh, "field pictures are not supported");
            goto out;
        }
    }
    if (sh->nal_unit_type == 5)
        sh->idr_pic_id = br_ue(&br);
    sh->poc_bits_start = (uint32_t)br.pos;
    if (params->poc_type == 0) {
        sh->pic_order_cnt_lsb = br_u(&br, params->log2_max_poc_lsb);
        if (params->bottom_field_pic_order_in_frame_present && !sh->field_pic_flag)
            sh->delta_pic_order_cnt_bottom = br_se(&br);
    }
    if (params->poc_type == 1 && !params->delta_pic_order_always_zero) {
        sh->delta_pic_order_cnt[0] = br_se(&br);
        if (params->bottom_field_pic_order_in_frame_present && !sh->field_pic_flag)
            sh->delta_pic_order_cnt[1] = br_se(&br);
    }
    sh->poc_bits_end = (uint32_t)br.pos;
    if (params->redundant_pic_cnt_present)
        sh->redundant_pic_cnt = br_ue(&br);
    if (sh->slice_type == SLICE_B)
        sh->direct_spatial_mv_pred_flag = (int)br_u(&br, 1);
    if (sh->slice_type == SLICE_P || sh->slice_type == SLICE_SP || sh->slice_type == SLICE_B) {
        sh->num_ref_idx_active[0] = params->num_ref_idx_default[0];
        if (sh->slice_type == SLICE_B)
            sh->num_ref_idx_active[1] = params->num_ref_idx_default[1];
        sh->num_ref_idx_active_override_flag = (int)br_u(&br, 1);
        if (sh->num_ref_idx_active_override_flag) {
            sh->num_ref_idx_active[0] = (int)br_ue(&br) + 1;
            if (sh->slice_type == SLICE_B)
                sh->num_ref_idx_active[1] = (int)br_ue(&br) + 1;
        }
        /* 7.4.3: at most 16 for frames (32 for fields, which are refused). */
        if (sh->num_ref_idx_active[0] > 16 || sh->num_ref_idx_active[1] > 16 || sh->num_ref_idx_active[0] < 1 ||
            (sh->slice_type == SLICE_B && sh->num_ref_idx_active[1] < 1)) {
            fail(sh, "num_ref_idx_active out of range");
            goto out;
        }
    }
    /* ref_pic_list_modification() (7.3.3.1); nal_unit_type 20/21 never reach here. */
    for (int list = 0; list < 2; list++) {
        if (list == 0 && (sh->slice_type == SLICE_I || sh->slice_type == SLICE_SI))
            continue;
        if (list == 1 && sh->slice_type != SLICE_B)
            continue;
        sh->modification_flag[list] = (int)br_u(&br, 1);
        if (!sh->modification_flag[list])
            continue;
        for (;;) {
            uint32_t idc = br_ue(&br);
            if (br.overrun || idc > 3) {
                fail(sh, "bad modification_of_pic_nums_idc");
                goto out;
            }
            if (idc == 3)
                break;
            if (sh->num_mod_ops[list] > sh->num_ref_idx_active[list]) {
                fail(sh, "more reference list modifications than list entries");
                goto out;
            }
            struct h264_mod_op *op = &sh->mod_ops[list][sh->num_mod_ops[list]++];
            op->idc = idc;
            op->value = br_ue(&br);
        }
    }
    if ((params->weighted_pred && (sh->slice_type == SLICE_P || sh->slice_type == SLICE_SP)) ||
        (params->weighted_bipred_idc == 1 && sh->slice_type == SLICE_B)) {
        sh->explicit_weights = 1;
        if (parse_pred_weight_table(&br, params, sh) < 0) {
            fail(sh, "bad pred_weight_table()");
            goto out;
        }
    }
    if (sh->nal_ref_idc != 0 && parse_dec_ref_pic_marking(&br, sh) < 0) {
        fail(sh, "bad dec_ref_pic_marking()");
        goto out;
    }
    if (params->entropy_coding_mode && sh->slice_type != SLICE_I && sh->slice_type != SLICE_SI)
        sh->cabac_init_idc = br_ue(&br);
    sh->slice_qp_delta = br_se(&br);
    if (sh->slice_type == SLICE_SP || sh->slice_type == SLICE_SI) {
        if (sh->slice_type == SLICE_SP)
            br_u(&br, 1); /* sp_for_switch_flag */
        sh->slice_qs_delta = br_se(&br);
    }
    if (params->deblocking_filter_control_present) {
        sh->disable_deblocking_filter_idc = br_ue(&br);
        if (sh->disable_deblocking_filter_idc != 1) {
            sh->slice_alpha_c0_offset_div2 = br_se(&br);
            sh->slice_beta_offset_div2 = br_se(&br);
        }
    }
    /* num_slice_groups_minus1 is always 0 here (FMO has no VA representation): no
     * slice_group_change_cycle. */
    if (br.overrun) {
        fail(sh, "slice header runs past the end of the slice data");
        goto out;
    }
    sh->header_bits = 8 + (uint32_t)br.pos;
    rc = 0;
out:
    free(rbsp);
    return rc;
}
