// Fixed-signature helpers for the GStreamer macros and variadic functions Swift cannot import.
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

void swiftvt_post_message(GstElement *element, gboolean is_error, GQuark domain, gint code,
                          const char *text, const char *debug,
                          const char *file, const char *function, gint line) {
    // gst_element_message_full takes ownership of the two strings.
    gst_element_message_full(element, is_error ? GST_MESSAGE_ERROR : GST_MESSAGE_WARNING, domain, code,
                             g_strdup(text), debug ? g_strdup(debug) : NULL, file, function, line);
}

void swiftvt_log(GstDebugCategory *category, GstDebugLevel level, GObject *object,
                 const char *file, const char *function, gint line, const char *message) {
    gst_debug_log(category, level, file, function, line, object, "%s", message);
}

const char *swiftvt_pad_peer_preferred_string(GstPad *pad, const char *field, const char *fallback) {
    GstCaps *allowed = gst_pad_get_allowed_caps(pad);
    const char *result = fallback;
    if (allowed != NULL && !gst_caps_is_any(allowed) && gst_caps_get_size(allowed) > 0) {
        const GValue *value = gst_structure_get_value(gst_caps_get_structure(allowed, 0), field);
        if (value != NULL && G_VALUE_HOLDS_STRING(value)) {
            result = g_intern_string(g_value_get_string(value));
        } else if (value != NULL && GST_VALUE_HOLDS_LIST(value) && gst_value_list_get_size(value) > 0) {
            const GValue *first = gst_value_list_get_value(value, 0);
            if (G_VALUE_HOLDS_STRING(first)) result = g_intern_string(g_value_get_string(first));
        }
    }
    if (allowed != NULL) gst_caps_unref(allowed);
    return result;
}

/* Adds the string(s) of one field value (a string or a list of strings) to `names`; with
 * `typed_others`, any other value as "(type)value", so a caller can say that `level=4.1` in a
 * gst-launch line is a number, not the string H.264 caps carry. */
static void add_strings(GPtrArray *names, const GValue *value, gboolean typed_others) {
    if (G_VALUE_HOLDS_STRING(value)) {
        g_ptr_array_add(names, g_value_dup_string(value));
    } else if (GST_VALUE_HOLDS_LIST(value)) {
        for (guint j = 0; j < gst_value_list_get_size(value); j++) {
            add_strings(names, gst_value_list_get_value(value, j), typed_others);
        }
    } else if (typed_others && G_VALUE_HOLDS_DOUBLE(value)) {
        /* %g: level=4.1 reads back as 4.1, not gst_value_serialize's 4.0999999999999996 */
        g_ptr_array_add(names, g_strdup_printf("(double)%g", g_value_get_double(value)));
    } else if (typed_others) {
        gchar *text = gst_value_serialize(value);
        g_ptr_array_add(names, g_strdup_printf("(%s)%s", g_type_name(G_VALUE_TYPE(value)), text ? text : "?"));
        g_free(text);
    }
}

gchar **swiftvt_pad_peer_restricted_strings(GstPad *pad, const char *media_type, const char *field) {
    // The peer's own caps, not gst_pad_get_allowed_caps: the intersection with this pad's
    // template would always carry the template's list, so "downstream does not care" and
    // "downstream wants exactly these" could not be told apart.
    GstCaps *peer = gst_pad_peer_query_caps(pad, NULL);
    if (peer == NULL || gst_caps_is_any(peer)) {
        if (peer) gst_caps_unref(peer);
        return NULL;
    }
    GPtrArray *names = g_ptr_array_new();
    gboolean restricted = TRUE;
    for (guint i = 0; i < gst_caps_get_size(peer) && restricted; i++) {
        GstStructure *structure = gst_caps_get_structure(peer, i);
        if (!gst_structure_has_name(structure, media_type)) continue;
        const GValue *value = gst_structure_get_value(structure, field);
        if (value == NULL) {
            restricted = FALSE;  // one acceptable structure takes any value
        } else {
            add_strings(names, value, TRUE);
        }
    }
    gst_caps_unref(peer);
    if (!restricted) {
        g_ptr_array_free(names, TRUE);
        return NULL;
    }
    g_ptr_array_add(names, NULL);
    return (gchar **) g_ptr_array_free(names, FALSE);
}

gboolean swiftvt_pad_peer_accepts_caps(GstPad *pad, GstCaps *caps) {
    GstPad *peer = gst_pad_get_peer(pad);
    if (peer == NULL) return TRUE;  // not linked yet: the push will tell
    gboolean accepted = gst_pad_query_accept_caps(peer, caps);
    gst_object_unref(peer);
    return accepted;
}

gchar *swiftvt_pad_peer_caps_string(GstPad *pad) {
    GstCaps *peer = gst_pad_peer_query_caps(pad, NULL);
    if (peer == NULL) return g_strdup("(not linked)");
    gchar *text = gst_caps_to_string(peer);
    gst_caps_unref(peer);
    return text;
}

gchar **swiftvt_pad_peer_video_formats(GstPad *pad) {
    GstCaps *allowed = gst_pad_get_allowed_caps(pad);
    if (allowed == NULL || gst_caps_is_any(allowed)) {
        if (allowed) gst_caps_unref(allowed);
        return NULL;
    }
    GPtrArray *names = g_ptr_array_new();
    for (guint i = 0; i < gst_caps_get_size(allowed); i++) {
        const GValue *value = gst_structure_get_value(gst_caps_get_structure(allowed, i), "format");
        if (value != NULL) add_strings(names, value, FALSE);
    }
    gst_caps_unref(allowed);
    g_ptr_array_add(names, NULL);
    return (gchar **) g_ptr_array_free(names, FALSE);
}

GstBuffer *swiftvt_buffer_wrap_video(void *data, gsize size, GstVideoFormat format, guint width, guint height,
                                     guint n_planes, const gsize *offsets, const gint *strides,
                                     void *owner, GDestroyNotify release) {
    GstBuffer *buffer = gst_buffer_new_wrapped_full(GST_MEMORY_FLAG_READONLY, data, size, 0, size, owner, release);
    gst_buffer_add_video_meta_full(buffer, GST_VIDEO_FRAME_FLAG_NONE, format, width, height, n_planes,
                                   (gsize *) offsets, (gint *) strides);
    return buffer;
}
