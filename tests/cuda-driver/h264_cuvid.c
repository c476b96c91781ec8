/* swiftvt_cuda: NVDEC's H.264 picture parameters turned into the software VA driver's inputs.
 *
 * The VA driver's engine is reused as it is (tests/va-driver/h264_slice.c, h264_rebuild.c,
 * bits.c, avdecode.c): CUVIDH264PICPARAMS carries the same SPS/PPS fields as
 * VAPictureParameterBufferH264, its WeightScale4x4/8x8 are the scaling lists in raster order like
 * VAIQMatrixBufferH264's, and the slices arrive as whole NAL units after 00 00 01 start codes
 * (Video Codec SDK, NVDEC Video Decoder API Programming Guide, "CUVIDPICPARAMS":
 * pBitstreamData/pSliceDataOffsets). What NVDEC does not carry is taken from the slices
 * themselves: the PPS id and every slice header field (h264_parse_slice_header), and
 * chroma_format_idc (the decoder's ChromaFormat: 4:2:0 only). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "h264_cuvid.h"
#include "../va-driver/h264.h"

static CUresult refuse(const char *why)
{
    swiftvt_cuda_report("swiftvt_cuda REFUSED: %s", why);
    return CU_ERROR_NOT_SUPPORTED;
}

/* CUVIDPICPARAMS -> VAPictureParameterBufferH264 + VAIQMatrixBufferH264. */
static void to_va(const CUVIDPICPARAMS *p, VAPictureParameterBufferH264 *pp, VAIQMatrixBufferH264 *iq)
{
    const CUVIDH264PICPARAMS *h = &p->CodecSpecific.h264;
    memset(pp, 0, sizeof(*pp));
    pp->CurrPic.picture_id = (VASurfaceID)p->CurrPicIdx;
    pp->CurrPic.frame_idx = (uint32_t)h->frame_num;
    pp->CurrPic.TopFieldOrderCnt = h->CurrFieldOrderCnt[0];
    pp->CurrPic.BottomFieldOrderCnt = h->CurrFieldOrderCnt[1];
    for (int i = 0; i < 16; i++) {
        const CUVIDH264DPBENTRY *e = &h->dpb[i];
        VAPictureH264 *r = &pp->ReferenceFrames[i];
        if (e->PicIdx < 0 || !e->used_for_reference) {
            r->picture_id = VA_INVALID_SURFACE;
            r->flags = VA_PICTURE_H264_INVALID;
            continue;
        }
        r->picture_id = (VASurfaceID)e->PicIdx;
        r->frame_idx = (uint32_t)e->FrameIdx;
        r->flags = e->is_long_term ? VA_PICTURE_H264_LONG_TERM_REFERENCE : VA_PICTURE_H264_SHORT_TERM_REFERENCE;
        r->TopFieldOrderCnt = e->FieldOrderCnt[0];
        r->BottomFieldOrderCnt = e->FieldOrderCnt[1];
    }
    pp->picture_width_in_mbs_minus1 = (uint16_t)(p->PicWidthInMbs - 1);
    pp->picture_height_in_mbs_minus1 = (uint16_t)(p->FrameHeightInMbs - 1);
    pp->bit_depth_luma_minus8 = h->bit_depth_luma_minus8;
    pp->bit_depth_chroma_minus8 = h->bit_depth_chroma_minus8;
    pp->num_ref_frames = (uint8_t)h->num_ref_frames;
    pp->seq_fields.bits.chroma_format_idc = 1;
    pp->seq_fields.bits.residual_colour_transform_flag = h->residual_colour_transform_flag;
    /* gaps_in_frame_num_value_allowed_flag is not in CUVIDH264PICPARAMS: allowed, so that
     * libavcodec infers the missing frames (8.2.5.2) instead of concealing. */
    pp->seq_fields.bits.gaps_in_frame_num_value_allowed_flag = 1;
    pp->seq_fields.bits.frame_mbs_only_flag = (uint32_t)h->frame_mbs_only_flag;
    pp->seq_fields.bits.mb_adaptive_frame_field_flag = (uint32_t)h->MbaffFrameFlag;
    pp->seq_fields.bits.direct_8x8_inference_flag = (uint32_t)h->direct_8x8_inference_flag;
    pp->seq_fields.bits.log2_max_frame_num_minus4 = (uint32_t)h->log2_max_frame_num_minus4;
    pp->seq_fields.bits.pic_order_cnt_type = (uint32_t)h->pic_order_cnt_type;
    pp->seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 = (uint32_t)h->log2_max_pic_order_cnt_lsb_minus4;
    pp->seq_fields.bits.delta_pic_order_always_zero_flag = (uint32_t)h->delta_pic_order_always_zero_flag;
    pp->pic_init_qp_minus26 = (int8_t)h->pic_init_qp_minus26;
    pp->pic_init_qs_minus26 = h->pic_init_qs_minus26;
    pp->chroma_qp_index_offset = (int8_t)h->chroma_qp_index_offset;
    pp->second_chroma_qp_index_offset = (int8_t)h->second_chroma_qp_index_offset;
    pp->pic_fields.bits.entropy_coding_mode_flag = (uint32_t)h->entropy_coding_mode_flag;
    pp->pic_fields.bits.weighted_pred_flag = (uint32_t)h->weighted_pred_flag;
    pp->pic_fields.bits.weighted_bipred_idc = (uint32_t)h->weighted_bipred_idc;
    pp->pic_fields.bits.transform_8x8_mode_flag = (uint32_t)h->transform_8x8_mode_flag;
    pp->pic_fields.bits.field_pic_flag = (uint32_t)p->field_pic_flag;
    pp->pic_fields.bits.constrained_intra_pred_flag = (uint32_t)h->constrained_intra_pred_flag;
    pp->pic_fields.bits.pic_order_present_flag = (uint32_t)h->pic_order_present_flag;
    pp->pic_fields.bits.deblocking_filter_control_present_flag = (uint32_t)h->deblocking_filter_control_present_flag;
    pp->pic_fields.bits.redundant_pic_cnt_present_flag = (uint32_t)h->redundant_pic_cnt_present_flag;
    pp->pic_fields.bits.reference_pic_flag = (uint32_t)p->ref_pic_flag;
    pp->frame_num = (uint16_t)h->frame_num;
    memset(iq, 0, sizeof(*iq));
    memcpy(iq->ScalingList4x4, h->WeightScale4x4, sizeof(iq->ScalingList4x4));
    memcpy(iq->ScalingList8x8, h->WeightScale8x8, sizeof(iq->ScalingList8x8));
}

