/* swiftvt_cuda: libcuda.so.1 of the software CUDA double (tests/cuda-driver/README.md).
 *
 * "Device memory" is host memory: a CUdeviceptr is a host address, so every copy is a memcpy,
 * whatever the memory types. Contexts follow the CUDA driver API (CUDA Driver API reference,
 * "Context Management"): each thread has its own stack of current contexts; cuCtxCreate pushes the
 * new context, cuCtxDestroy pops it when it is current to the calling thread; a device has one
 * primary context, reference counted by cuDevicePrimaryCtxRetain/Release. Every call that needs a
 * context fails with CUDA_ERROR_INVALID_CONTEXT when none is current on the calling thread. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define CTX_MAGIC 0x53435458u   /* "SCTX" */
#define STREAM_MAGIC 0x53535452u
#define EVENT_MAGIC 0x53455654u
#define MAX_DEVICES 8
#define STACK_DEPTH 64
#define ALIGNMENT 256           /* cuMemAlloc: "suitably aligned for any kind of variable" */
#define PITCH_ALIGNMENT 512     /* CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT-compatible */

struct CUctx_st {
    unsigned magic;
    int live;
    int primary;
    CUdevice device;
    unsigned flags;
    int counts[KIND_COUNT];
    int streams;
    int allocations;
    struct CUctx_st *next;
};

struct CUstream_st {
    unsigned magic;
    CUcontext ctx;
    struct CUstream_st *next;
};

struct CUevent_st {
    unsigned magic;
};

