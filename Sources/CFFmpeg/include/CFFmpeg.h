// libavcodec and libavutil (FFmpeg 5.1 or later) for SoftwareCodecs, plus stand-ins for the
// macros Swift cannot import. Every helper is prefixed `cffmpeg_`.
#ifndef CFFMPEG_H
#define CFFMPEG_H

#include <errno.h>
#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>

/// Loads libavcodec and libavutil (see loader.c); NULL on success, else what went wrong. Must
/// succeed before any other libav* function is called.
const char *cffmpeg_load(void);

/// AVERROR(EAGAIN): "output must be read first" / "input must be sent first".
static inline int cffmpeg_error_again(void) { return AVERROR(EAGAIN); }
/// AVERROR(ENOMEM).
static inline int cffmpeg_error_no_memory(void) { return AVERROR(ENOMEM); }
/// AVERROR(EINVAL).
static inline int cffmpeg_error_invalid_argument(void) { return AVERROR(EINVAL); }
/// AVERROR_EOF: the decoder is fully drained.
static inline int cffmpeg_error_eof(void) { return AVERROR_EOF; }
/// AVERROR_INVALIDDATA: the bitstream is damaged.
static inline int cffmpeg_error_invalid_data(void) { return AVERROR_INVALIDDATA; }
/// AVERROR_PATCHWELCOME: a feature libavcodec does not implement.
static inline int cffmpeg_error_patch_welcome(void) { return AVERROR_PATCHWELCOME; }
/// AVERROR(ENOSYS).
static inline int cffmpeg_error_not_implemented(void) { return AVERROR(ENOSYS); }
/// AV_NOPTS_VALUE.
static inline int64_t cffmpeg_no_pts(void) { return AV_NOPTS_VALUE; }

/// Pointer to plane `index` of `frame` (AVFrame.data is a fixed array, a tuple in Swift).
static inline uint8_t *cffmpeg_frame_data(const AVFrame *frame, int index) {
    return (index >= 0 && index < AV_NUM_DATA_POINTERS) ? frame->data[index] : NULL;
}

static inline int cffmpeg_frame_linesize(const AVFrame *frame, int index) {
    return (index >= 0 && index < AV_NUM_DATA_POINTERS) ? frame->linesize[index] : 0;
}

/// Sets plane `index` of a frame being allocated in get_buffer2.
static inline void cffmpeg_frame_set_plane(AVFrame *frame, int index, uint8_t *data, int linesize) {
    if (index >= 0 && index < AV_NUM_DATA_POINTERS) {
        frame->data[index] = data;
        frame->linesize[index] = linesize;
    }
}

/// Finishes a video frame allocated in get_buffer2: one buffer covering every plane, and
/// extended_data pointing at data (what the get_buffer2 contract asks for video).
static inline void cffmpeg_frame_set_buffer(AVFrame *frame, AVBufferRef *buffer) {
    frame->buf[0] = buffer;
    frame->extended_data = frame->data;
}

/// avcodec_align_dimensions2 returning the largest linesize alignment of any plane.
static inline int cffmpeg_align_dimensions(AVCodecContext *context, int *width, int *height) {
    int linesize_align[AV_NUM_DATA_POINTERS] = {0};
    avcodec_align_dimensions2(context, width, height, linesize_align);
    int largest = 1;
    for (int i = 0; i < AV_NUM_DATA_POINTERS; i++) {
        if (linesize_align[i] > largest) largest = linesize_align[i];
    }
    return largest;
}

/// Declares a custom get_buffer2 thread-safe. libavcodec 59 still reads the deprecated flag and
/// logs a warning for every frame-threaded open without it (the field is gone in libavcodec 60,
/// where every callback must be thread-safe anyway).
static inline void cffmpeg_declare_thread_safe_callbacks(AVCodecContext *context) {
#if LIBAVCODEC_VERSION_MAJOR < 60
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    context->thread_safe_callbacks = 1;
#pragma GCC diagnostic pop
#pragma clang diagnostic pop
#else
    (void)context;
#endif
}

/// The bytes of a packet's data (AVPacket.data after av_new_packet).
static inline uint8_t *cffmpeg_packet_data(AVPacket *packet) { return packet->data; }

#endif
