/* swiftvt_sw: contexts and the pictures submitted to them: vaCreateContext / vaDestroyContext,
 * vaBeginPicture, vaRenderPicture (parameters and slices copied into the context) and vaEndPicture,
 * which hands the picture to the encoder (driver_encode.c) or the decoder (driver_decode.c),
 * injects SWIFTVT_VA_FAIL_END_PICTURE / SWIFTVT_VA_SYNC_ERROR, and queues it for asynchronous
 * completion (driver_completion.c) under a latency. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"

/* vaEndPicture calls in this process, for SWIFTVT_VA_FAIL_END_PICTURE. */
static atomic_long end_picture_calls;

static void context_clear_picture(struct sw_context *context)
{
    for (int i = 0; i < context->num_slices; i++)
        free(context->slices[i].nal);
    context->num_slices = 0;
    context->num_pending = 0;
    context->have_pp = 0;
    context->have_iq = 0;
}

void context_free(struct sw_context *context)
{
    context_clear_picture(context);
    free(context->used_targets);
    free(context->slices);
    free(context->pending);
    for (int i = 0; i < 256; i++)
        free(context->pps[i]);
    avdec_free(context->dec);
    h264_encoder_free(context->encoder);
    free(context);
}

VAStatus sw_CreateContext(VADriverContextP ctx, VAConfigID config_id, int picture_width, int picture_height,
                          int flag, VASurfaceID *render_targets, int num_render_targets, VAContextID *context_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    (void)flag;
    if (drv->faults & FAIL_CREATE_CONTEXT) {
        drv_log(drv, "vaCreateContext: injected failure (SWIFTVT_VA_FAIL=create-context)");
        return VA_STATUS_ERROR_OPERATION_FAILED;
    }
    if (picture_width < 1 || picture_height < 1 || picture_width > MAX_SIZE || picture_height > MAX_SIZE)
        return VA_STATUS_ERROR_RESOLUTION_NOT_SUPPORTED;
    pthread_mutex_lock(&drv->lock);
    VAStatus status = VA_STATUS_SUCCESS;
    struct sw_config *config = table_get(&drv->configs, config_id);
    if (!config)
        status = VA_STATUS_ERROR_INVALID_CONFIG;
    int encoding = config && is_encoding(drv, config->entrypoint);
    for (int i = 0; status == VA_STATUS_SUCCESS && i < num_render_targets; i++)
        if (!table_get(&drv->surfaces, render_targets[i]))
            status = VA_STATUS_ERROR_INVALID_SURFACE;
    struct sw_context *context = NULL;
    if (status == VA_STATUS_SUCCESS) {
        context = calloc(1, sizeof(*context));
        if (!context)
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    if (status == VA_STATUS_SUCCESS) {
        context->config_id = config_id;
        context->profile = config->profile;
        context->width = picture_width;
        context->height = picture_height;
        for (int i = 0; i < 256; i++)
            context->pps_default[i][0] = context->pps_default[i][1] = 1;
        context->refs.max_long_term_frame_idx = -1;
        /* NVDEC gives each surface a picture index when it is first decoded into, up to the
         * context's render target count (32 when none is given, and at most 32). */
        if (!encoding && drv->personality.surface_cap) {
            int cap = drv->personality.surface_cap;
            context->surface_cap = num_render_targets > 0 && num_render_targets < cap ? num_render_targets : cap;
            context->used_targets = calloc((size_t)context->surface_cap, sizeof(VASurfaceID));
            if (!context->used_targets) {
                free(context);
                context = NULL;
                status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            }
        }
        if (context && encoding && (config->rate_control & drv->context_refuses_rc)) {
            drv_log(drv, "vaCreateContext: rate control %s refused (SWIFTVT_VA_CONTEXT_REFUSES_RC)",
                    h264_encoder_rc_name(config->rate_control));
            free(context);
            context = NULL;
            status = VA_STATUS_ERROR_INVALID_CONFIG;
        }
        if (context && encoding) {
            context->encoder = h264_encoder_new(config->profile, config->rate_control, config->packed_headers,
                                                &drv->personality.enc);
            if (!context->encoder) {
                free(context);
                context = NULL;
                status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            }
        }
    }
    if (status == VA_STATUS_SUCCESS) {
        *context_id = table_add(&drv->contexts, context);
        if (*context_id == VA_INVALID_ID) {
            context_free(context);
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
        }
    }
    pthread_mutex_unlock(&drv->lock);
    drv_log(drv, "vaCreateContext: %s %dx%d, %d render targets -> %s",
            encoding ? "encoding" : "decoding", picture_width, picture_height, num_render_targets,
            vaErrorStr(status));
    return status;
}

VAStatus sw_DestroyContext(VADriverContextP ctx, VAContextID context_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    struct sw_context *context = table_take(drv, &drv->contexts, context_id);
    if (!context)
        return VA_STATUS_ERROR_INVALID_CONTEXT;
    if (context->in_picture && !context->encoder)
        /* va.h pairs every vaBeginPicture with a vaEndPicture: a picture left open keeps its
         * slices in the context (nvidia-vaapi-driver decodes them with the next picture). */
        drv_report(drv, 1, "swiftvt_sw VALIDATION: vaDestroyContext: a picture was begun (%d slice(s)) and never ended",
                   context->num_slices);
    if (context->dec && drv->selfcheck) {
        long verified, mismatched;
        avdec_finish(context->dec);
        avdec_selfcheck_counts(context->dec, &verified, &mismatched);
        drv_log(drv, "self-check: %ld pictures verified complete, %ld mismatched", verified, mismatched);
        if (mismatched)
            drv_report(drv, 1, "swiftvt_sw SELFCHECK: %ld of %ld pictures changed after vaEndPicture took them", mismatched,
                       verified + mismatched);
    }
    context_free(context);
    return VA_STATUS_SUCCESS;
}

VAStatus sw_BeginPicture(VADriverContextP ctx, VAContextID context_id, VASurfaceID render_target)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_context *context = table_get(&drv->contexts, context_id);
    VAStatus status = VA_STATUS_SUCCESS;
    if (!context)
        status = VA_STATUS_ERROR_INVALID_CONTEXT;
    else if (!table_get(&drv->surfaces, render_target))
        status = VA_STATUS_ERROR_INVALID_SURFACE;
    if (status == VA_STATUS_SUCCESS && context->surface_cap) {
        /* NVDEC (nvBeginPicture): a surface new to the context takes the next picture index; when
         * they are used up, VA_STATUS_ERROR_MAX_NUM_EXCEEDED. */
        int known = 0;
        for (int i = 0; i < context->num_used_targets && !known; i++)
            known = context->used_targets[i] == render_target;
        if (!known && context->num_used_targets == context->surface_cap) {
            drv_log(drv, "vaBeginPicture: surface %#x would be render target number %d of a context limited to %d "
                         "(personality %s)", render_target, context->surface_cap + 1, context->surface_cap,
                    drv->personality.name);
            status = VA_STATUS_ERROR_MAX_NUM_EXCEEDED;
        } else if (!known) {
            context->used_targets[context->num_used_targets++] = render_target;
        }
    }
    if (status == VA_STATUS_SUCCESS) {
        if (context->in_picture && drv->personality.keep_abandoned_slices && !context->encoder) {
            /* nvidia-vaapi-driver resets its bitstream and slice offsets only in vaEndPicture: the
             * slices of a picture abandoned without vaEndPicture go into the next one. */
            drv_log(drv, "vaBeginPicture: the previous picture had no vaEndPicture; its %d slice(s) stay "
                         "(personality %s)", context->num_slices, drv->personality.name);
            context->num_pending = 0;
            context->have_pp = 0;
            context->have_iq = 0;
        } else {
            if (context->in_picture)
                drv_log(drv, "vaBeginPicture: the previous picture had no vaEndPicture; dropped");
            context_clear_picture(context);
        }
        if (context->encoder)
            h264_encoder_begin(context->encoder);
        context->in_picture = 1;
        context->target = render_target;
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

static VAStatus add_slices(struct sw_context *context, const struct sw_buffer *data)
{
    size_t total = (size_t)data->size * data->num_elements;
    for (int i = 0; i < context->num_pending; i++) {
        const VASliceParameterBufferH264 *p = &context->pending[i];
        if (p->slice_data_flag != VA_SLICE_DATA_FLAG_ALL)
            return VA_STATUS_ERROR_INVALID_PARAMETER; /* partial slices are not supported */
        if ((size_t)p->slice_data_offset + p->slice_data_size > total || p->slice_data_size == 0)
            return VA_STATUS_ERROR_INVALID_PARAMETER;
        if (context->num_slices == context->cap_slices) {
            int cap = context->cap_slices ? context->cap_slices * 2 : 16;
            struct sw_slice *slices = realloc(context->slices, sizeof(*slices) * (size_t)cap);
            if (!slices)
                return VA_STATUS_ERROR_ALLOCATION_FAILED;
            context->slices = slices;
            context->cap_slices = cap;
        }
        struct sw_slice *slice = &context->slices[context->num_slices];
        slice->param = *p;
        slice->size = p->slice_data_size;
        slice->nal = malloc(slice->size);
        if (!slice->nal)
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        memcpy(slice->nal, data->data + p->slice_data_offset, slice->size);
        context->num_slices++;
    }
    context->num_pending = 0;
    return VA_STATUS_SUCCESS;
}

VAStatus sw_RenderPicture(VADriverContextP ctx, VAContextID context_id, VABufferID *buffers, int num_buffers)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_context *context = table_get(&drv->contexts, context_id);
    VAStatus status = VA_STATUS_SUCCESS;
    if (!context)
        status = VA_STATUS_ERROR_INVALID_CONTEXT;
    else if (!context->in_picture)
        status = VA_STATUS_ERROR_OPERATION_FAILED;
    for (int i = 0; status == VA_STATUS_SUCCESS && i < num_buffers; i++) {
        struct sw_buffer *buffer = table_get(&drv->buffers, buffers[i]);
        if (!buffer) {
            status = VA_STATUS_ERROR_INVALID_BUFFER;
            break;
        }
        if (context->encoder) {
            /* Encoding parameters are copied here, like decoding ones: the client may destroy the
             * buffers after vaRenderPicture. */
            struct enc_hooks hooks = encode_hooks(drv);
            status = h264_encoder_render(context->encoder, &hooks, buffer->type, buffer->data, buffer->size,
                                         buffer->num_elements);
            continue;
        }
        switch (buffer->type) {
        case VAPictureParameterBufferType:
            if (buffer->size < sizeof(VAPictureParameterBufferH264)) {
                status = VA_STATUS_ERROR_INVALID_PARAMETER;
                break;
            }
            memcpy(&context->pp, buffer->data, sizeof(context->pp));
            context->have_pp = 1;
            break;
        case VAIQMatrixBufferType:
            if (buffer->size < sizeof(VAIQMatrixBufferH264)) {
                status = VA_STATUS_ERROR_INVALID_PARAMETER;
                break;
            }
            memcpy(&context->iq, buffer->data, sizeof(context->iq));
            context->have_iq = 1;
            break;
        case VASliceParameterBufferType: {
            /* Slice parameters apply to the next slice data buffer (libva's pairing convention). */
            if (buffer->size != sizeof(VASliceParameterBufferH264)) {
                status = VA_STATUS_ERROR_INVALID_PARAMETER;
                break;
            }
            int needed = context->num_pending + (int)buffer->num_elements;
            if (needed > context->cap_pending) {
                int cap = needed * 2;
                VASliceParameterBufferH264 *pending = realloc(context->pending, sizeof(*pending) * (size_t)cap);
                if (!pending) {
                    status = VA_STATUS_ERROR_ALLOCATION_FAILED;
                    break;
                }
                context->pending = pending;
                context->cap_pending = cap;
            }
            memcpy(context->pending + context->num_pending, buffer->data,
                   sizeof(VASliceParameterBufferH264) * buffer->num_elements);
            context->num_pending = needed;
            break;
        }
        case VASliceDataBufferType:
            if (drv->fail_render_slice && ++drv->rendered_slices == drv->fail_render_slice) {
                drv_log(drv, "vaRenderPicture: slice data #%ld: injected failure (SWIFTVT_VA_FAIL_RENDER)",
                        drv->rendered_slices);
                status = VA_STATUS_ERROR_INVALID_BUFFER;
                break;
            }
            status = add_slices(context, buffer);
            break;
        default:
            drv_log(drv, "vaRenderPicture: buffer type %d ignored", buffer->type);
            break;
        }
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

static void fill_failed(struct sw_surface *surface)
{
    /* Saturated green in YUV (Y 0, Cb 0, Cr 0): impossible to mistake for a decoded picture. */
    memset(surface->data, 0, (size_t)surface->pitch * surface->alloc_height * 3 / 2);
}

VAStatus sw_EndPicture(VADriverContextP ctx, VAContextID context_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_context *context = table_get(&drv->contexts, context_id);
    VAStatus status = VA_STATUS_SUCCESS;
    if (!context) {
        status = VA_STATUS_ERROR_INVALID_CONTEXT;
        goto out;
    }
    if (!context->in_picture) {
        status = VA_STATUS_ERROR_OPERATION_FAILED;
        goto out;
    }
    context->in_picture = 0;
    long call = atomic_fetch_add(&end_picture_calls, 1) + 1;
    struct sw_surface *surface = table_get(&drv->surfaces, context->target);
    /* With a latency the picture completes on the worker thread (asynchronous completion). */
    struct job *job = NULL;
    if (surface && drv->latency_ms > 0) {
        job = calloc(1, sizeof(*job));
        if (!job) {
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            goto done;
        }
        job->coded_id = VA_INVALID_ID;
        job->sync_status = VA_STATUS_SUCCESS;
    }
    if (!surface) {
        status = VA_STATUS_ERROR_INVALID_SURFACE;
    } else if (context->encoder) {
        status = encode_picture(drv, context, surface, call, job);
    } else {
        /* Decoding writes into the surface, or into a copy of it that the worker publishes. */
        struct sw_surface target = *surface;
        if (job) {
            job->pixels = malloc(surface_bytes(surface));
            if (!job->pixels) {
                free(job);
                job = NULL;
                status = VA_STATUS_ERROR_ALLOCATION_FAILED;
                goto done;
            }
            memcpy(job->pixels, surface->data, surface_bytes(surface));
            target.data = job->pixels;
        }
        status = decode_picture(drv, context, &target);
        if (drv->fail_end_picture == call) {
            drv_log(drv, "vaEndPicture #%ld: injected failure (SWIFTVT_VA_FAIL_END_PICTURE)", call);
            fill_failed(&target);
            status = drv->fail_end_picture_status;
        }
        /* SWIFTVT_VA_SYNC_ERROR: iHD reports a decoding error or an engine reset when the picture
         * completes, from vaSyncSurface (DdiDecodeFunctions::StatusReport); vaEndPicture succeeded. */
        VAStatus sync_status = VA_STATUS_SUCCESS;
        if (drv->sync_error_kind && ++drv->decoded_pictures == drv->sync_error_picture) {
            drv_log(drv, "picture %ld: vaSyncSurface will return %s (SWIFTVT_VA_SYNC_ERROR)", context->pictures,
                    vaErrorStr(drv->sync_error_kind));
            sync_status = drv->sync_error_kind;
        }
        surface->status = sync_status == VA_STATUS_ERROR_DECODING_ERROR ? sync_status : status;
        uint32_t mbs = (uint32_t)(context->pp.picture_width_in_mbs_minus1 + 1) *
                       (uint32_t)(context->pp.picture_height_in_mbs_minus1 + 1);
        surface->errors[0] = (VASurfaceDecodeMBErrors){ .status = 1, .start_mb = 0, .end_mb = mbs ? mbs - 1 : 0,
                                                        .decode_error_type = VADecodeMBError, .num_mb = mbs };
        surface->errors[1] = (VASurfaceDecodeMBErrors){ .status = -1 };
        if (job) {
            job->surface = surface;
            job->sync_status = sync_status;
        } else {
            surface->sync_status = sync_status;
        }
    }
    if (job && job->surface)
        queue_job(drv, job);
    else if (job) {
        free(job->coded);
        free(job);
    }
done:
    context->pictures++;
    context_clear_picture(context);
out:
    pthread_mutex_unlock(&drv->lock);
    return status;
}