struct range {
    const uint8_t *base;
    size_t size;
    CUcontext ctx;  /* NULL: a range registered by libnvcuvid (mapped frame) */
    int host;       /* page-locked host memory (cuMemAllocHost/cuMemHostAlloc) */
    struct range *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int initialised;
static int device_count = 1;
static int logging;
static const char *report_path;
static const char *fail_list;
static int device_lost;
static struct CUctx_st *contexts;
static struct CUctx_st primary[MAX_DEVICES];
static int primary_refs[MAX_DEVICES];
static unsigned primary_flags[MAX_DEVICES];
static struct CUstream_st *streams;
static struct range *ranges;
static int global_counts[KIND_COUNT];
static int live_streams, live_allocations;

static _Thread_local CUcontext stack[STACK_DEPTH];
static _Thread_local int depth;

static void read_environment(void)
{
    const char *devices = getenv("SWIFTVT_CUDA_DEVICES");
    if (devices && *devices) {
        int n = atoi(devices);
        device_count = n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : n;
    }
    const char *log = getenv("SWIFTVT_CUDA_LOG");
    logging = log && *log && strcmp(log, "0") != 0;
    report_path = getenv("SWIFTVT_CUDA_REPORT");
    if (report_path && !*report_path)
        report_path = NULL;
    fail_list = getenv("SWIFTVT_CUDA_FAIL");
}

static void environment(void)
{
    pthread_once(&env_once, read_environment);
}

static void emit(const char *line, int to_stderr)
{
    if (to_stderr)
        fprintf(stderr, "%s\n", line);
    if (report_path) {
        FILE *f = fopen(report_path, "a");
        if (f) {
            fprintf(f, "%s\n", line);
            fclose(f);
        }
    }
}

/* One line: `prefix` then the formatted text, to the report and (to_stderr) to stderr. */
static void vemit(const char *prefix, int to_stderr, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static void vemit(const char *prefix, int to_stderr, const char *fmt, va_list ap)
{
    environment();
    char line[1024];
    int n = snprintf(line, sizeof(line), "%s", prefix);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    emit(line, to_stderr);
}

SWIFTVT_EXPORT void swiftvt_cuda_validation(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vemit("swiftvt_cuda VALIDATION: ", 1, fmt, ap);
    va_end(ap);
}

SWIFTVT_EXPORT void swiftvt_cuda_report(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vemit("", 1, fmt, ap);
    va_end(ap);
}

SWIFTVT_EXPORT void swiftvt_cuda_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vemit("", 0, fmt, ap);
    va_end(ap);
}

SWIFTVT_EXPORT void swiftvt_cuda_log(const char *fmt, ...)
{
    environment();
    if (!logging)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "swiftvt_cuda: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
}

SWIFTVT_EXPORT int swiftvt_cuda_fail(const char *what)
{
    environment();
    if (!fail_list)
        return 0;
    size_t n = strlen(what);
    for (const char *p = fail_list; (p = strstr(p, what)) != NULL; p += n)
        if ((p == fail_list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
            return 1;
    return 0;
}

SWIFTVT_EXPORT int swiftvt_cuda_initialised(void)
{
    return initialised;
}

SWIFTVT_EXPORT void swiftvt_cuda_set_device_lost(void)
{
    pthread_mutex_lock(&lock);
    if (!device_lost)
        swiftvt_cuda_report("swiftvt_cuda DEVICE-LOST: every later device call returns CUDA_ERROR_LAUNCH_FAILED");
    device_lost = 1;
    pthread_mutex_unlock(&lock);
}

SWIFTVT_EXPORT int swiftvt_cuda_device_lost(void)
{
    return device_lost;
}

/* Caller holds the lock. */
static int context_valid_locked(CUcontext ctx)
{
    if (!ctx)
        return 0;
    for (int i = 0; i < MAX_DEVICES; i++)
        if (ctx == &primary[i])
            return primary_refs[i] > 0;
    for (struct CUctx_st *c = contexts; c; c = c->next)
        if (c == ctx)
            return c->live;
    return 0;
}

SWIFTVT_EXPORT int swiftvt_cuda_context_valid(CUcontext ctx)
{
    pthread_mutex_lock(&lock);
    int valid = context_valid_locked(ctx);
    pthread_mutex_unlock(&lock);
    return valid;
}

SWIFTVT_EXPORT CUcontext swiftvt_cuda_current(void)
{
    return depth > 0 ? stack[depth - 1] : NULL;
}

SWIFTVT_EXPORT void swiftvt_cuda_track(enum swiftvt_cuda_kind kind, CUcontext ctx, int delta)
{
    pthread_mutex_lock(&lock);
    global_counts[kind] += delta;
    if (ctx)
        ctx->counts[kind] += delta;
    pthread_mutex_unlock(&lock);
}

static void add_range(const void *base, size_t size, CUcontext ctx, int host)
{
    struct range *r = calloc(1, sizeof(*r));
    if (!r)
        return;
    r->base = base;
    r->size = size;
    r->ctx = ctx;
    r->host = host;
    pthread_mutex_lock(&lock);
    r->next = ranges;
    ranges = r;
    pthread_mutex_unlock(&lock);
}

/* Removes the range starting at base; returns it (caller frees) or NULL. */
static struct range *take_range(const void *base)
{
    pthread_mutex_lock(&lock);
    struct range **p = &ranges;
    while (*p && (*p)->base != base)
        p = &(*p)->next;
    struct range *r = *p;
    if (r)
        *p = r->next;
    pthread_mutex_unlock(&lock);
    return r;
}

SWIFTVT_EXPORT void swiftvt_cuda_register_range(const void *base, size_t size)
{
    add_range(base, size, NULL, 0);
}

SWIFTVT_EXPORT void swiftvt_cuda_unregister_range(const void *base)
{
    free(take_range(base));
}

/* Whether [p, p + size) lies inside one allocation or registered range (device memory). */
static int device_range_valid(const uint8_t *p, size_t size)
{
    int ok = 0;
    pthread_mutex_lock(&lock);
    for (struct range *r = ranges; r && !ok; r = r->next)
        ok = p >= r->base && size <= r->size && (size_t)(p - r->base) <= r->size - size;
    pthread_mutex_unlock(&lock);
    return ok;
}

/* ----- Checks shared by the entry points ----- */

#define NEED_INIT()                                   \
    do {                                              \
        environment();                                \
        if (!initialised)                             \
            return CU_ERROR_NOT_INITIALIZED;          \
    } while (0)

static CUresult need_context(const char *call)
{
    if (depth == 0) {
        swiftvt_cuda_validation("%s: no CUDA context is current on the calling thread", call);
        return CU_ERROR_INVALID_CONTEXT;
    }
    if (!swiftvt_cuda_context_valid(stack[depth - 1])) {
        swiftvt_cuda_validation("%s: the current context %p was destroyed", call, (void *)stack[depth - 1]);
        return CU_ERROR_INVALID_CONTEXT;
    }
    return CU_OK;
}

static CUresult check_device(CUdevice dev)
{
    return dev >= 0 && dev < device_count ? CU_OK : CU_ERROR_INVALID_DEVICE;
}

/* ----- Initialisation and devices ----- */

SWIFTVT_EXPORT CUresult cuInit(unsigned int flags)
{
    environment();
    swiftvt_cuda_log("cuInit(%u)", flags);
    if (flags != 0)   /* "Flags: Initialization flag for CUDA; currently must be 0" */
        return CU_ERROR_INVALID_VALUE;
    if (swiftvt_cuda_fail("init"))
        return CU_ERROR_NO_DEVICE;
    initialised = 1;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CU_ERROR_INVALID_VALUE;
    *version = 12040;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDeviceGetCount(int *count)
{
    NEED_INIT();
    if (!count)
        return CU_ERROR_INVALID_VALUE;
    *count = device_count;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    NEED_INIT();
    if (!device)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(ordinal) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    NEED_INIT();
    if (!name || len <= 0)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "SwiftVT software CUDA device");
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    NEED_INIT();
    if (!bytes)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    *bytes = (size_t)16 << 30;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    NEED_INIT();
    if (!major || !minor)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    *major = 9;
    *minor = 0;
    return CU_OK;
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
    NEED_INIT();
    if (!uuid)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    static const char stem[] = "swiftvt-cuda-0";
    memset(uuid, 0, sizeof(*uuid));
    memcpy(uuid->bytes, stem, sizeof(stem) - 1);
    uuid->bytes[15] = (char)dev;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return get_uuid(uuid, dev);
}

SWIFTVT_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return get_uuid(uuid, dev);
}

/* CUdevice_attribute values (cuda.h, CUDA 12.4) and what an H100-class device answers. */
static int attribute_value(int attribute, CUdevice dev, int *value)
{
    switch (attribute) {
    case 1: *value = 1024; return 1;           /* MAX_THREADS_PER_BLOCK */
    case 2: case 3: *value = 1024; return 1;   /* MAX_BLOCK_DIM_X/Y */
    case 4: *value = 64; return 1;             /* MAX_BLOCK_DIM_Z */
    case 5: *value = 2147483647; return 1;     /* MAX_GRID_DIM_X */
    case 6: case 7: *value = 65535; return 1;  /* MAX_GRID_DIM_Y/Z */
    case 8: *value = 49152; return 1;          /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 9: *value = 65536; return 1;          /* TOTAL_CONSTANT_MEMORY */
    case 10: *value = 32; return 1;            /* WARP_SIZE */
    case 11: *value = 2147483647; return 1;    /* MAX_PITCH */
    case 12: *value = 65536; return 1;         /* MAX_REGISTERS_PER_BLOCK */
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = 1755000; return 1;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: *value = 512; return 1;
    case 15: *value = 1; return 1;             /* GPU_OVERLAP */
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; return 1;
    case 17: *value = 0; return 1;             /* KERNEL_EXEC_TIMEOUT */
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: *value = 0; return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *value = 1; return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *value = 0; return 1; /* default */
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *value = 1; return 1;
    case 32: *value = 0; return 1;             /* ECC_ENABLED */
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = 0x41 + dev; return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = 0; return 1;
    case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *value = 0; return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = 2619000; return 1;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = 5120; return 1;
    case 38: *value = 52428800; return 1;      /* L2_CACHE_SIZE */
    case 39: *value = 2048; return 1;          /* MAX_THREADS_PER_MULTIPROCESSOR */
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *value = 3; return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; return 1;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = 0; return 1;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: *value = 32; return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *value = 1; return 1;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: *value = 0; return 1;
    case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID: *value = dev; return 1;
    default:
        /* Every other attribute up to CU_DEVICE_ATTRIBUTE_MAX of CUDA 12.4 is a capability this
         * device does not have (texture sizes, interop, virtual memory...): 0. */
        if (attribute >= 1 && attribute < 140) {
            *value = 0;
            return 1;
        }
        return 0;
    }
}

SWIFTVT_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    NEED_INIT();
    if (!pi)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    return attribute_value((int)attrib, dev, pi) ? CU_OK : CU_ERROR_INVALID_VALUE;
}

SWIFTVT_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    NEED_INIT();
    if (!can)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK || check_device(peer) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    *can = 0;
    return CU_OK;
}

