// The plugin entry point: registers the elements, nothing else.
#include "SwiftVTShim.h"
#include "elements.h"

#ifndef PACKAGE
#define PACKAGE "swiftvt"
#endif
#ifndef SWIFTVT_VERSION
#define SWIFTVT_VERSION "0.1.0"
#endif

GST_DEBUG_CATEGORY_STATIC(plugin_debug);

GstDebugCategory *swiftvt_plugin_debug_category(void) { return plugin_debug; }

/// Whether the registry holds this plugin's features from an earlier scan (vtdec_hw stands for
/// all: they are registered together).
static gboolean registry_describes(GstPlugin *plugin) {
    GstPluginFeature *feature = gst_registry_lookup_feature(gst_registry_get(), "vtdec_hw");
    if (feature == NULL) return FALSE;
    GstPlugin *owner = gst_plugin_feature_get_plugin(feature);
    gboolean described = owner == plugin;
    if (owner != NULL) gst_object_unref(owner);
    gst_object_unref(feature);
    return described;
}

static gboolean plugin_init(GstPlugin *plugin) {
    if (plugin_debug == NULL) GST_DEBUG_CATEGORY_INIT(plugin_debug, "swiftvt", 0, "SwiftVT plugin (loading, VA-API probe)");
    // What the elements offer depends on the VA device: the registry cache must be refreshed
    // (and this function run again) when render nodes come or go or the libva driver selection
    // or X11 display changes, as GStreamer's va plugin declares for the same reason.
    gst_plugin_add_dependency_simple(plugin, "LIBVA_DRIVER_NAME,LIBVA_DRIVERS_PATH,DISPLAY", "/dev/dri", "renderD",
                                     GST_PLUGIN_DEPENDENCY_FLAG_FILE_NAME_IS_PREFIX);
    // The device is probed when the registry describes this plugin anew (a registry scan, normally
    // in gst-plugin-scanner, or a static registration). When the registry already lists the
    // features, this load only creates elements: gst_element_register then attaches the type to
    // the existing feature and keeps its rank and pad templates from the scan, so probing again
    // would cost libva's and the driver's start-up in every process for nothing, and would touch
    // VA-API in a process whose elements all have hardware=disable.
    gboolean va_encodes = FALSE;
    gchar *va_sink_caps = NULL;
    if (registry_describes(plugin)) {
        GST_INFO_OBJECT(plugin, "the registry already describes the elements: no VA-API probe at this load");
    } else {
        va_sink_caps = swiftvt_probe_va_h264(&va_encodes);
    }
    gboolean registered = swiftvt_register_h264parse_to_avcc(plugin) && swiftvt_register_vtdec(plugin, va_sink_caps)
        && swiftvt_register_vtenc(plugin, va_encodes) && swiftvt_register_vtmultipasssink(plugin);
    g_free(va_sink_caps);
    return registered;
}

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
