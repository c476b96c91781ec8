// The C side of SwiftVT: the GObject/GStreamer boilerplate that Swift cannot express (type
// registration, one generic class whose interface Swift declares, the base classes' vfunc
// trampolines) and fixed-signature stand-ins for the macros and variadic functions Swift cannot
// import. Every element vfunc is forwarded to Swift functions exported with @_cdecl.
#ifndef SWIFTVT_SHIM_H
#define SWIFTVT_SHIM_H

#include <gst/gst.h>
#include <gst/base/base.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

// MARK: Time and buffers (GST_BUFFER_* macros)

static const GstClockTime swiftvt_clock_time_none = GST_CLOCK_TIME_NONE;
static const guint64 swiftvt_second = GST_SECOND;

static inline GstClockTime swiftvt_buffer_pts(const GstBuffer *buffer) { return GST_BUFFER_PTS(buffer); }
static inline GstClockTime swiftvt_buffer_dts(const GstBuffer *buffer) { return GST_BUFFER_DTS(buffer); }
static inline GstClockTime swiftvt_buffer_duration(const GstBuffer *buffer) { return GST_BUFFER_DURATION(buffer); }
static inline void swiftvt_buffer_set_pts(GstBuffer *buffer, GstClockTime t) { GST_BUFFER_PTS(buffer) = t; }
static inline void swiftvt_buffer_set_dts(GstBuffer *buffer, GstClockTime t) { GST_BUFFER_DTS(buffer) = t; }
static inline void swiftvt_buffer_set_duration(GstBuffer *buffer, GstClockTime t) { GST_BUFFER_DURATION(buffer) = t; }
static inline gboolean swiftvt_buffer_has_flags(const GstBuffer *buffer, GstBufferFlags flags) {
    return GST_BUFFER_FLAG_IS_SET(buffer, flags);
}
static inline void swiftvt_buffer_set_flags(GstBuffer *buffer, GstBufferFlags flags) { GST_BUFFER_FLAG_SET(buffer, flags); }
static inline void swiftvt_buffer_unset_flags(GstBuffer *buffer, GstBufferFlags flags) { GST_BUFFER_FLAG_UNSET(buffer, flags); }
static inline GstMapFlags swiftvt_map_read(void) { return GST_MAP_READ; }
static inline GstMapFlags swiftvt_map_write(void) { return GST_MAP_WRITE; }

// MARK: GstBaseParse

static inline gboolean swiftvt_base_parse_is_draining(GstBaseParse *parse) { return GST_BASE_PARSE_DRAINING(parse); }
static inline GstPad *swiftvt_base_parse_src_pad(GstBaseParse *parse) { return GST_BASE_PARSE_SRC_PAD(parse); }
static inline GstPad *swiftvt_base_parse_sink_pad(GstBaseParse *parse) { return GST_BASE_PARSE_SINK_PAD(parse); }
/// Whether the parser pulls its input (filesrc upstream): then it drains only at the end.
static inline gboolean swiftvt_base_parse_is_pulling(GstBaseParse *parse) { return GST_PAD_MODE(GST_BASE_PARSE_SINK_PAD(parse)) == GST_PAD_MODE_PULL; }

// MARK: Caps (gst_caps_new_simple and gst_structure_set are variadic)

