/* swiftvt_cuda: what the two libraries of the software CUDA double share. libcuda.so.1 (cuda.c)
 * owns the process-wide state (initialisation, contexts and their thread-local stacks, streams,
 * allocations, the sticky device-lost error, the report); libnvcuvid.so.1 (nvcuvid.c) links
 * against it, as NVIDIA's libnvcuvid links against libcuda, and reaches that state through the
 * swiftvt_cuda_* functions below, which libcuda exports next to the CUDA driver API. */
#ifndef SWIFTVT_CUDA_INTERNAL_H
#define SWIFTVT_CUDA_INTERNAL_H

#include <ffnvcodec/dynlink_cuda.h>
#include <ffnvcodec/dynlink_cuviddec.h>
#include <ffnvcodec/dynlink_nvcuvid.h>
#include <stddef.h>

#define SWIFTVT_EXPORT __attribute__((visibility("default")))

/* CUresult values that ffnvcodec's dynlink_cuda.h does not name (CUDA driver API, cuda.h,
 * "enum cudaError_enum"). */
#define CU_OK ((CUresult)0)
#define CU_ERROR_INVALID_VALUE ((CUresult)1)
#define CU_ERROR_OUT_OF_MEMORY ((CUresult)2)
#define CU_ERROR_NOT_INITIALIZED ((CUresult)3)
#define CU_ERROR_DEINITIALIZED ((CUresult)4)
#define CU_ERROR_NO_DEVICE ((CUresult)100)
#define CU_ERROR_INVALID_DEVICE ((CUresult)101)
#define CU_ERROR_INVALID_CONTEXT ((CUresult)201)
#define CU_ERROR_MAP_FAILED ((CUresult)205)
#define CU_ERROR_UNMAP_FAILED ((CUresult)206)
#define CU_ERROR_PEER_ACCESS_UNSUPPORTED ((CUresult)217)
#define CU_ERROR_INVALID_HANDLE ((CUresult)400)
#define CU_ERROR_NOT_FOUND ((CUresult)500)
#define CU_ERROR_LAUNCH_FAILED ((CUresult)719)
#define CU_ERROR_NOT_SUPPORTED ((CUresult)801)
#define CU_ERROR_UNKNOWN ((CUresult)999)

/* The kinds of objects counted in the live-object report. */
enum swiftvt_cuda_kind { KIND_DECODER, KIND_MAP, KIND_COUNT };

/* 1 once cuInit succeeded. */
SWIFTVT_EXPORT int swiftvt_cuda_initialised(void);
/* The calling thread's current context (top of its stack), or NULL. */
SWIFTVT_EXPORT CUcontext swiftvt_cuda_current(void);
/* Whether ctx is a live context (created and not destroyed, or an active primary context). */
SWIFTVT_EXPORT int swiftvt_cuda_context_valid(CUcontext ctx);
/* Counts an object of a kind owned by ctx (delta +1 or -1), for the live-object reports. */
SWIFTVT_EXPORT void swiftvt_cuda_track(enum swiftvt_cuda_kind kind, CUcontext ctx, int delta);
/* Device memory the client may copy from or to besides its allocations (a mapped frame). */
SWIFTVT_EXPORT void swiftvt_cuda_register_range(const void *base, size_t size);
SWIFTVT_EXPORT void swiftvt_cuda_unregister_range(const void *base);
/* The sticky error after a lost device (an Xid): every later call that touches the device
 * returns CUDA_ERROR_LAUNCH_FAILED. */
SWIFTVT_EXPORT void swiftvt_cuda_set_device_lost(void);
SWIFTVT_EXPORT int swiftvt_cuda_device_lost(void);
/* A rule the client broke: "swiftvt_cuda VALIDATION: ..." on stderr and in $SWIFTVT_CUDA_REPORT. */
SWIFTVT_EXPORT void swiftvt_cuda_validation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Any other report line (REFUSED, DECODE), to stderr and the report file, as given. */
SWIFTVT_EXPORT void swiftvt_cuda_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A line for the report file only (not stderr). */
SWIFTVT_EXPORT void swiftvt_cuda_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* SWIFTVT_CUDA_LOG=1: a line on stderr. */
SWIFTVT_EXPORT void swiftvt_cuda_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether SWIFTVT_CUDA_FAIL names what (init, create-context, create-decoder). */
SWIFTVT_EXPORT int swiftvt_cuda_fail(const char *what);

#endif
