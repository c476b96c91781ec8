// GstBaseParse and GstBaseSink: flag and pad macros.
#ifndef SWIFTVT_BASE_H
#define SWIFTVT_BASE_H

#include <gst/gst.h>
#include <gst/base/base.h>

G_BEGIN_DECLS

static inline gboolean swiftvt_base_parse_is_draining(GstBaseParse *parse) { return GST_BASE_PARSE_DRAINING(parse); }
static inline GstPad *swiftvt_base_parse_src_pad(GstBaseParse *parse) { return GST_BASE_PARSE_SRC_PAD(parse); }
/// Whether the parser pulls its input (filesrc upstream): then it drains only at the end.
static inline gboolean swiftvt_base_parse_is_pulling(GstBaseParse *parse) { return GST_PAD_MODE(GST_BASE_PARSE_SINK_PAD(parse)) == GST_PAD_MODE_PULL; }

static inline GstPad *swiftvt_base_sink_pad(GstBaseSink *sink) { return GST_BASE_SINK_PAD(sink); }

G_END_DECLS

#endif
