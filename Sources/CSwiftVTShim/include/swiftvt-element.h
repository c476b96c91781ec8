// GstElement and GstObject: messages (GST_ELEMENT_ERROR is a macro), the object lock (a macro),
// property flags (macros).
#ifndef SWIFTVT_ELEMENT_H
#define SWIFTVT_ELEMENT_H

#include <gst/gst.h>

G_BEGIN_DECLS

/// Posts an error (`is_error`) or warning message, with the Swift source location.
void swiftvt_post_message(GstElement *element, gboolean is_error, GQuark domain, gint code,
                          const char *text, const char *debug,
                          const char *file, const char *function, gint line);

static inline void swiftvt_object_lock(GstObject *object) { GST_OBJECT_LOCK(object); }
static inline void swiftvt_object_unlock(GstObject *object) { GST_OBJECT_UNLOCK(object); }

static const guint swiftvt_param_mutable_ready = GST_PARAM_MUTABLE_READY;
static const guint swiftvt_param_mutable_playing = GST_PARAM_MUTABLE_PLAYING;

G_END_DECLS

#endif
