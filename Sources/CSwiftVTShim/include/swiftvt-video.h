// GstVideoCodecFrame, GstVideoCodecState, GstVideoInfo, GstVideoFrame and GstVideoDecoder's
// error counting: flag and field macros (GST_VIDEO_CODEC_FRAME_IS_SYNC_POINT, GST_VIDEO_INFO_*,
// GST_VIDEO_FRAME_PLANE_*, GST_VIDEO_DECODER_ERROR).
#ifndef SWIFTVT_VIDEO_H
#define SWIFTVT_VIDEO_H

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

static inline gboolean swiftvt_codec_frame_is_sync_point(GstVideoCodecFrame *frame) {
    return GST_VIDEO_CODEC_FRAME_IS_SYNC_POINT(frame);
}
static inline gboolean swiftvt_codec_frame_is_force_keyframe(GstVideoCodecFrame *frame) {
    return GST_VIDEO_CODEC_FRAME_IS_FORCE_KEYFRAME(frame);
}
static inline void swiftvt_codec_frame_set_sync_point(GstVideoCodecFrame *frame, gboolean sync) {
    if (sync) GST_VIDEO_CODEC_FRAME_SET_SYNC_POINT(frame); else GST_VIDEO_CODEC_FRAME_UNSET_SYNC_POINT(frame);
}
static inline void swiftvt_codec_frame_mark_corrupted(GstVideoCodecFrame *frame) {
    GST_VIDEO_CODEC_FRAME_FLAG_SET(frame, GST_VIDEO_CODEC_FRAME_FLAG_CORRUPTED);
}

static inline GstCaps *swiftvt_codec_state_caps(GstVideoCodecState *state) { return state->caps; }
/// The state's video info, in place (gst_video_frame_map takes it by pointer).
static inline GstVideoInfo *swiftvt_codec_state_info(GstVideoCodecState *state) { return &state->info; }

static inline gint swiftvt_video_info_width(const GstVideoInfo *info) { return GST_VIDEO_INFO_WIDTH(info); }
static inline gint swiftvt_video_info_height(const GstVideoInfo *info) { return GST_VIDEO_INFO_HEIGHT(info); }
static inline gint swiftvt_video_info_fps_n(const GstVideoInfo *info) { return GST_VIDEO_INFO_FPS_N(info); }
static inline gint swiftvt_video_info_fps_d(const GstVideoInfo *info) { return GST_VIDEO_INFO_FPS_D(info); }
static inline GstVideoInterlaceMode swiftvt_video_info_interlace_mode(const GstVideoInfo *info) { return GST_VIDEO_INFO_INTERLACE_MODE(info); }
static inline GstVideoFieldOrder swiftvt_video_info_field_order(const GstVideoInfo *info) { return GST_VIDEO_INFO_FIELD_ORDER(info); }
static inline gsize swiftvt_video_info_size(const GstVideoInfo *info) { return GST_VIDEO_INFO_SIZE(info); }

static inline gboolean swiftvt_video_frame_map_read(GstVideoFrame *frame, GstVideoInfo *info, GstBuffer *buffer) {
    return gst_video_frame_map(frame, info, buffer, GST_MAP_READ);
}
static inline gboolean swiftvt_video_frame_map_write(GstVideoFrame *frame, GstVideoInfo *info, GstBuffer *buffer) {
    return gst_video_frame_map(frame, info, buffer, GST_MAP_WRITE);
}
static inline void *swiftvt_video_frame_plane_data(GstVideoFrame *frame, guint plane) {
    return GST_VIDEO_FRAME_PLANE_DATA(frame, plane);
}
static inline gint swiftvt_video_frame_plane_stride(GstVideoFrame *frame, guint plane) {
    return GST_VIDEO_FRAME_PLANE_STRIDE(frame, plane);
}

/// GST_VIDEO_META_API_TYPE (a macro calling gst_video_meta_api_get_type).
static inline GType swiftvt_video_meta_api_type(void) { return GST_VIDEO_META_API_TYPE; }

/// GST_VIDEO_DECODER_ERROR: counts a decoding error toward max-errors; returns GST_FLOW_ERROR
/// once the limit is passed (and posts the error), GST_FLOW_OK before.
static inline GstFlowReturn swiftvt_video_decoder_error(GstVideoDecoder *decoder, gint weight, const char *text,
                                                        const char *debug, const char *file, const char *function,
                                                        gint line) {
    return _gst_video_decoder_error(decoder, weight, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, g_strdup(text),
                                    debug ? g_strdup(debug) : NULL, file, function, line);
}
static inline GstPad *swiftvt_video_decoder_src_pad(GstVideoDecoder *decoder) { return GST_VIDEO_DECODER_SRC_PAD(decoder); }
static inline GstPad *swiftvt_video_encoder_src_pad(GstVideoEncoder *encoder) { return GST_VIDEO_ENCODER_SRC_PAD(encoder); }

G_END_DECLS

/// The GstVideoCaptionMeta after `*state` on `buffer` (start with *state NULL), NULL after the
/// last: a buffer may carry several (gst_buffer_get_video_caption_meta is a macro giving the first).
static inline GstVideoCaptionMeta *swiftvt_buffer_next_caption_meta(GstBuffer *buffer, gpointer *state) {
    return (GstVideoCaptionMeta *)gst_buffer_iterate_meta_filtered(buffer, state, GST_VIDEO_CAPTION_META_API_TYPE);
}

#endif