/* ----- Contexts ----- */

static void push(CUcontext ctx)
{
    if (depth < STACK_DEPTH)
        stack[depth++] = ctx;
}

static void live_objects(const char *when, int ctxs, const int counts[KIND_COUNT], int nstreams, int nallocs)
{
    char line[256];
    snprintf(line, sizeof(line), "live-objects contexts=%d decoders=%d maps=%d streams=%d allocations=%d",
             ctxs, counts[KIND_DECODER], counts[KIND_MAP], nstreams, nallocs);
    swiftvt_cuda_log("%s: %s", when, line);
    emit(line, 0);
}

/* Releases what a context still owns (CUDA frees a destroyed context's memory and streams) and
 * reports it: objects the client did not release. Caller holds the lock. */
static void retire_context_locked(CUcontext ctx)
{
    int counts[KIND_COUNT];
    memcpy(counts, ctx->counts, sizeof(counts));
    int nstreams = ctx->streams, nallocs = ctx->allocations;
    for (struct CUstream_st **s = &streams; *s;) {
        if ((*s)->ctx == ctx) {
            struct CUstream_st *dead = *s;
            *s = dead->next;
            dead->magic = 0;
            free(dead);
            live_streams--;
        } else {
            s = &(*s)->next;
        }
    }
    for (struct range **r = &ranges; *r;) {
        if ((*r)->ctx == ctx) {
            struct range *dead = *r;
            *r = dead->next;
            free((void *)dead->base);
            free(dead);
            live_allocations--;
        } else {
            r = &(*r)->next;
        }
    }
    ctx->streams = ctx->allocations = 0;
    /* The destroyed context's own leftovers: contexts is 0 here (the line of a context). */
    live_objects("context destroyed", 0, counts, nstreams, nallocs);
}

SWIFTVT_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    NEED_INIT();
    swiftvt_cuda_log("cuCtxCreate_v2(flags %#x, device %d)", flags, dev);
    if (!pctx)
        return CU_ERROR_INVALID_VALUE;
    /* CU_CTX_SCHED_MASK (0x07) | MAP_HOST (0x08) | LMEM_RESIZE_TO_MAX (0x10) | COREDUMP (0x20) |
     * USER_COREDUMP (0x40) | SYNC_MEMOPS (0x80) */
    if (flags & ~0xffu)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    if (device_lost)
        return CU_ERROR_LAUNCH_FAILED;
    if (swiftvt_cuda_fail("create-context"))
        return CU_ERROR_OUT_OF_MEMORY;
    struct CUctx_st *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        return CU_ERROR_OUT_OF_MEMORY;
    ctx->magic = CTX_MAGIC;
    ctx->live = 1;
    ctx->device = dev;
    ctx->flags = flags;
    pthread_mutex_lock(&lock);
    ctx->next = contexts;
    contexts = ctx;
    pthread_mutex_unlock(&lock);
    push(ctx);
    *pctx = ctx;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    NEED_INIT();
    swiftvt_cuda_log("cuCtxDestroy_v2(%p)", (void *)ctx);
    pthread_mutex_lock(&lock);
    int is_primary = 0;
    for (int i = 0; i < MAX_DEVICES; i++)
        is_primary |= ctx == &primary[i];
    if (!context_valid_locked(ctx) || is_primary) {
        pthread_mutex_unlock(&lock);
        swiftvt_cuda_validation("cuCtxDestroy_v2: %p is not a live context made by cuCtxCreate", (void *)ctx);
        return CU_ERROR_INVALID_CONTEXT;
    }
    ctx->live = 0;
    retire_context_locked(ctx);
    pthread_mutex_unlock(&lock);
    /* "If the context is current to the calling thread then it is also popped". */
    if (depth > 0 && stack[depth - 1] == ctx)
        depth--;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    NEED_INIT();
    if (!swiftvt_cuda_context_valid(ctx)) {
        swiftvt_cuda_validation("cuCtxPushCurrent_v2: %p is not a live context", (void *)ctx);
        return CU_ERROR_INVALID_CONTEXT;
    }
    if (depth >= STACK_DEPTH)
        return CU_ERROR_INVALID_VALUE;
    push(ctx);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    NEED_INIT();
    if (depth == 0) {
        swiftvt_cuda_validation("cuCtxPopCurrent_v2: the calling thread's context stack is empty");
        return CU_ERROR_INVALID_CONTEXT;
    }
    CUcontext top = stack[--depth];
    if (pctx)
        *pctx = top;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    NEED_INIT();
    if (!pctx)
        return CU_ERROR_INVALID_VALUE;
    *pctx = swiftvt_cuda_current();
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    NEED_INIT();
    /* "If ctx is NULL, the context at the top of the stack is removed" (cuCtxSetCurrent). */
    if (!ctx) {
        if (depth > 0)
            depth--;
        return CU_OK;
    }
    if (!swiftvt_cuda_context_valid(ctx)) {
        swiftvt_cuda_validation("cuCtxSetCurrent: %p is not a live context", (void *)ctx);
        return CU_ERROR_INVALID_CONTEXT;
    }
    if (depth == 0)
        push(ctx);
    else
        stack[depth - 1] = ctx;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    NEED_INIT();
    if (!device)
        return CU_ERROR_INVALID_VALUE;
    CUresult rc = need_context("cuCtxGetDevice");
    if (rc != CU_OK)
        return rc;
    *device = stack[depth - 1]->device;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuCtxSynchronize(void)
{
    NEED_INIT();
    CUresult rc = need_context("cuCtxSynchronize");
    if (rc != CU_OK)
        return rc;
    return device_lost ? CU_ERROR_LAUNCH_FAILED : CU_OK;
}

