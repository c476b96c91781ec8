// GstPlugin: the plugin's entry point.
#ifndef SWIFTVT_PLUGIN_H
#define SWIFTVT_PLUGIN_H

#include <gst/gst.h>

G_BEGIN_DECLS

/// Registers the plugin with GStreamer from inside the process (tests, embedding apps), as the
/// registry would from libgstswiftvt.so. Safe to call more than once.
gboolean swiftvt_register_static(void);

/// plugin_init, implemented in Swift (SwiftVTElements/Elements.swift): registers the elements.
gboolean swiftvt_plugin_init(GstPlugin *plugin);

G_END_DECLS

#endif
