/* swiftvt_sw: a software libva driver for SwiftVT's tests (swiftvt_sw_drv_video.so).
 *
 * It implements the libva 2.17 driver ABI (va_backend.h) so that a VA client, SwiftVT's or
 * FFmpeg's, runs end to end without a GPU: H.264 VLD decoding (Constrained Baseline, Main, High;
 * progressive frames; 8-bit 4:2:0) into NV12 surfaces in system memory, and H.264 EncSlice
 * encoding of NV12 surfaces (lossless: every macroblock I_PCM, CAVLC; encode.c). Each picture is decoded by
 * rebuilding an SPS and a PPS from the client's VA parameters and handing them, with the slice NAL
 * units the client sent, to libavcodec (avdecode.c). Before decoding, every parameter the client
 * sent is compared with the driver's own parse of the slice headers and its own reference model
 * (h264_refs.c); a mismatch fails the picture loudly.
 *
 * Use: LIBVA_DRIVER_NAME=swiftvt_sw LIBVA_DRIVERS_PATH=<directory of the .so>, with any VA display
 * (scripts/with-software-va.sh gives an X11 display on Xvfb).
 *
 * Environment:
 *   SWIFTVT_VA_LOG=1               log calls and per-picture summaries to stderr, and the
 *                                  live-object count at vaTerminate
 *   SWIFTVT_VA_REPORT=<file>       append to <file>: every VALIDATION / REFUSED / SELFCHECK line and,
 *                                  at vaTerminate, "live-objects configs=N contexts=N surfaces=N
 *                                  buffers=N images=N" (objects the client did not destroy) and
 *                                  "image-reads derived=N copied=N" (vaDeriveImage and vaGetImage calls)
 *   SWIFTVT_VA_PARAMLOG=<file>     append one normalised line per picture and per slice with the
 *                                  parameters two correct clients must agree on (surfaces shown as
 *                                  POCs), for comparing clients
 *   SWIFTVT_VA_SELFCHECK=1         verify that each picture taken from libavcodec was complete
 *                                  (compared with libavcodec's later output of it)
 *   SWIFTVT_VA_NO_DERIVE=1         vaDeriveImage fails (VA_STATUS_ERROR_OPERATION_FAILED), so that
 *                                  clients take their vaCreateImage + vaGetImage path
 * Fault injection:
 *   SWIFTVT_VA_FAIL=create-config|create-context|create-surfaces (comma-separated list)
 *                                  vaCreateConfig / vaCreateContext fail with
 *                                  VA_STATUS_ERROR_OPERATION_FAILED, vaCreateSurfaces with
 *                                  VA_STATUS_ERROR_ALLOCATION_FAILED
 *   SWIFTVT_VA_FAIL_RENDER=N       the Nth slice data buffer given to vaRenderPicture (counting from 1)
 *                                  fails with VA_STATUS_ERROR_INVALID_BUFFER, in the middle of a picture
 *   SWIFTVT_VA_FAIL_END_PICTURE=N[:operation-failed]  the Nth vaEndPicture of the process
 *                                  (counting from 1) fails with VA_STATUS_ERROR_DECODING_ERROR (a
 *                                  damaged picture: the device goes on), or with
 *                                  VA_STATUS_ERROR_OPERATION_FAILED (the device failed); its surface
 *                                  is filled with a conspicuous pattern (the decoder state stays
 *                                  consistent); when encoding, VA_STATUS_ERROR_ENCODING_ERROR and an
 *                                  empty coded buffer
 *   SWIFTVT_VA_BUSY=1              driver initialisation (inside vaInitialize) fails with
 *                                  VA_STATUS_ERROR_HW_BUSY
 *   SWIFTVT_VA_FAIL_CODED=overflow:N|bad-bitstream:N
 *                                  the Nth encoded picture's coded buffer segment gets
 *                                  VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK / _BAD_BITSTREAM
 * Encoding capabilities:
 *   SWIFTVT_VA_ENCODE_RC=cqp,cbr,vbr                 the rate control modes offered (default all)
 *   SWIFTVT_VA_ENCODE_PACKED=sequence,picture,slice|none  the packed headers offered (default all)
 *   SWIFTVT_VA_ENCODE_MIN_SIZE=N    the smallest surface an encoding config takes, as its
 *                                  VASurfaceAttribMinWidth/MinHeight (default 1; iHD says 32)
 * Driver personalities (personality.h; README.md "Driver personalities"):
 *   SWIFTVT_VA_PERSONALITY=ihd|mesa|nvdec   behave like iHD, Mesa (radeonsi) or nvidia-vaapi-driver
 *   SWIFTVT_VA_LATENCY_MS=N        pictures complete on a worker thread N ms after vaEndPicture
 *   SWIFTVT_VA_SYNC_ERROR=decoding-error:N|hw-busy:N  the Nth decoded picture's vaSyncSurface status
 *   SWIFTVT_VA_DERIVE_NS_PER_BYTE=N   what mapping a derived image costs
 *   SWIFTVT_VA_CONTEXT_REFUSES_RC=cqp,cbr,vbr  offered, but vaCreateContext refuses them
 *   SWIFTVT_VA_NO_H264=x11:<name>|drm:<path>|any  the display(s) whose driver offers no profile
 * Self-test of the validation layer (a simulated client bug; decoding itself is unaffected):
 *   SWIFTVT_VA_TAMPER=bit-offset|ref-list|poc|ref-frames|weights|qp-delta (comma-separated list)
 *                                  alters the client's parameters before they are checked:
 *                                  slice_data_bit_offset + 1; RefPicList0[0] and [1] swapped (or [0]
 *                                  dropped); CurrPic POC + 2 (not on IDR); one ReferenceFrames entry
 *                                  dropped; luma_weight_l0[0] + 1 (explicit weighting); slice_qp_delta + 1
 *   SWIFTVT_VA_TAMPER=encode-frame-num|encode-ref-list  the same for encoding: frame_num + 1 in the
 *                                  picture parameters; RefPicList0[0] names the picture's own
 *                                  reconstruction
 */
#define _GNU_SOURCE
#include <va/va.h>
#include <va/va_backend.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <va/va_drmcommon.h>
#include <va/va_str.h>

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
#define ENCODE_PACKED_HEADERS (VA_ENC_PACKED_HEADER_SEQUENCE | VA_ENC_PACKED_HEADER_PICTURE | VA_ENC_PACKED_HEADER_SLICE)
/* VAConfigAttribEncMaxRefFrames: 4 references in list 0, 1 in list 1 (bits 16..31). */
#define ENCODE_MAX_REF_FRAMES (4u | (1u << 16))
#define ENCODE_QUALITY_LEVELS 7

static const VAProfile supported_profiles[NUM_PROFILES] = {
    VAProfileH264ConstrainedBaseline, VAProfileH264Main, VAProfileH264High,
};

/* ---------- handle tables ---------- */

/* Each object type has its own ID range, so that an ID of the wrong type is refused, not
 * silently taken for another object. */
struct table {
    void **slots;
    uint32_t capacity;
    uint32_t base;
    uint32_t live;
};

static uint32_t table_add(struct table *t, void *object)
{
    for (uint32_t i = 0; i < t->capacity; i++) {
        if (!t->slots[i]) {
            t->slots[i] = object;
            t->live++;
            return t->base + i;
        }
    }
    uint32_t capacity = t->capacity ? t->capacity * 2 : 64;
    void **slots = realloc(t->slots, capacity * sizeof(void *));
    if (!slots)
        return VA_INVALID_ID;
    memset(slots + t->capacity, 0, (capacity - t->capacity) * sizeof(void *));
    t->slots = slots;
    uint32_t index = t->capacity;
    t->capacity = capacity;
    t->slots[index] = object;
    t->live++;
    return t->base + index;
}

static void *table_get(const struct table *t, uint32_t id)
{
    if (id < t->base || id - t->base >= t->capacity)
        return NULL;
    return t->slots[id - t->base];
}

static void table_remove(struct table *t, uint32_t id)
{
    if (table_get(t, id)) {
        t->slots[id - t->base] = NULL;
        t->live--;
    }
}

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

