// libcuda.so.1 and libnvcuvid.so.1 are loaded when SwiftVT first looks for a CUDA device, never
// when the GStreamer plugin loads a registry it already has: the plugin must load (and decode in
// software) on every machine without an NVIDIA driver, and processes that never decode should not
// map the driver. Unlike libva (CVA), every function is resolved at load time, so a driver too
// old to have one is a clear load error instead of an abort at the first call.
//
// The wrappers are hidden (not exported from the plugin), so nothing here interposes the real
// driver for other libraries in the process (GStreamer's nvcodec, FFmpeg).
#include "CCUDA.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define SWIFTVT_HIDDEN __attribute__((visibility("hidden")))

// Functions the ffnvcodec headers have no typedef for (cuda.h's signatures).
typedef CUresult CUDAAPI tcuDriverGetVersion(int *version);
typedef CUresult CUDAAPI tcuDeviceTotalMem_v2(size_t *bytes, CUdevice device);

static struct {
    tcuInit *init;
    tcuDriverGetVersion *driver_get_version;
    tcuDeviceGetCount *device_get_count;
    tcuDeviceGet *device_get;
    tcuDeviceGetName *device_get_name;
    tcuDeviceTotalMem_v2 *device_total_memory;
    tcuCtxCreate_v2 *ctx_create;
    tcuCtxDestroy_v2 *ctx_destroy;
    tcuCtxPushCurrent_v2 *ctx_push_current;
    tcuCtxPopCurrent_v2 *ctx_pop_current;
    tcuStreamCreate *stream_create;
    tcuStreamDestroy_v2 *stream_destroy;
    tcuStreamSynchronize *stream_synchronize;
    tcuMemcpy2DAsync_v2 *memcpy_2d_async;
    tcuGetErrorName *get_error_name;
    tcuGetErrorString *get_error_string;
} driver;

static struct {
    tcuvidGetDecoderCaps *get_decoder_caps;
    tcuvidCreateDecoder *create_decoder;
    tcuvidDestroyDecoder *destroy_decoder;
    tcuvidDecodePicture *decode_picture;
    tcuvidGetDecodeStatus *get_decode_status;
    tcuvidMapVideoFrame64 *map_video_frame;
    tcuvidUnmapVideoFrame64 *unmap_video_frame;
} nvdec;

struct library {
    const char *soname;
    void *handle;
    char error[512];
};

static struct library libcuda = {"libcuda.so.1", NULL, ""};
static struct library libnvcuvid = {"libnvcuvid.so.1", NULL, ""};
static pthread_once_t driver_once = PTHREAD_ONCE_INIT;
static pthread_once_t nvdec_once = PTHREAD_ONCE_INIT;

/// Resolves `name` into `*slot`; false (with the library's error set) when the library lacks it.
static int resolve(struct library *library, const char *name, void **slot) {
    *slot = dlsym(library->handle, name);
    if (*slot == NULL) {
        snprintf(library->error, sizeof library->error, "%s has no function %s (an NVIDIA driver too old?)",
                 library->soname, name);
        return 0;
    }
    return 1;
}

#define RESOLVE(library, table, field, name)                                                                   \
    if (!resolve(&library, name, (void **)&table.field)) goto failed;

static int open_library(struct library *library) {
    library->handle = dlopen(library->soname, RTLD_NOW | RTLD_LOCAL);
    if (library->handle == NULL) {
        snprintf(library->error, sizeof library->error, "cannot load %s: %s", library->soname, dlerror());
        return 0;
    }
    return 1;
}

static void close_library(struct library *library) {
    dlclose(library->handle);
    library->handle = NULL;
}

static void open_driver(void) {
    if (!open_library(&libcuda)) return;
    RESOLVE(libcuda, driver, init, "cuInit")
    RESOLVE(libcuda, driver, driver_get_version, "cuDriverGetVersion")
    RESOLVE(libcuda, driver, device_get_count, "cuDeviceGetCount")
    RESOLVE(libcuda, driver, device_get, "cuDeviceGet")
    RESOLVE(libcuda, driver, device_get_name, "cuDeviceGetName")
    RESOLVE(libcuda, driver, device_total_memory, "cuDeviceTotalMem_v2")
    RESOLVE(libcuda, driver, ctx_create, "cuCtxCreate_v2")
    RESOLVE(libcuda, driver, ctx_destroy, "cuCtxDestroy_v2")
    RESOLVE(libcuda, driver, ctx_push_current, "cuCtxPushCurrent_v2")
    RESOLVE(libcuda, driver, ctx_pop_current, "cuCtxPopCurrent_v2")
    RESOLVE(libcuda, driver, stream_create, "cuStreamCreate")
    RESOLVE(libcuda, driver, stream_destroy, "cuStreamDestroy_v2")
    RESOLVE(libcuda, driver, stream_synchronize, "cuStreamSynchronize")
    RESOLVE(libcuda, driver, memcpy_2d_async, "cuMemcpy2DAsync_v2")
    RESOLVE(libcuda, driver, get_error_name, "cuGetErrorName")
    RESOLVE(libcuda, driver, get_error_string, "cuGetErrorString")
    return;
failed:
    close_library(&libcuda);
}

