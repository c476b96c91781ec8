// GstCaps and GstStructure: fixed-signature setters and getters for the variadic gst_caps_set_simple
// and gst_structure_set, and for GValues whose types are macros.
#include "SwiftVTShim.h"

static GstStructure *first_structure(const GstCaps *caps) {
    return (caps != NULL && gst_caps_get_size(caps) > 0) ? gst_caps_get_structure(caps, 0) : NULL;
}

void swiftvt_caps_set_string(GstCaps *caps, const char *field, const char *value) {
    gst_caps_set_simple(caps, field, G_TYPE_STRING, value, NULL);
}

void swiftvt_caps_set_int(GstCaps *caps, const char *field, gint value) {
    gst_caps_set_simple(caps, field, G_TYPE_INT, value, NULL);
}

void swiftvt_caps_set_uint(GstCaps *caps, const char *field, guint value) {
    gst_caps_set_simple(caps, field, G_TYPE_UINT, value, NULL);
}

void swiftvt_caps_set_boolean(GstCaps *caps, const char *field, gboolean value) {
    gst_caps_set_simple(caps, field, G_TYPE_BOOLEAN, value, NULL);
}

void swiftvt_caps_set_fraction(GstCaps *caps, const char *field, gint numerator, gint denominator) {
    gst_caps_set_simple(caps, field, GST_TYPE_FRACTION, numerator, denominator, NULL);
}

void swiftvt_caps_set_bytes(GstCaps *caps, const char *field, const guint8 *data, gsize size) {
    GstBuffer *buffer = gst_buffer_new_memdup(data, size);
    gst_caps_set_simple(caps, field, GST_TYPE_BUFFER, buffer, NULL);
    gst_buffer_unref(buffer);
}

const char *swiftvt_caps_get_string(const GstCaps *caps, const char *field) {
    GstStructure *structure = first_structure(caps);
    return structure ? gst_structure_get_string(structure, field) : NULL;
}

gboolean swiftvt_caps_get_int(const GstCaps *caps, const char *field, gint *value) {
    GstStructure *structure = first_structure(caps);
    return structure ? gst_structure_get_int(structure, field, value) : FALSE;
}

gboolean swiftvt_caps_get_fraction(const GstCaps *caps, const char *field, gint *numerator, gint *denominator) {
    GstStructure *structure = first_structure(caps);
    return structure ? gst_structure_get_fraction(structure, field, numerator, denominator) : FALSE;
}

GstBuffer *swiftvt_caps_get_buffer(const GstCaps *caps, const char *field) {
    GstStructure *structure = first_structure(caps);
    if (structure == NULL) return NULL;
    const GValue *value = gst_structure_get_value(structure, field);
    if (value == NULL || !GST_VALUE_HOLDS_BUFFER(value)) return NULL;
    return gst_value_get_buffer(value);
}

void swiftvt_structure_set_string(GstStructure *structure, const char *field, const char *value) {
    gst_structure_set(structure, field, G_TYPE_STRING, value, NULL);
}

void swiftvt_structure_set_int(GstStructure *structure, const char *field, gint value) {
    gst_structure_set(structure, field, G_TYPE_INT, value, NULL);
}

void swiftvt_structure_set_double(GstStructure *structure, const char *field, gdouble value) {
    gst_structure_set(structure, field, G_TYPE_DOUBLE, value, NULL);
}

void swiftvt_structure_set_uint64(GstStructure *structure, const char *field, guint64 value) {
    gst_structure_set(structure, field, G_TYPE_UINT64, value, NULL);
}

void swiftvt_structure_set_boolean(GstStructure *structure, const char *field, gboolean value) {
    gst_structure_set(structure, field, G_TYPE_BOOLEAN, value, NULL);
}