SWIFTVT_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    NEED_INIT();
    (void)value;
    if ((int)limit < 0 || (int)limit > 6)
        return CU_ERROR_INVALID_VALUE;
    return need_context("cuCtxSetLimit");
}

SWIFTVT_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
    NEED_INIT();
    (void)peer;
    (void)flags;
    return CU_ERROR_PEER_ACCESS_UNSUPPORTED;
}

SWIFTVT_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer)
{
    NEED_INIT();
    (void)peer;
    return CU_ERROR_PEER_ACCESS_UNSUPPORTED;
}

SWIFTVT_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    NEED_INIT();
    swiftvt_cuda_log("cuDevicePrimaryCtxRetain(device %d)", dev);
    if (!pctx)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    if (device_lost)
        return CU_ERROR_LAUNCH_FAILED;
    pthread_mutex_lock(&lock);
    if (primary_refs[dev] == 0) {
        if (swiftvt_cuda_fail("create-context")) {
            pthread_mutex_unlock(&lock);
            return CU_ERROR_OUT_OF_MEMORY;
        }
        memset(&primary[dev], 0, sizeof(primary[dev]));
        primary[dev].magic = CTX_MAGIC;
        primary[dev].live = 1;
        primary[dev].primary = 1;
        primary[dev].device = dev;
        primary[dev].flags = primary_flags[dev];
    }
    primary_refs[dev]++;
    pthread_mutex_unlock(&lock);
    *pctx = &primary[dev];
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    NEED_INIT();
    swiftvt_cuda_log("cuDevicePrimaryCtxRelease(device %d)", dev);
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    if (primary_refs[dev] == 0) {
        pthread_mutex_unlock(&lock);
        swiftvt_cuda_validation("cuDevicePrimaryCtxRelease: device %d's primary context is not retained", dev);
        return CU_ERROR_INVALID_CONTEXT;
    }
    if (--primary_refs[dev] == 0) {
        primary[dev].live = 0;
        retire_context_locked(&primary[dev]);
    }
    pthread_mutex_unlock(&lock);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    NEED_INIT();
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    if (flags & ~0xffu)
        return CU_ERROR_INVALID_VALUE;
    primary_flags[dev] = flags;
    primary[dev].flags = flags;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    NEED_INIT();
    if (!flags || !active)
        return CU_ERROR_INVALID_VALUE;
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    *flags = primary_flags[dev];
    *active = primary_refs[dev] > 0;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    NEED_INIT();
    if (check_device(dev) != CU_OK)
        return CU_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    if (primary_refs[dev] > 0) {
        primary_refs[dev] = 0;
        primary[dev].live = 0;
        retire_context_locked(&primary[dev]);
    }
    pthread_mutex_unlock(&lock);
    return CU_OK;
}

/* ----- Streams and events ----- */

/* The NULL stream and CU_STREAM_LEGACY / CU_STREAM_PER_THREAD are always valid. */
static int stream_valid(CUstream s)
{
    if ((uintptr_t)s <= 2)
        return 1;
    int ok = 0;
    pthread_mutex_lock(&lock);
    for (struct CUstream_st *p = streams; p && !ok; p = p->next)
        ok = p == s;
    pthread_mutex_unlock(&lock);
    return ok;
}

