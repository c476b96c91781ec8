// libva, libva-drm, libva-x11 and libX11 are loaded when SwiftVT first looks for a VA device,
// not when the GStreamer plugin is: the plugin must load (and decode in software) on machines
// without libva, and processes that never decode should not map it.
//
// Every va* / X* function SwiftVT calls is defined here with the library's own signature,
// compiled with hidden visibility (SWIFTVT_HIDDEN below): the plugin's calls bind to these
// definitions, nothing is exported, and libva's own calls (and a VA driver's) never see them.
// Each definition resolves the real function once, through dlsym on the library's own handle.
#include "CVA.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

// Hidden visibility for every definition here (not a -fvisibility=hidden compiler flag: unsafe
// flags would stop the library targets from being used as dependencies of other packages): the
// definitions bind the plugin's own calls and are not exported from it.
#define SWIFTVT_HIDDEN __attribute__((visibility("hidden")))

struct library {
    const char *soname;
    void (*open)(void); // run once through `once`: pthread_once takes no argument
    void *handle;
    pthread_once_t once;
    char error[512];
};

static void open_libva(void);
static void open_libva_drm(void);
static void open_libva_x11(void);
static void open_libx11(void);

static struct library libva = {"libva.so.2", open_libva, NULL, PTHREAD_ONCE_INIT, ""};
static struct library libva_drm = {"libva-drm.so.2", open_libva_drm, NULL, PTHREAD_ONCE_INIT, ""};
static struct library libva_x11 = {"libva-x11.so.2", open_libva_x11, NULL, PTHREAD_ONCE_INIT, ""};
static struct library libx11 = {"libX11.so.6", open_libx11, NULL, PTHREAD_ONCE_INIT, ""};

static void open_library(struct library *library) {
    library->handle = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
    if (library->handle == NULL) {
        snprintf(library->error, sizeof library->error, "cannot load %s: %s", library->soname, dlerror());
    }
}

static void open_libva(void) { open_library(&libva); }
static void open_libva_drm(void) { open_library(&libva_drm); }
static void open_libva_x11(void) { open_library(&libva_x11); }
static void open_libx11(void) { open_library(&libx11); }

/// Loads `library` once; NULL on success, else why not. pthread_once also orders every later
/// read of `handle` after the dlopen, in whichever thread loaded it.
static const char *load(struct library *library) {
    pthread_once(&library->once, library->open);
    return library->handle != NULL ? NULL : library->error;
}

SWIFTVT_HIDDEN const char *cva_load(void) { return load(&libva); }

SWIFTVT_HIDDEN const char *cva_load_drm(void) {
    const char *error = cva_load();
    return error != NULL ? error : load(&libva_drm);
}

// libva-x11 needs libX11 (it links it); loading libX11 first gives the clearer message when
// only libX11 is missing. Neither is needed for the DRM path.
SWIFTVT_HIDDEN const char *cva_load_x11(void) {
    const char *error = cva_load();
    if (error != NULL) return error;
    error = load(&libx11);
    return error != NULL ? error : load(&libva_x11);
}

/// The real function `name`. Callers reach this only after the matching cva_load*() succeeded
/// (the display discovery checks it first), so a failure here is a broken installation (a
/// library without a symbol its headers declare) or a SwiftVT bug, not bad input.
static void *resolve(struct library *library, const char *name) {
    if (load(library) != NULL) {
        fprintf(stderr, "SwiftVT: %s was called but %s\n", name, library->error);
        abort();
    }
    void *symbol = dlsym(library->handle, name);
    if (symbol == NULL) {
        fprintf(stderr, "SwiftVT: %s has no symbol %s\n", library->soname, name);
        abort();
    }
    return symbol;
}

