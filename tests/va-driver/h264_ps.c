/* Parsing of the parameter sets an encoding client sends as packed headers (H.264 7.3.2.1.1,
 * 7.3.2.2), so that the encoder can read the client's packed slice headers exactly as a decoder
 * will and compare what the packed headers say with the VA parameters. Only the fields slice
 * header parsing and those comparisons need are kept; VUI and scaling lists are skipped. */
#include "h264.h"
#include "bits.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int fail(char *error, size_t error_size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *error, size_t error_size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error, error_size, fmt, ap);
    va_end(ap);
    return -1;
}

/* scaling_list() (7.3.2.1.1.1), read and dropped. */
static void skip_scaling_list(struct bitreader *br, int size)
{
    int32_t last = 8, next = 8;
    for (int j = 0; j < size; j++) {
        if (next != 0) {
            int32_t delta = br_se(br);
            next = (last + delta + 256) % 256;
        }
        last = next == 0 ? last : next;
    }
}

/* The profiles whose SPS carries chroma_format_idc and the fields after it (7.3.2.1.1). */
static int has_chroma_format_fields(uint32_t profile_idc)
{
    static const uint32_t profiles[] = { 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135 };
    for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
        if (profiles[i] == profile_idc)
            return 1;
    return 0;
}

int h264_parse_sps(const uint8_t *rbsp, size_t size, struct h264_sps_info *sps, char *error, size_t error_size)
{
    memset(sps, 0, sizeof(*sps));
    struct bitreader br;
    br_init(&br, rbsp, size);
    sps->profile_idc = br_u(&br, 8);
    sps->constraint_flags = br_u(&br, 8);
    sps->level_idc = br_u(&br, 8);
    sps->sps_id = br_ue(&br);
    if (sps->sps_id > 31)
        return fail(error, error_size, "seq_parameter_set_id %u out of range", sps->sps_id);
    sps->chroma_format_idc = 1; /* inferred when absent (7.4.2.1.1) */
    if (has_chroma_format_fields(sps->profile_idc)) {
        sps->chroma_format_idc = br_ue(&br);
        if (sps->chroma_format_idc > 3)
            return fail(error, error_size, "chroma_format_idc %u out of range", sps->chroma_format_idc);
        if (sps->chroma_format_idc == 3)
            br_u(&br, 1); /* separate_colour_plane_flag */
        sps->bit_depth_luma_minus8 = br_ue(&br);
        sps->bit_depth_chroma_minus8 = br_ue(&br);
        br_u(&br, 1); /* qpprime_y_zero_transform_bypass_flag */
        if (br_u(&br, 1)) { /* seq_scaling_matrix_present_flag */
            int lists = sps->chroma_format_idc != 3 ? 8 : 12;
            for (int i = 0; i < lists; i++)
                if (br_u(&br, 1))
                    skip_scaling_list(&br, i < 6 ? 16 : 64);
        }
    }
    sps->log2_max_frame_num = br_ue(&br) + 4;
    if (sps->log2_max_frame_num > 16)
        return fail(error, error_size, "log2_max_frame_num_minus4 %u out of range", sps->log2_max_frame_num - 4);
    sps->poc_type = br_ue(&br);
    if (sps->poc_type == 0) {
        sps->log2_max_poc_lsb = br_ue(&br) + 4;
        if (sps->log2_max_poc_lsb > 16)
            return fail(error, error_size, "log2_max_pic_order_cnt_lsb_minus4 %u out of range",
                        sps->log2_max_poc_lsb - 4);
    } else if (sps->poc_type == 1) {
        sps->delta_pic_order_always_zero = (int)br_u(&br, 1);
        br_se(&br); /* offset_for_non_ref_pic */
        br_se(&br); /* offset_for_top_to_bottom_field */
        uint32_t cycle = br_ue(&br);
        if (cycle > 255)
            return fail(error, error_size, "num_ref_frames_in_pic_order_cnt_cycle %u out of range", cycle);
        for (uint32_t i = 0; i < cycle; i++)
            br_se(&br); /* offset_for_ref_frame[i] */
    } else if (sps->poc_type != 2) {
        return fail(error, error_size, "pic_order_cnt_type %u out of range", sps->poc_type);
    }
    sps->max_num_ref_frames = br_ue(&br);
    sps->gaps_allowed = (int)br_u(&br, 1);
    sps->width_mbs = br_ue(&br) + 1;
    sps->height_map_units = br_ue(&br) + 1;
    sps->frame_mbs_only = (int)br_u(&br, 1);
    if (!sps->frame_mbs_only)
        br_u(&br, 1); /* mb_adaptive_frame_field_flag */
    sps->direct_8x8_inference = (int)br_u(&br, 1);
    sps->frame_cropping = (int)br_u(&br, 1);
    if (sps->frame_cropping)
        for (int i = 0; i < 4; i++)
            sps->crop[i] = br_ue(&br);
    sps->vui_present = (int)br_u(&br, 1);
    if (br.overrun)
        return fail(error, error_size, "SPS ends before vui_parameters_present_flag");
    return 0;
}