static CUresult check_stream(const char *call, CUstream s)
{
    if (!stream_valid(s)) {
        swiftvt_cuda_validation("%s: %p is not a live stream", call, (void *)s);
        return CU_ERROR_INVALID_HANDLE;
    }
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuStreamCreate(CUstream *phStream, unsigned int flags)
{
    NEED_INIT();
    if (!phStream || (flags & ~1u))   /* CU_STREAM_DEFAULT 0, CU_STREAM_NON_BLOCKING 1 */
        return CU_ERROR_INVALID_VALUE;
    CUresult rc = need_context("cuStreamCreate");
    if (rc != CU_OK)
        return rc;
    if (device_lost)
        return CU_ERROR_LAUNCH_FAILED;
    struct CUstream_st *s = calloc(1, sizeof(*s));
    if (!s)
        return CU_ERROR_OUT_OF_MEMORY;
    s->magic = STREAM_MAGIC;
    s->ctx = swiftvt_cuda_current();
    pthread_mutex_lock(&lock);
    s->next = streams;
    streams = s;
    s->ctx->streams++;
    live_streams++;
    pthread_mutex_unlock(&lock);
    *phStream = s;
    return CU_OK;
}

static CUresult stream_destroy(CUstream s)
{
    NEED_INIT();
    pthread_mutex_lock(&lock);
    struct CUstream_st **p = &streams;
    while (*p && *p != s)
        p = &(*p)->next;
    if (!s || !*p) {
        pthread_mutex_unlock(&lock);
        swiftvt_cuda_validation("cuStreamDestroy: %p is not a live stream", (void *)s);
        return CU_ERROR_INVALID_HANDLE;
    }
    *p = s->next;
    s->ctx->streams--;
    live_streams--;
    pthread_mutex_unlock(&lock);
    s->magic = 0;
    free(s);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    return stream_destroy(s);
}

SWIFTVT_EXPORT CUresult cuStreamDestroy(CUstream s)
{
    return stream_destroy(s);
}

SWIFTVT_EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    NEED_INIT();
    CUresult rc = need_context("cuStreamSynchronize");
    if (rc == CU_OK)
        rc = check_stream("cuStreamSynchronize", s);
    if (rc != CU_OK)
        return rc;
    return device_lost ? CU_ERROR_LAUNCH_FAILED : CU_OK;
}

SWIFTVT_EXPORT CUresult cuStreamQuery(CUstream s)
{
    return cuStreamSynchronize(s);
}

SWIFTVT_EXPORT CUresult cuStreamAddCallback(CUstream s, CUstreamCallback *callback, void *userdata, unsigned int flags)
{
    NEED_INIT();
    if (!callback || flags != 0)
        return CU_ERROR_INVALID_VALUE;
    CUresult rc = check_stream("cuStreamAddCallback", s);
    if (rc != CU_OK)
        return rc;
    /* Work on a stream is complete when it is queued: the callback runs at once. */
    callback(s, device_lost ? CU_ERROR_LAUNCH_FAILED : CU_OK, userdata);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuEventCreate(CUevent *event, unsigned int flags)
{
    NEED_INIT();
    if (!event || (flags & ~0xfu))
        return CU_ERROR_INVALID_VALUE;
    CUresult rc = need_context("cuEventCreate");
    if (rc != CU_OK)
        return rc;
    struct CUevent_st *e = calloc(1, sizeof(*e));
    if (!e)
        return CU_ERROR_OUT_OF_MEMORY;
    e->magic = EVENT_MAGIC;
    *event = e;
    return CU_OK;
}

static CUresult check_event(CUevent e)
{
    return e && e->magic == EVENT_MAGIC ? CU_OK : CU_ERROR_INVALID_HANDLE;
}

SWIFTVT_EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
    NEED_INIT();
    if (check_event(e) != CU_OK)
        return CU_ERROR_INVALID_HANDLE;
    e->magic = 0;
    free(e);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    NEED_INIT();
    if (check_event(e) != CU_OK)
        return CU_ERROR_INVALID_HANDLE;
    return check_stream("cuEventRecord", s);
}

SWIFTVT_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    NEED_INIT();
    if (check_event(e) != CU_OK)
        return CU_ERROR_INVALID_HANDLE;
    return device_lost ? CU_ERROR_LAUNCH_FAILED : CU_OK;
}

SWIFTVT_EXPORT CUresult cuEventQuery(CUevent e)
{
    return cuEventSynchronize(e);
}

/* ----- Memory ----- */

static CUresult allocate(const char *call, void **out, size_t size, int host)
{
    NEED_INIT();
    if (!out || size == 0)   /* cuMemAlloc: "If bytesize is 0, returns CUDA_ERROR_INVALID_VALUE" */
        return CU_ERROR_INVALID_VALUE;
    CUresult rc = need_context(call);
    if (rc != CU_OK)
        return rc;
    if (device_lost)
        return CU_ERROR_LAUNCH_FAILED;
    void *p = aligned_alloc(ALIGNMENT, (size + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT);
    if (!p)
        return CU_ERROR_OUT_OF_MEMORY;
    CUcontext ctx = swiftvt_cuda_current();
    add_range(p, size, ctx, host);
    pthread_mutex_lock(&lock);
    ctx->allocations++;
    live_allocations++;
    pthread_mutex_unlock(&lock);
    *out = p;
    return CU_OK;
}

static CUresult release(const char *call, const void *p, int host)
{
    NEED_INIT();
    if (!p)
        return CU_OK;   /* freeing 0 is a no-op */
    struct range *r = take_range(p);
    if (!r || !r->ctx || r->host != host) {
        if (r) {   /* not ours to free here: put it back */
            pthread_mutex_lock(&lock);
            r->next = ranges;
            ranges = r;
            pthread_mutex_unlock(&lock);
        }
        swiftvt_cuda_validation("%s: %p is not the start of a live %s allocation", call, p, host ? "host" : "device");
        return CU_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&lock);
    r->ctx->allocations--;
    live_allocations--;
    pthread_mutex_unlock(&lock);
    free((void *)r->base);
    free(r);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    void *p = NULL;
    CUresult rc = allocate("cuMemAlloc_v2", &p, bytesize, 0);
    if (rc == CU_OK)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return rc;
}

SWIFTVT_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (flags != 1 && flags != 2)   /* CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_HOST */
        return CU_ERROR_INVALID_VALUE;
    return cuMemAlloc_v2(dptr, bytesize);
}

