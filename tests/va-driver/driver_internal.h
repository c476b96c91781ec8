/* swiftvt_sw: what the driver's files (driver.c, driver_*.c) share: the capabilities, the handle
 * tables, the objects (configs, surfaces, buffers, images, contexts, completion jobs), the driver
 * state, and the functions one file calls in another (hidden: -fvisibility=hidden). Not for
 * encode.c, avdecode.c, h264_*.c: they see plain memory (encode.h, avdecode.h, h264.h). */
#ifndef SWIFTVT_SW_DRIVER_INTERNAL_H
#define SWIFTVT_SW_DRIVER_INTERNAL_H

#include <va/va.h>
#include <va/va_backend.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "avdecode.h"
#include "encode.h"
#include "h264.h"
#include "personality.h"

#define VENDOR "SwiftVT software VA driver for tests (swiftvt_sw, libavcodec)"
#define MAX_SIZE 4096
#define NUM_PROFILES 3
#define NUM_CONFIG_ATTRIBUTES 4        /* of a decoding config */
#define NUM_ENCODE_CONFIG_ATTRIBUTES 8 /* of an encoding config: the most vaQueryConfigAttributes returns */
#define ENCODE_RATE_CONTROLS (VA_RC_CQP | VA_RC_CBR | VA_RC_VBR)
/* Raw data: whole NAL units the client writes (SEI), placed in submission order like iHD's. */
#define ENCODE_PACKED_HEADERS                                                                                         \
    (VA_ENC_PACKED_HEADER_SEQUENCE | VA_ENC_PACKED_HEADER_PICTURE | VA_ENC_PACKED_HEADER_SLICE |                      \
     VA_ENC_PACKED_HEADER_RAW_DATA)
/* VAConfigAttribEncMaxRefFrames: 4 references in list 0, 1 in list 1 (bits 16..31). */
#define ENCODE_MAX_REF_FRAMES (4u | (1u << 16))
#define ENCODE_QUALITY_LEVELS 7

/* ---------- handle tables ---------- */

/* Each object type has its own ID range, so that an ID of the wrong type is refused, not
 * silently taken for another object. */
struct table {
    void **slots;
    uint32_t capacity;
    uint32_t base;
    uint32_t live;
};

/* ---------- objects ---------- */

struct sw_config {
    VAProfile profile;
    VAEntrypoint entrypoint;
    /* Encoding: the rate control mode (one VA_RC_* bit) and the VA_ENC_PACKED_HEADER_* bits chosen. */
    uint32_t rate_control;
    uint32_t packed_headers;
};

/* NV12 in system memory: the luma plane, then the interleaved chroma plane. The allocation is
 * rounded up to whole macroblocks so that a client may decode the full coded size (e.g. 1088
 * lines) into a surface created with the display size (1080). */
struct sw_surface {
    uint32_t width, height;
    uint32_t pitch, alloc_height;
    uint8_t *data;
    int references;            /* the surface table plus each image derived from it, and each pending job */
    VAStatus status;           /* of the last picture decoded into it */
    VASurfaceDecodeMBErrors errors[2];
    int pending;               /* pictures submitted to it (decoded into it, or encoded from it) not yet complete */
    VAStatus sync_status;      /* what vaSyncSurface returns once they are (SWIFTVT_VA_SYNC_ERROR) */
};

struct sw_buffer {
    VABufferType type;
    uint32_t size;             /* of one element */
    uint32_t num_elements;
    uint8_t *data;
    struct sw_surface *surface; /* set for a derived image's buffer: data points into it */
    int map_count;
    int pending;               /* a coded buffer: encoded pictures not yet complete */
};

struct sw_image {
    VAImage image;
    struct sw_surface *derived_from;
};

struct sw_slice {
    VASliceParameterBufferH264 param;
    uint8_t *nal;
    size_t size;
};

