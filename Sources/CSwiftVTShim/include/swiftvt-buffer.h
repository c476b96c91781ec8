// GstBuffer: time stamps, flags and map flags are macros (GST_BUFFER_PTS, GST_BUFFER_FLAG_SET,
// GST_MAP_READ), and a buffer over memory Swift owns needs a destroy notify.
#ifndef SWIFTVT_BUFFER_H
#define SWIFTVT_BUFFER_H

#include <gst/gst.h>
#include <gst/video/video.h>

G_BEGIN_DECLS

static const GstClockTime swiftvt_clock_time_none = GST_CLOCK_TIME_NONE;
static const guint64 swiftvt_second = GST_SECOND;

static inline GstClockTime swiftvt_buffer_pts(const GstBuffer *buffer) { return GST_BUFFER_PTS(buffer); }
static inline GstClockTime swiftvt_buffer_dts(const GstBuffer *buffer) { return GST_BUFFER_DTS(buffer); }
static inline GstClockTime swiftvt_buffer_duration(const GstBuffer *buffer) { return GST_BUFFER_DURATION(buffer); }
static inline gboolean swiftvt_buffer_has_flags(const GstBuffer *buffer, GstBufferFlags flags) {
    return GST_BUFFER_FLAG_IS_SET(buffer, flags);
}
static inline void swiftvt_buffer_set_flags(GstBuffer *buffer, GstBufferFlags flags) { GST_BUFFER_FLAG_SET(buffer, flags); }
static inline void swiftvt_buffer_unset_flags(GstBuffer *buffer, GstBufferFlags flags) { GST_BUFFER_FLAG_UNSET(buffer, flags); }
static inline GstMapFlags swiftvt_map_read(void) { return GST_MAP_READ; }
static inline GstMapFlags swiftvt_map_write(void) { return GST_MAP_WRITE; }

/// Wraps memory owned by a Swift object (`owner`, released through `release`) in a read-only
/// buffer with a GstVideoMeta describing `n_planes` planes at `offsets` with `strides`.
GstBuffer *swiftvt_buffer_wrap_video(void *data, gsize size, GstVideoFormat format, guint width, guint height,
                                     guint n_planes, const gsize *offsets, const gint *strides,
                                     void *owner, GDestroyNotify release);

G_END_DECLS

#endif
