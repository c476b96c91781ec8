/* swiftvt_sw: images: NV12 only; vaDeriveImage (a view of the surface memory, SWIFTVT_VA_NO_DERIVE),
 * vaCreateImage, vaGetImage / vaPutImage (copies), vaDestroyImage. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"

static void nv12_layout(VAImage *image, uint32_t width, uint32_t height, uint32_t pitch, uint32_t alloc_height)
{
    image->format = (VAImageFormat){ .fourcc = VA_FOURCC_NV12, .byte_order = VA_LSB_FIRST, .bits_per_pixel = 12 };
    image->width = (uint16_t)width;
    image->height = (uint16_t)height;
    image->num_planes = 2;
    image->pitches[0] = image->pitches[1] = pitch;
    image->offsets[0] = 0;
    image->offsets[1] = pitch * alloc_height;
    image->data_size = pitch * alloc_height * 3 / 2;
    image->num_palette_entries = 0;
    image->entry_bytes = 0;
}

VAStatus sw_QueryImageFormats(VADriverContextP ctx, VAImageFormat *format_list, int *num_formats)
{
    (void)ctx;
    format_list[0] = (VAImageFormat){ .fourcc = VA_FOURCC_NV12, .byte_order = VA_LSB_FIRST, .bits_per_pixel = 12 };
    *num_formats = 1;
    return VA_STATUS_SUCCESS;
}

VAStatus sw_CreateImage(VADriverContextP ctx, VAImageFormat *format, int width, int height, VAImage *out)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (format->fourcc != VA_FOURCC_NV12)
        return VA_STATUS_ERROR_INVALID_IMAGE_FORMAT;
    if (width < 1 || height < 1 || width > MAX_SIZE || height > MAX_SIZE)
        return VA_STATUS_ERROR_RESOLUTION_NOT_SUPPORTED;
    struct sw_image *image = calloc(1, sizeof(*image));
    struct sw_buffer *buffer = calloc(1, sizeof(*buffer));
    if (!image || !buffer) {
        free(image);
        free(buffer);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    uint32_t pitch = align_up((uint32_t)width, 64), rows = align_up((uint32_t)height, 2);
    nv12_layout(&image->image, (uint32_t)width, (uint32_t)height, pitch, rows);
    buffer->type = VAImageBufferType;
    buffer->size = image->image.data_size;
    buffer->num_elements = 1;
    buffer->data = calloc(1, buffer->size);
    if (!buffer->data) {
        free(image);
        free(buffer);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    pthread_mutex_lock(&drv->lock);
    image->image.buf = table_add(&drv->buffers, buffer);
    image->image.image_id = table_add(&drv->images, image);
    VAStatus status = VA_STATUS_SUCCESS;
    if (image->image.buf == VA_INVALID_ID || image->image.image_id == VA_INVALID_ID) {
        table_remove(&drv->buffers, image->image.buf);
        table_remove(&drv->images, image->image.image_id);
        buffer_free(buffer);
        free(image);
        status = VA_STATUS_ERROR_ALLOCATION_FAILED;
    } else {
        *out = image->image;
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

VAStatus sw_DeriveImage(VADriverContextP ctx, VASurfaceID surface_id, VAImage *out)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (drv->no_derive || drv->personality.derive_refused)
        return VA_STATUS_ERROR_OPERATION_FAILED; /* nvidia-vaapi-driver: nvDeriveImage */
    pthread_mutex_lock(&drv->lock);
    VAStatus status = VA_STATUS_SUCCESS;
    struct sw_surface *surface = table_get(&drv->surfaces, surface_id);
    struct sw_image *image = NULL;
    struct sw_buffer *buffer = NULL;
    if (!surface) {
        status = VA_STATUS_ERROR_INVALID_SURFACE;
        goto out;
    }
    image = calloc(1, sizeof(*image));
    buffer = calloc(1, sizeof(*buffer));
    if (!image || !buffer) {
        free(image);
        free(buffer);
        status = VA_STATUS_ERROR_ALLOCATION_FAILED;
        goto out;
    }
    /* The image is a view of the surface memory: the surface stays allocated until it is gone. */
    nv12_layout(&image->image, surface->width, surface->height, surface->pitch, surface->alloc_height);
    surface->references += 2;
    image->derived_from = surface;
    buffer->type = VAImageBufferType;
    buffer->size = image->image.data_size;
    buffer->num_elements = 1;
    buffer->data = surface->data;
    buffer->surface = surface;
    image->image.buf = table_add(&drv->buffers, buffer);
    image->image.image_id = table_add(&drv->images, image);
    if (image->image.buf == VA_INVALID_ID || image->image.image_id == VA_INVALID_ID) {
        table_remove(&drv->buffers, image->image.buf);
        table_remove(&drv->images, image->image.image_id);
        buffer_free(buffer);
        surface_release(surface);
        free(image);
        status = VA_STATUS_ERROR_ALLOCATION_FAILED;
        goto out;
    }
    *out = image->image;
    drv->derived_images++;
out:
    pthread_mutex_unlock(&drv->lock);
    return status;
}