static inline GstCaps *swiftvt_caps_new_empty_simple(const char *media_type) { return gst_caps_new_empty_simple(media_type); }
void swiftvt_caps_set_string(GstCaps *caps, const char *field, const char *value);
void swiftvt_caps_set_int(GstCaps *caps, const char *field, gint value);
/// A guint field (h264parse's bit-depth-luma/bit-depth-chroma are G_TYPE_UINT).
void swiftvt_caps_set_uint(GstCaps *caps, const char *field, guint value);
void swiftvt_caps_set_boolean(GstCaps *caps, const char *field, gboolean value);
void swiftvt_caps_set_fraction(GstCaps *caps, const char *field, gint numerator, gint denominator);
/// Sets a GstBuffer field holding a copy of `size` bytes (codec_data: a few dozen bytes).
void swiftvt_caps_set_bytes(GstCaps *caps, const char *field, const guint8 *data, gsize size);
/// Reads a string field of the first structure; NULL when absent.
const char *swiftvt_caps_get_string(const GstCaps *caps, const char *field);
gboolean swiftvt_caps_get_int(const GstCaps *caps, const char *field, gint *value);
gboolean swiftvt_caps_get_fraction(const GstCaps *caps, const char *field, gint *numerator, gint *denominator);
/// The GstBuffer in a field of the first structure, borrowed; NULL when absent.
GstBuffer *swiftvt_caps_get_buffer(const GstCaps *caps, const char *field);
static inline void swiftvt_caps_unref(GstCaps *caps) { gst_caps_unref(caps); }
static inline GstCaps *swiftvt_caps_ref(GstCaps *caps) { return gst_caps_ref(caps); }
/// The value of a string field that the peer of `pad` prefers (the first of a list), or `fallback`
/// when the peer accepts anything or does not say. Interned: valid for the process lifetime.
const char *swiftvt_pad_peer_preferred_string(GstPad *pad, const char *field, const char *fallback);
/// The values the peer of `pad` allows for a string field of its `media_type` structures
/// (NULL-terminated, free with g_strfreev), or NULL when the peer does not restrict the field
/// (ANY caps, not linked, or a structure without the field). A value that is not a string is
/// given as "(type)value".
gchar **swiftvt_pad_peer_restricted_strings(GstPad *pad, const char *media_type, const char *field);
/// Whether the peer of `pad` accepts `caps` (TRUE when not linked).
gboolean swiftvt_pad_peer_accepts_caps(GstPad *pad, GstCaps *caps);
/// The peer's caps as text, for messages (g_free it).
gchar *swiftvt_pad_peer_caps_string(GstPad *pad);

// MARK: Messages and logging (GST_ELEMENT_ERROR and GST_DEBUG_OBJECT are macros)

/// Posts an error (`is_error`) or warning message, with the Swift source location.
void swiftvt_post_message(GstElement *element, gboolean is_error, GQuark domain, gint code,
                          const char *text, const char *debug,
                          const char *file, const char *function, gint line);
/// Logs `message` in `category` at `level` for `object`, with the Swift source location.
void swiftvt_log(GstDebugCategory *category, GstDebugLevel level, GObject *object,
                 const char *file, const char *function, gint line, const char *message);
static inline gboolean swiftvt_log_enabled(GstDebugCategory *category, GstDebugLevel level) {
    return category != NULL && gst_debug_category_get_threshold(category) >= level;
}

// MARK: h264parse-to-avcc

GstDebugCategory *swiftvt_h264parse_to_avcc_debug_category(void);

// Implemented in Swift (SwiftVTElements/H264ParseToAVCC).
gboolean swiftvt_h264parse_to_avcc_set_sink_caps(void *state, GstBaseParse *parse, GstCaps *caps);
GstFlowReturn swiftvt_h264parse_to_avcc_handle_frame(void *state, GstBaseParse *parse,
                                                     GstBaseParseFrame *frame, gint *skipsize);
/// Called for FLUSH_STOP before the base class handles it.
void swiftvt_h264parse_to_avcc_flush(void *state, GstBaseParse *parse);
/// Called for EOS before the base class drains and forwards it.
void swiftvt_h264parse_to_avcc_will_drain(void *state, GstBaseParse *parse);

// MARK: The generic element class (element.c; the interface itself is declared in Swift)

typedef enum {
    SWIFTVT_HARDWARE_AUTO = 0,
    SWIFTVT_HARDWARE_REQUIRE = 1,
    SWIFTVT_HARDWARE_DISABLE = 2,
} SwiftVTHardwarePolicy;

