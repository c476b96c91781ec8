/* swiftvt_sw: surfaces: NV12 in system memory, their attributes, vaSyncSurface (which waits for
 * asynchronous completion, driver_completion.c), the surface status and error queries, locking. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "driver_internal.h"

void surface_release(struct sw_surface *surface)
{
    if (--surface->references == 0) {
        free(surface->data);
        free(surface);
    }
}

uint32_t align_up(uint32_t value, uint32_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

VAStatus sw_CreateSurfaces2(VADriverContextP ctx, unsigned int format, unsigned int width, unsigned int height,
                            VASurfaceID *surfaces, unsigned int num_surfaces, VASurfaceAttrib *attrib_list,
                            unsigned int num_attribs)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (drv->faults & FAIL_CREATE_SURFACES) {
        drv_log(drv, "vaCreateSurfaces: injected failure (SWIFTVT_VA_FAIL=create-surfaces)");
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    if (format != VA_RT_FORMAT_YUV420)
        return VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT;
    if (width < 1 || height < 1 || width > MAX_SIZE || height > MAX_SIZE)
        return VA_STATUS_ERROR_RESOLUTION_NOT_SUPPORTED;
    for (unsigned int i = 0; i < num_attribs; i++) {
        const VASurfaceAttrib *a = &attrib_list[i];
        if (!(a->flags & VA_SURFACE_ATTRIB_SETTABLE))
            continue;
        switch (a->type) {
        case VASurfaceAttribPixelFormat:
            if (a->value.type == VAGenericValueTypeInteger && (uint32_t)a->value.value.i != VA_FOURCC_NV12)
                return VA_STATUS_ERROR_INVALID_IMAGE_FORMAT;
            break;
        case VASurfaceAttribMemoryType:
            if (a->value.type == VAGenericValueTypeInteger && a->value.value.i != VA_SURFACE_ATTRIB_MEM_TYPE_VA)
                return VA_STATUS_ERROR_UNSUPPORTED_MEMORY_TYPE;
            break;
        case VASurfaceAttribExternalBufferDescriptor:
            return VA_STATUS_ERROR_UNSUPPORTED_MEMORY_TYPE;
        default:
            break; /* usage hints and the like change nothing here */
        }
    }
    pthread_mutex_lock(&drv->lock);
    VAStatus status = VA_STATUS_SUCCESS;
    unsigned int made = 0;
    for (; made < num_surfaces; made++) {
        struct sw_surface *surface = calloc(1, sizeof(*surface));
        if (!surface) {
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            break;
        }
        surface->width = width;
        surface->height = height;
        surface->pitch = align_up(width, 64);
        surface->alloc_height = align_up(height, 32);
        size_t size = (size_t)surface->pitch * surface->alloc_height * 3 / 2;
        surface->data = malloc(size);
        if (!surface->data) {
            free(surface);
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            break;
        }
        /* Black, so that an undecoded surface is recognisable. */
        memset(surface->data, 16, (size_t)surface->pitch * surface->alloc_height);
        memset(surface->data + (size_t)surface->pitch * surface->alloc_height, 128,
               (size_t)surface->pitch * surface->alloc_height / 2);
        surface->references = 1;
        surface->status = VA_STATUS_SUCCESS;
        surfaces[made] = table_add(&drv->surfaces, surface);
        if (surfaces[made] == VA_INVALID_ID) {
            surface_release(surface);
            status = VA_STATUS_ERROR_ALLOCATION_FAILED;
            break;
        }
    }
    if (status != VA_STATUS_SUCCESS) {
        for (unsigned int i = 0; i < made; i++) {
            struct sw_surface *surface = table_get(&drv->surfaces, surfaces[i]);
            table_remove(&drv->surfaces, surfaces[i]);
            surface_release(surface);
            surfaces[i] = VA_INVALID_SURFACE;
        }
    }
    pthread_mutex_unlock(&drv->lock);
    drv_log(drv, "vaCreateSurfaces: %u x %ux%u -> %s", num_surfaces, width, height,
            status == VA_STATUS_SUCCESS ? "ok" : vaErrorStr(status));
    return status;
}

VAStatus sw_CreateSurfaces(VADriverContextP ctx, int width, int height, int format, int num_surfaces,
                           VASurfaceID *surfaces)
{
    if (width < 0 || height < 0 || num_surfaces < 0)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    return sw_CreateSurfaces2(ctx, (unsigned)format, (unsigned)width, (unsigned)height, surfaces,
                              (unsigned)num_surfaces, NULL, 0);
}

