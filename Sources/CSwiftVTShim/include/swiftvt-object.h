// GObject: g_object_set and g_signal_emit_by_name are variadic (an element the plugin drives
// itself, such as vtmultipasssink's appsrc, is set up and fed through these).
#ifndef SWIFTVT_OBJECT_H
#define SWIFTVT_OBJECT_H

#include <gst/gst.h>

G_BEGIN_DECLS

/// Sets a string property (a file location, which gst_util_set_object_arg would deserialize).
void swiftvt_object_set_string(GObject *object, const char *property, const char *value);
/// Sets a GstCaps property (appsrc's `caps`).
void swiftvt_object_set_caps(GObject *object, const char *property, GstCaps *caps);
/// Emits an action signal without arguments that returns a GstFlowReturn (appsrc's end-of-stream).
GstFlowReturn swiftvt_object_emit_flow(GObject *object, const char *signal);
/// Emits an action signal with one pointer argument (not taken) that returns a GstFlowReturn
/// (appsrc's push-buffer and push-sample).
GstFlowReturn swiftvt_object_emit_flow_with(GObject *object, const char *signal, gpointer argument);

G_END_DECLS

#endif
