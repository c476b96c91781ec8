// GstDebugCategory: the log family is macros (GST_DEBUG_CATEGORY_INIT, GST_DEBUG_OBJECT).
#ifndef SWIFTVT_DEBUG_H
#define SWIFTVT_DEBUG_H

#include <gst/gst.h>

G_BEGIN_DECLS

/// GST_DEBUG_CATEGORY_INIT: the category `name`, made on first use (GStreamer returns the
/// existing one for a name it knows).
static inline GstDebugCategory *swiftvt_debug_category_new(const char *name, const char *description) {
    GstDebugCategory *category = NULL;
    GST_DEBUG_CATEGORY_INIT(category, name, 0, description);
    return category;
}

/// Logs `message` in `category` at `level` for `object`, with the Swift source location.
void swiftvt_log(GstDebugCategory *category, GstDebugLevel level, GObject *object,
                 const char *file, const char *function, gint line, const char *message);

static inline gboolean swiftvt_log_enabled(GstDebugCategory *category, GstDebugLevel level) {
    return category != NULL && gst_debug_category_get_threshold(category) >= level;
}

G_END_DECLS

#endif