/* vaEndPicture calls in this process, for SWIFTVT_VA_FAIL_END_PICTURE; encoded pictures, for
 * SWIFTVT_VA_FAIL_CODED. */
static atomic_long end_picture_calls;
static atomic_long encoded_pictures;

#define DRIVER(ctx) ((struct sw_driver *)(ctx)->pDriverData)

/* Asynchronous completion (below, "asynchronous completion"): waiting for a surface's pictures
 * and for a coded buffer's, with the driver lock held. */
static int wait_surface(struct sw_driver *drv, struct sw_surface *surface, uint64_t timeout_ns);
static void wait_coded_buffer(struct sw_driver *drv, VABufferID id, struct sw_buffer *buffer);

/* Removes object `id` from `t` under the driver lock and returns it for the caller to free
 * (NULL when there is no such object): the first half of every vaDestroy* call. */
static void *table_take(struct sw_driver *drv, struct table *t, uint32_t id)
{
    pthread_mutex_lock(&drv->lock);
    void *object = table_get(t, id);
    if (object)
        table_remove(t, id);
    pthread_mutex_unlock(&drv->lock);
    return object;
}

/* ---------- logging and the report file ---------- */

static void drv_log(const struct sw_driver *drv, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void drv_log(const struct sw_driver *drv, const char *fmt, ...)
{
    if (!drv->log)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "swiftvt_sw: %s\n", line);
}

/* A line for stderr and for the report file: one write() per line, in append mode, so that lines
 * from several displays or processes do not interleave. */
static void drv_report(const struct sw_driver *drv, int to_stderr, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void drv_report(const struct sw_driver *drv, int to_stderr, const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    line[n] = 0;
    if (to_stderr)
        fputs(line, stderr);
    if (drv->report_path) {
        int fd = open(drv->report_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0) {
            ssize_t ignored = write(fd, line, (size_t)n);
            (void)ignored;
            close(fd);
        }
    }
}

static void drv_complain(void *opaque, const char *field, const char *client, const char *driver)
{
    drv_report(opaque, 1, "swiftvt_sw VALIDATION: %s: client %s, driver %s", field, client, driver);
}

/* How encode.c reports: the same report file, log and parameter log. */
static void encode_report(void *opaque, int to_stderr, const char *line)
{
    drv_report(opaque, to_stderr, "%s", line);
}

static void encode_log(void *opaque, const char *line)
{
    drv_log(opaque, "%s", line);
}

static struct enc_hooks encode_hooks(struct sw_driver *drv)
{
    return (struct enc_hooks){ .report = encode_report, .log = encode_log, .opaque = drv, .paramlog = drv->paramlog };
}

/* ---------- configs ---------- */

static int profile_supported(const struct sw_driver *drv, VAProfile profile)
{
    if (drv->no_h264)
        return 0;
    for (int i = 0; i < NUM_PROFILES; i++)
        if (supported_profiles[i] == profile)
            return 1;
    return 0;
}

static VAStatus sw_QueryConfigProfiles(VADriverContextP ctx, VAProfile *profile_list, int *num_profiles)
{
    struct sw_driver *drv = DRIVER(ctx);
    *num_profiles = 0;
    if (drv->no_h264)
        return VA_STATUS_SUCCESS; /* SWIFTVT_VA_NO_H264: a device without H.264 */
    for (int i = 0; i < NUM_PROFILES; i++)
        profile_list[i] = supported_profiles[i];
    *num_profiles = NUM_PROFILES;
    return VA_STATUS_SUCCESS;
}

/* The encoding entrypoints: EncSlice, and EncSliceLP for a personality that offers it. */
static int is_encoding(const struct sw_driver *drv, VAEntrypoint entrypoint)
{
    if (drv->personality.decode_only)
        return 0;
    return entrypoint == VAEntrypointEncSlice || (drv->personality.enc_slice_lp && entrypoint == VAEntrypointEncSliceLP);
}

/* The rate control modes an encoding entrypoint offers: iHD's EncSliceLP (VDEnc) is often CQP only. */
static uint32_t offered_rate_controls(const struct sw_driver *drv, VAEntrypoint entrypoint)
{
    if (entrypoint == VAEntrypointEncSliceLP)
        return drv->encode_rate_controls & VA_RC_CQP ? VA_RC_CQP : drv->encode_rate_controls;
    return drv->encode_rate_controls;
}

static VAStatus sw_QueryConfigEntrypoints(VADriverContextP ctx, VAProfile profile, VAEntrypoint *entrypoint_list,
                                          int *num_entrypoints)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (!profile_supported(drv, profile))
        return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    int n = 0;
    entrypoint_list[n++] = VAEntrypointVLD;
    if (!drv->personality.decode_only)
        entrypoint_list[n++] = VAEntrypointEncSlice;
    if (drv->personality.enc_slice_lp)
        entrypoint_list[n++] = VAEntrypointEncSliceLP;
    *num_entrypoints = n;
    return VA_STATUS_SUCCESS;
}

static void fill_attribute(VAConfigAttrib *attrib)
{
    switch (attrib->type) {
    case VAConfigAttribRTFormat:
        attrib->value = VA_RT_FORMAT_YUV420;
        break;
    case VAConfigAttribDecSliceMode:
        attrib->value = VA_DEC_SLICE_MODE_NORMAL;
        break;
    case VAConfigAttribMaxPictureWidth:
    case VAConfigAttribMaxPictureHeight:
        attrib->value = MAX_SIZE;
        break;
    default:
        attrib->value = VA_ATTRIB_NOT_SUPPORTED;
        break;
    }
}

/* What an encoding config offers; a config's own choices replace RateControl and EncPackedHeaders
 * (config NULL: what vaGetConfigAttributes offers). */
static void fill_encode_attribute(const struct sw_driver *drv, VAEntrypoint entrypoint, const struct sw_config *config,
                                  VAConfigAttrib *attrib)
{
    switch (attrib->type) {
    case VAConfigAttribRTFormat:
        attrib->value = VA_RT_FORMAT_YUV420;
        break;
    case VAConfigAttribRateControl:
        attrib->value = config ? config->rate_control : offered_rate_controls(drv, entrypoint);
        break;
    case VAConfigAttribEncPackedHeaders:
        attrib->value = config ? config->packed_headers : drv->encode_packed_headers;
        break;
    case VAConfigAttribEncMaxRefFrames:
        attrib->value = ENCODE_MAX_REF_FRAMES;
        break;
    case VAConfigAttribEncMaxSlices:
        attrib->value = 1;
        break;
    case VAConfigAttribEncQualityRange:
        attrib->value = drv->personality.encode_quality_range ? (uint32_t)drv->personality.encode_quality_range
                                                              : ENCODE_QUALITY_LEVELS;
        break;
    case VAConfigAttribMaxPictureWidth:
    case VAConfigAttribMaxPictureHeight:
        attrib->value = MAX_SIZE;
        break;
    default:
        attrib->value = VA_ATTRIB_NOT_SUPPORTED;
        break;
    }
}

static VAStatus sw_GetConfigAttributes(VADriverContextP ctx, VAProfile profile, VAEntrypoint entrypoint,
                                       VAConfigAttrib *attrib_list, int num_attribs)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (!profile_supported(drv, profile))
        return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    if (entrypoint != VAEntrypointVLD && !is_encoding(drv, entrypoint))
        return VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT;
    for (int i = 0; i < num_attribs; i++) {
        if (is_encoding(drv, entrypoint))
            fill_encode_attribute(drv, entrypoint, NULL, &attrib_list[i]);
        else
            fill_attribute(&attrib_list[i]);
    }
    return VA_STATUS_SUCCESS;
}

/* An encoding config's attributes: RTFormat must include YUV420, RateControl be exactly one of
 * the offered modes, EncPackedHeaders a subset of the offered ones (default: CQP if offered,
 * else the first mode offered; no packed headers). The read-only ones may be passed with the
 * value offered; anything else is not settable. */