/// What one registered GType is: the Swift element behind it and its base-class vfuncs. Static
/// storage: the type keeps a pointer to it.
typedef struct {
    /// The Swift element type (ElementTypes in SwiftVTElements/Support/ElementTypes.swift).
    const char *kind;
    /// The default of the `hardware` property, so one implementation serves several element
    /// names (vtdec / vtdec_hw), each its own GType.
    SwiftVTHardwarePolicy default_hardware;
    /// The element's C file: sets the base class's vfuncs (trampolines into Swift).
    void (*wire_vfuncs)(gpointer klass);
    /// offsetof(instance struct, swift): where the Swift object's pointer lives.
    gsize swift_offset;
} SwiftVTElementClassData;

/// Registers a GType of the generic class: its class_init installs the Swift-declared interface
/// and calls `data->wire_vfuncs`. `implements_preset`: the type implements GstPreset (encoders).
GType swiftvt_register_element_type(GType parent, const char *type_name, guint16 class_size, guint16 instance_size,
                                    const SwiftVTElementClassData *data, gboolean implements_preset);
/// vtdec_hw's sink caps for the VA device found at plugin load (kept for the process's life:
/// class_init may run whenever the class is first used); NULL without one.
void swiftvt_set_hardware_sink_caps(const gchar *caps);
const gchar *swiftvt_hardware_sink_caps(void);
static const guint swiftvt_param_mutable_ready = GST_PARAM_MUTABLE_READY;
static const guint swiftvt_param_mutable_playing = GST_PARAM_MUTABLE_PLAYING;

/// The base classes' start, stop and close, the same for every element.
typedef enum { SWIFTVT_STEP_START = 0, SWIFTVT_STEP_STOP = 1, SWIFTVT_STEP_CLOSE = 2 } SwiftVTLifecycleStep;
/// A start/stop/close vfunc of any element: forwards to the Swift object's.
gboolean swiftvt_element_vfunc_step(gpointer instance, SwiftVTLifecycleStep step);

// Implemented in Swift (SwiftVTElements/Support/ElementInterface.swift).
gboolean swiftvt_element_prepare(void *element, const char *kind, GstStateChange transition);
void swiftvt_element_transition_failed(void *element, const char *kind, GstStateChange transition);
gboolean swiftvt_element_step(void *element, const char *kind, SwiftVTLifecycleStep step);
void swiftvt_element_install_interface(gpointer klass, const char *kind, SwiftVTHardwarePolicy default_hardware);
void *swiftvt_element_create(GTypeInstance *instance, const char *kind, SwiftVTHardwarePolicy default_hardware);
void swiftvt_element_destroy(void *element, const char *kind);
void swiftvt_element_set_property(void *element, const char *kind, SwiftVTHardwarePolicy default_hardware, guint id,
                                  const GValue *value);
void swiftvt_element_get_property(void *element, const char *kind, SwiftVTHardwarePolicy default_hardware, guint id,
                                  GValue *value);

// MARK: GstVideoDecoder helpers