VAStatus sw_DestroySurfaces(VADriverContextP ctx, VASurfaceID *surface_list, int num_surfaces)
{
    struct sw_driver *drv = DRIVER(ctx);
    VAStatus status = VA_STATUS_SUCCESS;
    pthread_mutex_lock(&drv->lock);
    for (int i = 0; i < num_surfaces; i++) {
        struct sw_surface *surface = table_get(&drv->surfaces, surface_list[i]);
        if (!surface) {
            status = VA_STATUS_ERROR_INVALID_SURFACE;
            continue;
        }
        table_remove(&drv->surfaces, surface_list[i]);
        surface_release(surface);
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

static VAStatus surface_attributes(VASurfaceAttrib *list, unsigned int *count, int min_size)
{
    VASurfaceAttrib attribs[6];
    unsigned int n = 0;
#define ATTRIB(t, f, v)                                                                            \
    attribs[n++] = (VASurfaceAttrib){ .type = (t), .flags = (f),                                   \
                                      .value = { .type = VAGenericValueTypeInteger, .value.i = (v) } }
    ATTRIB(VASurfaceAttribPixelFormat, VA_SURFACE_ATTRIB_GETTABLE | VA_SURFACE_ATTRIB_SETTABLE, VA_FOURCC_NV12);
    ATTRIB(VASurfaceAttribMinWidth, VA_SURFACE_ATTRIB_GETTABLE, min_size);
    ATTRIB(VASurfaceAttribMinHeight, VA_SURFACE_ATTRIB_GETTABLE, min_size);
    ATTRIB(VASurfaceAttribMaxWidth, VA_SURFACE_ATTRIB_GETTABLE, MAX_SIZE);
    ATTRIB(VASurfaceAttribMaxHeight, VA_SURFACE_ATTRIB_GETTABLE, MAX_SIZE);
    ATTRIB(VASurfaceAttribMemoryType, VA_SURFACE_ATTRIB_GETTABLE | VA_SURFACE_ATTRIB_SETTABLE,
           VA_SURFACE_ATTRIB_MEM_TYPE_VA);
#undef ATTRIB
    if (!list) {
        *count = n;
        return VA_STATUS_SUCCESS;
    }
    if (*count < n) {
        *count = n;
        return VA_STATUS_ERROR_MAX_NUM_EXCEEDED;
    }
    memcpy(list, attribs, sizeof(attribs[0]) * n);
    *count = n;
    return VA_STATUS_SUCCESS;
}

VAStatus sw_QuerySurfaceAttributes(VADriverContextP ctx, VAConfigID config_id, VASurfaceAttrib *attrib_list,
                                   unsigned int *num_attribs)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_config *config = table_get(&drv->configs, config_id);
    int min_size = config && config->entrypoint != VAEntrypointVLD ? drv->encode_min_size : 1;
    pthread_mutex_unlock(&drv->lock);
    if (!config)
        return VA_STATUS_ERROR_INVALID_CONFIG;
    return surface_attributes(attrib_list, num_attribs, min_size);
}

/* The deprecated form: fill in the values of the attributes the client lists. */
VAStatus sw_GetSurfaceAttributes(VADriverContextP ctx, VAConfigID config_id, VASurfaceAttrib *attrib_list,
                                 unsigned int num_attribs)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    int valid = table_get(&drv->configs, config_id) != NULL;
    pthread_mutex_unlock(&drv->lock);
    if (!valid)
        return VA_STATUS_ERROR_INVALID_CONFIG;
    VASurfaceAttrib all[8];
    unsigned int n = 8;
    surface_attributes(all, &n, 1);
    for (unsigned int i = 0; i < num_attribs; i++) {
        attrib_list[i].flags = VA_SURFACE_ATTRIB_NOT_SUPPORTED;
        for (unsigned int k = 0; k < n; k++)
            if (all[k].type == attrib_list[i].type)
                attrib_list[i] = all[k];
    }
    return VA_STATUS_SUCCESS;
}

/* Without a latency, decoding and encoding are synchronous (they happen in vaEndPicture): nothing
 * to wait for. A failed picture was reported by vaEndPicture and stays visible through
 * vaQuerySurfaceError. With one, this waits for the worker to complete the surface's pictures.
 * The status is SWIFTVT_VA_SYNC_ERROR's, for the surface's last picture. */