static void open_nvdec(void) {
    if (!open_library(&libnvcuvid)) return;
    RESOLVE(libnvcuvid, nvdec, get_decoder_caps, "cuvidGetDecoderCaps")
    RESOLVE(libnvcuvid, nvdec, create_decoder, "cuvidCreateDecoder")
    RESOLVE(libnvcuvid, nvdec, destroy_decoder, "cuvidDestroyDecoder")
    RESOLVE(libnvcuvid, nvdec, decode_picture, "cuvidDecodePicture")
    RESOLVE(libnvcuvid, nvdec, get_decode_status, "cuvidGetDecodeStatus")
    RESOLVE(libnvcuvid, nvdec, map_video_frame, "cuvidMapVideoFrame64")
    RESOLVE(libnvcuvid, nvdec, unmap_video_frame, "cuvidUnmapVideoFrame64")
    return;
failed:
    close_library(&libnvcuvid);
}

// pthread_once orders every later read of the tables after the loading, in whichever thread
// loaded them.
SWIFTVT_HIDDEN const char *ccuda_load_driver(void) {
    pthread_once(&driver_once, open_driver);
    return libcuda.handle != NULL ? NULL : libcuda.error;
}

SWIFTVT_HIDDEN const char *ccuda_load_nvdec(void) {
    const char *error = ccuda_load_driver();
    if (error != NULL) return error;
    pthread_once(&nvdec_once, open_nvdec);
    return libnvcuvid.handle != NULL ? NULL : libnvcuvid.error;
}

SWIFTVT_HIDDEN CUresult ccuda_init(unsigned int flags) { return driver.init(flags); }
SWIFTVT_HIDDEN CUresult ccuda_driver_get_version(int *version) { return driver.driver_get_version(version); }
SWIFTVT_HIDDEN CUresult ccuda_device_get_count(int *count) { return driver.device_get_count(count); }
SWIFTVT_HIDDEN CUresult ccuda_device_get(CUdevice *device, int ordinal) { return driver.device_get(device, ordinal); }
SWIFTVT_HIDDEN CUresult ccuda_device_get_name(char *name, int length, CUdevice device) {
    return driver.device_get_name(name, length, device);
}
SWIFTVT_HIDDEN CUresult ccuda_device_total_memory(size_t *bytes, CUdevice device) {
    return driver.device_total_memory(bytes, device);
}
SWIFTVT_HIDDEN CUresult ccuda_ctx_create(CUcontext *context, unsigned int flags, CUdevice device) {
    return driver.ctx_create(context, flags, device);
}
SWIFTVT_HIDDEN CUresult ccuda_ctx_destroy(CUcontext context) { return driver.ctx_destroy(context); }
SWIFTVT_HIDDEN CUresult ccuda_ctx_push_current(CUcontext context) { return driver.ctx_push_current(context); }
SWIFTVT_HIDDEN CUresult ccuda_ctx_pop_current(CUcontext *context) { return driver.ctx_pop_current(context); }
SWIFTVT_HIDDEN CUresult ccuda_stream_create(CUstream *stream, unsigned int flags) {
    return driver.stream_create(stream, flags);
}
SWIFTVT_HIDDEN CUresult ccuda_stream_destroy(CUstream stream) { return driver.stream_destroy(stream); }
SWIFTVT_HIDDEN CUresult ccuda_stream_synchronize(CUstream stream) { return driver.stream_synchronize(stream); }
SWIFTVT_HIDDEN CUresult ccuda_memcpy_2d_async(const CUDA_MEMCPY2D *copy, CUstream stream) {
    return driver.memcpy_2d_async(copy, stream);
}
SWIFTVT_HIDDEN CUresult ccuda_get_error_name(CUresult error, const char **name) {
    return driver.get_error_name(error, name);
}
SWIFTVT_HIDDEN CUresult ccuda_get_error_string(CUresult error, const char **text) {
    return driver.get_error_string(error, text);
}

SWIFTVT_HIDDEN CUresult ccuda_cuvid_get_decoder_caps(CUVIDDECODECAPS *caps) { return nvdec.get_decoder_caps(caps); }
SWIFTVT_HIDDEN CUresult ccuda_cuvid_create_decoder(CUvideodecoder *decoder, CUVIDDECODECREATEINFO *info) {
    return nvdec.create_decoder(decoder, info);
}
SWIFTVT_HIDDEN CUresult ccuda_cuvid_destroy_decoder(CUvideodecoder decoder) { return nvdec.destroy_decoder(decoder); }
SWIFTVT_HIDDEN CUresult ccuda_cuvid_decode_picture(CUvideodecoder decoder, CUVIDPICPARAMS *parameters) {
    return nvdec.decode_picture(decoder, parameters);
}
SWIFTVT_HIDDEN CUresult ccuda_cuvid_get_decode_status(CUvideodecoder decoder, int picture_index,
                                                      CUVIDGETDECODESTATUS *status) {
    return nvdec.get_decode_status(decoder, picture_index, status);
}
SWIFTVT_HIDDEN CUresult ccuda_cuvid_map_video_frame(CUvideodecoder decoder, int picture_index,
                                                    unsigned long long *device_pointer, unsigned int *pitch,
                                                    CUVIDPROCPARAMS *parameters) {
    return nvdec.map_video_frame(decoder, picture_index, device_pointer, pitch, parameters);
}
SWIFTVT_HIDDEN CUresult ccuda_cuvid_unmap_video_frame(CUvideodecoder decoder, unsigned long long device_pointer) {
    return nvdec.unmap_video_frame(decoder, device_pointer);
}
