// libx264 is loaded when the first software encoder is made, not when the GStreamer plugin is
// (the same scheme as Sources/CFFmpeg/loader.c): processes that scan or load the plugin but never
// encode do not map it.
//
// Every x264 function SwiftVT calls is defined here with x264's own signature, compiled with
// hidden visibility (SWIFTVT_HIDDEN below; x264.h's X264_API is empty on ELF, so the declarations do
// not force default visibility): nothing is exported or interposed. Each definition resolves the
// real function once through dlsym on the library's handle and forwards to it.
#include "CX264.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

// Hidden visibility for every definition here (not a -fvisibility=hidden compiler flag: unsafe
// flags would stop the library targets from being used as dependencies of other packages): the
// definitions bind the plugin's own calls and are not exported from it.
#define SWIFTVT_HIDDEN __attribute__((visibility("hidden")))

#define CX264_STRINGIFY_(x) #x
#define CX264_STRINGIFY(x) CX264_STRINGIFY_(x)

// The library the header was built against: its soname carries X264_BUILD, and so does the name
// of x264_encoder_open (x264_encoder_open_164), so a mismatched library fails to load here
// instead of misreading x264_param_t.
static const char x264_soname[] = "libx264.so." CX264_STRINGIFY(X264_BUILD);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static void *x264_handle;
static char load_error[512];

static void load_library(void) {
    x264_handle = dlopen(x264_soname, RTLD_NOW | RTLD_LOCAL);
    if (x264_handle == NULL) {
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", x264_soname, dlerror());
    }
}

SWIFTVT_HIDDEN const char *cx264_load(void) {
    pthread_once(&load_once, load_library);
    return x264_handle != NULL ? NULL : load_error;
}

/// The real function `name`. Reached only after cx264_load() succeeded (the encoder factory
/// checks it before making a backend), so a failure is a broken installation, not bad input.
static void *resolve(const char *name) {
    if (cx264_load() != NULL) {
        fprintf(stderr, "SwiftVT: %s\n", load_error);
        abort();
    }
    void *symbol = dlsym(x264_handle, name);
    if (symbol == NULL) {
        fprintf(stderr, "SwiftVT: %s has no symbol %s\n", x264_soname, name);
        abort();
    }
    return symbol;
}

// One forwarding definition (`symbol` is the exported name, which differs from the C name for
// x264_encoder_open); resolves on first use, a benign race with atomic loads and stores.
#define FORWARD(return_type, name, symbol, parameters, arguments)                          \
    SWIFTVT_HIDDEN return_type name parameters {                                           \
        static return_type (*real) parameters;                                            \
        return_type (*function) parameters = __atomic_load_n(&real, __ATOMIC_ACQUIRE);    \
        if (function == NULL) {                                                           \
            function = (return_type (*) parameters) resolve(symbol);                      \
            __atomic_store_n(&real, function, __ATOMIC_RELEASE);                          \
        }                                                                                  \
        return function arguments;                                                        \
    }

FORWARD(void, x264_param_default, "x264_param_default", (x264_param_t *param), (param))
FORWARD(int, x264_param_default_preset, "x264_param_default_preset",
        (x264_param_t *param, const char *preset, const char *tune), (param, preset, tune))
FORWARD(int, x264_param_apply_profile, "x264_param_apply_profile", (x264_param_t *param, const char *profile),
        (param, profile))
FORWARD(int, x264_param_parse, "x264_param_parse", (x264_param_t *param, const char *name, const char *value),
        (param, name, value))
FORWARD(void, x264_picture_init, "x264_picture_init", (x264_picture_t *picture), (picture))
// x264.h: #define x264_encoder_open x264_encoder_open_164, so `x264_encoder_open` below defines
// x264_encoder_open_164; the symbol to look up is spelled out.
FORWARD(x264_t *, x264_encoder_open, "x264_encoder_open_" CX264_STRINGIFY(X264_BUILD), (x264_param_t *param),
        (param))
FORWARD(int, x264_encoder_reconfig, "x264_encoder_reconfig", (x264_t *encoder, x264_param_t *param),
        (encoder, param))
FORWARD(void, x264_encoder_parameters, "x264_encoder_parameters", (x264_t *encoder, x264_param_t *param),
        (encoder, param))
FORWARD(int, x264_encoder_headers, "x264_encoder_headers", (x264_t *encoder, x264_nal_t **nals, int *count),
        (encoder, nals, count))
FORWARD(int, x264_encoder_encode, "x264_encoder_encode",
        (x264_t *encoder, x264_nal_t **nals, int *count, x264_picture_t *input, x264_picture_t *output),
        (encoder, nals, count, input, output))
FORWARD(void, x264_encoder_close, "x264_encoder_close", (x264_t *encoder), (encoder))
FORWARD(int, x264_encoder_delayed_frames, "x264_encoder_delayed_frames", (x264_t *encoder), (encoder))
FORWARD(int, x264_encoder_maximum_delayed_frames, "x264_encoder_maximum_delayed_frames", (x264_t *encoder),
        (encoder))

/* x264's own logger prints "x264 [level]: message" to stderr; this one prints errors only, as
 * x264's does at the error level the backend otherwise sets (its warning that PSNR is measured
 * with psy optimisations on is about benchmarking, not about the stream). */
static void cx264_quiet_log(void *private_data, int level, const char *format, va_list arguments) {
    (void)private_data;
    if (level > X264_LOG_ERROR)
        return;
    fputs("x264 [error]: ", stderr);
    vfprintf(stderr, format, arguments);
}

void cx264_set_quiet_info_logging(x264_param_t *param) {
    param->i_log_level = X264_LOG_INFO;
    param->pf_log = cx264_quiet_log;
    param->p_log_private = NULL;
}