static VAStatus sync_surface(VADriverContextP ctx, VASurfaceID render_target, uint64_t timeout_ns)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_surface *surface = table_get(&drv->surfaces, render_target);
    VAStatus status = VA_STATUS_ERROR_INVALID_SURFACE;
    if (surface) {
        status = wait_surface(drv, surface, timeout_ns) < 0 ? VA_STATUS_ERROR_TIMEDOUT : surface->sync_status;
        /* A busy engine is a passing state (iHD during an engine reset): the next call succeeds.
         * A decoding error stays the picture's. */
        if (status == VA_STATUS_ERROR_HW_BUSY)
            surface->sync_status = VA_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

VAStatus sw_SyncSurface(VADriverContextP ctx, VASurfaceID render_target)
{
    return sync_surface(ctx, render_target, 0);
}

VAStatus sw_SyncSurface2(VADriverContextP ctx, VASurfaceID surface, uint64_t timeout_ns)
{
    /* VA_TIMEOUT_INFINITE is UINT64_MAX: as good as no limit. */
    return sync_surface(ctx, surface, timeout_ns == VA_TIMEOUT_INFINITE ? 0 : timeout_ns);
}

VAStatus sw_QuerySurfaceStatus(VADriverContextP ctx, VASurfaceID render_target, VASurfaceStatus *status)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (drv->personality.query_status_unimplemented)
        return VA_STATUS_ERROR_UNIMPLEMENTED; /* nvidia-vaapi-driver: nvQuerySurfaceStatus */
    pthread_mutex_lock(&drv->lock);
    struct sw_surface *surface = table_get(&drv->surfaces, render_target);
    if (surface)
        *status = surface->pending ? VASurfaceRendering : VASurfaceReady;
    pthread_mutex_unlock(&drv->lock);
    return surface ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_SURFACE;
}

VAStatus sw_QuerySurfaceError(VADriverContextP ctx, VASurfaceID render_target, VAStatus error_status,
                              void **error_info)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (drv->personality.query_error_unimplemented)
        return VA_STATUS_ERROR_UNIMPLEMENTED; /* nvidia-vaapi-driver: nvQuerySurfaceError */
    pthread_mutex_lock(&drv->lock);
    struct sw_surface *surface = table_get(&drv->surfaces, render_target);
    VAStatus status = VA_STATUS_ERROR_INVALID_SURFACE;
    if (surface) {
        status = VA_STATUS_SUCCESS;
        *error_info = NULL;
        if (error_status == VA_STATUS_ERROR_DECODING_ERROR && surface->status == VA_STATUS_ERROR_DECODING_ERROR)
            *error_info = surface->errors; /* the whole picture, then the status -1 terminator */
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

VAStatus sw_LockSurface(VADriverContextP ctx, VASurfaceID surface_id, unsigned int *fourcc,
                        unsigned int *luma_stride, unsigned int *chroma_u_stride,
                        unsigned int *chroma_v_stride, unsigned int *luma_offset,
                        unsigned int *chroma_u_offset, unsigned int *chroma_v_offset,
                        unsigned int *buffer_name, void **buffer)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_surface *surface = table_get(&drv->surfaces, surface_id);
    if (surface) {
        *fourcc = VA_FOURCC_NV12;
        *luma_stride = *chroma_u_stride = *chroma_v_stride = surface->pitch;
        *luma_offset = 0;
        *chroma_u_offset = surface->pitch * surface->alloc_height;
        *chroma_v_offset = *chroma_u_offset + 1;
        if (buffer_name)
            *buffer_name = 0;
        if (buffer)
            *buffer = surface->data;
    }
    pthread_mutex_unlock(&drv->lock);
    return surface ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_SURFACE;
}

VAStatus sw_UnlockSurface(VADriverContextP ctx, VASurfaceID surface_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    int valid = table_get(&drv->surfaces, surface_id) != NULL;
    pthread_mutex_unlock(&drv->lock);
    return valid ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_SURFACE;
}

VAStatus sw_PutSurface(VADriverContextP ctx, VASurfaceID surface, void *draw, short srcx, short srcy,
                       unsigned short srcw, unsigned short srch, short destx, short desty,
                       unsigned short destw, unsigned short desth, VARectangle *cliprects,
                       unsigned int number_cliprects, unsigned int flags)
{
    (void)ctx, (void)surface, (void)draw, (void)srcx, (void)srcy, (void)srcw, (void)srch, (void)destx;
    (void)desty, (void)destw, (void)desth, (void)cliprects, (void)number_cliprects, (void)flags;
    return VA_STATUS_ERROR_UNIMPLEMENTED; /* no presentation: tests read surfaces back */
}

VAStatus sw_ExportSurfaceHandle(VADriverContextP ctx, VASurfaceID surface_id, uint32_t mem_type,
                                uint32_t flags, void *descriptor)
{
    (void)ctx, (void)surface_id, (void)mem_type, (void)flags, (void)descriptor;
    return VA_STATUS_ERROR_UNIMPLEMENTED; /* system memory: there is no DMABuf to export */
}
