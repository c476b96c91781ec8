// GstPad: what the peer of a pad accepts, prefers and can do.
#include "SwiftVTShim.h"

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

gboolean swiftvt_pad_peer_seekable(GstPad *pad) {
    GstQuery *query = gst_query_new_seeking(GST_FORMAT_TIME);
    gboolean seekable = FALSE;
    if (gst_pad_peer_query(pad, query)) gst_query_parse_seeking(query, NULL, &seekable, NULL, NULL);
    gst_query_unref(query);
    return seekable;
}

gint64 swiftvt_pad_peer_duration(GstPad *pad) {
    gint64 duration = -1;
    if (!gst_pad_peer_query_duration(pad, GST_FORMAT_TIME, &duration)) return -1;
    return duration;
}