// One forwarding definition: resolves on first use (a benign race: every thread stores the
// same pointer, with atomic loads and stores).
#define FORWARD(library, return_type, name, parameters, arguments)                         \
    SWIFTVT_HIDDEN return_type name parameters {                                            \
        static return_type (*real) parameters;                                             \
        return_type (*function) parameters = __atomic_load_n(&real, __ATOMIC_ACQUIRE);     \
        if (function == NULL) {                                                            \
            function = (return_type (*) parameters) resolve(&library, #name);              \
            __atomic_store_n(&real, function, __ATOMIC_RELEASE);                           \
        }                                                                                   \
        return function arguments;                                                         \
    }

// libva
FORWARD(libva, VAStatus, vaInitialize, (VADisplay dpy, int *major, int *minor), (dpy, major, minor))
FORWARD(libva, VAStatus, vaTerminate, (VADisplay dpy), (dpy))
FORWARD(libva, const char *, vaErrorStr, (VAStatus status), (status))
FORWARD(libva, VAMessageCallback, vaSetErrorCallback, (VADisplay dpy, VAMessageCallback callback, void *context),
        (dpy, callback, context))
FORWARD(libva, VAMessageCallback, vaSetInfoCallback, (VADisplay dpy, VAMessageCallback callback, void *context),
        (dpy, callback, context))
FORWARD(libva, const char *, vaQueryVendorString, (VADisplay dpy), (dpy))
FORWARD(libva, int, vaMaxNumProfiles, (VADisplay dpy), (dpy))
FORWARD(libva, int, vaMaxNumEntrypoints, (VADisplay dpy), (dpy))
FORWARD(libva, int, vaMaxNumConfigAttributes, (VADisplay dpy), (dpy))
FORWARD(libva, int, vaMaxNumImageFormats, (VADisplay dpy), (dpy))
FORWARD(libva, VAStatus, vaQueryConfigProfiles, (VADisplay dpy, VAProfile *profiles, int *count), (dpy, profiles, count))
FORWARD(libva, VAStatus, vaQueryConfigEntrypoints,
        (VADisplay dpy, VAProfile profile, VAEntrypoint *entrypoints, int *count), (dpy, profile, entrypoints, count))
FORWARD(libva, VAStatus, vaGetConfigAttributes,
        (VADisplay dpy, VAProfile profile, VAEntrypoint entrypoint, VAConfigAttrib *attributes, int count),
        (dpy, profile, entrypoint, attributes, count))
FORWARD(libva, VAStatus, vaQueryConfigAttributes,
        (VADisplay dpy, VAConfigID config, VAProfile *profile, VAEntrypoint *entrypoint, VAConfigAttrib *attributes,
         int *count),
        (dpy, config, profile, entrypoint, attributes, count))
FORWARD(libva, VAStatus, vaCreateConfig,
        (VADisplay dpy, VAProfile profile, VAEntrypoint entrypoint, VAConfigAttrib *attributes, int count,
         VAConfigID *config),
        (dpy, profile, entrypoint, attributes, count, config))
FORWARD(libva, VAStatus, vaDestroyConfig, (VADisplay dpy, VAConfigID config), (dpy, config))
FORWARD(libva, VAStatus, vaQuerySurfaceAttributes,
        (VADisplay dpy, VAConfigID config, VASurfaceAttrib *attributes, unsigned int *count),
        (dpy, config, attributes, count))
FORWARD(libva, VAStatus, vaCreateSurfaces,
        (VADisplay dpy, unsigned int format, unsigned int width, unsigned int height, VASurfaceID *surfaces,
         unsigned int count, VASurfaceAttrib *attributes, unsigned int attribute_count),
        (dpy, format, width, height, surfaces, count, attributes, attribute_count))
FORWARD(libva, VAStatus, vaDestroySurfaces, (VADisplay dpy, VASurfaceID *surfaces, int count), (dpy, surfaces, count))
FORWARD(libva, VAStatus, vaCreateContext,
        (VADisplay dpy, VAConfigID config, int width, int height, int flag, VASurfaceID *targets, int count,
         VAContextID *context),
        (dpy, config, width, height, flag, targets, count, context))
FORWARD(libva, VAStatus, vaDestroyContext, (VADisplay dpy, VAContextID context), (dpy, context))
FORWARD(libva, VAStatus, vaCreateBuffer,
        (VADisplay dpy, VAContextID context, VABufferType type, unsigned int size, unsigned int count, void *data,
         VABufferID *buffer),
        (dpy, context, type, size, count, data, buffer))
FORWARD(libva, VAStatus, vaDestroyBuffer, (VADisplay dpy, VABufferID buffer), (dpy, buffer))
FORWARD(libva, VAStatus, vaMapBuffer, (VADisplay dpy, VABufferID buffer, void **data), (dpy, buffer, data))
FORWARD(libva, VAStatus, vaUnmapBuffer, (VADisplay dpy, VABufferID buffer), (dpy, buffer))
FORWARD(libva, VAStatus, vaBeginPicture, (VADisplay dpy, VAContextID context, VASurfaceID target), (dpy, context, target))
FORWARD(libva, VAStatus, vaRenderPicture, (VADisplay dpy, VAContextID context, VABufferID *buffers, int count),
        (dpy, context, buffers, count))
FORWARD(libva, VAStatus, vaEndPicture, (VADisplay dpy, VAContextID context), (dpy, context))
FORWARD(libva, VAStatus, vaSyncSurface, (VADisplay dpy, VASurfaceID surface), (dpy, surface))
FORWARD(libva, VAStatus, vaQuerySurfaceStatus, (VADisplay dpy, VASurfaceID surface, VASurfaceStatus *status),
        (dpy, surface, status))
FORWARD(libva, VAStatus, vaQuerySurfaceError,
        (VADisplay dpy, VASurfaceID surface, VAStatus error_status, void **error_info),
        (dpy, surface, error_status, error_info))
FORWARD(libva, VAStatus, vaDeriveImage, (VADisplay dpy, VASurfaceID surface, VAImage *image), (dpy, surface, image))
FORWARD(libva, VAStatus, vaCreateImage, (VADisplay dpy, VAImageFormat *format, int width, int height, VAImage *image),
        (dpy, format, width, height, image))
FORWARD(libva, VAStatus, vaGetImage,
        (VADisplay dpy, VASurfaceID surface, int x, int y, unsigned int width, unsigned int height, VAImageID image),
        (dpy, surface, x, y, width, height, image))
FORWARD(libva, VAStatus, vaPutImage,
        (VADisplay dpy, VASurfaceID surface, VAImageID image, int src_x, int src_y, unsigned int src_width,
         unsigned int src_height, int dest_x, int dest_y, unsigned int dest_width, unsigned int dest_height),
        (dpy, surface, image, src_x, src_y, src_width, src_height, dest_x, dest_y, dest_width, dest_height))
FORWARD(libva, VAStatus, vaDestroyImage, (VADisplay dpy, VAImageID image), (dpy, image))
FORWARD(libva, VAStatus, vaQueryImageFormats, (VADisplay dpy, VAImageFormat *formats, int *count), (dpy, formats, count))
FORWARD(libva, const char *, vaProfileStr, (VAProfile profile), (profile))
FORWARD(libva, const char *, vaEntrypointStr, (VAEntrypoint entrypoint), (entrypoint))

// libva-drm
FORWARD(libva_drm, VADisplay, vaGetDisplayDRM, (int fd), (fd))

// libva-x11 (vaGetDisplay takes an X11 Display *)
FORWARD(libva_x11, VADisplay, vaGetDisplay, (Display *display), (display))

// libX11, behind void * so Swift needs no X11 types.
static Display *(*real_XOpenDisplay)(const char *);
static int (*real_XCloseDisplay)(Display *);

SWIFTVT_HIDDEN void *cva_x_open_display(const char *name) {
    Display *(*function)(const char *) = __atomic_load_n(&real_XOpenDisplay, __ATOMIC_ACQUIRE);
    if (function == NULL) {
        function = (Display * (*)(const char *)) resolve(&libx11, "XOpenDisplay");
        __atomic_store_n(&real_XOpenDisplay, function, __ATOMIC_RELEASE);
    }
    return function(name);
}

SWIFTVT_HIDDEN void cva_x_close_display(void *x11_display) {
    int (*function)(Display *) = __atomic_load_n(&real_XCloseDisplay, __ATOMIC_ACQUIRE);
    if (function == NULL) {
        function = (int (*)(Display *))resolve(&libx11, "XCloseDisplay");
        __atomic_store_n(&real_XCloseDisplay, function, __ATOMIC_RELEASE);
    }
    function((Display *)x11_display);
}
