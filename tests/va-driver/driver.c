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
 *
 * Sources: driver.c (this file: the environment, vaInitialize / vaTerminate, the vtable);
 * driver_internal.h (the objects and the functions the driver_*.c files share); driver_tables.c,
 * driver_report.c, driver_configs.c, driver_surfaces.c, driver_buffers.c, driver_contexts.c,
 * driver_completion.c, driver_encode.c, driver_decode.c, driver_images.c, driver_unsupported.c
 * (one job each, README.md "Files").
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <va/va_drmcommon.h>

#include "driver_internal.h"

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
    { "cqp", VA_RC_CQP }, { "cbr", VA_RC_CBR }, { "vbr", VA_RC_VBR }, { "icq", VA_RC_ICQ }, { NULL, 0 },
};
static const struct named_bit packed_header_names[] = {
    { "sequence", VA_ENC_PACKED_HEADER_SEQUENCE }, { "picture", VA_ENC_PACKED_HEADER_PICTURE },
    { "slice", VA_ENC_PACKED_HEADER_SLICE }, { "raw", VA_ENC_PACKED_HEADER_RAW_DATA }, { "none", 0 }, { NULL, 0 },
};

/* A comma-separated list of names choosing what the encoder offers among `all`; unset: `unset`
 * (ICQ is offered only when named, as not every device has it). An empty result falls back to
 * `unset`, with a message (a config needs a rate control mode). */
static uint32_t parse_encode_list(const char *variable, const char *value, const struct named_bit *names,
                                  uint32_t unset, uint32_t all)
{
    if (!value || !*value)
        return unset;
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
        fprintf(stderr, "swiftvt_sw: %s='%s' names nothing usable; offering the default\n", variable, value);
        return unset;
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
    /* Unset: nothing refused (parse_encode_list masks what it parsed with its last argument). */
    const char *refuses_rc = getenv("SWIFTVT_VA_CONTEXT_REFUSES_RC");
    drv->context_refuses_rc = refuses_rc && *refuses_rc
        ? parse_encode_list("SWIFTVT_VA_CONTEXT_REFUSES_RC", refuses_rc, rate_control_names,
                            VA_RC_CQP | VA_RC_CBR | VA_RC_VBR, VA_RC_CQP | VA_RC_CBR | VA_RC_VBR | VA_RC_ICQ)
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
                                                  rate_control_names, ENCODE_RATE_CONTROLS,
                                                  ENCODE_RATE_CONTROLS | VA_RC_ICQ);
    drv->encode_packed_headers = parse_encode_list("SWIFTVT_VA_ENCODE_PACKED", getenv("SWIFTVT_VA_ENCODE_PACKED"),
                                                   packed_header_names, ENCODE_PACKED_HEADERS,
                                                   ENCODE_PACKED_HEADERS);
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
