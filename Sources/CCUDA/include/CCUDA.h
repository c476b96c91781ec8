// NVIDIA's CUDA driver API and NVDEC (nvcuvid) for SwiftVT's CUDA plumbing: the types from the
// ffnvcodec headers (Debian libffmpeg-nvenc-dev, the declarations FFmpeg and GStreamer build
// against: no CUDA toolkit at build time), and the functions SwiftVT calls, loaded at run time
// (loader.c). Every helper is prefixed `ccuda_`.
#ifndef CCUDA_H
#define CCUDA_H

#include <ffnvcodec/dynlink_cuda.h>
#include <ffnvcodec/dynlink_cuviddec.h>

/// Loads libcuda.so.1 and resolves every CUDA driver function below, once; NULL on success, else
/// what went wrong (no NVIDIA driver: the library is not there). Nothing is loaded before the
/// first call, and a failed load leaves nothing mapped.
const char *ccuda_load_driver(void);
/// Loads libnvcuvid.so.1 (NVDEC) and resolves every cuvid function below, once (after
/// ccuda_load_driver); NULL on success, else what went wrong.
const char *ccuda_load_nvdec(void);

// The CUDA driver API (cuda.h), under the names the versioned symbols have in libcuda.so.1
// (cuCtxCreate is cuCtxCreate_v2 there...). Callable only after ccuda_load_driver succeeded.
CUresult ccuda_init(unsigned int flags);
CUresult ccuda_driver_get_version(int *version);
CUresult ccuda_device_get_count(int *count);
CUresult ccuda_device_get(CUdevice *device, int ordinal);
CUresult ccuda_device_get_name(char *name, int length, CUdevice device);
CUresult ccuda_device_total_memory(size_t *bytes, CUdevice device);
CUresult ccuda_ctx_create(CUcontext *context, unsigned int flags, CUdevice device);
CUresult ccuda_ctx_destroy(CUcontext context);
CUresult ccuda_ctx_push_current(CUcontext context);
CUresult ccuda_ctx_pop_current(CUcontext *context);
CUresult ccuda_stream_create(CUstream *stream, unsigned int flags);
CUresult ccuda_stream_destroy(CUstream stream);
CUresult ccuda_stream_synchronize(CUstream stream);
CUresult ccuda_memcpy_2d_async(const CUDA_MEMCPY2D *copy, CUstream stream);
CUresult ccuda_get_error_name(CUresult error, const char **name);
CUresult ccuda_get_error_string(CUresult error, const char **text);

// NVDEC (cuviddec.h). Callable only after ccuda_load_nvdec succeeded.
CUresult ccuda_cuvid_get_decoder_caps(CUVIDDECODECAPS *caps);
CUresult ccuda_cuvid_create_decoder(CUvideodecoder *decoder, CUVIDDECODECREATEINFO *info);
CUresult ccuda_cuvid_destroy_decoder(CUvideodecoder decoder);
CUresult ccuda_cuvid_decode_picture(CUvideodecoder decoder, CUVIDPICPARAMS *parameters);
CUresult ccuda_cuvid_get_decode_status(CUvideodecoder decoder, int picture_index, CUVIDGETDECODESTATUS *status);
CUresult ccuda_cuvid_map_video_frame(CUvideodecoder decoder, int picture_index, unsigned long long *device_pointer,
                                     unsigned int *pitch, CUVIDPROCPARAMS *parameters);
CUresult ccuda_cuvid_unmap_video_frame(CUvideodecoder decoder, unsigned long long device_pointer);

/// The CUresult values SwiftVT tells apart (cuda.h's numbers; the ffnvcodec headers name only a
/// few of them).
enum ccuda_result_code {
    CCUDA_ERROR_INVALID_VALUE = 1,
    CCUDA_ERROR_OUT_OF_MEMORY = 2,
    CCUDA_ERROR_DEVICE_UNAVAILABLE = 46,
    CCUDA_ERROR_NO_DEVICE = 100,
    CCUDA_ERROR_ECC_UNCORRECTABLE = 214,
    CCUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CCUDA_ERROR_HARDWARE_STACK_ERROR = 714,
    CCUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
    CCUDA_ERROR_MISALIGNED_ADDRESS = 716,
    CCUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
    CCUDA_ERROR_INVALID_PC = 718,
    CCUDA_ERROR_LAUNCH_FAILED = 719,
};

/// CUDA_SUCCESS and the memory types are enum constants Swift imports with the enum's type; these
/// keep the call sites short.
static inline CUresult ccuda_success(void) { return CUDA_SUCCESS; }

#endif