SWIFTVT_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                           unsigned int element_size)
{
    /* "ElementSizeBytes ... may be 4, 8 or 16 bytes". */
    if (!pitch || !dptr || width == 0 || height == 0 || (element_size != 4 && element_size != 8 && element_size != 16))
        return CU_ERROR_INVALID_VALUE;
    size_t p = (width + PITCH_ALIGNMENT - 1) / PITCH_ALIGNMENT * PITCH_ALIGNMENT;
    void *mem = NULL;
    CUresult rc = allocate("cuMemAllocPitch_v2", &mem, p * height, 0);
    if (rc == CU_OK) {
        *dptr = (CUdeviceptr)(uintptr_t)mem;
        *pitch = p;
    }
    return rc;
}

SWIFTVT_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return release("cuMemFree_v2", (const void *)(uintptr_t)dptr, 0);
}

SWIFTVT_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    return allocate("cuMemAllocHost_v2", pp, bytesize, 1);
}

SWIFTVT_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    if (flags & ~0xfu)   /* PORTABLE 1, DEVICEMAP 2, WRITECOMBINED 4 */
        return CU_ERROR_INVALID_VALUE;
    return allocate("cuMemHostAlloc", pp, bytesize, 1);
}

SWIFTVT_EXPORT CUresult cuMemFreeHost(void *p)
{
    return release("cuMemFreeHost", p, 1);
}

SWIFTVT_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    NEED_INIT();
    if (!free_bytes || !total)
        return CU_ERROR_INVALID_VALUE;
    CUresult rc = need_context("cuMemGetInfo_v2");
    if (rc != CU_OK)
        return rc;
    *total = (size_t)16 << 30;
    *free_bytes = (size_t)15 << 30;
    return CU_OK;
}

/* One side of a copy: a host pointer is the client's business, device memory must lie inside an
 * allocation or a mapped frame. */
static CUresult check_side(const char *call, const char *side, CUmemorytype type, const uint8_t *p, size_t size)
{
    if (type == CU_MEMORYTYPE_ARRAY) {
        swiftvt_cuda_report("swiftvt_cuda REFUSED: %s: CUDA arrays are not supported", call);
        return CU_ERROR_NOT_SUPPORTED;
    }
    if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE && (int)type != 4 /* UNIFIED */) {
        swiftvt_cuda_validation("%s: %s memory type %d", call, side, (int)type);
        return CU_ERROR_INVALID_VALUE;
    }
    if (size && !p) {
        swiftvt_cuda_validation("%s: %s pointer is NULL", call, side);
        return CU_ERROR_INVALID_VALUE;
    }
    if (type == CU_MEMORYTYPE_DEVICE && size && !device_range_valid(p, size)) {
        swiftvt_cuda_validation("%s: %s device range %p+%zu is outside every allocation and mapped frame", call, side,
                                (const void *)p, size);
        return CU_ERROR_INVALID_VALUE;
    }
    return CU_OK;
}

static CUresult copy_2d(const char *call, const CUDA_MEMCPY2D *c, CUstream stream, int async)
{
    NEED_INIT();
    if (!c)
        return CU_ERROR_INVALID_VALUE;
    CUresult rc = need_context(call);
    if (rc == CU_OK && async)
        rc = check_stream(call, stream);
    if (rc != CU_OK)
        return rc;
    if (device_lost)
        return CU_ERROR_LAUNCH_FAILED;
    const uint8_t *src = c->srcMemoryType == CU_MEMORYTYPE_HOST ? c->srcHost : (const uint8_t *)(uintptr_t)c->srcDevice;
    uint8_t *dst = c->dstMemoryType == CU_MEMORYTYPE_HOST ? c->dstHost : (uint8_t *)(uintptr_t)c->dstDevice;
    if (c->WidthInBytes == 0 || c->Height == 0)
        return CU_OK;
    /* The pitches must hold a row when more than one row is copied (cuMemcpy2D: "srcPitch and
     * dstPitch ... must be greater than or equal to WidthInBytes"). */
    if (c->Height > 1 && (c->srcPitch < c->srcXInBytes + c->WidthInBytes || c->dstPitch < c->dstXInBytes + c->WidthInBytes)) {
        swiftvt_cuda_validation("%s: WidthInBytes %zu (+X %zu/%zu) larger than the pitches %zu/%zu", call, c->WidthInBytes,
                                c->srcXInBytes, c->dstXInBytes, c->srcPitch, c->dstPitch);
        return CU_ERROR_INVALID_VALUE;
    }
    const uint8_t *s0 = src + c->srcY * c->srcPitch + c->srcXInBytes;
    uint8_t *d0 = dst + c->dstY * c->dstPitch + c->dstXInBytes;
    size_t src_span = (c->Height - 1) * c->srcPitch + c->WidthInBytes;
    size_t dst_span = (c->Height - 1) * c->dstPitch + c->WidthInBytes;
    if ((rc = check_side(call, "source", c->srcMemoryType, src ? s0 : NULL, src_span)) != CU_OK ||
        (rc = check_side(call, "destination", c->dstMemoryType, dst ? d0 : NULL, dst_span)) != CU_OK)
        return rc;
    for (size_t y = 0; y < c->Height; y++)
        memmove(d0 + y * c->dstPitch, s0 + y * c->srcPitch, c->WidthInBytes);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *c)
{
    return copy_2d("cuMemcpy2D_v2", c, NULL, 0);
}

SWIFTVT_EXPORT CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *c, CUstream s)
{
    return copy_2d("cuMemcpy2DAsync_v2", c, s, 1);
}

SWIFTVT_EXPORT CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *c)
{
    return copy_2d("cuMemcpy2DUnaligned_v2", c, NULL, 0);
}