static VAStatus encode_config_attributes(const struct sw_driver *drv, const VAConfigAttrib *attrib_list,
                                         int num_attribs, struct sw_config *config)
{
    uint32_t offered = offered_rate_controls(drv, config->entrypoint);
    config->rate_control = (offered & VA_RC_CQP) ? VA_RC_CQP : (offered & VA_RC_CBR) ? VA_RC_CBR : VA_RC_VBR;
    config->packed_headers = VA_ENC_PACKED_HEADER_NONE;
    for (int i = 0; i < num_attribs; i++) {
        const VAConfigAttrib *a = &attrib_list[i];
        VAConfigAttrib expected = { .type = a->type };
        switch (a->type) {
        case VAConfigAttribRTFormat:
            if (!(a->value & VA_RT_FORMAT_YUV420))
                return VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT;
            break;
        case VAConfigAttribRateControl:
            /* One mode: a single bit among the offered ones. */
            if (a->value == 0 || (a->value & (a->value - 1)) || !(a->value & offered)) {
                fprintf(stderr, "swiftvt_sw: vaCreateConfig: RateControl %#x is not one of the offered modes %#x\n",
                        a->value, offered);
                return VA_STATUS_ERROR_INVALID_VALUE;
            }
            config->rate_control = a->value;
            break;
        case VAConfigAttribEncPackedHeaders:
            if (a->value & ~drv->encode_packed_headers) {
                fprintf(stderr, "swiftvt_sw: vaCreateConfig: EncPackedHeaders %#x is not a subset of %#x\n", a->value,
                        drv->encode_packed_headers);
                return VA_STATUS_ERROR_INVALID_VALUE;
            }
            config->packed_headers = a->value;
            break;
        case VAConfigAttribEncMaxRefFrames:
        case VAConfigAttribEncMaxSlices:
        case VAConfigAttribEncQualityRange:
        case VAConfigAttribMaxPictureWidth:
        case VAConfigAttribMaxPictureHeight:
            fill_encode_attribute(drv, config->entrypoint, NULL, &expected);
            if (a->value != expected.value)
                return VA_STATUS_ERROR_INVALID_VALUE;
            break;
        default:
            fprintf(stderr, "swiftvt_sw: vaCreateConfig: attribute %s (%d) is not supported for encoding\n",
                    vaConfigAttribTypeStr(a->type), a->type);
            return VA_STATUS_ERROR_ATTR_NOT_SUPPORTED;
        }
    }
    return VA_STATUS_SUCCESS;
}

static VAStatus sw_CreateConfig(VADriverContextP ctx, VAProfile profile, VAEntrypoint entrypoint,
                                VAConfigAttrib *attrib_list, int num_attribs, VAConfigID *config_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    if (drv->faults & FAIL_CREATE_CONFIG) {
        drv_log(drv, "vaCreateConfig: injected failure (SWIFTVT_VA_FAIL=create-config)");
        return VA_STATUS_ERROR_OPERATION_FAILED;
    }
    if (!profile_supported(drv, profile))
        return VA_STATUS_ERROR_UNSUPPORTED_PROFILE;
    if (entrypoint != VAEntrypointVLD && !is_encoding(drv, entrypoint))
        return VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT;
    struct sw_config chosen = { .profile = profile, .entrypoint = entrypoint };
    if (is_encoding(drv, entrypoint)) {
        VAStatus status = encode_config_attributes(drv, attrib_list, num_attribs, &chosen);
        if (status != VA_STATUS_SUCCESS)
            return status;
    } else {
        for (int i = 0; i < num_attribs; i++) {
            if (attrib_list[i].type == VAConfigAttribRTFormat && !(attrib_list[i].value & VA_RT_FORMAT_YUV420))
                return VA_STATUS_ERROR_UNSUPPORTED_RT_FORMAT;
            if (attrib_list[i].type == VAConfigAttribDecSliceMode && attrib_list[i].value != VA_DEC_SLICE_MODE_NORMAL)
                return VA_STATUS_ERROR_INVALID_VALUE;
        }
    }
    struct sw_config *config = calloc(1, sizeof(*config));
    if (!config)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    *config = chosen;
    pthread_mutex_lock(&drv->lock);
    *config_id = table_add(&drv->configs, config);
    if (*config_id != VA_INVALID_ID && is_encoding(drv, entrypoint) && drv->paramlog) {
        fprintf(drv->paramlog, "encconfig profile=%s rc=%s packed=%#x\n", h264_encoder_profile_name(profile),
                h264_encoder_rc_name(config->rate_control), config->packed_headers);
        fflush(drv->paramlog);
    }
    pthread_mutex_unlock(&drv->lock);
    if (*config_id == VA_INVALID_ID) {
        free(config);
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    }
    if (is_encoding(drv, entrypoint))
        drv_log(drv, "vaCreateConfig: profile %d, %s, rate control %s, packed headers %#x -> config %#x", profile,
                vaEntrypointStr(entrypoint) + 12,
                h264_encoder_rc_name(config->rate_control), config->packed_headers, *config_id);
    else
        drv_log(drv, "vaCreateConfig: profile %d -> config %#x", profile, *config_id);
    return VA_STATUS_SUCCESS;
}

static VAStatus sw_DestroyConfig(VADriverContextP ctx, VAConfigID config_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    struct sw_config *config = table_take(drv, &drv->configs, config_id);
    if (!config)
        return VA_STATUS_ERROR_INVALID_CONFIG;
    free(config);
    return VA_STATUS_SUCCESS;
}

static VAStatus sw_QueryConfigAttributes(VADriverContextP ctx, VAConfigID config_id, VAProfile *profile,
                                         VAEntrypoint *entrypoint, VAConfigAttrib *attrib_list, int *num_attribs)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    struct sw_config *config = table_get(&drv->configs, config_id);
    VAStatus status = VA_STATUS_ERROR_INVALID_CONFIG;
    if (config) {
        *profile = config->profile;
        *entrypoint = config->entrypoint;
        if (is_encoding(drv, config->entrypoint)) {
            static const VAConfigAttribType types[NUM_ENCODE_CONFIG_ATTRIBUTES] = {
                VAConfigAttribRTFormat, VAConfigAttribRateControl, VAConfigAttribEncPackedHeaders,
                VAConfigAttribEncMaxRefFrames, VAConfigAttribEncMaxSlices, VAConfigAttribEncQualityRange,
                VAConfigAttribMaxPictureWidth, VAConfigAttribMaxPictureHeight,
            };
            for (int i = 0; i < NUM_ENCODE_CONFIG_ATTRIBUTES; i++) {
                attrib_list[i].type = types[i];
                fill_encode_attribute(drv, config->entrypoint, config, &attrib_list[i]);
            }
            *num_attribs = NUM_ENCODE_CONFIG_ATTRIBUTES;
        } else {
            static const VAConfigAttribType types[NUM_CONFIG_ATTRIBUTES] = {
                VAConfigAttribRTFormat, VAConfigAttribDecSliceMode, VAConfigAttribMaxPictureWidth,
                VAConfigAttribMaxPictureHeight,
            };
            for (int i = 0; i < NUM_CONFIG_ATTRIBUTES; i++) {
                attrib_list[i].type = types[i];
                fill_attribute(&attrib_list[i]);
            }
            *num_attribs = NUM_CONFIG_ATTRIBUTES;
        }
        status = VA_STATUS_SUCCESS;
    }
    pthread_mutex_unlock(&drv->lock);
    return status;
}

/* ---------- surfaces ---------- */

static void surface_release(struct sw_surface *surface)
{
    if (--surface->references == 0) {
        free(surface->data);
        free(surface);
    }
}

static uint32_t align_up(uint32_t value, uint32_t alignment)
{
    return (value + alignment - 1) / alignment * alignment;
}