/* The slice NAL units of the picture: each at its offset after a 00 00 01 start code, up to the
 * next offset (or the end). Checked by the caller (nvcuvid.c). */
static void slice_at(const CUVIDPICPARAMS *p, unsigned i, const uint8_t **nal, size_t *size)
{
    size_t start = p->pSliceDataOffsets[i] + 3;
    size_t end = i + 1 < p->nNumSlices ? p->pSliceDataOffsets[i + 1] : p->nBitstreamDataLen;
    *nal = p->pBitstreamData + start;
    *size = end > start ? end - start : 0;
}

CUresult h264_cuvid_decode(struct h264_cuvid *st, const CUVIDPICPARAMS *p, struct avdec_picture *picture,
                           struct h264_cuvid_picture *decoded, int *damaged)
{
    const CUVIDH264PICPARAMS *h = &p->CodecSpecific.h264;
    *damaged = 0;
    /* What the rebuilt parameter sets cannot represent (as the VA driver, driver_decode.c). */
    if (!h->frame_mbs_only_flag || p->field_pic_flag || h->MbaffFrameFlag)
        return refuse("field pictures and MBAFF are not supported");
    if (h->bit_depth_luma_minus8 || h->bit_depth_chroma_minus8 || h->residual_colour_transform_flag)
        return refuse("only 8-bit 4:2:0 is supported");
    if (h->num_slice_groups_minus1 || h->fmo_aso_enable)
        return refuse("slice groups (FMO) are not supported");

    VAPictureParameterBufferH264 pp;
    VAIQMatrixBufferH264 iq;
    to_va(p, &pp, &iq);
    struct h264_params params;
    h264_params_from_va(&pp, &params);
    /* NVDEC carries the PPS defaults (num_ref_idx_l0/l1_active_minus1 are the PPS's
     * num_ref_idx_lX_default_active_minus1, as FFmpeg and GStreamer fill them). */
    params.num_ref_idx_default[0] = h->num_ref_idx_l0_active_minus1 + 1;
    params.num_ref_idx_default[1] = h->num_ref_idx_l1_active_minus1 + 1;