/// GST_VIDEO_DECODER_ERROR: counts a decoding error toward max-errors; returns GST_FLOW_ERROR
/// once the limit is passed (and posts the error), GST_FLOW_OK before.
static inline GstFlowReturn swiftvt_video_decoder_error(GstVideoDecoder *decoder, gint weight, const char *text,
                                                        const char *debug, const char *file, const char *function,
                                                        gint line) {
    return _gst_video_decoder_error(decoder, weight, GST_STREAM_ERROR, GST_STREAM_ERROR_DECODE, g_strdup(text),
                                    debug ? g_strdup(debug) : NULL, file, function, line);
}
static inline GstBuffer *swiftvt_codec_frame_input_buffer(GstVideoCodecFrame *frame) { return frame->input_buffer; }
static inline guint32 swiftvt_codec_frame_number(GstVideoCodecFrame *frame) { return frame->system_frame_number; }
static inline gboolean swiftvt_codec_frame_is_sync_point(GstVideoCodecFrame *frame) {
    return GST_VIDEO_CODEC_FRAME_IS_SYNC_POINT(frame);
}
static inline GstCaps *swiftvt_codec_state_caps(GstVideoCodecState *state) { return state->caps; }
static inline GstVideoInfo *swiftvt_codec_state_info(GstVideoCodecState *state) { return &state->info; }
static inline GstPad *swiftvt_video_decoder_src_pad(GstVideoDecoder *decoder) { return GST_VIDEO_DECODER_SRC_PAD(decoder); }
static inline void swiftvt_codec_frame_set_output_buffer(GstVideoCodecFrame *frame, GstBuffer *buffer) {
    frame->output_buffer = buffer;
}
static inline GstBuffer *swiftvt_codec_frame_output_buffer(GstVideoCodecFrame *frame) { return frame->output_buffer; }
/// The GstVideoFormat names downstream accepts on `pad`, most preferred first, as a
/// NULL-terminated array to free with g_strfreev; NULL when downstream accepts any format.
gchar **swiftvt_pad_peer_video_formats(GstPad *pad);
/// Maps `buffer` for writing as a video frame of `info`; then plane pointers and strides.
static inline gboolean swiftvt_video_frame_map_write(GstVideoFrame *frame, GstVideoInfo *info, GstBuffer *buffer) {
    return gst_video_frame_map(frame, info, buffer, GST_MAP_WRITE);
}
static inline void *swiftvt_video_frame_plane_data(GstVideoFrame *frame, guint plane) {
    return GST_VIDEO_FRAME_PLANE_DATA(frame, plane);
}
static inline gint swiftvt_video_frame_plane_stride(GstVideoFrame *frame, guint plane) {
    return GST_VIDEO_FRAME_PLANE_STRIDE(frame, plane);
}
static inline GstVideoInfo *swiftvt_codec_state_info_mut(GstVideoCodecState *state) { return &state->info; }
static inline GstClockTime swiftvt_codec_frame_pts(GstVideoCodecFrame *frame) { return frame->pts; }
static inline GstClockTime swiftvt_codec_frame_duration(GstVideoCodecFrame *frame) { return frame->duration; }
static inline void swiftvt_codec_frame_mark_corrupted(GstVideoCodecFrame *frame) {
    GST_VIDEO_CODEC_FRAME_FLAG_SET(frame, GST_VIDEO_CODEC_FRAME_FLAG_CORRUPTED);
}
/// Wraps memory owned by a Swift object (`owner`, released through `release`) in a read-only
/// buffer with a GstVideoMeta describing `n_planes` planes at `offsets` with `strides`.
GstBuffer *swiftvt_buffer_wrap_video(void *data, gsize size, GstVideoFormat format, guint width, guint height,
                                     guint n_planes, const gsize *offsets, const gint *strides,
                                     void *owner, GDestroyNotify release);

// MARK: vtdec

GstDebugCategory *swiftvt_vtdec_debug_category(void);
// Implemented in Swift (SwiftVTElements/VTDec).
gboolean swiftvt_vtdec_set_format(void *state, GstVideoDecoder *decoder, GstVideoCodecState *input);
GstFlowReturn swiftvt_vtdec_handle_frame(void *state, GstVideoDecoder *decoder, GstVideoCodecFrame *frame);
GstFlowReturn swiftvt_vtdec_drain(void *state, GstVideoDecoder *decoder);
gboolean swiftvt_vtdec_flush(void *state, GstVideoDecoder *decoder);
void swiftvt_vtdec_note_allocation(void *state, gboolean downstream_supports_video_meta, guint downstream_min_buffers,
                                   gboolean downstream_offers_pool);
