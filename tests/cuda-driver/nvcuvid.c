/* swiftvt_cuda: libnvcuvid.so.1 of the software CUDA double (tests/cuda-driver/README.md): the
 * NVDEC decoder API (Video Codec SDK, "NVDEC Video Decoder API Programming Guide"): capabilities,
 * decoders, cuvidDecodePicture (synchronous: the picture is decoded when the call returns, like
 * the VA driver's vaEndPicture), decode status, mapping decoded pictures as NV12 (luma rows of
 * ulTargetHeight, then interleaved chroma at devPtr + pitch * ulTargetHeight) into one of
 * ulNumOutputSurfaces output surfaces, and the context locks. The video parser and video source
 * (nvcuvid.h) are not implemented: clients with their own parser (FFmpeg, GStreamer's
 * GstH264Decoder-based nvh264dec) do not use them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "h264_cuvid.h"

#define DECODER_MAGIC 0x53444543u  /* "SDEC" */
#define LOCK_MAGIC 0x534c434bu
#define MAX_SIZE 4096
#define MAX_MBS 65536
#define PITCH_ALIGNMENT 512

struct _CUcontextlock_st {
    unsigned magic;
    pthread_mutex_t mutex;
    CUcontext ctx;
};

struct surface {
    uint8_t *data;              /* NV12, coded size (pitch x height, then chroma) */
    int decoded;
    int failed;                 /* its last picture failed: later DPB entries naming it are not checked */
    cuvidDecodeStatus status;
    struct h264_cuvid_picture picture;
};

struct output {
    uint8_t *data;              /* NV12 at the target size */
    int mapped;
    int from;                   /* the decode surface mapped into it */
};