void image_free(struct sw_driver *drv, struct sw_image *image)
{
    struct sw_buffer *buffer = table_get(&drv->buffers, image->image.buf);
    if (buffer) {
        table_remove(&drv->buffers, image->image.buf);
        buffer_free(buffer);
    }
    if (image->derived_from)
        surface_release(image->derived_from);
    free(image);
}

VAStatus sw_DestroyImage(VADriverContextP ctx, VAImageID image_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_image *image = table_get(&drv->images, image_id);
    if (image) {
        table_remove(&drv->images, image_id);
        image_free(drv, image);
    } else {
        /* A client destroying an image it was never given: on a driver whose IDs start at 0
         * (iHD), image 0 may be another session's, and this call would free it. */
        drv_report(drv, 1, "swiftvt_sw VALIDATION: vaDestroyImage: image %#x was never created (or already destroyed)",
                   image_id);
    }
    pthread_mutex_unlock(&drv->lock);
    return image ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_IMAGE;
}

VAStatus sw_SetImagePalette(VADriverContextP ctx, VAImageID image, unsigned char *palette)
{
    (void)ctx, (void)image, (void)palette;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

/* Copies a rectangle between NV12 layouts (even coordinates for the chroma plane). */
static void copy_nv12(uint8_t *dst, const uint32_t dst_pitch[2], const uint32_t dst_offset[2], int dx, int dy,
                      const uint8_t *src, const uint32_t src_pitch[2], const uint32_t src_offset[2], int sx, int sy,
                      uint32_t width, uint32_t height)
{
    for (uint32_t y = 0; y < height; y++)
        memcpy(dst + dst_offset[0] + (size_t)(dy + (int)y) * dst_pitch[0] + dx,
               src + src_offset[0] + (size_t)(sy + (int)y) * src_pitch[0] + sx, width);
    for (uint32_t y = 0; y < (height + 1) / 2; y++)
        memcpy(dst + dst_offset[1] + (size_t)(dy / 2 + (int)y) * dst_pitch[1] + (dx & ~1),
               src + src_offset[1] + (size_t)(sy / 2 + (int)y) * src_pitch[1] + (sx & ~1), (width + 1) & ~1u);
}

VAStatus sw_GetImage(VADriverContextP ctx, VASurfaceID surface_id, int x, int y, unsigned int width,
                     unsigned int height, VAImageID image_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    VAStatus status = VA_STATUS_SUCCESS;
    struct sw_surface *surface = table_get(&drv->surfaces, surface_id);
    struct sw_image *image = table_get(&drv->images, image_id);
    struct sw_buffer *buffer = image ? table_get(&drv->buffers, image->image.buf) : NULL;
    if (surface)
        wait_surface(drv, surface, 0); /* the copy waits for the GPU, as real drivers' do */
    if (!surface)
        status = VA_STATUS_ERROR_INVALID_SURFACE;
    else if (!image || !buffer)
        status = VA_STATUS_ERROR_INVALID_IMAGE;
    else if (x < 0 || y < 0 || (x | y) & 1 || x + width > surface->width || y + height > surface->height ||
             width > image->image.width || height > image->image.height)
        status = VA_STATUS_ERROR_INVALID_PARAMETER;
    else if (buffer->data != surface->data) {
        uint32_t src_pitch[2] = { surface->pitch, surface->pitch };
        uint32_t src_offset[2] = { 0, surface->pitch * surface->alloc_height };
        copy_nv12(buffer->data, image->image.pitches, image->image.offsets, 0, 0, surface->data, src_pitch, src_offset,
                  x, y, width, height);
        drv->copied_images++;
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

VAStatus sw_PutImage(VADriverContextP ctx, VASurfaceID surface_id, VAImageID image_id, int src_x, int src_y,
                     unsigned int src_width, unsigned int src_height, int dest_x, int dest_y,
                     unsigned int dest_width, unsigned int dest_height)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    VAStatus status = VA_STATUS_SUCCESS;
    struct sw_surface *surface = table_get(&drv->surfaces, surface_id);
    struct sw_image *image = table_get(&drv->images, image_id);
    struct sw_buffer *buffer = image ? table_get(&drv->buffers, image->image.buf) : NULL;
    if (!surface)
        status = VA_STATUS_ERROR_INVALID_SURFACE;
    else if (!image || !buffer)
        status = VA_STATUS_ERROR_INVALID_IMAGE;
    else if (src_width != dest_width || src_height != dest_height)
        status = VA_STATUS_ERROR_UNIMPLEMENTED; /* no scaling */
    else if (src_x < 0 || src_y < 0 || dest_x < 0 || dest_y < 0 || (src_x | src_y | dest_x | dest_y) & 1 ||
             src_x + src_width > image->image.width || src_y + src_height > image->image.height ||
             dest_x + dest_width > surface->width || dest_y + dest_height > surface->height)
        status = VA_STATUS_ERROR_INVALID_PARAMETER;
    else if (buffer->data != surface->data) {
        uint32_t dst_pitch[2] = { surface->pitch, surface->pitch };
        uint32_t dst_offset[2] = { 0, surface->pitch * surface->alloc_height };
        copy_nv12(surface->data, dst_pitch, dst_offset, dest_x, dest_y, buffer->data, image->image.pitches,
                  image->image.offsets, src_x, src_y, src_width, src_height);
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}