void swiftvt_vtdec_flush_start(void *state);
// Implemented in vtdec.c.
/// Sets the base class's output pool (the one pictures are copied into when downstream takes no
/// GstVideoMeta) flushing or not, which wakes a gst_buffer_pool_acquire_buffer waiting at its
/// maximum; nothing when there is no active pool.
void swiftvt_vtdec_set_output_pool_flushing(GstVideoDecoder *decoder, gboolean flushing);

// MARK: vtenc

GstDebugCategory *swiftvt_vtenc_debug_category(void);

static inline gboolean swiftvt_codec_frame_is_force_keyframe(GstVideoCodecFrame *frame) {
    return GST_VIDEO_CODEC_FRAME_IS_FORCE_KEYFRAME(frame);
}
static inline void swiftvt_codec_frame_set_sync_point(GstVideoCodecFrame *frame, gboolean sync) {
    if (sync) GST_VIDEO_CODEC_FRAME_SET_SYNC_POINT(frame); else GST_VIDEO_CODEC_FRAME_UNSET_SYNC_POINT(frame);
}
static inline void swiftvt_codec_frame_set_dts(GstVideoCodecFrame *frame, GstClockTime dts) { frame->dts = dts; }
static inline gboolean swiftvt_video_frame_map_read(GstVideoFrame *frame, GstVideoInfo *info, GstBuffer *buffer) {
    return gst_video_frame_map(frame, info, buffer, GST_MAP_READ);
}
static inline GstVideoFormat swiftvt_video_info_format(const GstVideoInfo *info) { return GST_VIDEO_INFO_FORMAT(info); }
static inline gint swiftvt_video_info_width(const GstVideoInfo *info) { return GST_VIDEO_INFO_WIDTH(info); }
static inline gint swiftvt_video_info_height(const GstVideoInfo *info) { return GST_VIDEO_INFO_HEIGHT(info); }
static inline gint swiftvt_video_info_fps_n(const GstVideoInfo *info) { return GST_VIDEO_INFO_FPS_N(info); }
static inline gint swiftvt_video_info_fps_d(const GstVideoInfo *info) { return GST_VIDEO_INFO_FPS_D(info); }
static inline GstVideoColorimetry swiftvt_video_info_colorimetry(const GstVideoInfo *info) { return info->colorimetry; }
static inline GstVideoInterlaceMode swiftvt_video_info_interlace_mode(const GstVideoInfo *info) { return GST_VIDEO_INFO_INTERLACE_MODE(info); }
static inline GstVideoFieldOrder swiftvt_video_info_field_order(const GstVideoInfo *info) { return GST_VIDEO_INFO_FIELD_ORDER(info); }
static inline GstPad *swiftvt_video_encoder_src_pad(GstVideoEncoder *encoder) { return GST_VIDEO_ENCODER_SRC_PAD(encoder); }
static inline GstCaps *swiftvt_codec_state_caps_get(GstVideoCodecState *state) { return state->caps; }
static inline void swiftvt_codec_state_set_caps(GstVideoCodecState *state, GstCaps *caps) {
    if (state->caps) gst_caps_unref(state->caps);
    state->caps = caps;
}

// Implemented in Swift (SwiftVTElements/VTEnc).
gboolean swiftvt_vtenc_set_format(void *state, GstVideoEncoder *encoder, GstVideoCodecState *input);
GstFlowReturn swiftvt_vtenc_handle_frame(void *state, GstVideoEncoder *encoder, GstVideoCodecFrame *frame);
GstFlowReturn swiftvt_vtenc_finish(void *state, GstVideoEncoder *encoder);
gboolean swiftvt_vtenc_flush(void *state, GstVideoEncoder *encoder);
/// Input frames the running session may hold before it outputs the first of them (its frame
/// delay, plus the one being encoded); 0 before a session exists.
guint swiftvt_vtenc_held_input_frames(void *state);

// MARK: Plugin registration (for in-process tests)

