/* swiftvt_sw: buffers: parameter and slice data buffers, coded buffers (a VACodedBufferSegment and
 * the bitstream after it), image buffers; mapping (which waits for a coded buffer's picture). */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver_internal.h"

void buffer_free(struct sw_buffer *buffer)
{
    if (buffer->surface)
        surface_release(buffer->surface);
    else
        free(buffer->data);
    free(buffer);
}

VAStatus sw_CreateBuffer(VADriverContextP ctx, VAContextID context, VABufferType type, unsigned int size,
                         unsigned int num_elements, void *data, VABufferID *buf_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    (void)context;
    if ((uint64_t)size * num_elements > (1u << 30))
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    struct sw_buffer *buffer = calloc(1, sizeof(*buffer));
    if (!buffer)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    buffer->type = type;
    buffer->size = size;
    buffer->num_elements = num_elements;
    size_t bytes = (size_t)size * num_elements;
    if (type == VAEncCodedBufferType) {
        /* A coded buffer maps to its segment list (va.h, VACodedBufferSegment): one segment at the
         * start of the memory, the bitstream (size x num_elements bytes) after it. Empty until a
         * picture is encoded into it. */
        buffer->data = calloc(1, sizeof(VACodedBufferSegment) + bytes);
        if (!buffer->data) {
            free(buffer);
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        }
        VACodedBufferSegment *segment = (VACodedBufferSegment *)buffer->data;
        segment->buf = buffer->data + sizeof(VACodedBufferSegment);
    } else {
        buffer->data = calloc(1, bytes ? bytes : 1);
        if (!buffer->data) {
            free(buffer);
            return VA_STATUS_ERROR_ALLOCATION_FAILED;
        }
        if (data)
            memcpy(buffer->data, data, bytes);
    }
    pthread_mutex_lock(&drv->lock);
    *buf_id = table_add(&drv->buffers, buffer);
    pthread_mutex_unlock(&drv->lock);
    if (*buf_id == VA_INVALID_ID) {
        buffer_free(buffer);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    return VA_STATUS_SUCCESS;
}

VAStatus sw_CreateBuffer2(VADriverContextP ctx, VAContextID context, VABufferType type, unsigned int width,
                          unsigned int height, unsigned int *unit_size, unsigned int *pitch,
                          VABufferID *buf_id)
{
    (void)ctx, (void)context, (void)type, (void)width, (void)height, (void)unit_size, (void)pitch, (void)buf_id;
    return VA_STATUS_ERROR_UNIMPLEMENTED; /* 2D buffers (encoders' statistics, FEI): none here */
}

VAStatus sw_BufferSetNumElements(VADriverContextP ctx, VABufferID buf_id, unsigned int num_elements)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_buffer *buffer = table_get(&drv->buffers, buf_id);
    VAStatus status = VA_STATUS_ERROR_INVALID_BUFFER;
    if (buffer) {
        /* Only shrinking (or restoring) within the allocation is meaningful. */
        if (num_elements <= buffer->num_elements) {
            buffer->num_elements = num_elements;
            status = VA_STATUS_SUCCESS;
        } else {
            status = VA_STATUS_ERROR_INVALID_PARAMETER;
        }
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

VAStatus sw_MapBuffer(VADriverContextP ctx, VABufferID buf_id, void **pbuf)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_buffer *buffer = table_get(&drv->buffers, buf_id);
    size_t derived_bytes = 0;
    if (buffer && buffer->type == VAEncCodedBufferType && !drv->personality.coded_map_early) {
        /* Mapping a coded buffer waits for its picture (iHD); old Mesa filled in the size only
         * in vaSyncSurface, so that a map before it shows size 0 (coded_map_early). */
        wait_coded_buffer(drv, buf_id, buffer);
        buffer = table_get(&drv->buffers, buf_id);
    }
    if (buffer && buffer->surface) {
        /* A derived image maps the surface memory, which the GPU finishes writing first. */
        wait_surface(drv, buffer->surface, 0);
        derived_bytes = buffer->size;
    }
    if (buffer) {
        buffer->map_count++;
        *pbuf = buffer->data;
    }
    pthread_mutex_unlock(&drv->lock);
    if (derived_bytes && drv->personality.derive_ns_per_byte > 0) {
        /* iHD: the CPU reads derived images from uncached, tiled memory, slowly in proportion to
         * their size; a client that can choose copies with vaGetImage instead. */
        long ns = drv->personality.derive_ns_per_byte * (long)derived_bytes;
        struct timespec pause = { ns / 1000000000L, ns % 1000000000L };
        nanosleep(&pause, NULL);
    }
    return buffer ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_BUFFER;
}

VAStatus sw_UnmapBuffer(VADriverContextP ctx, VABufferID buf_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_buffer *buffer = table_get(&drv->buffers, buf_id);
    VAStatus status = VA_STATUS_ERROR_INVALID_BUFFER;
    if (buffer) {
        status = buffer->map_count > 0 ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_OPERATION_FAILED;
        if (buffer->map_count > 0)
            buffer->map_count--;
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

VAStatus sw_DestroyBuffer(VADriverContextP ctx, VABufferID buffer_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    struct sw_buffer *buffer = table_take(drv, &drv->buffers, buffer_id);
    if (!buffer)
        return VA_STATUS_ERROR_INVALID_BUFFER;
    buffer_free(buffer);
    return VA_STATUS_SUCCESS;
}

VAStatus sw_BufferInfo(VADriverContextP ctx, VABufferID buf_id, VABufferType *type, unsigned int *size,
                       unsigned int *num_elements)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_buffer *buffer = table_get(&drv->buffers, buf_id);
    if (buffer) {
        *type = buffer->type;
        *size = buffer->size;
        *num_elements = buffer->num_elements;
    }
    pthread_mutex_unlock(&drv->lock);
    return buffer ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_BUFFER;
}

VAStatus sw_AcquireBufferHandle(VADriverContextP ctx, VABufferID buf_id, VABufferInfo *buf_info)
{
    (void)ctx, (void)buf_id, (void)buf_info;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

VAStatus sw_ReleaseBufferHandle(VADriverContextP ctx, VABufferID buf_id)
{
    (void)ctx, (void)buf_id;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

VAStatus sw_SyncBuffer(VADriverContextP ctx, VABufferID buf_id, uint64_t timeout_ns)
{
    (void)timeout_ns;
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_buffer *buffer = table_get(&drv->buffers, buf_id);
    if (buffer)
        wait_coded_buffer(drv, buf_id, buffer);
    int valid = table_get(&drv->buffers, buf_id) != NULL;
    pthread_mutex_unlock(&drv->lock);
    return valid ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_BUFFER;
}
