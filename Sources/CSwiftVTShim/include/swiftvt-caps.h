// GstCaps and GstStructure: gst_caps_set_simple, gst_structure_set and gst_structure_new are
// variadic, and the G_TYPE_* / GST_TYPE_* a GValue needs are macros.
#ifndef SWIFTVT_CAPS_H
#define SWIFTVT_CAPS_H

#include <gst/gst.h>

G_BEGIN_DECLS

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

void swiftvt_structure_set_string(GstStructure *structure, const char *field, const char *value);
void swiftvt_structure_set_int(GstStructure *structure, const char *field, gint value);
void swiftvt_structure_set_double(GstStructure *structure, const char *field, gdouble value);
void swiftvt_structure_set_uint64(GstStructure *structure, const char *field, guint64 value);
void swiftvt_structure_set_boolean(GstStructure *structure, const char *field, gboolean value);

G_END_DECLS

#endif