struct sw_context {
    VAConfigID config_id;
    VAProfile profile;
    int width, height;
    struct h264_encoder *encoder; /* set for an encoding (VAEntrypointEncSlice) context */
    /* The picture being assembled between vaBeginPicture and vaEndPicture. */
    int in_picture;
    VASurfaceID target;
    int have_pp, have_iq;
    VAPictureParameterBufferH264 pp;
    VAIQMatrixBufferH264 iq;
    VASliceParameterBufferH264 *pending; /* slice parameters waiting for their data buffer */
    int num_pending, cap_pending;
    struct sw_slice *slices;
    int num_slices, cap_slices;
    /* Decoding state. */
    struct avdec *dec;
    uint8_t sps[64];
    size_t sps_size;
    uint8_t *pps[256];
    size_t pps_size[256];
    int pps_default[256][2];
    struct h264_refs refs;
    long pictures;
    long refused;              /* pictures refused; reported once per context */
    /* A personality's cap on the distinct render targets of a decoding context (nvdec: NVDEC's
     * picture indices); 0: none. */
    int surface_cap;
    VASurfaceID *used_targets;
    int num_used_targets;
};

/* A picture whose completion the worker thread publishes after the latency (a personality's
 * asynchronous completion, SWIFTVT_VA_LATENCY_MS). */
struct job {
    struct job *next;
    struct timespec due;        /* CLOCK_MONOTONIC */
    struct sw_surface *surface; /* decoding: the render target; encoding: the source (a reference is held) */
    uint8_t *pixels;            /* decoding: the decoded picture, copied into the surface at completion */
    VAStatus sync_status;
    /* Encoding: the coded buffer (looked up again at completion: the client may have destroyed
     * it), the segment and bitstream as encoded, and the source's hash at vaEndPicture. */
    VABufferID coded_id;
    struct sw_buffer *coded_buffer;
    uint8_t *coded;
    uint64_t source_hash;
    long picture;
};

enum {
    TAMPER_BIT_OFFSET = 1,
    TAMPER_REF_LIST = 2,
    TAMPER_POC = 4,
    TAMPER_REF_FRAMES = 8,
    TAMPER_WEIGHTS = 16,
    TAMPER_QP_DELTA = 32,
    TAMPER_ENCODE_FRAME_NUM = 64,
    TAMPER_ENCODE_REF_LIST = 128,
};

/* SWIFTVT_VA_FAIL_CODED: what the Nth encoded picture's coded buffer segment reports. */
enum { FAIL_CODED_NONE, FAIL_CODED_OVERFLOW, FAIL_CODED_BAD_BITSTREAM };

enum {
    FAIL_CREATE_CONFIG = 1,
    FAIL_CREATE_CONTEXT = 2,
    FAIL_CREATE_SURFACES = 4,
};

struct sw_driver {
    pthread_mutex_t lock;
    struct table configs, contexts, surfaces, buffers, images;
    int log;
    int selfcheck;
    int no_derive;
    unsigned faults;
    unsigned tamper;
    long derived_images, copied_images; /* successful vaDeriveImage / vaGetImage calls */
    long fail_render_slice, rendered_slices; /* SWIFTVT_VA_FAIL_RENDER: the Nth slice data buffer fails */
    long fail_end_picture;
    VAStatus fail_end_picture_status; /* ... with this status when decoding */
    int fail_coded;            /* FAIL_CODED_*, for the fail_coded_picture-th encoded picture */
    long fail_coded_picture;
    uint32_t encode_rate_controls;  /* VA_RC_* offered (SWIFTVT_VA_ENCODE_RC) */
    int encode_min_size;            /* VASurfaceAttribMinWidth/MinHeight of encoding configs (SWIFTVT_VA_ENCODE_MIN_SIZE) */
    uint32_t encode_packed_headers; /* VA_ENC_PACKED_HEADER_* offered (SWIFTVT_VA_ENCODE_PACKED) */
    char *report_path;
    FILE *paramlog;
    /* SWIFTVT_VA_PERSONALITY and its knobs (personality.h, README.md "Driver personalities"). */
    struct personality_traits personality;
    long latency_ms;                /* > 0: pictures complete on the worker thread after this long */
    int sync_error_kind;            /* SWIFTVT_VA_SYNC_ERROR: VA_STATUS_ERROR_DECODING_ERROR or _HW_BUSY */
    long sync_error_picture;        /* ... for the Nth decoded picture (0: never) */
    long decoded_pictures;
    int no_h264;                    /* SWIFTVT_VA_NO_H264 names this display: no H.264 profile */
    uint32_t context_refuses_rc;    /* SWIFTVT_VA_CONTEXT_REFUSES_RC: VA_RC_* bits vaCreateContext refuses */
    /* The completion worker (latency_ms > 0). */
    int worker_started, stopping;
    pthread_t worker;
    pthread_cond_t work_cond;       /* a job was queued, or stopping */
    pthread_cond_t done_cond;       /* a job completed */
    struct job *jobs, *jobs_tail;
};