static CUresult copy_linear(const char *call, uint8_t *dst, CUmemorytype dst_type, const uint8_t *src,
                            CUmemorytype src_type, size_t n, CUstream stream, int async)
{
    NEED_INIT();
    CUresult rc = need_context(call);
    if (rc == CU_OK && async)
        rc = check_stream(call, stream);
    if (rc != CU_OK)
        return rc;
    if (device_lost)
        return CU_ERROR_LAUNCH_FAILED;
    if (n == 0)
        return CU_OK;
    if ((rc = check_side(call, "source", src_type, src, n)) != CU_OK ||
        (rc = check_side(call, "destination", dst_type, dst, n)) != CU_OK)
        return rc;
    memmove(dst, src, n);
    return CU_OK;
}

#define DEV(p) ((uint8_t *)(uintptr_t)(p))

SWIFTVT_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    /* Unified addressing: either side may be host or device memory. */
    return copy_linear("cuMemcpy", DEV(dst), (CUmemorytype)4, DEV(src), (CUmemorytype)4, n, NULL, 0);
}

SWIFTVT_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy_linear("cuMemcpyAsync", DEV(dst), (CUmemorytype)4, DEV(src), (CUmemorytype)4, n, s, 1);
}

SWIFTVT_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    return copy_linear("cuMemcpyHtoD_v2", DEV(dst), CU_MEMORYTYPE_DEVICE, src, CU_MEMORYTYPE_HOST, n, NULL, 0);
}

SWIFTVT_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
    return copy_linear("cuMemcpyHtoDAsync_v2", DEV(dst), CU_MEMORYTYPE_DEVICE, src, CU_MEMORYTYPE_HOST, n, s, 1);
}

SWIFTVT_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    return copy_linear("cuMemcpyDtoH_v2", dst, CU_MEMORYTYPE_HOST, DEV(src), CU_MEMORYTYPE_DEVICE, n, NULL, 0);
}

SWIFTVT_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy_linear("cuMemcpyDtoHAsync_v2", dst, CU_MEMORYTYPE_HOST, DEV(src), CU_MEMORYTYPE_DEVICE, n, s, 1);
}

SWIFTVT_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    return copy_linear("cuMemcpyDtoD_v2", DEV(dst), CU_MEMORYTYPE_DEVICE, DEV(src), CU_MEMORYTYPE_DEVICE, n, NULL, 0);
}

SWIFTVT_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
    return copy_linear("cuMemcpyDtoDAsync_v2", DEV(dst), CU_MEMORYTYPE_DEVICE, DEV(src), CU_MEMORYTYPE_DEVICE, n, s, 1);
}

static CUresult memset_d8(const char *call, CUdeviceptr dst, unsigned char value, size_t n, CUstream s, int async)
{
    NEED_INIT();
    CUresult rc = need_context(call);
    if (rc == CU_OK && async)
        rc = check_stream(call, s);
    if (rc == CU_OK && device_lost)
        rc = CU_ERROR_LAUNCH_FAILED;
    if (rc == CU_OK && n)
        rc = check_side(call, "destination", CU_MEMORYTYPE_DEVICE, DEV(dst), n);
    if (rc == CU_OK && n)
        memset(DEV(dst), value, n);
    return rc;
}

SWIFTVT_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t n, CUstream s)
{
    return memset_d8("cuMemsetD8Async", dst, value, n, s, 1);
}

SWIFTVT_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t n)
{
    return memset_d8("cuMemsetD8_v2", dst, value, n, NULL, 0);
}

/* ----- Errors ----- */