    unsigned n = p->nNumSlices;
    struct h264_slice_header *headers = calloc(n, sizeof(*headers));
    uint8_t *au = NULL;
    size_t au_size = 0, au_capacity = 0;
    CUresult rc = CU_OK;
    if (!headers)
        return CU_ERROR_OUT_OF_MEMORY;
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *nal;
        size_t size;
        slice_at(p, i, &nal, &size);
        if (size == 0 || h264_parse_slice_header(nal, size, &params, &headers[i]) < 0) {
            swiftvt_cuda_validation("slice[%u]: %zu bytes: %s", i, size, size ? headers[i].error : "empty");
            rc = CU_ERROR_INVALID_VALUE;
            goto out;
        }
        int type = headers[i].nal_unit_type;
        if (type != 1 && type != 5) {
            swiftvt_cuda_validation("slice[%u]: nal_unit_type %d is not a slice of a primary coded picture (1 or 5)", i, type);
            rc = CU_ERROR_INVALID_VALUE;
            goto out;
        }
    }
    /* The picture parameters against the slices (7.4.3: these are equal in every slice of a picture). */
    const struct h264_slice_header *first = &headers[0];
    int idr = first->nal_unit_type == 5;
    if (first->frame_num != (uint32_t)h->frame_num)
        swiftvt_cuda_validation("frame_num: client %d, slice header %u", h->frame_num, first->frame_num), rc = CU_ERROR_INVALID_VALUE;
    if ((first->nal_ref_idc != 0) != (p->ref_pic_flag != 0))
        swiftvt_cuda_validation("ref_pic_flag: client %d, slice header nal_ref_idc %u", p->ref_pic_flag, first->nal_ref_idc),
            rc = CU_ERROR_INVALID_VALUE;
    if (first->field_pic_flag != p->field_pic_flag)
        swiftvt_cuda_validation("field_pic_flag: client %d, slice header %d", p->field_pic_flag, first->field_pic_flag),
            rc = CU_ERROR_INVALID_VALUE;
    int intra = 1;
    for (unsigned i = 0; i < n; i++) {
        const struct h264_slice_header *sh = &headers[i];
        intra &= sh->slice_type == SLICE_I || sh->slice_type == SLICE_SI;
        if (sh->frame_num != first->frame_num || sh->pps_id != first->pps_id || (sh->nal_unit_type == 5) != idr) {
            swiftvt_cuda_validation("slice[%u]: frame_num/pic_parameter_set_id/IDR differ from slice[0]'s", i);
            rc = CU_ERROR_INVALID_VALUE;
        }
    }
    if (p->intra_pic_flag && !intra)
        swiftvt_cuda_validation("intra_pic_flag: client 1, slices not all I or SI"), rc = CU_ERROR_INVALID_VALUE;
    if (idr) {
        /* An IDR picture empties the DPB before it is decoded (8.2.5.1), and its frame_num is 0 (7.4.3). */
        for (int i = 0; i < 16; i++)
            if (h->dpb[i].PicIdx >= 0 && h->dpb[i].used_for_reference) {
                swiftvt_cuda_validation("IDR picture with dpb[%d] (PicIdx %d) still used for reference", i, h->dpb[i].PicIdx);
                rc = CU_ERROR_INVALID_VALUE;
                break;
            }
    }
    /* The client's POC against the slice header (8.2.1), up to the client's constant offset. */
    int32_t top = h->CurrFieldOrderCnt[0];
    if (idr || !st->poc_offset_known) {
        int32_t model = 0;
        if (h->pic_order_cnt_type == 0)
            model = (int32_t)first->pic_order_cnt_lsb;   /* PicOrderCntMsb is 0 at an IDR */
        else if (h->pic_order_cnt_type == 1)
            model = first->delta_pic_order_cnt[0];     /* expectedPicOrderCnt is 0 for absFrameNum 0 */
        st->poc_offset = top - model;
        st->poc_offset_known = 1;
    } else if (h->pic_order_cnt_type == 0) {
        uint32_t max_lsb = 1u << (h->log2_max_pic_order_cnt_lsb_minus4 + 4);
        if ((uint32_t)(top - st->poc_offset - (int32_t)first->pic_order_cnt_lsb) % max_lsb != 0) {
            swiftvt_cuda_validation("CurrFieldOrderCnt[0]: client %d, which does not end in the slice's pic_order_cnt_lsb %u "
                                    "(MaxPicOrderCntLsb %u, client offset %d)", top, first->pic_order_cnt_lsb, max_lsb,
                                    st->poc_offset);
            rc = CU_ERROR_INVALID_VALUE;
        }
    }
    if (rc != CU_OK)
        goto out;

    /* The rebuilt parameter sets (as the VA driver does at vaEndPicture, driver_decode.c), sent to
     * libavcodec only when they changed. */
    struct h264_rebuild_input rebuild = {
        .profile = VAProfileH264High, .pp = &pp, .iq = &iq, .pps_id = first->pps_id,
        .num_ref_idx_default = { params.num_ref_idx_default[0], params.num_ref_idx_default[1] },
    };
    uint8_t sps[64], pps[2048];
    size_t sps_size = h264_build_sps(&rebuild, sps, sizeof(sps));
    size_t pps_size = h264_build_pps(&rebuild, pps, sizeof(pps));
    if (!sps_size || !pps_size) {
        rc = CU_ERROR_UNKNOWN;
        goto out;
    }
    if (sps_size != st->sps_size || memcmp(sps, st->sps, sps_size) != 0) {
        /* 7.4.1.2.1: a new SPS can only be activated by an IDR picture. */
        if (st->sps_size && !idr) {
            swiftvt_cuda_validation("sequence parameters (sizes, num_ref_frames, SPS fields) changed at a non-IDR picture");
            rc = CU_ERROR_INVALID_VALUE;
            goto out;
        }
        memcpy(st->sps, sps, sps_size);
        st->sps_size = sps_size;
        for (int i = 0; i < 256; i++) {
            free(st->pps[i]);
            st->pps[i] = NULL;
            st->pps_size[i] = 0;
        }
        if (avdec_append_nal(&au, &au_size, &au_capacity, sps, sps_size) < 0)
            goto oom;
    }
    uint32_t pps_id = first->pps_id;
    if (pps_size != st->pps_size[pps_id] || memcmp(pps, st->pps[pps_id], pps_size) != 0) {
        free(st->pps[pps_id]);
        st->pps[pps_id] = malloc(pps_size);
        st->pps_size[pps_id] = st->pps[pps_id] ? pps_size : 0;
        if (!st->pps[pps_id])
            goto oom;
        memcpy(st->pps[pps_id], pps, pps_size);
        if (avdec_append_nal(&au, &au_size, &au_capacity, pps, pps_size) < 0)
            goto oom;
    }
    for (unsigned i = 0; i < n; i++) {
        const uint8_t *nal;
        size_t size;
        slice_at(p, i, &nal, &size);
        uint8_t *rewritten = NULL;
        if (h264_rebuild_rewrites_poc(&pp)) {
            /* pic_order_cnt_type 1 rebuilt as type 0 from the client's POC (h264.h). */
            rewritten = h264_rewrite_slice_poc(nal, size, &headers[i], h->entropy_coding_mode_flag,
                                               (uint32_t)(top - st->poc_offset),
                                               h->CurrFieldOrderCnt[1] - h->CurrFieldOrderCnt[0], &size);
            if (!rewritten) {
                swiftvt_cuda_report("swiftvt_cuda DECODE: slice[%u]: its POC fields could not be rewritten", i);
                *damaged = 1;
                goto out;
            }
            nal = rewritten;
        }
        int failed = avdec_append_nal(&au, &au_size, &au_capacity, nal, size) < 0;
        free(rewritten);
        if (failed)
            goto oom;
    }
    char why[256];
    if (!st->dec) {
        st->dec = avdec_new(0, why, sizeof(why));
        if (!st->dec) {
            rc = refuse(why);
            goto out;
        }
    }
    if (avdec_decode(st->dec, au, au_size, picture, why, sizeof(why)) < 0) {
        swiftvt_cuda_report("swiftvt_cuda DECODE: picture frame_num %d poc %d: %s", h->frame_num, top, why);
        *damaged = 1;
    }
    /* What later DPB entries must say about this picture (8.2.1, 7.4.3 after MMCO 5). */
    int mmco5 = 0;
    for (int i = 0; i < first->num_mmco; i++)
        mmco5 |= first->mmco[i].op == 5;
    decoded->poc[0] = h->CurrFieldOrderCnt[0];
    decoded->poc[1] = h->CurrFieldOrderCnt[1];
    decoded->poc_after_mmco5[0] = decoded->poc[0];
    decoded->poc_after_mmco5[1] = decoded->poc[1];
    decoded->frame_num = first->frame_num;
    if (mmco5) {
        int32_t temp = decoded->poc[0] < decoded->poc[1] ? decoded->poc[0] : decoded->poc[1];
        decoded->poc_after_mmco5[0] -= temp;
        decoded->poc_after_mmco5[1] -= temp;
        st->poc_offset_known = 0;
    }
    decoded->mmco5 = mmco5;
    decoded->reference = first->nal_ref_idc != 0;
    decoded->idr = idr;
    goto out;
oom:
    rc = CU_ERROR_OUT_OF_MEMORY;
out:
    free(headers);
    free(au);
    return rc;
}

void h264_cuvid_free(struct h264_cuvid *st)
{
    avdec_free(st->dec);
    st->dec = NULL;
    for (int i = 0; i < 256; i++) {
        free(st->pps[i]);
        st->pps[i] = NULL;
    }
}
