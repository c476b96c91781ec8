/* swiftvt_sw: decoding one picture (vaEndPicture of a decoding context): the checks of the client's
 * parameters against the slice headers and the reference model (h264_refs.c), SWIFTVT_VA_TAMPER,
 * the rebuilt SPS / PPS and the access unit for libavcodec (avdecode.c), the copy into the surface,
 * and what is refused (REFUSED, once per context). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"

static VAStatus refuse(struct sw_driver *drv, struct sw_context *context, VAStatus status, const char *why)
{
    if (context->refused++ == 0)
        drv_report(drv, 1, "swiftvt_sw REFUSED: %s (reported once per context)", why);
    return status;
}

/* SWIFTVT_VA_TAMPER: what a buggy client would send, to prove that the checks catch it. */
static void tamper(unsigned what, VAPictureParameterBufferH264 *pp, VASliceParameterBufferH264 *slices,
                   const struct h264_slice_header *headers, int n)
{
    int idr = headers[0].nal_unit_type == 5;
    if ((what & TAMPER_POC) && !idr) {
        pp->CurrPic.TopFieldOrderCnt += 2;
        pp->CurrPic.BottomFieldOrderCnt += 2;
    }
    if ((what & TAMPER_REF_FRAMES) && !idr) {
        for (int i = 0; i < 16; i++) {
            if (!(pp->ReferenceFrames[i].flags & VA_PICTURE_H264_INVALID) &&
                pp->ReferenceFrames[i].picture_id != VA_INVALID_SURFACE) {
                pp->ReferenceFrames[i].picture_id = VA_INVALID_SURFACE;
                pp->ReferenceFrames[i].flags = VA_PICTURE_H264_INVALID;
                break;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        VASliceParameterBufferH264 *s = &slices[i];
        int inter = headers[i].slice_type == SLICE_P || headers[i].slice_type == SLICE_SP || headers[i].slice_type == SLICE_B;
        if (what & TAMPER_BIT_OFFSET)
            s->slice_data_bit_offset++;
        if (what & TAMPER_QP_DELTA)
            s->slice_qp_delta++;
        if ((what & TAMPER_REF_LIST) && inter) {
            if (s->num_ref_idx_l0_active_minus1 >= 1 && s->RefPicList0[0].picture_id != s->RefPicList0[1].picture_id) {
                VAPictureH264 t = s->RefPicList0[0];
                s->RefPicList0[0] = s->RefPicList0[1];
                s->RefPicList0[1] = t;
            } else {
                s->RefPicList0[0].picture_id = VA_INVALID_SURFACE;
                s->RefPicList0[0].flags = VA_PICTURE_H264_INVALID;
            }
        }
        if ((what & TAMPER_WEIGHTS) && headers[i].explicit_weights) {
            if (!s->luma_weight_l0_flag) {
                s->luma_weight_l0_flag = 1;
                for (int k = 0; k < 32; k++) {
                    s->luma_weight_l0[k] = (int16_t)(1 << s->luma_log2_weight_denom);
                    s->luma_offset_l0[k] = 0;
                }
            }
            s->luma_weight_l0[0]++;
        }
    }
}

static void copy_to_surface(struct sw_surface *surface, const struct avdec_picture *picture)
{
    uint32_t width = (uint32_t)picture->width < surface->pitch ? (uint32_t)picture->width : surface->pitch;
    uint32_t height = (uint32_t)picture->height < surface->alloc_height ? (uint32_t)picture->height
                                                                        : surface->alloc_height;
    for (uint32_t y = 0; y < height; y++)
        memcpy(surface->data + (size_t)y * surface->pitch, picture->plane[0] + (ptrdiff_t)y * picture->stride[0], width);
    /* NV12: Cb and Cr interleaved. */
    uint8_t *uv = surface->data + (size_t)surface->pitch * surface->alloc_height;
    for (uint32_t y = 0; y < (height + 1) / 2; y++) {
        const uint8_t *u = picture->plane[1] + (ptrdiff_t)y * picture->stride[1];
        const uint8_t *v = picture->plane[2] + (ptrdiff_t)y * picture->stride[2];
        uint8_t *row = uv + (size_t)y * surface->pitch;
        for (uint32_t x = 0; x < (width + 1) / 2; x++) {
            row[2 * x] = u[x];
            row[2 * x + 1] = v[x];
        }
    }
}

VAStatus decode_picture(struct sw_driver *drv, struct sw_context *context, struct sw_surface *surface)
{
    const VAPictureParameterBufferH264 *pp = &context->pp;
    char why[256];
    if (!context->have_pp || context->num_slices == 0 || context->num_pending > 0) {
        drv_report(drv, 1, "swiftvt_sw VALIDATION: picture: client %s, driver a picture parameter buffer and slices with data",
                   !context->have_pp ? "no picture parameter buffer" :
                   context->num_slices == 0 ? "no slice data" : "slice parameters without a following slice data buffer");
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }
    /* What the rebuilt parameter sets or the model cannot represent. (pic_order_cnt_type 1 is
     * rebuilt as type 0 from the client's POCs: h264.h, h264_rewrite_slice_poc.) */
    if (!pp->seq_fields.bits.frame_mbs_only_flag || pp->pic_fields.bits.field_pic_flag)
        return refuse(drv, context, VA_STATUS_ERROR_UNSUPPORTED_PROFILE, "field pictures and MBAFF are not supported");
    if (pp->seq_fields.bits.chroma_format_idc != 1 || pp->bit_depth_luma_minus8 || pp->bit_depth_chroma_minus8 ||
        pp->seq_fields.bits.residual_colour_transform_flag)
        return refuse(drv, context, VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT, "only 8-bit 4:2:0 is supported");
    if ((uint32_t)(pp->picture_width_in_mbs_minus1 + 1) * 16 > surface->pitch ||
        (uint32_t)(pp->picture_height_in_mbs_minus1 + 1) * 16 > surface->alloc_height) {
        drv_report(drv, 1, "swiftvt_sw VALIDATION: render target size: client %ux%u, driver at least %ux%u",
                   surface->width, surface->height, (pp->picture_width_in_mbs_minus1 + 1) * 16,
                   (pp->picture_height_in_mbs_minus1 + 1) * 16);
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    }

    struct h264_params params;
    h264_params_from_va(pp, &params);
    int n = context->num_slices;
    struct h264_slice_header *headers = calloc((size_t)n, sizeof(*headers));
    VASliceParameterBufferH264 *slice_params = calloc((size_t)n, sizeof(*slice_params));
    uint8_t *au = NULL;
    size_t au_size = 0, au_capacity = 0;
    VAStatus status = VA_STATUS_SUCCESS;
    if (!headers || !slice_params) {
        status = VA_STATUS_ERROR_ALLOCATION_FAILED;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        const VASliceParameterBufferH264 *s = &context->slices[i].param;
        slice_params[i] = *s;
        /* The PPS defaults are unknown to VA: for a slice without override the client's counts are
         * the defaults (checked for consistency across the picture by the model). */
        params.num_ref_idx_default[0] = s->num_ref_idx_l0_active_minus1 + 1;
        params.num_ref_idx_default[1] = s->num_ref_idx_l1_active_minus1 + 1;
        if (h264_parse_slice_header(context->slices[i].nal, context->slices[i].size, &params, &headers[i]) < 0) {
            drv_report(drv, 1, "swiftvt_sw VALIDATION: slice[%d] data: client %u bytes starting %02x, driver %s", i,
                       (unsigned)context->slices[i].size, context->slices[i].nal[0], headers[i].error);
            status = VA_STATUS_ERROR_DECODING_ERROR;
            goto out;
        }
    }

    /* The PPS this picture uses, with the defaults of its first slice without override. */
    uint32_t pps_id = headers[0].pps_id;
    int defaults[2] = { context->pps_default[pps_id][0], context->pps_default[pps_id][1] };
    int seen[2] = { 0, 0 };
    for (int i = 0; i < n; i++) {
        const struct h264_slice_header *sh = &headers[i];
        if (sh->num_ref_idx_active_override_flag || sh->slice_type == SLICE_I || sh->slice_type == SLICE_SI)
            continue;
        if (!seen[0]) {
            defaults[0] = sh->num_ref_idx_active[0];
            seen[0] = 1;
        }
        if (sh->slice_type == SLICE_B && !seen[1]) {
            defaults[1] = sh->num_ref_idx_active[1];
            seen[1] = 1;
        }
    }
    context->pps_default[pps_id][0] = defaults[0];
    context->pps_default[pps_id][1] = defaults[1];
    struct h264_rebuild_input rebuild = {
        .profile = context->profile, .pp = pp, .iq = context->have_iq ? &context->iq : NULL, .pps_id = pps_id,
        .num_ref_idx_default = { defaults[0], defaults[1] },
    };
    if (context->profile != VAProfileH264High &&
        (pp->pic_fields.bits.transform_8x8_mode_flag || !h264_iq_is_flat(rebuild.iq, 0)))
        drv_report(drv, 1, "swiftvt_sw VALIDATION: High profile tools (8x8 transform or scaling matrices): client uses them, "
                   "driver config profile %d has none", context->profile);
    uint8_t sps[64], pps[2048];
    size_t sps_size = h264_build_sps(&rebuild, sps, sizeof(sps));
    size_t pps_size = h264_build_pps(&rebuild, pps, sizeof(pps));
    if (!sps_size || !pps_size) {
        status = VA_STATUS_ERROR_OPERATION_FAILED;
        goto out;
    }

    int sps_changed = sps_size != context->sps_size || memcmp(sps, context->sps, sps_size) != 0;
    if (sps_changed)
        h264_refs_forget_poc_type1(&context->refs);

    /* Validation before decoding: the model's own view of the picture against the client's. */
    VAPictureParameterBufferH264 checked_pp = *pp;
    if (drv->tamper)
        tamper(drv->tamper, &checked_pp, slice_params, headers, n);
    struct h264_check_input check = {
        .params = &params, .pp = &checked_pp, .headers = headers, .slices = slice_params, .num_slices = n,
        .target = context->target, .paramlog = drv->paramlog,
        .gap_frames_required = drv->personality.gap_frames_required,
    };
    struct h264_pic_info info;
    memset(&info, 0, sizeof(info));
    int complaints = h264_check_picture(&context->refs, &check, &info, drv_complain, drv);

    /* The access unit for libavcodec: parameter sets only when they changed (a repeated SPS is
     * harmless, a changed one starts a new sequence), then the slices as the client sent them. */
    if (sps_changed) {
        if (context->sps_size)
            drv_log(drv, "picture %ld: the rebuilt SPS changed: new sequence", context->pictures);
        /* 7.4.1.2.1: a new SPS can only be activated by an IDR picture. */
        if (context->sps_size && headers[0].nal_unit_type != 5) {
            drv_complain(drv, "sequence parameters (seq_fields, sizes, num_ref_frames, bit depths)",
                         "changed at a non-IDR picture", "unchanged until the next IDR");
            complaints++;
        }
        memcpy(context->sps, sps, sps_size);
        context->sps_size = sps_size;
        for (int i = 0; i < 256; i++) {
            free(context->pps[i]);
            context->pps[i] = NULL;
            context->pps_size[i] = 0;
        }
        if (avdec_append_nal(&au, &au_size, &au_capacity, sps, sps_size) < 0) {
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            goto out;
        }
    }
    if (pps_size != context->pps_size[pps_id] || memcmp(pps, context->pps[pps_id], pps_size) != 0) {
        free(context->pps[pps_id]);
        context->pps[pps_id] = malloc(pps_size);
        if (!context->pps[pps_id]) {
            context->pps_size[pps_id] = 0;
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            goto out;
        }
        memcpy(context->pps[pps_id], pps, pps_size);
        context->pps_size[pps_id] = pps_size;
        if (avdec_append_nal(&au, &au_size, &au_capacity, pps, pps_size) < 0) {
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            goto out;
        }
    }
    for (int i = 0; i < n; i++) {
        const uint8_t *nal = context->slices[i].nal;
        size_t nal_size = context->slices[i].size;
        uint8_t *rewritten = NULL;
        if (h264_rebuild_rewrites_poc(pp)) {
            /* The client's POC, relative to its offset learnt at the IDR picture (the model's
             * type 1 POC when the client agrees with it), is the rewritten pic_order_cnt_lsb:
             * 8.2.1.1 gives the same TopFieldOrderCnt back from 16-bit LSBs as long as two
             * successive reference pictures are less than 2^15 apart. */
            int32_t top = pp->CurrPic.TopFieldOrderCnt - context->refs.client_poc_offset;
            rewritten = h264_rewrite_slice_poc(nal, nal_size, &headers[i], pp->pic_fields.bits.entropy_coding_mode_flag,
                                               (uint32_t)top, pp->CurrPic.BottomFieldOrderCnt - pp->CurrPic.TopFieldOrderCnt,
                                               &nal_size);
            if (!rewritten) {
                drv_report(drv, 1, "swiftvt_sw DECODE: picture %ld: slice[%d]: its POC fields could not be rewritten",
                           context->pictures, i);
                status = VA_STATUS_ERROR_DECODING_ERROR;
                goto out;
            }
            nal = rewritten;
        }
        int failed = avdec_append_nal(&au, &au_size, &au_capacity, nal, nal_size) < 0;
        free(rewritten);
        if (failed) {
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            goto out;
        }
    }
    if (!context->dec) {
        context->dec = avdec_new(drv->selfcheck, why, sizeof(why));
        if (!context->dec) {
            drv_report(drv, 1, "swiftvt_sw REFUSED: %s", why);
            status = VA_STATUS_ERROR_OPERATION_FAILED;
            goto out;
        }
    }
    struct avdec_picture picture;
    if (avdec_decode(context->dec, au, au_size, &picture, why, sizeof(why)) < 0) {
        drv_report(drv, 1, "swiftvt_sw DECODE: picture %ld (poc %d): %s", context->pictures, info.top_poc, why);
        status = VA_STATUS_ERROR_DECODING_ERROR;
    } else {
        copy_to_surface(surface, &picture);
    }
    /* The model follows the stream whatever happened, so that later pictures are still checked. */
    h264_mark_picture(&context->refs, &params, &headers[0], &info, context->target);
    drv_log(drv, "picture %ld: surface %#x poc %d/%d frame_num %u %s, %d slice(s), %d complaint(s)",
            context->pictures, context->target, info.top_poc, info.bottom_poc, headers[0].frame_num,
            headers[0].nal_unit_type == 5 ? "IDR" : headers[0].nal_ref_idc ? "ref" : "non-ref", n, complaints);
    if (complaints && status == VA_STATUS_SUCCESS)
        status = VA_STATUS_ERROR_DECODING_ERROR;
out:
    free(headers);
    free(slice_params);
    free(au);
    return status;
}
