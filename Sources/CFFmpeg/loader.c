// libavcodec and libavutil are loaded when the first software decoder is made, not when the
// GStreamer plugin is: libavcodec brings about a hundred shared libraries with it, which would
// otherwise be mapped and relocated every time GStreamer scans or loads the plugin (a registry
// rebuild, every gst-inspect-1.0), even in processes that never decode.
//
// Every libav* function SwiftVT calls is defined here with libav's own signature, compiled with
// hidden visibility (SWIFTVT_HIDDEN below): the plugin's calls bind to these definitions at link
// time, nothing is exported, so libavcodec's internal calls and other plugins (gst-libav) never
// see them. Each definition resolves the real function once, through dlsym on the library's own
// handle, and forwards to it.
#include "CFFmpeg.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

// Hidden visibility for every definition here (not a -fvisibility=hidden compiler flag: unsafe
// flags would stop the library targets from being used as dependencies of other packages): the
// definitions bind the plugin's own calls and are not exported from it.
#define SWIFTVT_HIDDEN __attribute__((visibility("hidden")))

#define CFFMPEG_STRINGIFY_(x) #x
#define CFFMPEG_STRINGIFY(x) CFFMPEG_STRINGIFY_(x)

// The libraries the headers were built against (their sonames).
static const char avcodec_soname[] = "libavcodec.so." CFFMPEG_STRINGIFY(LIBAVCODEC_VERSION_MAJOR);
static const char avutil_soname[] = "libavutil.so." CFFMPEG_STRINGIFY(LIBAVUTIL_VERSION_MAJOR);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static void *avcodec_handle;
static void *avutil_handle;
static char load_error[512];

static void load_libraries(void) {
    avutil_handle = dlopen(avutil_soname, RTLD_NOW | RTLD_LOCAL);
    if (avutil_handle == NULL) {
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", avutil_soname, dlerror());
        return;
    }
    avcodec_handle = dlopen(avcodec_soname, RTLD_NOW | RTLD_LOCAL);
    if (avcodec_handle == NULL) {
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", avcodec_soname, dlerror());
    }
}

SWIFTVT_HIDDEN const char *cffmpeg_load(void) {
    pthread_once(&load_once, load_libraries);
    return (avcodec_handle != NULL && avutil_handle != NULL) ? NULL : load_error;
}

/// The real function `name`. Callers reach this only after cffmpeg_load() succeeded (the
/// decoder factory checks it before making a backend), so a failure here is a broken
/// installation (a library without a symbol its headers declare), not bad input.
static void *resolve(void *const *handle, const char *name) {
    if (cffmpeg_load() != NULL) {
        fprintf(stderr, "SwiftVT: %s\n", load_error);
        abort();
    }
    void *symbol = dlsym(*handle, name);
    if (symbol == NULL) {
        fprintf(stderr, "SwiftVT: %s has no symbol %s\n",
                handle == &avcodec_handle ? avcodec_soname : avutil_soname, name);
        abort();
    }
    return symbol;
}

// One forwarding definition: resolves on first use (a benign race: every thread stores the
// same pointer, with atomic loads and stores).
#define FORWARD(handle, return_type, name, parameters, arguments)                          \
    SWIFTVT_HIDDEN return_type name parameters {                                            \
        static return_type (*real) parameters;                                             \
        return_type (*function) parameters = __atomic_load_n(&real, __ATOMIC_ACQUIRE);     \
        if (function == NULL) {                                                            \
            function = (return_type (*) parameters) resolve(&handle, #name);               \
            __atomic_store_n(&real, function, __ATOMIC_RELEASE);                           \
        }                                                                                   \
        return function arguments;                                                         \
    }

// libavcodec
FORWARD(avcodec_handle, const AVCodec *, avcodec_find_decoder, (enum AVCodecID id), (id))
FORWARD(avcodec_handle, AVCodecContext *, avcodec_alloc_context3, (const AVCodec *codec), (codec))
FORWARD(avcodec_handle, void, avcodec_free_context, (AVCodecContext **context), (context))
FORWARD(avcodec_handle, int, avcodec_open2, (AVCodecContext *context, const AVCodec *codec, AVDictionary **options),
        (context, codec, options))
FORWARD(avcodec_handle, int, avcodec_send_packet, (AVCodecContext *context, const AVPacket *packet), (context, packet))
FORWARD(avcodec_handle, int, avcodec_receive_frame, (AVCodecContext *context, AVFrame *frame), (context, frame))
FORWARD(avcodec_handle, void, avcodec_flush_buffers, (AVCodecContext *context), (context))
FORWARD(avcodec_handle, int, avcodec_default_get_buffer2, (AVCodecContext *context, AVFrame *frame, int flags),
        (context, frame, flags))
FORWARD(avcodec_handle, void, avcodec_align_dimensions2,
        (AVCodecContext *context, int *width, int *height, int linesize_align[AV_NUM_DATA_POINTERS]),
        (context, width, height, linesize_align))
FORWARD(avcodec_handle, AVPacket *, av_packet_alloc, (void), ())
FORWARD(avcodec_handle, void, av_packet_free, (AVPacket **packet), (packet))
FORWARD(avcodec_handle, int, av_new_packet, (AVPacket *packet, int size), (packet, size))
FORWARD(avcodec_handle, void, av_packet_unref, (AVPacket *packet), (packet))

// libavutil
FORWARD(avutil_handle, AVFrame *, av_frame_alloc, (void), ())
FORWARD(avutil_handle, void, av_frame_free, (AVFrame **frame), (frame))
FORWARD(avutil_handle, void, av_frame_unref, (AVFrame *frame), (frame))
FORWARD(avutil_handle, void, av_frame_move_ref, (AVFrame *destination, AVFrame *source), (destination, source))
FORWARD(avutil_handle, AVBufferRef *, av_buffer_create,
        (uint8_t *data, size_t size, void (*release)(void *opaque, uint8_t *data), void *opaque, int flags),
        (data, size, release, opaque, flags))
FORWARD(avutil_handle, int, av_strerror, (int error, char *buffer, size_t size), (error, buffer, size))
FORWARD(avutil_handle, void *, av_mallocz, (size_t size), (size))
FORWARD(avutil_handle, const char *, av_get_pix_fmt_name, (enum AVPixelFormat format), (format))
