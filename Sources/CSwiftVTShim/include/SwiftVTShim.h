// The C side of SwiftVT: the GObject/GStreamer boilerplate that Swift cannot express (type
// registration, class_init, pad templates, property specs) and fixed-signature stand-ins for the
// macros and variadic functions Swift cannot import. Every element vfunc is forwarded to Swift
// functions exported with @_cdecl and declared at the end of this header.
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

// MARK: Caps (gst_caps_new_simple and gst_structure_set are variadic)

static inline GstCaps *swiftvt_caps_new_empty_simple(const char *media_type) { return gst_caps_new_empty_simple(media_type); }
void swiftvt_caps_set_string(GstCaps *caps, const char *field, const char *value);
void swiftvt_caps_set_int(GstCaps *caps, const char *field, gint value);
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
/// The value of a string field that the peer of `pad` prefers (the first of a list), or `fallback`
/// when the peer accepts anything or does not say. Interned: valid for the process lifetime.
const char *swiftvt_pad_peer_preferred_string(GstPad *pad, const char *field, const char *fallback);

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
void *swiftvt_h264parse_to_avcc_create(GstBaseParse *parse);
void swiftvt_h264parse_to_avcc_destroy(void *state);
gboolean swiftvt_h264parse_to_avcc_start(void *state, GstBaseParse *parse);
gboolean swiftvt_h264parse_to_avcc_stop(void *state, GstBaseParse *parse);
gboolean swiftvt_h264parse_to_avcc_set_sink_caps(void *state, GstBaseParse *parse, GstCaps *caps);
GstFlowReturn swiftvt_h264parse_to_avcc_handle_frame(void *state, GstBaseParse *parse,
                                                     GstBaseParseFrame *frame, gint *skipsize);
/// Called for FLUSH_STOP before the base class handles it.
void swiftvt_h264parse_to_avcc_flush(void *state, GstBaseParse *parse);
/// Called for EOS before the base class drains and forwards it.
void swiftvt_h264parse_to_avcc_will_drain(void *state, GstBaseParse *parse);

// MARK: Plugin registration (for in-process tests)

/// Registers the plugin with GStreamer from inside the process (tests, embedding apps), as the
/// registry would from libgstswiftvt.so. Safe to call more than once.
gboolean swiftvt_register_static(void);

G_END_DECLS

#endif