#define DRIVER(ctx) ((struct sw_driver *)(ctx)->pDriverData)

/* ---------- the functions the files share, by file (driver.c wires the sw_* ones) ---------- */

/* driver_tables.c: handle tables */
uint32_t table_add(struct table *t, void *object);
void *table_get(const struct table *t, uint32_t id);
void table_remove(struct table *t, uint32_t id);
void *table_take(struct sw_driver *drv, struct table *t, uint32_t id);

/* driver_report.c: logging and the report file */
void drv_log(const struct sw_driver *drv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void drv_report(const struct sw_driver *drv, int to_stderr, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void drv_complain(void *opaque, const char *field, const char *client, const char *driver);
struct enc_hooks encode_hooks(struct sw_driver *drv);

/* driver_configs.c: configs */
VAStatus sw_QueryConfigProfiles(VADriverContextP ctx, VAProfile *profile_list, int *num_profiles);
int is_encoding(const struct sw_driver *drv, VAEntrypoint entrypoint);
VAStatus sw_QueryConfigEntrypoints(VADriverContextP ctx, VAProfile profile, VAEntrypoint *entrypoint_list,
                                   int *num_entrypoints);
VAStatus sw_GetConfigAttributes(VADriverContextP ctx, VAProfile profile, VAEntrypoint entrypoint,
                                VAConfigAttrib *attrib_list, int num_attribs);
VAStatus sw_CreateConfig(VADriverContextP ctx, VAProfile profile, VAEntrypoint entrypoint,
                         VAConfigAttrib *attrib_list, int num_attribs, VAConfigID *config_id);
VAStatus sw_DestroyConfig(VADriverContextP ctx, VAConfigID config_id);
VAStatus sw_QueryConfigAttributes(VADriverContextP ctx, VAConfigID config_id, VAProfile *profile,
                                  VAEntrypoint *entrypoint, VAConfigAttrib *attrib_list, int *num_attribs);

/* driver_surfaces.c: surfaces */
void surface_release(struct sw_surface *surface);
uint32_t align_up(uint32_t value, uint32_t alignment);
VAStatus sw_CreateSurfaces2(VADriverContextP ctx, unsigned int format, unsigned int width, unsigned int height,
                            VASurfaceID *surfaces, unsigned int num_surfaces, VASurfaceAttrib *attrib_list,
                            unsigned int num_attribs);
VAStatus sw_CreateSurfaces(VADriverContextP ctx, int width, int height, int format, int num_surfaces,
                           VASurfaceID *surfaces);
VAStatus sw_DestroySurfaces(VADriverContextP ctx, VASurfaceID *surface_list, int num_surfaces);
VAStatus sw_QuerySurfaceAttributes(VADriverContextP ctx, VAConfigID config_id, VASurfaceAttrib *attrib_list,
                                   unsigned int *num_attribs);
VAStatus sw_GetSurfaceAttributes(VADriverContextP ctx, VAConfigID config_id, VASurfaceAttrib *attrib_list,
                                 unsigned int num_attribs);
VAStatus sw_SyncSurface(VADriverContextP ctx, VASurfaceID render_target);
VAStatus sw_SyncSurface2(VADriverContextP ctx, VASurfaceID surface, uint64_t timeout_ns);
VAStatus sw_QuerySurfaceStatus(VADriverContextP ctx, VASurfaceID render_target, VASurfaceStatus *status);
VAStatus sw_QuerySurfaceError(VADriverContextP ctx, VASurfaceID render_target, VAStatus error_status,
                              void **error_info);
VAStatus sw_LockSurface(VADriverContextP ctx, VASurfaceID surface_id, unsigned int *fourcc,
                        unsigned int *luma_stride, unsigned int *chroma_u_stride,
                        unsigned int *chroma_v_stride, unsigned int *luma_offset,
                        unsigned int *chroma_u_offset, unsigned int *chroma_v_offset,
                        unsigned int *buffer_name, void **buffer);
VAStatus sw_UnlockSurface(VADriverContextP ctx, VASurfaceID surface_id);
VAStatus sw_PutSurface(VADriverContextP ctx, VASurfaceID surface, void *draw, short srcx, short srcy,
                       unsigned short srcw, unsigned short srch, short destx, short desty,
                       unsigned short destw, unsigned short desth, VARectangle *cliprects,
                       unsigned int number_cliprects, unsigned int flags);
VAStatus sw_ExportSurfaceHandle(VADriverContextP ctx, VASurfaceID surface_id, uint32_t mem_type,
                                uint32_t flags, void *descriptor);

/* driver_buffers.c: buffers */
void buffer_free(struct sw_buffer *buffer);
VAStatus sw_CreateBuffer(VADriverContextP ctx, VAContextID context, VABufferType type, unsigned int size,
                         unsigned int num_elements, void *data, VABufferID *buf_id);
VAStatus sw_CreateBuffer2(VADriverContextP ctx, VAContextID context, VABufferType type, unsigned int width,
                          unsigned int height, unsigned int *unit_size, unsigned int *pitch,
                          VABufferID *buf_id);
VAStatus sw_BufferSetNumElements(VADriverContextP ctx, VABufferID buf_id, unsigned int num_elements);
VAStatus sw_MapBuffer(VADriverContextP ctx, VABufferID buf_id, void **pbuf);
VAStatus sw_UnmapBuffer(VADriverContextP ctx, VABufferID buf_id);
VAStatus sw_DestroyBuffer(VADriverContextP ctx, VABufferID buffer_id);
VAStatus sw_BufferInfo(VADriverContextP ctx, VABufferID buf_id, VABufferType *type, unsigned int *size,
                       unsigned int *num_elements);
VAStatus sw_AcquireBufferHandle(VADriverContextP ctx, VABufferID buf_id, VABufferInfo *buf_info);
VAStatus sw_ReleaseBufferHandle(VADriverContextP ctx, VABufferID buf_id);
VAStatus sw_SyncBuffer(VADriverContextP ctx, VABufferID buf_id, uint64_t timeout_ns);

/* driver_contexts.c: contexts and the pictures submitted to them */
void context_free(struct sw_context *context);
VAStatus sw_CreateContext(VADriverContextP ctx, VAConfigID config_id, int picture_width, int picture_height,
                          int flag, VASurfaceID *render_targets, int num_render_targets, VAContextID *context_id);
VAStatus sw_DestroyContext(VADriverContextP ctx, VAContextID context_id);
VAStatus sw_BeginPicture(VADriverContextP ctx, VAContextID context_id, VASurfaceID render_target);
VAStatus sw_RenderPicture(VADriverContextP ctx, VAContextID context_id, VABufferID *buffers, int num_buffers);
VAStatus sw_EndPicture(VADriverContextP ctx, VAContextID context_id);

/* driver_completion.c: asynchronous completion: the worker and its queue; waiting for a surface's
 * pictures and for a coded buffer's, with the driver lock held */
uint64_t fnv1a(const uint8_t *data, size_t size);
size_t surface_bytes(const struct sw_surface *surface);
void *completion_worker(void *opaque);
void queue_job(struct sw_driver *drv, struct job *job);
int wait_surface(struct sw_driver *drv, struct sw_surface *surface, uint64_t timeout_ns);
void wait_coded_buffer(struct sw_driver *drv, VABufferID id, struct sw_buffer *buffer);
void stop_worker(struct sw_driver *drv);

/* driver_encode.c: encoding (encode.c) */
VAStatus encode_picture(struct sw_driver *drv, struct sw_context *context, struct sw_surface *source, long call,
                        struct job *job);

/* driver_decode.c: decoding */
VAStatus decode_picture(struct sw_driver *drv, struct sw_context *context, struct sw_surface *surface);

/* driver_images.c: images */
VAStatus sw_QueryImageFormats(VADriverContextP ctx, VAImageFormat *format_list, int *num_formats);
VAStatus sw_CreateImage(VADriverContextP ctx, VAImageFormat *format, int width, int height, VAImage *out);
VAStatus sw_DeriveImage(VADriverContextP ctx, VASurfaceID surface_id, VAImage *out);
void image_free(struct sw_driver *drv, struct sw_image *image);
VAStatus sw_DestroyImage(VADriverContextP ctx, VAImageID image_id);
VAStatus sw_SetImagePalette(VADriverContextP ctx, VAImageID image, unsigned char *palette);
VAStatus sw_GetImage(VADriverContextP ctx, VASurfaceID surface_id, int x, int y, unsigned int width,
                     unsigned int height, VAImageID image_id);
VAStatus sw_PutImage(VADriverContextP ctx, VASurfaceID surface_id, VAImageID image_id, int src_x, int src_y,
                     unsigned int src_width, unsigned int src_height, int dest_x, int dest_y,
                     unsigned int dest_width, unsigned int dest_height);

/* driver_unsupported.c: subpictures, display attributes, multi-frame encoding, processing rate,
 * copy */
VAStatus sw_QuerySubpictureFormats(VADriverContextP ctx, VAImageFormat *format_list, unsigned int *flags,
                                   unsigned int *num_formats);
VAStatus sw_CreateSubpicture(VADriverContextP ctx, VAImageID image, VASubpictureID *subpicture);
VAStatus sw_DestroySubpicture(VADriverContextP ctx, VASubpictureID subpicture);
VAStatus sw_SetSubpictureImage(VADriverContextP ctx, VASubpictureID subpicture, VAImageID image);
VAStatus sw_SetSubpictureChromakey(VADriverContextP ctx, VASubpictureID subpicture, unsigned int chromakey_min,
                                   unsigned int chromakey_max, unsigned int chromakey_mask);
VAStatus sw_SetSubpictureGlobalAlpha(VADriverContextP ctx, VASubpictureID subpicture, float global_alpha);
VAStatus sw_AssociateSubpicture(VADriverContextP ctx, VASubpictureID subpicture, VASurfaceID *target_surfaces,
                                int num_surfaces, short src_x, short src_y, unsigned short src_width,
                                unsigned short src_height, short dest_x, short dest_y,
                                unsigned short dest_width, unsigned short dest_height, unsigned int flags);
VAStatus sw_DeassociateSubpicture(VADriverContextP ctx, VASubpictureID subpicture,
                                  VASurfaceID *target_surfaces, int num_surfaces);
VAStatus sw_QueryDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int *num_attributes);
VAStatus sw_GetDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int num_attributes);
VAStatus sw_SetDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int num_attributes);
VAStatus sw_CreateMFContext(VADriverContextP ctx, VAMFContextID *mfe_context);
VAStatus sw_MFAddContext(VADriverContextP ctx, VAMFContextID mf_context, VAContextID context);
VAStatus sw_MFReleaseContext(VADriverContextP ctx, VAMFContextID mf_context, VAContextID context);
VAStatus sw_MFSubmit(VADriverContextP ctx, VAMFContextID mf_context, VAContextID *contexts, int num_contexts);
VAStatus sw_QueryProcessingRate(VADriverContextP ctx, VAConfigID config_id, VAProcessingRateParameter *proc_buf,
                                unsigned int *processing_rate);
VAStatus sw_Copy(VADriverContextP ctx, VACopyObject *dst, VACopyObject *src, VACopyOption option);

#endif