/* more_rbsp_data() (7.2): whether anything but rbsp_trailing_bits() follows bit position pos,
 * i.e. whether the last 1 bit of the RBSP (rbsp_stop_one_bit) lies after it. */
static int more_rbsp_data(const uint8_t *rbsp, size_t size, size_t pos)
{
    size_t last = size;
    while (last > 0 && rbsp[last - 1] == 0)
        last--;
    if (last == 0)
        return 0;
    uint8_t byte = rbsp[last - 1];
    int trailing_zeros = 0;
    while (!(byte & (1 << trailing_zeros)))
        trailing_zeros++;
    size_t stop_bit = (last - 1) * 8 + (size_t)(7 - trailing_zeros);
    return pos < stop_bit;
}

int h264_parse_pps(const uint8_t *rbsp, size_t size, struct h264_pps_info *pps, char *error, size_t error_size)
{
    memset(pps, 0, sizeof(*pps));
    struct bitreader br;
    br_init(&br, rbsp, size);
    pps->pps_id = br_ue(&br);
    if (pps->pps_id > 255)
        return fail(error, error_size, "pic_parameter_set_id %u out of range", pps->pps_id);
    pps->sps_id = br_ue(&br);
    if (pps->sps_id > 31)
        return fail(error, error_size, "seq_parameter_set_id %u out of range", pps->sps_id);
    pps->entropy_coding_mode = (int)br_u(&br, 1);
    pps->bottom_field_pic_order_in_frame_present = (int)br_u(&br, 1);
    uint32_t slice_groups_minus1 = br_ue(&br);
    if (slice_groups_minus1 != 0)
        return fail(error, error_size, "num_slice_groups_minus1 %u (slice groups are not in these profiles' "
                                       "VA encoding)", slice_groups_minus1);
    pps->num_ref_idx_default[0] = br_ue(&br) + 1;
    pps->num_ref_idx_default[1] = br_ue(&br) + 1;
    if (pps->num_ref_idx_default[0] > 32 || pps->num_ref_idx_default[1] > 32)
        return fail(error, error_size, "num_ref_idx_default_active_minus1 out of range");
    pps->weighted_pred = (int)br_u(&br, 1);
    pps->weighted_bipred_idc = br_u(&br, 2);
    pps->pic_init_qp = 26 + br_se(&br);
    br_se(&br); /* pic_init_qs_minus26 */
    pps->chroma_qp_index_offset = br_se(&br);
    pps->deblocking_filter_control_present = (int)br_u(&br, 1);
    pps->constrained_intra_pred = (int)br_u(&br, 1);
    pps->redundant_pic_cnt_present = (int)br_u(&br, 1);
    if (br.overrun)
        return fail(error, error_size, "PPS ends before redundant_pic_cnt_present_flag");
    if (more_rbsp_data(rbsp, size, br.pos)) {
        pps->transform_8x8_mode = (int)br_u(&br, 1);
        pps->pic_scaling_matrix_present = (int)br_u(&br, 1);
    }
    return 0;
}

void h264_params_from_sets(const struct h264_sps_info *sps, const struct h264_pps_info *pps,
                           struct h264_params *params)
{
    memset(params, 0, sizeof(*params));
    params->log2_max_frame_num = (int)sps->log2_max_frame_num;
    params->poc_type = (int)sps->poc_type;
    params->log2_max_poc_lsb = (int)sps->log2_max_poc_lsb;
    params->frame_mbs_only = sps->frame_mbs_only;
    params->delta_pic_order_always_zero = sps->delta_pic_order_always_zero;
    params->bottom_field_pic_order_in_frame_present = pps->bottom_field_pic_order_in_frame_present;
    params->redundant_pic_cnt_present = pps->redundant_pic_cnt_present;
    params->weighted_pred = pps->weighted_pred;
    params->weighted_bipred_idc = (int)pps->weighted_bipred_idc;
    params->entropy_coding_mode = pps->entropy_coding_mode;
    params->deblocking_filter_control_present = pps->deblocking_filter_control_present;
    /* ChromaArrayType (7.4.2.1.1); separate colour planes never get this far (4:2:0 only). */
    params->chroma_array_type = (int)sps->chroma_format_idc;
    params->max_num_ref_frames = (int)sps->max_num_ref_frames;
    params->gaps_allowed = sps->gaps_allowed;
    params->num_ref_idx_default[0] = (int)pps->num_ref_idx_default[0];
    params->num_ref_idx_default[1] = (int)pps->num_ref_idx_default[1];
}