static const struct {
    int code;
    const char *name;
    const char *text;
} errors[] = {
    { 0, "CUDA_SUCCESS", "no error" },
    { 1, "CUDA_ERROR_INVALID_VALUE", "invalid argument" },
    { 2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory" },
    { 3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error" },
    { 4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down" },
    { 100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected" },
    { 101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal" },
    { 201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context" },
    { 205, "CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed" },
    { 206, "CUDA_ERROR_UNMAP_FAILED", "unmapping of buffer object failed" },
    { 217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices" },
    { 400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle" },
    { 500, "CUDA_ERROR_NOT_FOUND", "named symbol not found" },
    { 600, "CUDA_ERROR_NOT_READY", "device not ready" },
    { 702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated" },
    { 719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure" },
    { 801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported" },
    { 999, "CUDA_ERROR_UNKNOWN", "unknown error" },
};

static CUresult error_lookup(CUresult error, const char **out, int name)
{
    if (!out)
        return CU_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++) {
        if (errors[i].code == (int)error) {
            *out = name ? errors[i].name : errors[i].text;
            return CU_OK;
        }
    }
    *out = NULL;
    return CU_ERROR_INVALID_VALUE;
}

SWIFTVT_EXPORT CUresult cuGetErrorName(CUresult error, const char **pstr)
{
    return error_lookup(error, pstr, 1);
}

SWIFTVT_EXPORT CUresult cuGetErrorString(CUresult error, const char **pstr)
{
    return error_lookup(error, pstr, 0);
}

/* ----- What the double does not do: kernels, modules, textures, arrays, graphics interop and
 * external memory. Exported because loaders (FFmpeg's dynlink_loader.h LOAD_SYMBOL, GStreamer's
 * gstcudaloader.c) need every symbol at load time; they answer CUDA_ERROR_NOT_SUPPORTED. ----- */

/* These entry points answer CUDA_ERROR_NOT_SUPPORTED whatever they are given, as a driver without
 * the feature does, so no argument is read. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define UNSUPPORTED(name, ...)                                                                          \
    SWIFTVT_EXPORT CUresult name(__VA_ARGS__)                                                           \
    {                                                                                                   \
        swiftvt_cuda_log("%s: not supported by the software device", #name);                            \
        return CU_ERROR_NOT_SUPPORTED;                                                                  \
    }

UNSUPPORTED(cuLaunchKernel, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
            unsigned shared, CUstream s, void **params, void **extra)
UNSUPPORTED(cuLinkCreate, unsigned n, CUjit_option *o, void **v, CUlinkState *state)
UNSUPPORTED(cuLinkAddData, CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
            unsigned n, CUjit_option *o, void **v)
UNSUPPORTED(cuLinkComplete, CUlinkState state, void **cubin, size_t *size)
UNSUPPORTED(cuLinkDestroy, CUlinkState state)
UNSUPPORTED(cuModuleLoadData, CUmodule *module, const void *image)
UNSUPPORTED(cuModuleUnload, CUmodule module)
UNSUPPORTED(cuModuleGetFunction, CUfunction *f, CUmodule module, const char *name)
UNSUPPORTED(cuModuleGetGlobal, CUdeviceptr *p, size_t *bytes, CUmodule module, const char *name)
UNSUPPORTED(cuTexObjectCreate, CUtexObject *t, const CUDA_RESOURCE_DESC *r, const CUDA_TEXTURE_DESC *d,
            const CUDA_RESOURCE_VIEW_DESC *v)
UNSUPPORTED(cuTexObjectDestroy, CUtexObject t)
UNSUPPORTED(cuGLGetDevices_v2, unsigned *count, CUdevice *devices, unsigned n, CUGLDeviceList list)
UNSUPPORTED(cuGraphicsGLRegisterImage, CUgraphicsResource *r, GLuint image, GLenum target, unsigned flags)
UNSUPPORTED(cuGraphicsGLRegisterBuffer, CUgraphicsResource *r, GLuint buffer, unsigned flags)
UNSUPPORTED(cuGraphicsUnregisterResource, CUgraphicsResource r)
UNSUPPORTED(cuGraphicsMapResources, unsigned count, CUgraphicsResource *r, CUstream s)
UNSUPPORTED(cuGraphicsUnmapResources, unsigned count, CUgraphicsResource *r, CUstream s)
UNSUPPORTED(cuGraphicsSubResourceGetMappedArray, CUarray *a, CUgraphicsResource r, unsigned index, unsigned level)
UNSUPPORTED(cuGraphicsResourceGetMappedPointer_v2, CUdeviceptr *p, size_t *size, CUgraphicsResource r)
UNSUPPORTED(cuGraphicsResourceSetMapFlags_v2, CUgraphicsResource r, unsigned flags)
UNSUPPORTED(cuImportExternalMemory, CUexternalMemory *m, const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *d)
UNSUPPORTED(cuDestroyExternalMemory, CUexternalMemory m)
UNSUPPORTED(cuExternalMemoryGetMappedBuffer, CUdeviceptr *p, CUexternalMemory m, const CUDA_EXTERNAL_MEMORY_BUFFER_DESC *d)
UNSUPPORTED(cuExternalMemoryGetMappedMipmappedArray, CUmipmappedArray *a, CUexternalMemory m,
            const CUDA_EXTERNAL_MEMORY_MIPMAPPED_ARRAY_DESC *d)
UNSUPPORTED(cuMipmappedArrayGetLevel, CUarray *a, CUmipmappedArray m, unsigned level)
UNSUPPORTED(cuMipmappedArrayDestroy, CUmipmappedArray m)
UNSUPPORTED(cuImportExternalSemaphore, CUexternalSemaphore *s, const CUDA_EXTERNAL_SEMAPHORE_HANDLE_DESC *d)
UNSUPPORTED(cuDestroyExternalSemaphore, CUexternalSemaphore s)
UNSUPPORTED(cuSignalExternalSemaphoresAsync, const CUexternalSemaphore *s, const CUDA_EXTERNAL_SEMAPHORE_SIGNAL_PARAMS *p,
            unsigned n, CUstream stream)
UNSUPPORTED(cuWaitExternalSemaphoresAsync, const CUexternalSemaphore *s, const CUDA_EXTERNAL_SEMAPHORE_WAIT_PARAMS *p,
            unsigned n, CUstream stream)
UNSUPPORTED(cuArray3DCreate_v2, CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
UNSUPPORTED(cuArrayDestroy, CUarray a)
UNSUPPORTED(cuEGLStreamProducerConnect, CUeglStreamConnection *c, ffnv_EGLStreamKHR s, ffnv_EGLint w, ffnv_EGLint h)
UNSUPPORTED(cuEGLStreamProducerDisconnect, CUeglStreamConnection *c)
UNSUPPORTED(cuEGLStreamConsumerDisconnect, CUeglStreamConnection *c)
UNSUPPORTED(cuEGLStreamProducerPresentFrame, CUeglStreamConnection *c, CUeglFrame f, CUstream *s)
UNSUPPORTED(cuEGLStreamProducerReturnFrame, CUeglStreamConnection *c, CUeglFrame *f, CUstream *s)

/* At process exit: every object the client did not release (tests expect zeros). */
__attribute__((destructor)) static void report_at_exit(void)
{
    if (!initialised)
        return;
    pthread_mutex_lock(&lock);
    int ctxs = 0;
    for (struct CUctx_st *c = contexts; c; c = c->next)
        ctxs += c->live;
    for (int i = 0; i < MAX_DEVICES; i++)
        ctxs += primary_refs[i] > 0;
    live_objects("process exit", ctxs, global_counts, live_streams, live_allocations);
    pthread_mutex_unlock(&lock);
}