static VAStatus sw_CreateSurfaces2(VADriverContextP ctx, unsigned int format, unsigned int width, unsigned int height,
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

static VAStatus sw_CreateSurfaces(VADriverContextP ctx, int width, int height, int format, int num_surfaces,
                                  VASurfaceID *surfaces)
{
    if (width < 0 || height < 0 || num_surfaces < 0)
        return VA_STATUS_ERROR_INVALID_PARAMETER;
    return sw_CreateSurfaces2(ctx, (unsigned)format, (unsigned)width, (unsigned)height, surfaces,
                              (unsigned)num_surfaces, NULL, 0);
}

static VAStatus sw_DestroySurfaces(VADriverContextP ctx, VASurfaceID *surface_list, int num_surfaces)
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

static VAStatus sw_QuerySurfaceAttributes(VADriverContextP ctx, VAConfigID config_id, VASurfaceAttrib *attrib_list,
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
static VAStatus sw_GetSurfaceAttributes(VADriverContextP ctx, VAConfigID config_id, VASurfaceAttrib *attrib_list,
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

static VAStatus sw_SyncSurface(VADriverContextP ctx, VASurfaceID render_target)
{
    return sync_surface(ctx, render_target, 0);
}

static VAStatus sw_SyncSurface2(VADriverContextP ctx, VASurfaceID surface, uint64_t timeout_ns)
{
    /* VA_TIMEOUT_INFINITE is UINT64_MAX: as good as no limit. */
    return sync_surface(ctx, surface, timeout_ns == VA_TIMEOUT_INFINITE ? 0 : timeout_ns);
}

static VAStatus sw_QuerySurfaceStatus(VADriverContextP ctx, VASurfaceID render_target, VASurfaceStatus *status)
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

static VAStatus sw_QuerySurfaceError(VADriverContextP ctx, VASurfaceID render_target, VAStatus error_status,
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

static VAStatus sw_LockSurface(VADriverContextP ctx, VASurfaceID surface_id, unsigned int *fourcc,
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

static VAStatus sw_UnlockSurface(VADriverContextP ctx, VASurfaceID surface_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    pthread_mutex_lock(&drv->lock);
    int valid = table_get(&drv->surfaces, surface_id) != NULL;
    pthread_mutex_unlock(&drv->lock);
    return valid ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_INVALID_SURFACE;
}

static VAStatus sw_PutSurface(VADriverContextP ctx, VASurfaceID surface, void *draw, short srcx, short srcy,
                              unsigned short srcw, unsigned short srch, short destx, short desty,
                              unsigned short destw, unsigned short desth, VARectangle *cliprects,
                              unsigned int number_cliprects, unsigned int flags)
{
    (void)ctx, (void)surface, (void)draw, (void)srcx, (void)srcy, (void)srcw, (void)srch, (void)destx;
    (void)desty, (void)destw, (void)desth, (void)cliprects, (void)number_cliprects, (void)flags;
    return VA_STATUS_ERROR_UNIMPLEMENTED; /* no presentation: tests read surfaces back */
}

static VAStatus sw_ExportSurfaceHandle(VADriverContextP ctx, VASurfaceID surface_id, uint32_t mem_type,
                                       uint32_t flags, void *descriptor)
{
    (void)ctx, (void)surface_id, (void)mem_type, (void)flags, (void)descriptor;
    return VA_STATUS_ERROR_UNIMPLEMENTED; /* system memory: there is no DMABuf to export */
}

/* ---------- buffers ---------- */

static void buffer_free(struct sw_buffer *buffer)
{
    if (buffer->surface)
        surface_release(buffer->surface);
    else
        free(buffer->data);
    free(buffer);
}

static VAStatus sw_CreateBuffer(VADriverContextP ctx, VAContextID context, VABufferType type, unsigned int size,
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

static VAStatus sw_CreateBuffer2(VADriverContextP ctx, VAContextID context, VABufferType type, unsigned int width,
                                 unsigned int height, unsigned int *unit_size, unsigned int *pitch,
                                 VABufferID *buf_id)
{
    (void)ctx, (void)context, (void)type, (void)width, (void)height, (void)unit_size, (void)pitch, (void)buf_id;
    return VA_STATUS_ERROR_UNIMPLEMENTED; /* 2D buffers (encoders' statistics, FEI): none here */
}

static VAStatus sw_BufferSetNumElements(VADriverContextP ctx, VABufferID buf_id, unsigned int num_elements)
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

static VAStatus sw_MapBuffer(VADriverContextP ctx, VABufferID buf_id, void **pbuf)
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

static VAStatus sw_UnmapBuffer(VADriverContextP ctx, VABufferID buf_id)
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

static VAStatus sw_DestroyBuffer(VADriverContextP ctx, VABufferID buffer_id)
{
    struct sw_driver *drv = DRIVER(ctx);
    struct sw_buffer *buffer = table_take(drv, &drv->buffers, buffer_id);
    if (!buffer)
        return VA_STATUS_ERROR_INVALID_BUFFER;
    buffer_free(buffer);
    return VA_STATUS_SUCCESS;
}

static VAStatus sw_BufferInfo(VADriverContextP ctx, VABufferID buf_id, VABufferType *type, unsigned int *size,
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

static VAStatus sw_AcquireBufferHandle(VADriverContextP ctx, VABufferID buf_id, VABufferInfo *buf_info)
{
    (void)ctx, (void)buf_id, (void)buf_info;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

static VAStatus sw_ReleaseBufferHandle(VADriverContextP ctx, VABufferID buf_id)
{
    (void)ctx, (void)buf_id;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

static VAStatus sw_SyncBuffer(VADriverContextP ctx, VABufferID buf_id, uint64_t timeout_ns)
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

/* ---------- contexts ---------- */

static void context_clear_picture(struct sw_context *context)
{
    for (int i = 0; i < context->num_slices; i++)
        free(context->slices[i].nal);
    context->num_slices = 0;
    context->num_pending = 0;
    context->have_pp = 0;
    context->have_iq = 0;
}

static void context_free(struct sw_context *context)
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

static VAStatus sw_CreateContext(VADriverContextP ctx, VAConfigID config_id, int picture_width, int picture_height,
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

static VAStatus sw_DestroyContext(VADriverContextP ctx, VAContextID context_id)
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

static VAStatus sw_BeginPicture(VADriverContextP ctx, VAContextID context_id, VASurfaceID render_target)
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

static VAStatus sw_RenderPicture(VADriverContextP ctx, VAContextID context_id, VABufferID *buffers, int num_buffers)
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

/* ---------- asynchronous completion (a personality's SWIFTVT_VA_LATENCY_MS) ---------- */

/* Hardware decodes and encodes after vaEndPicture returns: the render target holds its new
 * picture, and the coded buffer its bitstream, only once the picture is complete. Here the work
 * is done in vaEndPicture, into a copy, and the worker thread publishes the copy after the
 * latency; vaSyncSurface and vaSyncBuffer wait for that. */

static uint64_t fnv1a(const uint8_t *data, size_t size)
{
    uint64_t hash = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        hash = (hash ^ data[i]) * 1099511628211ull;
    return hash;
}

static size_t surface_bytes(const struct sw_surface *surface)
{
    return (size_t)surface->pitch * surface->alloc_height * 3 / 2;
}

static void complete_job(struct sw_driver *drv, struct job *job)
{
    struct sw_surface *surface = job->surface;
    if (job->pixels)
        memcpy(surface->data, job->pixels, surface_bytes(surface));
    surface->sync_status = job->sync_status;
    surface->pending--;
    if (job->coded) {
        /* The hardware reads the source while it encodes: a client that changed it before the
         * picture completed gets a picture made of the changed samples. */
        if (fnv1a(surface->data, surface_bytes(surface)) != job->source_hash)
            drv_report(drv, 1, "swiftvt_sw VALIDATION: encode picture %ld: the source surface changed between vaEndPicture "
                               "and the picture's completion (the hardware reads it until then; wait with vaSyncSurface "
                               "before reusing it)", job->picture);
        struct sw_buffer *buffer = table_get(&drv->buffers, job->coded_id);
        if (buffer && buffer == job->coded_buffer) {
            const VACodedBufferSegment *done = (const VACodedBufferSegment *)job->coded;
            VACodedBufferSegment *segment = (VACodedBufferSegment *)buffer->data;
            memcpy(buffer->data + sizeof(VACodedBufferSegment), job->coded + sizeof(VACodedBufferSegment), done->size);
            *segment = *done;
            segment->buf = buffer->data + sizeof(VACodedBufferSegment);
            buffer->pending--;
        }
    }
    surface_release(surface);
    free(job->pixels);
    free(job->coded);
    free(job);
}

static int time_reached(const struct timespec *due)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return now.tv_sec > due->tv_sec || (now.tv_sec == due->tv_sec && now.tv_nsec >= due->tv_nsec);
}

static void *completion_worker(void *opaque)
{
    struct sw_driver *drv = opaque;
    pthread_mutex_lock(&drv->lock);
    for (;;) {
        struct job *job = drv->jobs;
        if (!job) {
            if (drv->stopping)
                break;
            pthread_cond_wait(&drv->work_cond, &drv->lock);
            continue;
        }
        /* Jobs are queued in submission order with one latency, so the first is due first. */
        if (!drv->stopping && !time_reached(&job->due)) {
            pthread_cond_timedwait(&drv->work_cond, &drv->lock, &job->due);
            continue;
        }
        drv->jobs = job->next;
        if (!drv->jobs)
            drv->jobs_tail = NULL;
        complete_job(drv, job);
        pthread_cond_broadcast(&drv->done_cond);
    }
    pthread_mutex_unlock(&drv->lock);
    return NULL;
}

/* Queues a job (driver lock held); it holds a reference on its surface. */
static void queue_job(struct sw_driver *drv, struct job *job)
{
    clock_gettime(CLOCK_MONOTONIC, &job->due);
    job->due.tv_nsec += drv->latency_ms * 1000000L;
    job->due.tv_sec += job->due.tv_nsec / 1000000000L;
    job->due.tv_nsec %= 1000000000L;
    job->surface->references++;
    job->surface->pending++;
    job->next = NULL;
    if (drv->jobs_tail)
        drv->jobs_tail->next = job;
    else
        drv->jobs = job;
    drv->jobs_tail = job;
    pthread_cond_signal(&drv->work_cond);
}

/* Waits (driver lock held) until the surface's pictures are complete; 0, or -1 when timeout_ns
 * (0: none) passed first. */
static int wait_surface(struct sw_driver *drv, struct sw_surface *surface, uint64_t timeout_ns)
{
    if (!surface->pending)
        return 0;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(timeout_ns / 1000000000u);
    until.tv_nsec += (long)(timeout_ns % 1000000000u);
    until.tv_sec += until.tv_nsec / 1000000000L;
    until.tv_nsec %= 1000000000L;
    surface->references++; /* the client may destroy it meanwhile */
    while (surface->pending) {
        if (timeout_ns) {
            if (pthread_cond_timedwait(&drv->done_cond, &drv->lock, &until) == ETIMEDOUT && surface->pending) {
                surface_release(surface);
                return -1;
            }
        } else {
            pthread_cond_wait(&drv->done_cond, &drv->lock);
        }
    }
    surface_release(surface);
    return 0;
}

/* Waits (driver lock held) until the coded buffer's pictures are complete or it is destroyed. */
static void wait_coded_buffer(struct sw_driver *drv, VABufferID id, struct sw_buffer *buffer)
{
    while (table_get(&drv->buffers, id) == buffer && buffer->pending)
        pthread_cond_wait(&drv->done_cond, &drv->lock);
}

static void stop_worker(struct sw_driver *drv)
{
    if (!drv->worker_started)
        return;
    pthread_mutex_lock(&drv->lock);
    drv->stopping = 1;
    pthread_cond_signal(&drv->work_cond);
    pthread_mutex_unlock(&drv->lock);
    pthread_join(drv->worker, NULL);
    drv->worker_started = 0;
}

/* ---------- encoding (encode.c) ---------- */

static struct enc_surface encode_surface(const struct sw_surface *surface)
{
    return (struct enc_surface){ .data = surface->data, .pitch = surface->pitch, .alloc_height = surface->alloc_height };
}

/* vaEndPicture of an encoding context (driver lock held): the source is the render target, the
 * reconstruction and the coded buffer are named by the picture parameters. */
static VAStatus encode_picture(struct sw_driver *drv, struct sw_context *context, struct sw_surface *source, long call,
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

/* ---------- decoding ---------- */

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

static void fill_failed(struct sw_surface *surface)
{
    /* Saturated green in YUV (Y 0, Cb 0, Cr 0): impossible to mistake for a decoded picture. */
    memset(surface->data, 0, (size_t)surface->pitch * surface->alloc_height * 3 / 2);
}

static int append_nal(uint8_t **au, size_t *size, size_t *capacity, const uint8_t *nal, size_t nal_size)
{
    if (*size + nal_size + 4 > *capacity) {
        size_t cap = (*size + nal_size + 4) * 2;
        uint8_t *grown = realloc(*au, cap);
        if (!grown)
            return -1;
        *au = grown;
        *capacity = cap;
    }
    static const uint8_t start_code[4] = { 0, 0, 0, 1 };
    memcpy(*au + *size, start_code, 4);
    memcpy(*au + *size + 4, nal, nal_size);
    *size += nal_size + 4;
    return 0;
}

static VAStatus decode_picture(struct sw_driver *drv, struct sw_context *context, struct sw_surface *surface)
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
        if (append_nal(&au, &au_size, &au_capacity, sps, sps_size) < 0) {
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
        if (append_nal(&au, &au_size, &au_capacity, pps, pps_size) < 0) {
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
        int failed = append_nal(&au, &au_size, &au_capacity, nal, nal_size) < 0;
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

static VAStatus sw_EndPicture(VADriverContextP ctx, VAContextID context_id)
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

/* ---------- images ---------- */

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

static VAStatus sw_QueryImageFormats(VADriverContextP ctx, VAImageFormat *format_list, int *num_formats)
{
    (void)ctx;
    format_list[0] = (VAImageFormat){ .fourcc = VA_FOURCC_NV12, .byte_order = VA_LSB_FIRST, .bits_per_pixel = 12 };
    *num_formats = 1;
    return VA_STATUS_SUCCESS;
}

static VAStatus sw_CreateImage(VADriverContextP ctx, VAImageFormat *format, int width, int height, VAImage *out)
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

static VAStatus sw_DeriveImage(VADriverContextP ctx, VASurfaceID surface_id, VAImage *out)
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

static void image_free(struct sw_driver *drv, struct sw_image *image)
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

static VAStatus sw_DestroyImage(VADriverContextP ctx, VAImageID image_id)
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

static VAStatus sw_SetImagePalette(VADriverContextP ctx, VAImageID image, unsigned char *palette)
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

static VAStatus sw_GetImage(VADriverContextP ctx, VASurfaceID surface_id, int x, int y, unsigned int width,
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

static VAStatus sw_PutImage(VADriverContextP ctx, VASurfaceID surface_id, VAImageID image_id, int src_x, int src_y,
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

/* ---------- subpictures and display attributes: none ---------- */

static VAStatus sw_QuerySubpictureFormats(VADriverContextP ctx, VAImageFormat *format_list, unsigned int *flags,
                                          unsigned int *num_formats)
{
    (void)ctx, (void)format_list, (void)flags;
    *num_formats = 0;
    return VA_STATUS_SUCCESS;
}

static VAStatus sw_CreateSubpicture(VADriverContextP ctx, VAImageID image, VASubpictureID *subpicture)
{
    (void)ctx, (void)image, (void)subpicture;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

static VAStatus sw_DestroySubpicture(VADriverContextP ctx, VASubpictureID subpicture)
{
    (void)ctx, (void)subpicture;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

static VAStatus sw_SetSubpictureImage(VADriverContextP ctx, VASubpictureID subpicture, VAImageID image)
{
    (void)ctx, (void)subpicture, (void)image;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

static VAStatus sw_SetSubpictureChromakey(VADriverContextP ctx, VASubpictureID subpicture, unsigned int chromakey_min,
                                          unsigned int chromakey_max, unsigned int chromakey_mask)
{
    (void)ctx, (void)subpicture, (void)chromakey_min, (void)chromakey_max, (void)chromakey_mask;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

static VAStatus sw_SetSubpictureGlobalAlpha(VADriverContextP ctx, VASubpictureID subpicture, float global_alpha)
{
    (void)ctx, (void)subpicture, (void)global_alpha;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

static VAStatus sw_AssociateSubpicture(VADriverContextP ctx, VASubpictureID subpicture, VASurfaceID *target_surfaces,
                                       int num_surfaces, short src_x, short src_y, unsigned short src_width,
                                       unsigned short src_height, short dest_x, short dest_y,
                                       unsigned short dest_width, unsigned short dest_height, unsigned int flags)
{
    (void)ctx, (void)subpicture, (void)target_surfaces, (void)num_surfaces, (void)src_x, (void)src_y;
    (void)src_width, (void)src_height, (void)dest_x, (void)dest_y, (void)dest_width, (void)dest_height, (void)flags;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

static VAStatus sw_DeassociateSubpicture(VADriverContextP ctx, VASubpictureID subpicture,
                                         VASurfaceID *target_surfaces, int num_surfaces)
{
    (void)ctx, (void)subpicture, (void)target_surfaces, (void)num_surfaces;
    return VA_STATUS_ERROR_INVALID_SUBPICTURE;
}

static VAStatus sw_QueryDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int *num_attributes)
{
    (void)ctx, (void)attr_list;
    *num_attributes = 0;
    return VA_STATUS_SUCCESS;
}

static VAStatus sw_GetDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int num_attributes)
{
    (void)ctx, (void)attr_list;
    return num_attributes == 0 ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_ATTR_NOT_SUPPORTED;
}

static VAStatus sw_SetDisplayAttributes(VADriverContextP ctx, VADisplayAttribute *attr_list, int num_attributes)
{
    (void)ctx, (void)attr_list;
    return num_attributes == 0 ? VA_STATUS_SUCCESS : VA_STATUS_ERROR_ATTR_NOT_SUPPORTED;
}

/* ---------- multi-frame encoding, processing rate, copy: not implemented ---------- */

static VAStatus sw_CreateMFContext(VADriverContextP ctx, VAMFContextID *mfe_context)
{
    (void)ctx, (void)mfe_context;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

static VAStatus sw_MFAddContext(VADriverContextP ctx, VAMFContextID mf_context, VAContextID context)
{
    (void)ctx, (void)mf_context, (void)context;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

static VAStatus sw_MFReleaseContext(VADriverContextP ctx, VAMFContextID mf_context, VAContextID context)
{
    (void)ctx, (void)mf_context, (void)context;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

static VAStatus sw_MFSubmit(VADriverContextP ctx, VAMFContextID mf_context, VAContextID *contexts, int num_contexts)
{
    (void)ctx, (void)mf_context, (void)contexts, (void)num_contexts;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

static VAStatus sw_QueryProcessingRate(VADriverContextP ctx, VAConfigID config_id, VAProcessingRateParameter *proc_buf,
                                       unsigned int *processing_rate)
{
    (void)ctx, (void)config_id, (void)proc_buf, (void)processing_rate;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

static VAStatus sw_Copy(VADriverContextP ctx, VACopyObject *dst, VACopyObject *src, VACopyOption option)
{
    (void)ctx, (void)dst, (void)src, (void)option;
    return VA_STATUS_ERROR_UNIMPLEMENTED;
}

/* ---------- initialisation and termination ---------- */

static void free_table(struct sw_driver *drv, struct table *t, int kind)
{
    for (uint32_t i = 0; i < t->capacity; i++) {
        void *object = t->slots[i];
        if (!object)
            continue;
        t->slots[i] = NULL;
        switch (kind) {
        case 0: free(object); break;                          /* config */
        case 1: context_free(object); break;
        case 2: image_free(drv, object); break;               /* removes its buffer too */
        case 3: buffer_free(object); break;
        case 4: surface_release(object); break;
        }
    }
    free(t->slots);
    t->slots = NULL;
    t->capacity = 0;
}

static VAStatus sw_Terminate(VADriverContextP ctx)
{
    struct sw_driver *drv = DRIVER(ctx);
    stop_worker(drv); /* completes what is still pending */
    pthread_mutex_lock(&drv->lock);
    /* What the client did not destroy: tests expect zeros here. */
    char line[256];
    snprintf(line, sizeof(line), "live-objects configs=%u contexts=%u surfaces=%u buffers=%u images=%u",
             drv->configs.live, drv->contexts.live, drv->surfaces.live, drv->buffers.live, drv->images.live);
    drv_log(drv, "vaTerminate: %s", line);
    drv_report(drv, 0, "%s", line);
    /* How the client read surfaces back: which of derive and get-image it settled on. */
    drv_report(drv, 0, "image-reads derived=%ld copied=%ld", drv->derived_images, drv->copied_images);
    for (uint32_t i = 0; i < drv->contexts.capacity; i++) {
        struct sw_context *context = drv->contexts.slots[i];
        if (context && context->dec && drv->selfcheck) {
            long verified, mismatched;
            avdec_finish(context->dec);
            avdec_selfcheck_counts(context->dec, &verified, &mismatched);
            if (mismatched)
                drv_report(drv, 1, "swiftvt_sw SELFCHECK: %ld of %ld pictures changed after vaEndPicture took them",
                           mismatched, verified + mismatched);
        }
    }
    free_table(drv, &drv->contexts, 1);
    free_table(drv, &drv->images, 2);
    free_table(drv, &drv->buffers, 3);
    free_table(drv, &drv->surfaces, 4);
    free_table(drv, &drv->configs, 0);
    pthread_mutex_unlock(&drv->lock);
    if (drv->paramlog)
        fclose(drv->paramlog);
    free(drv->report_path);
    pthread_cond_destroy(&drv->work_cond);
    pthread_cond_destroy(&drv->done_cond);
    pthread_mutex_destroy(&drv->lock);
    free(drv);
    ctx->pDriverData = NULL;
    return VA_STATUS_SUCCESS;
}

static unsigned parse_faults(const char *value)
{
    unsigned faults = 0;
    if (!value)
        return 0;
    char *copy = strdup(value), *save = NULL;
    for (char *item = strtok_r(copy, ", ", &save); item; item = strtok_r(NULL, ", ", &save)) {
        if (!strcmp(item, "create-config"))
            faults |= FAIL_CREATE_CONFIG;
        else if (!strcmp(item, "create-context"))
            faults |= FAIL_CREATE_CONTEXT;
        else if (!strcmp(item, "create-surfaces"))
            faults |= FAIL_CREATE_SURFACES;
        else
            fprintf(stderr, "swiftvt_sw: SWIFTVT_VA_FAIL: unknown value '%s' (create-config, create-context, "
                            "create-surfaces)\n", item);
    }
    free(copy);
    return faults;
}

static unsigned parse_tamper(const char *value)
{
    static const struct { const char *name; unsigned bit; } names[] = {
        { "bit-offset", TAMPER_BIT_OFFSET }, { "ref-list", TAMPER_REF_LIST }, { "poc", TAMPER_POC },
        { "ref-frames", TAMPER_REF_FRAMES }, { "weights", TAMPER_WEIGHTS }, { "qp-delta", TAMPER_QP_DELTA },
        { "encode-frame-num", TAMPER_ENCODE_FRAME_NUM }, { "encode-ref-list", TAMPER_ENCODE_REF_LIST },
    };
    unsigned bits = 0;
    if (!value)
        return 0;
    char *copy = strdup(value), *save = NULL;
    for (char *item = strtok_r(copy, ", ", &save); item; item = strtok_r(NULL, ", ", &save)) {
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (!strcmp(item, names[i].name))
                bit = names[i].bit;
        if (!bit)
            fprintf(stderr, "swiftvt_sw: SWIFTVT_VA_TAMPER: unknown value '%s'\n", item);
        bits |= bit;
    }
    free(copy);
    return bits;
}

struct named_bit {
    const char *name;
    uint32_t bit;
};

static const struct named_bit rate_control_names[] = {
    { "cqp", VA_RC_CQP }, { "cbr", VA_RC_CBR }, { "vbr", VA_RC_VBR }, { NULL, 0 },
};
static const struct named_bit packed_header_names[] = {
    { "sequence", VA_ENC_PACKED_HEADER_SEQUENCE }, { "picture", VA_ENC_PACKED_HEADER_PICTURE },
    { "slice", VA_ENC_PACKED_HEADER_SLICE }, { "none", 0 }, { NULL, 0 },
};

/* A comma-separated list of names restricting what the encoder offers; unset: everything. An
 * empty result falls back to everything, with a message (a config needs a rate control mode). */
static uint32_t parse_encode_list(const char *variable, const char *value, const struct named_bit *names,
                                  uint32_t all)
{
    if (!value || !*value)
        return all;
    uint32_t bits = 0;
    int recognised = 0;
    char *copy = strdup(value), *save = NULL;
    for (char *item = copy ? strtok_r(copy, ", ", &save) : NULL; item; item = strtok_r(NULL, ", ", &save)) {
        int found = 0;
        for (const struct named_bit *n = names; n->name; n++) {
            if (!strcmp(item, n->name)) {
                bits |= n->bit;
                found = 1;
            }
        }
        if (found)
            recognised++;
        else
            fprintf(stderr, "swiftvt_sw: %s: unknown value '%s'\n", variable, item);
    }
    free(copy);
    if (!recognised || (names == rate_control_names && bits == 0)) {
        fprintf(stderr, "swiftvt_sw: %s='%s' names nothing usable; offering everything\n", variable, value);
        return all;
    }
    return bits & all;
}

/* SWIFTVT_VA_FAIL_CODED=overflow:N or bad-bitstream:N. */
static void parse_fail_coded(const char *value, struct sw_driver *drv)
{
    drv->fail_coded = FAIL_CODED_NONE;
    if (!value || !*value)
        return;
    const char *colon = strchr(value, ':');
    long n = colon ? strtol(colon + 1, NULL, 10) : 0;
    size_t length = colon ? (size_t)(colon - value) : strlen(value);
    if (n > 0 && length == 8 && !strncmp(value, "overflow", 8))
        drv->fail_coded = FAIL_CODED_OVERFLOW;
    else if (n > 0 && length == 13 && !strncmp(value, "bad-bitstream", 13))
        drv->fail_coded = FAIL_CODED_BAD_BITSTREAM;
    else
        fprintf(stderr, "swiftvt_sw: SWIFTVT_VA_FAIL_CODED: '%s' is not overflow:N or bad-bitstream:N (N >= 1)\n",
                value);
    drv->fail_coded_picture = n;
}

/* SWIFTVT_VA_SYNC_ERROR=decoding-error:N or hw-busy:N. */
static void parse_sync_error(const char *value, struct sw_driver *drv)
{
    if (!value || !*value)
        return;
    const char *colon = strchr(value, ':');
    long n = colon ? strtol(colon + 1, NULL, 10) : 0;
    size_t length = colon ? (size_t)(colon - value) : strlen(value);
    if (n > 0 && length == 14 && !strncmp(value, "decoding-error", 14))
        drv->sync_error_kind = VA_STATUS_ERROR_DECODING_ERROR;
    else if (n > 0 && length == 7 && !strncmp(value, "hw-busy", 7))
        drv->sync_error_kind = VA_STATUS_ERROR_HW_BUSY;
    else
        fprintf(stderr, "swiftvt_sw: SWIFTVT_VA_SYNC_ERROR: '%s' is not decoding-error:N or hw-busy:N (N >= 1)\n", value);
    drv->sync_error_picture = n;
}

/* Where this driver instance was opened: "x11:<display name>" or "drm:<device path>", for
 * SWIFTVT_VA_NO_H264. The X11 name comes from libX11's XDisplayString, which the client loaded
 * with libva-x11 (looked up at run time: the driver does not link libX11). */
static void display_identity(VADriverContextP ctx, char *out, size_t size)
{
    snprintf(out, size, "unknown");
    unsigned long major = ctx->display_type & VA_DISPLAY_MAJOR_MASK;
    if (major == VA_DISPLAY_X11 && ctx->native_dpy) {
        char *(*display_string)(void *) = (char *(*)(void *))dlsym(RTLD_DEFAULT, "XDisplayString");
        const char *name = display_string ? display_string(ctx->native_dpy) : NULL;
        snprintf(out, size, "x11:%s", name ? name : "?");
    } else if (major == VA_DISPLAY_DRM && ctx->drm_state) {
        char link[64], path[256];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", ((struct drm_state *)ctx->drm_state)->fd);
        ssize_t n = readlink(link, path, sizeof(path) - 1);
        path[n > 0 ? n : 0] = 0;
        snprintf(out, size, "drm:%s", path);
    }
}

/* SWIFTVT_VA_NO_H264=<entry>[,<entry>...]: x11:<name>, drm:<path> or any. */
static int names_display(const char *list, const char *identity)
{
    if (!list || !*list)
        return 0;
    int found = 0;
    char *copy = strdup(list), *save = NULL;
    for (char *item = copy ? strtok_r(copy, ", ", &save) : NULL; item && !found; item = strtok_r(NULL, ", ", &save))
        found = !strcmp(item, "any") || !strcmp(item, identity);
    free(copy);
    return found;
}

static int env_flag(const char *name)
{
    const char *value = getenv(name);
    return value && *value && strcmp(value, "0") != 0;
}

/* The entry point libva looks up: __vaDriverInit_<VA major>_<VA minor> of the headers built
 * against (libva 2.17 tries its own minor version first, then older ones). */
#define INIT_NAME_(major, minor) __vaDriverInit_##major##_##minor
#define INIT_NAME(major, minor) INIT_NAME_(major, minor)
VAStatus INIT_NAME(VA_MAJOR_VERSION, VA_MINOR_VERSION)(VADriverContextP ctx);
__attribute__((visibility("default"))) VAStatus INIT_NAME(VA_MAJOR_VERSION, VA_MINOR_VERSION)(VADriverContextP ctx)
{
    if (env_flag("SWIFTVT_VA_BUSY")) {
        fprintf(stderr, "swiftvt_sw: driver init: injected failure (SWIFTVT_VA_BUSY): device busy\n");
        return VA_STATUS_ERROR_HW_BUSY;
    }
    struct sw_driver *drv = calloc(1, sizeof(*drv));
    if (!drv)
        return VA_STATUS_ERROR_ALLOCATION_FAILED;
    pthread_mutex_init(&drv->lock, NULL);
    pthread_condattr_t condattr;
    pthread_condattr_init(&condattr);
    pthread_condattr_setclock(&condattr, CLOCK_MONOTONIC);
    pthread_cond_init(&drv->work_cond, &condattr);
    pthread_cond_init(&drv->done_cond, &condattr);
    pthread_condattr_destroy(&condattr);
    const char *personality = getenv("SWIFTVT_VA_PERSONALITY");
    if (personality_lookup(personality, &drv->personality) < 0)
        fprintf(stderr, "swiftvt_sw: SWIFTVT_VA_PERSONALITY: unknown value '%s' (ihd, mesa, nvdec); none\n", personality);
    const char *latency = getenv("SWIFTVT_VA_LATENCY_MS");
    drv->latency_ms = latency && *latency ? strtol(latency, NULL, 10) : drv->personality.latency_ms;
    const char *derive_cost = getenv("SWIFTVT_VA_DERIVE_NS_PER_BYTE");
    if (derive_cost && *derive_cost)
        drv->personality.derive_ns_per_byte = strtol(derive_cost, NULL, 10);
    parse_sync_error(getenv("SWIFTVT_VA_SYNC_ERROR"), drv);
    /* Unset: nothing refused (parse_encode_list answers its last argument for an unset list, and
     * masks what it parsed with it). */
    const char *refuses_rc = getenv("SWIFTVT_VA_CONTEXT_REFUSES_RC");
    drv->context_refuses_rc = refuses_rc && *refuses_rc
        ? parse_encode_list("SWIFTVT_VA_CONTEXT_REFUSES_RC", refuses_rc, rate_control_names,
                            VA_RC_CQP | VA_RC_CBR | VA_RC_VBR)
        : 0;
    char identity[300];
    display_identity(ctx, identity, sizeof(identity));
    drv->no_h264 = names_display(getenv("SWIFTVT_VA_NO_H264"), identity);
    const char *min_size = getenv("SWIFTVT_VA_ENCODE_MIN_SIZE");
    drv->encode_min_size = min_size && *min_size ? (int)strtol(min_size, NULL, 10) : 1;
    if (drv->encode_min_size < 1)
        drv->encode_min_size = 1;
    drv->configs.base = 0x01000000;
    drv->contexts.base = 0x02000000;
    /* iHD numbers surfaces, buffers and images from 0 in separate heaps
     * (media_libva_util: the heap element's index is the ID): 0 is a valid ID there. */
    int zero = drv->personality.zero_based_ids;
    drv->surfaces.base = zero ? 0 : 0x04000000;
    drv->buffers.base = zero ? 0 : 0x08000000;
    drv->images.base = zero ? 0 : 0x10000000;
    drv->log = env_flag("SWIFTVT_VA_LOG");
    drv->selfcheck = env_flag("SWIFTVT_VA_SELFCHECK");
    drv->no_derive = env_flag("SWIFTVT_VA_NO_DERIVE");
    drv->faults = parse_faults(getenv("SWIFTVT_VA_FAIL"));
    drv->tamper = parse_tamper(getenv("SWIFTVT_VA_TAMPER"));
    const char *render_nth = getenv("SWIFTVT_VA_FAIL_RENDER");
    drv->fail_render_slice = render_nth ? strtol(render_nth, NULL, 10) : 0;
    const char *nth = getenv("SWIFTVT_VA_FAIL_END_PICTURE");
    drv->fail_end_picture = nth ? strtol(nth, NULL, 10) : 0;
    drv->fail_end_picture_status = nth && strstr(nth, ":operation-failed") ? VA_STATUS_ERROR_OPERATION_FAILED
                                                                           : VA_STATUS_ERROR_DECODING_ERROR;
    parse_fail_coded(getenv("SWIFTVT_VA_FAIL_CODED"), drv);
    drv->encode_rate_controls = parse_encode_list("SWIFTVT_VA_ENCODE_RC", getenv("SWIFTVT_VA_ENCODE_RC"),
                                                  rate_control_names, ENCODE_RATE_CONTROLS);
    drv->encode_packed_headers = parse_encode_list("SWIFTVT_VA_ENCODE_PACKED", getenv("SWIFTVT_VA_ENCODE_PACKED"),
                                                   packed_header_names, ENCODE_PACKED_HEADERS);
    const char *report_path = getenv("SWIFTVT_VA_REPORT");
    if (report_path && *report_path)
        drv->report_path = strdup(report_path);
    const char *paramlog = getenv("SWIFTVT_VA_PARAMLOG");
    if (paramlog && *paramlog) {
        drv->paramlog = fopen(paramlog, "ae");
        if (!drv->paramlog)
            fprintf(stderr, "swiftvt_sw: cannot open SWIFTVT_VA_PARAMLOG %s: %s\n", paramlog, strerror(errno));
    }

    ctx->pDriverData = drv;
    ctx->version_major = VA_MAJOR_VERSION;
    ctx->version_minor = VA_MINOR_VERSION;
    /* vaInitialize refuses a driver that leaves any of these at 0. */
    ctx->max_profiles = NUM_PROFILES;
    ctx->max_entrypoints = 3;
    ctx->max_attributes = NUM_ENCODE_CONFIG_ATTRIBUTES;
    ctx->max_image_formats = 1;
    ctx->max_subpic_formats = 1;
    ctx->max_display_attributes = 1;
    ctx->str_vendor = drv->personality.vendor ? drv->personality.vendor : VENDOR;

    struct VADriverVTable *vt = ctx->vtable;
    vt->vaTerminate = sw_Terminate;
    vt->vaQueryConfigProfiles = sw_QueryConfigProfiles;
    vt->vaQueryConfigEntrypoints = sw_QueryConfigEntrypoints;
    vt->vaGetConfigAttributes = sw_GetConfigAttributes;
    vt->vaCreateConfig = sw_CreateConfig;
    vt->vaDestroyConfig = sw_DestroyConfig;
    vt->vaQueryConfigAttributes = sw_QueryConfigAttributes;
    vt->vaCreateSurfaces = sw_CreateSurfaces;
    vt->vaDestroySurfaces = sw_DestroySurfaces;
    vt->vaCreateContext = sw_CreateContext;
    vt->vaDestroyContext = sw_DestroyContext;
    vt->vaCreateBuffer = sw_CreateBuffer;
    vt->vaBufferSetNumElements = sw_BufferSetNumElements;
    vt->vaMapBuffer = sw_MapBuffer;
    vt->vaUnmapBuffer = sw_UnmapBuffer;
    vt->vaDestroyBuffer = sw_DestroyBuffer;
    vt->vaBeginPicture = sw_BeginPicture;
    vt->vaRenderPicture = sw_RenderPicture;
    vt->vaEndPicture = sw_EndPicture;
    vt->vaSyncSurface = sw_SyncSurface;
    vt->vaQuerySurfaceStatus = sw_QuerySurfaceStatus;
    vt->vaQuerySurfaceError = sw_QuerySurfaceError;
    vt->vaPutSurface = sw_PutSurface;
    vt->vaQueryImageFormats = sw_QueryImageFormats;
    vt->vaCreateImage = sw_CreateImage;
    vt->vaDeriveImage = sw_DeriveImage;
    vt->vaDestroyImage = sw_DestroyImage;
    vt->vaSetImagePalette = sw_SetImagePalette;
    vt->vaGetImage = sw_GetImage;
    vt->vaPutImage = sw_PutImage;
    vt->vaQuerySubpictureFormats = sw_QuerySubpictureFormats;
    vt->vaCreateSubpicture = sw_CreateSubpicture;
    vt->vaDestroySubpicture = sw_DestroySubpicture;
    vt->vaSetSubpictureImage = sw_SetSubpictureImage;
    vt->vaSetSubpictureChromakey = sw_SetSubpictureChromakey;
    vt->vaSetSubpictureGlobalAlpha = sw_SetSubpictureGlobalAlpha;
    vt->vaAssociateSubpicture = sw_AssociateSubpicture;
    vt->vaDeassociateSubpicture = sw_DeassociateSubpicture;
    vt->vaQueryDisplayAttributes = sw_QueryDisplayAttributes;
    vt->vaGetDisplayAttributes = sw_GetDisplayAttributes;
    vt->vaSetDisplayAttributes = sw_SetDisplayAttributes;
    vt->vaBufferInfo = sw_BufferInfo;
    vt->vaLockSurface = sw_LockSurface;
    vt->vaUnlockSurface = sw_UnlockSurface;
    vt->vaGetSurfaceAttributes = sw_GetSurfaceAttributes;
    vt->vaCreateSurfaces2 = sw_CreateSurfaces2;
    vt->vaQuerySurfaceAttributes = sw_QuerySurfaceAttributes;
    vt->vaAcquireBufferHandle = sw_AcquireBufferHandle;
    vt->vaReleaseBufferHandle = sw_ReleaseBufferHandle;
    vt->vaCreateMFContext = sw_CreateMFContext;
    vt->vaMFAddContext = sw_MFAddContext;
    vt->vaMFReleaseContext = sw_MFReleaseContext;
    vt->vaMFSubmit = sw_MFSubmit;
    vt->vaCreateBuffer2 = sw_CreateBuffer2;
    vt->vaQueryProcessingRate = sw_QueryProcessingRate;
    vt->vaExportSurfaceHandle = sw_ExportSurfaceHandle;
    vt->vaSyncSurface2 = sw_SyncSurface2;
    vt->vaSyncBuffer = sw_SyncBuffer;
    vt->vaCopy = sw_Copy;
    if (drv->latency_ms > 0) {
        if (pthread_create(&drv->worker, NULL, completion_worker, drv) == 0)
            drv->worker_started = 1;
        else
            drv->latency_ms = 0; /* synchronous after all */
    }
    drv_log(drv, "initialised (libva %d.%d ABI) on %s, personality %s, latency %ld ms%s", VA_MAJOR_VERSION,
            VA_MINOR_VERSION, identity, drv->personality.name, drv->latency_ms,
            drv->no_h264 ? ", no H.264 profiles (SWIFTVT_VA_NO_H264)" : "");
    return VA_STATUS_SUCCESS;
}