struct decoder {
    unsigned magic;
    CUcontext ctx;
    CUvideoctxlock lock;
    CUVIDDECODECREATEINFO info;
    size_t pitch, height;       /* of the decode surfaces */
    size_t out_pitch;
    int num_surfaces, num_outputs;
    struct surface *surfaces;
    struct output *outputs;
    struct h264_cuvid h264;
    long pictures;              /* decoded, for the report at cuvidDestroyDecoder */
    pthread_mutex_t mutex;
    struct decoder *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct decoder *decoders;
static long surfaces_allocated;   /* for SWIFTVT_CUDA_OUT_OF_MEMORY_AT */
static long decode_calls;         /* for SWIFTVT_CUDA_FAIL_DECODE and SWIFTVT_CUDA_DEVICE_LOST */

static long env_number(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? atol(v) : 0;
}

static struct decoder *find_decoder(CUvideodecoder handle, const char *call)
{
    pthread_mutex_lock(&lock);
    struct decoder *d = decoders;
    while (d && d != handle)
        d = d->next;
    pthread_mutex_unlock(&lock);
    if (!d || d->magic != DECODER_MAGIC) {
        swiftvt_cuda_validation("%s: %p is not a live decoder", call, handle);
        return NULL;
    }
    return d;
}

/* A decoder call needs a current context unless the decoder was made with a vidLock
 * (CUVIDDECODECREATEINFO::vidLock: "context lock used for synchronizing ownership of the cuda
 * context"). */
static CUresult need_context(const struct decoder *d, const char *call)
{
    if (!swiftvt_cuda_initialised())
        return CU_ERROR_NOT_INITIALIZED;
    if (d && d->lock)
        return CU_OK;
    CUcontext ctx = swiftvt_cuda_current();
    if (!ctx) {
        swiftvt_cuda_validation("%s: no CUDA context is current on the calling thread (and no vidLock)", call);
        return CU_ERROR_INVALID_CONTEXT;
    }
    if (!swiftvt_cuda_context_valid(ctx)) {
        swiftvt_cuda_validation("%s: the current context %p was destroyed", call, (void *)ctx);
        return CU_ERROR_INVALID_CONTEXT;
    }
    return CU_OK;
}

/* ----- Capabilities ----- */

SWIFTVT_EXPORT CUresult cuvidGetDecoderCaps(CUVIDDECODECAPS *caps)
{
    if (!caps)
        return CU_ERROR_INVALID_VALUE;
    CUresult rc = need_context(NULL, "cuvidGetDecoderCaps");
    if (rc != CU_OK)
        return rc;
    if (swiftvt_cuda_device_lost())
        return CU_ERROR_LAUNCH_FAILED;
    /* "If IN parameters passed to the driver are not supported by NVDEC-HW, then all OUT params
     * are set to 0." */
    caps->bIsSupported = 0;
    caps->nNumNVDECs = 0;
    caps->nOutputFormatMask = 0;
    caps->nMaxWidth = caps->nMaxHeight = caps->nMaxMBCount = 0;
    caps->nMinWidth = caps->nMinHeight = 0;
    caps->bIsHistogramSupported = 0;
    caps->nCounterBitDepth = 0;
    caps->nMaxHistogramBins = 0;
    if (caps->eCodecType == cudaVideoCodec_H264 && caps->eChromaFormat == cudaVideoChromaFormat_420 &&
        caps->nBitDepthMinus8 == 0) {
        caps->bIsSupported = 1;
        caps->nNumNVDECs = 1;
        caps->nOutputFormatMask = 1 << cudaVideoSurfaceFormat_NV12;
        caps->nMaxWidth = caps->nMaxHeight = MAX_SIZE;
        caps->nMaxMBCount = MAX_MBS;
        caps->nMinWidth = 48;
        caps->nMinHeight = 16;
    }
    swiftvt_cuda_log("cuvidGetDecoderCaps(codec %d, chroma %d, depth %u): %s", caps->eCodecType, caps->eChromaFormat,
                     caps->nBitDepthMinus8, caps->bIsSupported ? "supported" : "not supported");
    return CU_OK;
}

/* ----- Decoders ----- */

static void free_decoder(struct decoder *d)
{
    if (d->surfaces)
        for (int i = 0; i < d->num_surfaces; i++)
            free(d->surfaces[i].data);
    if (d->outputs)
        for (int i = 0; i < d->num_outputs; i++)
            free(d->outputs[i].data);
    free(d->surfaces);
    free(d->outputs);
    h264_cuvid_free(&d->h264);
    pthread_mutex_destroy(&d->mutex);
    d->magic = 0;
    free(d);
}

static int bad(const char *what)
{
    swiftvt_cuda_validation("cuvidCreateDecoder: %s", what);
    return 1;
}

SWIFTVT_EXPORT CUresult cuvidCreateDecoder(CUvideodecoder *handle, CUVIDDECODECREATEINFO *ci)
{
    if (!handle || !ci) {
        swiftvt_cuda_validation("cuvidCreateDecoder: NULL %s", !handle ? "phDecoder" : "pdci");
        return CU_ERROR_INVALID_VALUE;
    }
    swiftvt_cuda_log("cuvidCreateDecoder(%lux%lu, codec %d, %lu decode / %lu output surfaces, target %lux%lu)",
                     (unsigned long)ci->ulWidth, (unsigned long)ci->ulHeight, ci->CodecType,
                     (unsigned long)ci->ulNumDecodeSurfaces, (unsigned long)ci->ulNumOutputSurfaces,
                     (unsigned long)ci->ulTargetWidth, (unsigned long)ci->ulTargetHeight);
    struct _CUcontextlock_st *vlock = ci->vidLock;
    if (vlock && vlock->magic != LOCK_MAGIC) {
        swiftvt_cuda_validation("cuvidCreateDecoder: vidLock %p is not a live context lock", (void *)vlock);
        return CU_ERROR_INVALID_HANDLE;
    }
    struct decoder probe = { .lock = vlock };
    CUresult rc = need_context(&probe, "cuvidCreateDecoder");
    if (rc != CU_OK)
        return rc;
    if (swiftvt_cuda_device_lost())
        return CU_ERROR_LAUNCH_FAILED;
    /* Codecs, formats and sizes: what cuvidGetDecoderCaps says (the rest is NOT_SUPPORTED, as a
     * device without that decoder). */
    if (ci->CodecType != cudaVideoCodec_H264 || ci->ChromaFormat != cudaVideoChromaFormat_420 || ci->bitDepthMinus8 != 0 ||
        ci->OutputFormat != cudaVideoSurfaceFormat_NV12) {
        swiftvt_cuda_report("swiftvt_cuda REFUSED: cuvidCreateDecoder: codec %d chroma %d depth %lu output format %d "
                            "(H.264 8-bit 4:2:0 to NV12 only)", ci->CodecType, ci->ChromaFormat,
                            (unsigned long)ci->bitDepthMinus8, ci->OutputFormat);
        return CU_ERROR_NOT_SUPPORTED;
    }
    int invalid = 0;
    unsigned long w = ci->ulWidth, h = ci->ulHeight;
    unsigned long max_w = ci->ulMaxWidth ? ci->ulMaxWidth : w, max_h = ci->ulMaxHeight ? ci->ulMaxHeight : h;
    if (w < 48 || h < 16 || max_w > MAX_SIZE || max_h > MAX_SIZE || max_w < w || max_h < h ||
        ((max_w + 15) / 16) * ((max_h + 15) / 16) > MAX_MBS)
        invalid |= bad("coded size outside the capabilities (48x16 to 4096x4096, 65536 macroblocks) or above ulMaxWidth/Height");
    if (ci->ulNumDecodeSurfaces < 1 || ci->ulNumDecodeSurfaces > 32)
        invalid |= bad("ulNumDecodeSurfaces not in 1..32");
    if (ci->ulNumOutputSurfaces < 1)
        invalid |= bad("ulNumOutputSurfaces is 0");
    if ((int)ci->DeinterlaceMode < cudaVideoDeinterlaceMode_Weave || ci->DeinterlaceMode > cudaVideoDeinterlaceMode_Adaptive)
        invalid |= bad("DeinterlaceMode is not Weave, Bob or Adaptive");
    if (ci->ulCreationFlags & ~0x7ul)
        invalid |= bad("unknown ulCreationFlags");
    /* display_area: a rectangle of the coded picture (all zero: the whole of it). */
    int left = ci->display_area.left, top = ci->display_area.top, right = ci->display_area.right,
        bottom = ci->display_area.bottom;
    if (!left && !top && !right && !bottom) {
        right = (int)w;
        bottom = (int)h;
    }
    if (left < 0 || top < 0 || right <= left || bottom <= top || (unsigned long)right > max_w || (unsigned long)bottom > max_h)
        invalid |= bad("display_area is not a non-empty rectangle inside the coded picture");
    if (ci->ulTargetWidth == 0 || ci->ulTargetHeight == 0 || ci->ulTargetWidth > MAX_SIZE || ci->ulTargetHeight > MAX_SIZE ||
        (ci->ulTargetWidth & 1) || (ci->ulTargetHeight & 1))
        invalid |= bad("ulTargetWidth/Height zero, odd or above 4096 (\"should be aligned to 2\")");
    int tr_set = ci->target_rect.left || ci->target_rect.top || ci->target_rect.right || ci->target_rect.bottom;
    if (tr_set && (ci->target_rect.left != 0 || ci->target_rect.top != 0 ||
                   (unsigned long)ci->target_rect.right != ci->ulTargetWidth ||
                   (unsigned long)ci->target_rect.bottom != ci->ulTargetHeight)) {
        swiftvt_cuda_report("swiftvt_cuda REFUSED: cuvidCreateDecoder: a target_rect smaller than the target is not supported");
        return CU_ERROR_NOT_SUPPORTED;
    }
    if (ci->enableHistogram)
        invalid |= bad("enableHistogram, which cuvidGetDecoderCaps says is not supported");
    if (invalid)
        return CU_ERROR_INVALID_VALUE;
    if (swiftvt_cuda_fail("create-decoder"))
        return CU_ERROR_NOT_SUPPORTED;

    /* SWIFTVT_CUDA_OUT_OF_MEMORY_AT: the N-th decode surface of the process fails. The counter
     * advances by every decoder's surfaces, the failing one's included. */
    long oom_at = env_number("SWIFTVT_CUDA_OUT_OF_MEMORY_AT");
    pthread_mutex_lock(&lock);
    long first = surfaces_allocated + 1;
    surfaces_allocated += (long)ci->ulNumDecodeSurfaces;
    long last = surfaces_allocated;
    pthread_mutex_unlock(&lock);
    if (oom_at > 0 && oom_at >= first && oom_at <= last) {
        swiftvt_cuda_report("swiftvt_cuda FAULT: decode surface %ld: out of memory (SWIFTVT_CUDA_OUT_OF_MEMORY_AT)", oom_at);
        return CU_ERROR_OUT_OF_MEMORY;
    }

    struct decoder *d = calloc(1, sizeof(*d));
    if (!d)
        return CU_ERROR_OUT_OF_MEMORY;
    d->magic = DECODER_MAGIC;
    d->info = *ci;
    d->info.display_area.left = (short)left;
    d->info.display_area.top = (short)top;
    d->info.display_area.right = (short)right;
    d->info.display_area.bottom = (short)bottom;
    d->lock = vlock;
    d->ctx = vlock ? vlock->ctx : swiftvt_cuda_current();
    d->pitch = (max_w + 15) / 16 * 16;
    d->height = (max_h + 15) / 16 * 16;
    d->out_pitch = (ci->ulTargetWidth + PITCH_ALIGNMENT - 1) / PITCH_ALIGNMENT * PITCH_ALIGNMENT;
    d->num_surfaces = (int)ci->ulNumDecodeSurfaces;
    d->num_outputs = (int)ci->ulNumOutputSurfaces;
    pthread_mutex_init(&d->mutex, NULL);
    d->surfaces = calloc((size_t)d->num_surfaces, sizeof(*d->surfaces));
    d->outputs = calloc((size_t)d->num_outputs, sizeof(*d->outputs));
    int failed = !d->surfaces || !d->outputs;
    for (int i = 0; !failed && i < d->num_surfaces; i++)
        failed = !(d->surfaces[i].data = calloc(1, d->pitch * d->height * 3 / 2));
    for (int i = 0; !failed && i < d->num_outputs; i++)
        failed = !(d->outputs[i].data = aligned_alloc(PITCH_ALIGNMENT, d->out_pitch * ci->ulTargetHeight * 3 / 2));
    if (failed) {
        free_decoder(d);
        return CU_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&lock);
    d->next = decoders;
    decoders = d;
    pthread_mutex_unlock(&lock);
    swiftvt_cuda_track(KIND_DECODER, d->ctx, 1);
    *handle = d;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuvidDestroyDecoder(CUvideodecoder handle)
{
    swiftvt_cuda_log("cuvidDestroyDecoder(%p)", handle);
    struct decoder *d = find_decoder(handle, "cuvidDestroyDecoder");
    if (!d)
        return CU_ERROR_INVALID_HANDLE;
    int mapped = 0;
    for (int i = 0; i < d->num_outputs; i++)
        mapped += d->outputs[i].mapped;
    if (mapped) {
        swiftvt_cuda_validation("cuvidDestroyDecoder: %d frame(s) still mapped (cuvidUnmapVideoFrame first)", mapped);
        return CU_ERROR_INVALID_VALUE;
    }
    /* Destroying works on a lost device (the client's clean-up after the error). */
    pthread_mutex_lock(&lock);
    struct decoder **p = &decoders;
    while (*p != d)
        p = &(*p)->next;
    *p = d->next;
    pthread_mutex_unlock(&lock);
    swiftvt_cuda_track(KIND_DECODER, d->ctx, -1);
    swiftvt_cuda_log("decoder %p destroyed after %ld picture(s)", (void *)d, d->pictures);
    swiftvt_cuda_note("decoder-destroyed pictures=%ld", d->pictures);
    free_decoder(d);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuvidReconfigureDecoder(CUvideodecoder handle, CUVIDRECONFIGUREDECODERINFO *info)
{
    (void)info;
    if (!find_decoder(handle, "cuvidReconfigureDecoder"))
        return CU_ERROR_INVALID_HANDLE;
    swiftvt_cuda_report("swiftvt_cuda REFUSED: cuvidReconfigureDecoder is not supported (destroy and create)");
    return CU_ERROR_NOT_SUPPORTED;
}

/* ----- Decoding ----- */

static void copy_picture(struct decoder *d, struct surface *s, const struct avdec_picture *pic)
{
    size_t width = (size_t)pic->width < d->pitch ? (size_t)pic->width : d->pitch;
    size_t height = (size_t)pic->height < d->height ? (size_t)pic->height : d->height;
    for (size_t y = 0; y < height; y++)
        memcpy(s->data + y * d->pitch, pic->plane[0] + (ptrdiff_t)y * pic->stride[0], width);
    uint8_t *uv = s->data + d->pitch * d->height;
    for (size_t y = 0; y < (height + 1) / 2; y++) {
        const uint8_t *u = pic->plane[1] + (ptrdiff_t)y * pic->stride[1];
        const uint8_t *v = pic->plane[2] + (ptrdiff_t)y * pic->stride[2];
        uint8_t *row = uv + y * d->pitch;
        for (size_t x = 0; x < (width + 1) / 2; x++) {
            row[2 * x] = u[x];
            row[2 * x + 1] = v[x];
        }
    }
}

static int surface_mapped(const struct decoder *d, int index)
{
    for (int i = 0; i < d->num_outputs; i++)
        if (d->outputs[i].mapped && d->outputs[i].from == index)
            return 1;
    return 0;
}

/* The bitstream layout (CUVIDPICPARAMS: "nNumSlices entries, contains offset of each slice within
 * the bitstream data buffer"): offsets ascending, inside the data, each at a 00 00 01 start code. */
static int check_bitstream(const CUVIDPICPARAMS *p)
{
    if (!p->pBitstreamData || p->nBitstreamDataLen < 4 || p->nNumSlices < 1 || !p->pSliceDataOffsets) {
        swiftvt_cuda_validation("cuvidDecodePicture: no bitstream (pBitstreamData %p, nBitstreamDataLen %u, nNumSlices %u, "
                                "pSliceDataOffsets %p)", (const void *)p->pBitstreamData, p->nBitstreamDataLen,
                                p->nNumSlices, (const void *)p->pSliceDataOffsets);
        return 0;
    }
    for (unsigned i = 0; i < p->nNumSlices; i++) {
        unsigned off = p->pSliceDataOffsets[i];
        if ((i && off <= p->pSliceDataOffsets[i - 1]) || off + 4 > p->nBitstreamDataLen) {
            swiftvt_cuda_validation("cuvidDecodePicture: pSliceDataOffsets[%u] %u not ascending or outside nBitstreamDataLen %u",
                                    i, off, p->nBitstreamDataLen);
            return 0;
        }
        const uint8_t *b = p->pBitstreamData + off;
        if (b[0] != 0 || b[1] != 0 || b[2] != 1) {
            swiftvt_cuda_validation("cuvidDecodePicture: slice %u at offset %u does not start with 00 00 01", i, off);
            return 0;
        }
    }
    return 1;
}

/* Every DPB entry must name a surface that holds that picture (CUVIDH264DPBENTRY: PicIdx, FrameIdx
 * "frame_num(short-term) or LongTermFrameIdx(long-term)", FieldOrderCnt). */
static int check_dpb(const struct decoder *d, const CUVIDPICPARAMS *p)
{
    const CUVIDH264PICPARAMS *h = &p->CodecSpecific.h264;
    int ok = 1;
    for (int i = 0; i < 16; i++) {
        const CUVIDH264DPBENTRY *e = &h->dpb[i];
        if (e->PicIdx < 0)
            continue;
        if (e->PicIdx >= d->num_surfaces) {
            swiftvt_cuda_validation("dpb[%d].PicIdx %d: beyond ulNumDecodeSurfaces %d", i, e->PicIdx, d->num_surfaces);
            ok = 0;
            continue;
        }
        if (!e->used_for_reference)
            continue;
        if (e->PicIdx == p->CurrPicIdx) {
            swiftvt_cuda_validation("dpb[%d].PicIdx %d: the surface being decoded is also a reference", i, e->PicIdx);
            ok = 0;
            continue;
        }
        const struct surface *s = &d->surfaces[e->PicIdx];
        if (s->failed)
            continue;
        if (!s->decoded) {
            swiftvt_cuda_validation("dpb[%d].PicIdx %d: no picture was decoded into that surface", i, e->PicIdx);
            ok = 0;
            continue;
        }
        const struct h264_cuvid_picture *pic = &s->picture;
        int poc_ok = (e->FieldOrderCnt[0] == pic->poc[0] && e->FieldOrderCnt[1] == pic->poc[1]) ||
                     (e->FieldOrderCnt[0] == pic->poc_after_mmco5[0] && e->FieldOrderCnt[1] == pic->poc_after_mmco5[1]);
        int frame_ok = e->is_long_term || e->FrameIdx == (int)pic->frame_num || (pic->mmco5 && e->FrameIdx == 0);
        if (!poc_ok || !frame_ok) {
            swiftvt_cuda_validation("dpb[%d] (PicIdx %d): client FrameIdx %d FieldOrderCnt %d/%d, the surface holds frame_num %u "
                                    "POC %d/%d", i, e->PicIdx, e->FrameIdx, e->FieldOrderCnt[0], e->FieldOrderCnt[1],
                                    pic->frame_num, pic->poc[0], pic->poc[1]);
            ok = 0;
        }
    }
    return ok;
}

static CUresult decode(struct decoder *d, CUVIDPICPARAMS *p)
{
    long call;
    pthread_mutex_lock(&lock);
    call = ++decode_calls;
    pthread_mutex_unlock(&lock);
    long lost_at = env_number("SWIFTVT_CUDA_DEVICE_LOST");
    if (lost_at > 0 && call >= lost_at)
        swiftvt_cuda_set_device_lost();
    if (swiftvt_cuda_device_lost())
        return CU_ERROR_LAUNCH_FAILED;
    /* SWIFTVT_CUDA_FAIL_DECODE=N[:status|:call] */
    int fail_status = 0;
    const char *fail = getenv("SWIFTVT_CUDA_FAIL_DECODE");
    if (fail && *fail && atol(fail) == call) {
        const char *mode = strchr(fail, ':');
        if (mode && strcmp(mode, ":call") == 0) {
            if (p->CurrPicIdx >= 0 && p->CurrPicIdx < d->num_surfaces)
                d->surfaces[p->CurrPicIdx].failed = 1;
            swiftvt_cuda_report("swiftvt_cuda FAULT: cuvidDecodePicture %ld fails (SWIFTVT_CUDA_FAIL_DECODE)", call);
            return CU_ERROR_UNKNOWN;
        }
        fail_status = 1;
    }
    if (p->CurrPicIdx < 0 || p->CurrPicIdx >= d->num_surfaces) {
        swiftvt_cuda_validation("cuvidDecodePicture: CurrPicIdx %d not in 0..ulNumDecodeSurfaces-1 (%d)", p->CurrPicIdx,
                                d->num_surfaces - 1);
        return CU_ERROR_INVALID_VALUE;
    }
    if (surface_mapped(d, p->CurrPicIdx)) {
        swiftvt_cuda_validation("cuvidDecodePicture: CurrPicIdx %d is mapped (cuvidUnmapVideoFrame first)", p->CurrPicIdx);
        return CU_ERROR_INVALID_VALUE;
    }
    if (p->PicWidthInMbs < 1 || p->FrameHeightInMbs < 1 || (size_t)p->PicWidthInMbs * 16 > d->pitch ||
        (size_t)p->FrameHeightInMbs * 16 > d->height) {
        swiftvt_cuda_validation("cuvidDecodePicture: PicWidthInMbs %d x FrameHeightInMbs %d does not fit the decoder's %zux%zu",
                                p->PicWidthInMbs, p->FrameHeightInMbs, d->pitch, d->height);
        return CU_ERROR_INVALID_VALUE;
    }
    if (!check_bitstream(p) || !check_dpb(d, p))
        return CU_ERROR_INVALID_VALUE;
    struct surface *s = &d->surfaces[p->CurrPicIdx];
    struct avdec_picture picture;
    struct h264_cuvid_picture decoded;
    memset(&picture, 0, sizeof(picture));
    memset(&decoded, 0, sizeof(decoded));
    int damaged = 0;
    CUresult rc = h264_cuvid_decode(&d->h264, p, &picture, &decoded, &damaged);
    if (rc != CU_OK) {
        s->decoded = 0;
        s->failed = 1;
        s->status = cuvidDecodeStatus_Error;
        return rc;
    }
    s->decoded = 1;
    s->failed = 0;
    s->picture = decoded;
    d->pictures++;
    if (fail_status) {
        /* Green: Y = U = V = 0. */
        memset(s->data, 0, d->pitch * d->height * 3 / 2);
        s->status = cuvidDecodeStatus_Error;
        swiftvt_cuda_report("swiftvt_cuda FAULT: cuvidDecodePicture %ld: decode status Error (SWIFTVT_CUDA_FAIL_DECODE)", call);
    } else if (damaged) {
        s->status = cuvidDecodeStatus_Error;
    } else {
        copy_picture(d, s, &picture);
        s->status = cuvidDecodeStatus_Success;
    }
    swiftvt_cuda_log("cuvidDecodePicture %ld: surface %d frame_num %u poc %d/%d%s", call, p->CurrPicIdx, decoded.frame_num,
                     decoded.poc[0], decoded.poc[1], s->status == cuvidDecodeStatus_Success ? "" : " (error)");
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuvidDecodePicture(CUvideodecoder handle, CUVIDPICPARAMS *p)
{
    struct decoder *d = find_decoder(handle, "cuvidDecodePicture");
    if (!d)
        return CU_ERROR_INVALID_HANDLE;
    if (!p) {
        swiftvt_cuda_validation("cuvidDecodePicture: NULL pPicParams");
        return CU_ERROR_INVALID_VALUE;
    }
    CUresult rc = need_context(d, "cuvidDecodePicture");
    if (rc != CU_OK)
        return rc;
    if (d->lock)
        pthread_mutex_lock(&d->lock->mutex);
    pthread_mutex_lock(&d->mutex);
    rc = decode(d, p);
    pthread_mutex_unlock(&d->mutex);
    if (d->lock)
        pthread_mutex_unlock(&d->lock->mutex);
    return rc;
}

SWIFTVT_EXPORT CUresult cuvidGetDecodeStatus(CUvideodecoder handle, int index, CUVIDGETDECODESTATUS *status)
{
    struct decoder *d = find_decoder(handle, "cuvidGetDecodeStatus");
    if (!d)
        return CU_ERROR_INVALID_HANDLE;
    if (!status || index < 0 || index >= d->num_surfaces) {
        swiftvt_cuda_validation("cuvidGetDecodeStatus: %s", !status ? "NULL pDecodeStatus" : "nPicIdx out of range");
        return CU_ERROR_INVALID_VALUE;
    }
    if (swiftvt_cuda_device_lost())
        return CU_ERROR_LAUNCH_FAILED;
    memset(status, 0, sizeof(*status));
    pthread_mutex_lock(&d->mutex);
    struct surface *s = &d->surfaces[index];
    status->decodeStatus = s->decoded || s->status ? s->status : cuvidDecodeStatus_Invalid;
    pthread_mutex_unlock(&d->mutex);
    return CU_OK;
}

/* ----- Mapping ----- */

/* The display area of the decoded picture scaled to the target (NV12), nearest sample. */
static void post_process(const struct decoder *d, const struct surface *s, uint8_t *out)
{
    const CUVIDDECODECREATEINFO *ci = &d->info;
    size_t tw = ci->ulTargetWidth, th = ci->ulTargetHeight;
    size_t left = (size_t)ci->display_area.left, top = (size_t)ci->display_area.top;
    size_t dw = (size_t)(ci->display_area.right - ci->display_area.left);
    size_t dh = (size_t)(ci->display_area.bottom - ci->display_area.top);
    const uint8_t *uv = s->data + d->pitch * d->height;
    uint8_t *out_uv = out + d->out_pitch * th;
    if (dw == tw && dh == th) {
        for (size_t y = 0; y < th; y++)
            memcpy(out + y * d->out_pitch, s->data + (top + y) * d->pitch + left, tw);
        for (size_t y = 0; y < th / 2; y++)
            memcpy(out_uv + y * d->out_pitch, uv + (top / 2 + y) * d->pitch + (left & ~(size_t)1), tw);
        return;
    }
    for (size_t y = 0; y < th; y++)
        for (size_t x = 0; x < tw; x++)
            out[y * d->out_pitch + x] = s->data[(top + y * dh / th) * d->pitch + left + x * dw / tw];
    for (size_t y = 0; y < th / 2; y++)
        for (size_t x = 0; x < tw / 2; x++) {
            size_t sy = top / 2 + y * dh / th, sx = left / 2 + x * dw / tw;
            out_uv[y * d->out_pitch + 2 * x] = uv[sy * d->pitch + 2 * sx];
            out_uv[y * d->out_pitch + 2 * x + 1] = uv[sy * d->pitch + 2 * sx + 1];
        }
}

SWIFTVT_EXPORT CUresult cuvidMapVideoFrame64(CUvideodecoder handle, int index, unsigned long long *dev_ptr,
                                             unsigned int *pitch, CUVIDPROCPARAMS *vpp)
{
    struct decoder *d = find_decoder(handle, "cuvidMapVideoFrame64");
    if (!d)
        return CU_ERROR_INVALID_HANDLE;
    if (!dev_ptr || !pitch || !vpp) {
        swiftvt_cuda_validation("cuvidMapVideoFrame64: NULL %s", !dev_ptr ? "pDevPtr" : !pitch ? "pPitch" : "pVPP");
        return CU_ERROR_INVALID_VALUE;
    }
    CUresult rc = need_context(d, "cuvidMapVideoFrame64");
    if (rc != CU_OK)
        return rc;
    if (swiftvt_cuda_device_lost())
        return CU_ERROR_LAUNCH_FAILED;
    if (index < 0 || index >= d->num_surfaces) {
        swiftvt_cuda_validation("cuvidMapVideoFrame64: nPicIdx %d not in 0..%d", index, d->num_surfaces - 1);
        return CU_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&d->mutex);
    struct surface *s = &d->surfaces[index];
    if (!s->decoded) {
        pthread_mutex_unlock(&d->mutex);
        swiftvt_cuda_validation("cuvidMapVideoFrame64: nPicIdx %d holds no decoded picture", index);
        return CU_ERROR_INVALID_VALUE;
    }
    int slot = -1;
    for (int i = 0; i < d->num_outputs && slot < 0; i++)
        if (!d->outputs[i].mapped)
            slot = i;
    if (slot < 0) {
        pthread_mutex_unlock(&d->mutex);
        swiftvt_cuda_validation("cuvidMapVideoFrame64: already %d frames mapped (ulNumOutputSurfaces)", d->num_outputs);
        return CU_ERROR_MAP_FAILED;
    }
    struct output *o = &d->outputs[slot];
    post_process(d, s, o->data);
    o->mapped = 1;
    o->from = index;
    pthread_mutex_unlock(&d->mutex);
    swiftvt_cuda_register_range(o->data, d->out_pitch * d->info.ulTargetHeight * 3 / 2);
    swiftvt_cuda_track(KIND_MAP, d->ctx, 1);
    *dev_ptr = (unsigned long long)(uintptr_t)o->data;
    *pitch = (unsigned int)d->out_pitch;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuvidUnmapVideoFrame64(CUvideodecoder handle, unsigned long long dev_ptr)
{
    struct decoder *d = find_decoder(handle, "cuvidUnmapVideoFrame64");
    if (!d)
        return CU_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&d->mutex);
    struct output *o = NULL;
    for (int i = 0; i < d->num_outputs && !o; i++)
        if (d->outputs[i].mapped && (uintptr_t)d->outputs[i].data == dev_ptr)
            o = &d->outputs[i];
    if (!o) {
        pthread_mutex_unlock(&d->mutex);
        swiftvt_cuda_validation("cuvidUnmapVideoFrame64: %#llx is not a mapped frame of this decoder", dev_ptr);
        return CU_ERROR_INVALID_VALUE;
    }
    o->mapped = 0;
    pthread_mutex_unlock(&d->mutex);
    swiftvt_cuda_unregister_range(o->data);
    swiftvt_cuda_track(KIND_MAP, d->ctx, -1);
    return CU_OK;
}

/* The 32-bit variants cannot address this double's host memory above 4 GiB; 64-bit clients use
 * the 64-bit entry points (dynlink_loader.h loads cuvidMapVideoFrame64 on 64-bit systems). */
SWIFTVT_EXPORT CUresult cuvidMapVideoFrame(CUvideodecoder handle, int index, unsigned int *dev_ptr, unsigned int *pitch,
                                           CUVIDPROCPARAMS *vpp)
{
    (void)handle, (void)index, (void)dev_ptr, (void)pitch, (void)vpp;
    swiftvt_cuda_report("swiftvt_cuda REFUSED: cuvidMapVideoFrame (32-bit pointers); use cuvidMapVideoFrame64");
    return CU_ERROR_NOT_SUPPORTED;
}

SWIFTVT_EXPORT CUresult cuvidUnmapVideoFrame(CUvideodecoder handle, unsigned int dev_ptr)
{
    (void)handle, (void)dev_ptr;
    return CU_ERROR_NOT_SUPPORTED;
}

/* ----- Context locks ----- */

SWIFTVT_EXPORT CUresult cuvidCtxLockCreate(CUvideoctxlock *out, CUcontext ctx)
{
    if (!out)
        return CU_ERROR_INVALID_VALUE;
    if (!swiftvt_cuda_initialised())
        return CU_ERROR_NOT_INITIALIZED;
    if (!swiftvt_cuda_context_valid(ctx)) {
        swiftvt_cuda_validation("cuvidCtxLockCreate: %p is not a live context", (void *)ctx);
        return CU_ERROR_INVALID_CONTEXT;
    }
    struct _CUcontextlock_st *l = calloc(1, sizeof(*l));
    if (!l)
        return CU_ERROR_OUT_OF_MEMORY;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    /* The client may hold the lock (cuvidCtxLock) around a decoder call that takes it again. */
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&l->mutex, &attr);
    pthread_mutexattr_destroy(&attr);
    l->magic = LOCK_MAGIC;
    l->ctx = ctx;
    *out = l;
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuvidCtxLockDestroy(CUvideoctxlock l)
{
    if (!l || l->magic != LOCK_MAGIC) {
        swiftvt_cuda_validation("cuvidCtxLockDestroy: %p is not a live context lock", (void *)l);
        return CU_ERROR_INVALID_HANDLE;
    }
    l->magic = 0;
    pthread_mutex_destroy(&l->mutex);
    free(l);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuvidCtxLock(CUvideoctxlock l, unsigned int flags)
{
    if (!l || l->magic != LOCK_MAGIC || flags != 0)
        return l && l->magic == LOCK_MAGIC ? CU_ERROR_INVALID_VALUE : CU_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&l->mutex);
    return CU_OK;
}

SWIFTVT_EXPORT CUresult cuvidCtxUnlock(CUvideoctxlock l, unsigned int flags)
{
    if (!l || l->magic != LOCK_MAGIC || flags != 0)
        return l && l->magic == LOCK_MAGIC ? CU_ERROR_INVALID_VALUE : CU_ERROR_INVALID_HANDLE;
    pthread_mutex_unlock(&l->mutex);
    return CU_OK;
}

/* ----- The video parser and source (nvcuvid.h): not implemented. Exported because loaders
 * (FFmpeg's dynlink_loader.h) need every symbol. ----- */

#pragma GCC diagnostic ignored "-Wunused-parameter"
#define UNSUPPORTED(name, ...)                                                                  \
    SWIFTVT_EXPORT CUresult name(__VA_ARGS__)                                                   \
    {                                                                                           \
        swiftvt_cuda_report("swiftvt_cuda REFUSED: %s: the NVDEC parser and video source are not implemented", #name); \
        return CU_ERROR_NOT_SUPPORTED;                                                          \
    }

UNSUPPORTED(cuvidCreateVideoParser, CUvideoparser *parser, CUVIDPARSERPARAMS *params)
UNSUPPORTED(cuvidParseVideoData, CUvideoparser parser, CUVIDSOURCEDATAPACKET *packet)
UNSUPPORTED(cuvidDestroyVideoParser, CUvideoparser parser)
UNSUPPORTED(cuvidCreateVideoSource, CUvideosource *source, const char *file, CUVIDSOURCEPARAMS *params)
UNSUPPORTED(cuvidCreateVideoSourceW, CUvideosource *source, const wchar_t *file, CUVIDSOURCEPARAMS *params)
UNSUPPORTED(cuvidDestroyVideoSource, CUvideosource source)
UNSUPPORTED(cuvidSetVideoSourceState, CUvideosource source, cudaVideoState state)

SWIFTVT_EXPORT cudaVideoState cuvidGetVideoSourceState(CUvideosource source)
{
    return cudaVideoState_Error;
}

UNSUPPORTED(cuvidGetSourceVideoFormat, CUvideosource source, CUVIDEOFORMAT *format, unsigned int flags)
UNSUPPORTED(cuvidGetSourceAudioFormat, CUvideosource source, CUAUDIOFORMAT *format, unsigned int flags)
