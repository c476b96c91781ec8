// Messages and the debug log: GST_ELEMENT_ERROR and GST_DEBUG_OBJECT are macros, gst_debug_log is
// variadic; these take the Swift source location so messages and log lines point at the Swift code.
#include "SwiftVTShim.h"

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

