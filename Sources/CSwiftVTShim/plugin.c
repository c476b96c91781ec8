// The plugin's entry point: GST_PLUGIN_DEFINE (a macro that makes the exported descriptor) around
// the Swift plugin_init, which registers the elements of Sources/SwiftVTElements/Elements.swift.
#include "SwiftVTShim.h"

#ifndef PACKAGE
#define PACKAGE "swiftvt"
#endif
#ifndef SWIFTVT_VERSION
#define SWIFTVT_VERSION "0.1.0"
#endif

static gboolean plugin_init(GstPlugin *plugin) { return swiftvt_plugin_init(plugin); }

GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, swiftvt,
                  "SwiftVT: VideoToolbox-style H.264 conversion, decoding and encoding in Swift",
                  plugin_init, SWIFTVT_VERSION, "GPL", "SwiftVT", "Unknown package origin")

gboolean swiftvt_register_static(void) {
    static gsize registered = 0;
    if (g_once_init_enter(&registered)) {
        gboolean ok = gst_plugin_register_static(
            GST_VERSION_MAJOR, GST_VERSION_MINOR, "swiftvt",
            "SwiftVT: VideoToolbox-style H.264 conversion, decoding and encoding in Swift",
            plugin_init, SWIFTVT_VERSION, "GPL", "SwiftVT", "SwiftVT", "Unknown package origin");
        g_once_init_leave(&registered, ok ? 1 : 2);
    }
    return registered == 1;
}