/// Registers the plugin with GStreamer from inside the process (tests, embedding apps), as the
/// registry would from libgstswiftvt.so. Safe to call more than once.
gboolean swiftvt_register_static(void);
/// At plugin load: the VA device's H.264 offer (Swift, VAH264DeviceOffer). Returns vtdec_hw's
/// sink caps (g_free) when the device decodes H.264, else NULL; sets *encodes.
gchar *swiftvt_probe_va_h264(gboolean *encodes);
/// The plugin's own debug category ("swiftvt"), created first thing in plugin_init.
GstDebugCategory *swiftvt_plugin_debug_category(void);

G_END_DECLS


// MARK: vtmultipasssink

/// What the sink does with an EOS event.
typedef enum {
    /// The file is complete: the base class handles EOS (posts it).
    SWIFTVT_EOS_FORWARD = 0,
    /// Another pass or range follows: drop the event.
    SWIFTVT_EOS_SWALLOW = 1,
    /// An error was posted: drop the event and fail.
    SWIFTVT_EOS_FAILED = 2,
} SwiftVTEOSAction;

GstDebugCategory *swiftvt_vtmultipasssink_debug_category(void);
/// Whether upstream of `pad` can seek in time (the SEEKING query).
gboolean swiftvt_pad_peer_seekable(GstPad *pad);
/// Upstream's duration in nanoseconds, -1 when unknown.
gint64 swiftvt_pad_peer_duration(GstPad *pad);
static inline GstPad *swiftvt_base_sink_pad(GstBaseSink *sink) { return GST_BASE_SINK_PAD(sink); }
/// Sends a flushing, accurate seek to [start, stop) upstream from a GStreamer thread pool
/// thread (never from the streaming thread, which the flush waits for); posts an element error
/// when upstream refuses it.
void swiftvt_base_sink_seek_upstream_async(GstBaseSink *sink, GstClockTime start, GstClockTime stop);
/// The element message "vtmultipasssink-done" with the run's figures.
void swiftvt_post_multipass_summary(GstElement *element, const char *location, gint passes, gint frames,
                                    gint frames_reencoded, gdouble bitrate, gdouble target_bitrate, gdouble seconds);
/// Posts a progress message whose `percent` field is `percent` (gst_message_new_progress sets 0
/// for START and CONTINUE and 100 otherwise, and takes no percentage: the field is set after).
void swiftvt_post_progress(GstElement *element, GstProgressType type, const char *code, const char *text, gint percent);
/// appsrc ! MUXER ! filesink location=LOCATION, playing; NULL with `error` set on failure.
GstElement *swiftvt_mux_pipeline_new(const char *muxer, const char *location, GstCaps *caps, GError **error);
/// Pushes `buffer` (taking it) into the writer; with a valid `segment_start` (the first buffer)
/// a time segment starting there goes before it.
GstFlowReturn swiftvt_mux_pipeline_push(GstElement *pipeline, GstBuffer *buffer, GstClockTime segment_start);
/// Ends the stream (when `complete`), waits for the file to be finished, stops and frees the
/// pipeline. NULL on success, else what went wrong (g_free).
gchar *swiftvt_mux_pipeline_finish(GstElement *pipeline, gboolean complete);
gchar *swiftvt_mux_pipeline_error(GstElement *pipeline);
static inline void swiftvt_buffer_set_timing(GstBuffer *buffer, GstClockTime pts, GstClockTime dts, GstClockTime duration) {
    GST_BUFFER_PTS(buffer) = pts;
    GST_BUFFER_DTS(buffer) = dts;
    GST_BUFFER_DURATION(buffer) = duration;
}
// Implemented in Swift (SwiftVTElements/VTMultiPassSink).
gboolean swiftvt_vtmultipasssink_set_caps(void *state, GstBaseSink *sink, GstCaps *caps);
GstFlowReturn swiftvt_vtmultipasssink_render(void *state, GstBaseSink *sink, GstBuffer *buffer);
SwiftVTEOSAction swiftvt_vtmultipasssink_eos(void *state, GstBaseSink *sink);

#endif
