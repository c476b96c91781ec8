// Element types of the plugin (private to the shim).
#ifndef SWIFTVT_ELEMENTS_H
#define SWIFTVT_ELEMENTS_H
#include "SwiftVTShim.h"

gboolean swiftvt_register_h264parse_to_avcc(GstPlugin *plugin);
/// `va_sink_caps`: vtdec_hw's sink caps for the VA device found at plugin load, NULL without one.
gboolean swiftvt_register_vtdec(GstPlugin *plugin, const gchar *va_sink_caps);
/// `va_encodes`: a VA device found at plugin load encodes H.264.
gboolean swiftvt_register_vtenc(GstPlugin *plugin, gboolean va_encodes);
gboolean swiftvt_register_vtmultipasssink(GstPlugin *plugin);

#endif
