/* swiftvt_sw: the glue to the encoder (encode.c): vaEndPicture of an encoding context, with
 * SWIFTVT_VA_FAIL_CODED, SWIFTVT_VA_FAIL_END_PICTURE and the encoding SWIFTVT_VA_TAMPER values. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"

/* Encoded pictures in this process, for SWIFTVT_VA_FAIL_CODED. */
static atomic_long encoded_pictures;

static struct enc_surface encode_surface(const struct sw_surface *surface)
{
    return (struct enc_surface){ .data = surface->data, .pitch = surface->pitch, .alloc_height = surface->alloc_height };
}

/* vaEndPicture of an encoding context (driver lock held): the source is the render target, the
 * reconstruction and the coded buffer are named by the picture parameters. */
VAStatus encode_picture(struct sw_driver *drv, struct sw_context *context, struct sw_surface *source, long call,
                        struct job *job)
{
    struct enc_hooks hooks = encode_hooks(drv);
    struct enc_surface source_view = encode_surface(source), reconstructed_view;
    struct enc_coded coded;
    struct enc_picture_input in = { .source = &source_view };
    VASurfaceID reconstructed_id;
    VABufferID coded_id;
    if (h264_encoder_targets(context->encoder, &reconstructed_id, &coded_id)) {
        struct sw_surface *reconstructed = table_get(&drv->surfaces, reconstructed_id);
        if (reconstructed) {
            reconstructed_view = encode_surface(reconstructed);
            in.reconstructed = &reconstructed_view;
        }
        struct sw_buffer *buffer = table_get(&drv->buffers, coded_id);
        if (buffer && buffer->type == VAEncCodedBufferType && !buffer->surface) {
            size_t capacity = (size_t)buffer->size * buffer->num_elements;
            coded = (struct enc_coded){ .segment = (VACodedBufferSegment *)buffer->data,
                                        .data = buffer->data + sizeof(VACodedBufferSegment), .capacity = capacity };
            if (job && (job->coded = calloc(1, sizeof(VACodedBufferSegment) + capacity)) != NULL) {
                /* Asynchronous: encoded into a copy that the worker publishes; until then the
                 * coded buffer is empty. */
                coded.segment = (VACodedBufferSegment *)job->coded;
                coded.data = job->coded + sizeof(VACodedBufferSegment);
                memset(buffer->data, 0, sizeof(VACodedBufferSegment));
                ((VACodedBufferSegment *)buffer->data)->buf = buffer->data + sizeof(VACodedBufferSegment);
                job->coded_id = coded_id;
                job->coded_buffer = buffer;
                buffer->pending++;
            }
            in.coded = &coded;
        }
    }
    long picture = atomic_fetch_add(&encoded_pictures, 1) + 1;
    if (drv->fail_coded != FAIL_CODED_NONE && drv->fail_coded_picture == picture) {
        in.injected_status = drv->fail_coded == FAIL_CODED_OVERFLOW ? VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK
                                                                    : VA_CODED_BUF_STATUS_BAD_BITSTREAM;
        drv_log(drv, "encoded picture #%ld: injected coded buffer status %#x (SWIFTVT_VA_FAIL_CODED)", picture,
                in.injected_status);
    }
    in.discard_output = drv->fail_end_picture == call;
    in.tamper = ((drv->tamper & TAMPER_ENCODE_FRAME_NUM) ? ENCODE_TAMPER_FRAME_NUM : 0) |
                ((drv->tamper & TAMPER_ENCODE_REF_LIST) ? ENCODE_TAMPER_REF_LIST : 0);
    VAStatus status = h264_encoder_end(context->encoder, &hooks, &in);
    if (job) {
        job->surface = source;
        job->source_hash = fnv1a(source->data, surface_bytes(source));
        job->picture = picture;
    }
    if (in.discard_output) {
        drv_log(drv, "vaEndPicture #%ld: injected failure (SWIFTVT_VA_FAIL_END_PICTURE): empty coded buffer", call);
        status = VA_STATUS_ERROR_ENCODING_ERROR;
    }
    return status;
}
