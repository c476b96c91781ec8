// libx265 is loaded when the first HEVC encoder is made, not when the GStreamer plugin is (the
// scheme of Sources/CX264/loader.c): processes that scan or load the plugin but never encode HEVC
// do not map it, and only the runtime library (libx265-199) is needed, not libx265-dev.
//
// One function is forwarded: x265_api_get (spelled x265_api_get_199 by x265.h, so a library of
// another build fails to load here instead of misreading x265_param). Everything else is called
// through the x265_api table it returns (CX265.h), which is how a multilib libx265 hands out its
// 10-bit encoder. Compiled with hidden visibility: nothing is exported or interposed.
#include "CX265.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define SWIFTVT_HIDDEN __attribute__((visibility("hidden")))

#define CX265_STRINGIFY_(x) #x
#define CX265_STRINGIFY(x) CX265_STRINGIFY_(x)

// The library the header was built against: its soname carries X265_BUILD.
static const char x265_soname[] = "libx265.so." CX265_STRINGIFY(X265_BUILD);

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static void *x265_handle;
static const x265_api *(*api_get)(int bit_depth);
static char load_error[512];

static void load_library(void) {
    x265_handle = dlopen(x265_soname, RTLD_NOW | RTLD_LOCAL);
    if (x265_handle == NULL) {
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", x265_soname, dlerror());
        return;
    }
    // x265.h: #define x265_api_get x265_api_get_199; the exported name is spelled out.
    void *symbol = dlsym(x265_handle, "x265_api_get_" CX265_STRINGIFY(X265_BUILD));
    if (symbol == NULL) {
        snprintf(load_error, sizeof load_error, "%s has no symbol x265_api_get_%d", x265_soname, X265_BUILD);
        dlclose(x265_handle);
        x265_handle = NULL;
        return;
    }
    api_get = (const x265_api *(*)(int))symbol;
}

SWIFTVT_HIDDEN const char *cx265_load(void) {
    pthread_once(&load_once, load_library);
    return api_get != NULL ? NULL : load_error;
}

SWIFTVT_HIDDEN const x265_api *cx265_api(int bit_depth) {
    if (cx265_load() != NULL) {
        return NULL;
    }
    const x265_api *api = api_get(bit_depth);
    // A table from a library built with another x265.h would be read with the wrong layout.
    if (api == NULL || api->api_build_number != X265_BUILD || api->sizeof_param != (int)sizeof(x265_param) ||
        api->sizeof_picture != (int)sizeof(x265_picture)) {
        return NULL;
    }
    return api;
}
