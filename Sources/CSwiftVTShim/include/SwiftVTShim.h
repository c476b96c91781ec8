// The C side of SwiftVT: what Swift cannot express, and nothing about any one element. Elements,
// their GObject classes and their base classes' vfuncs are Swift (Sources/SwiftVTElements:
// Support/Subclassing); what is here is the plugin's entry point (plugin.c: GST_PLUGIN_DEFINE) and
// fixed-signature stand-ins for GStreamer's macros and variadic functions, one header per
// GStreamer type.
#ifndef SWIFTVT_SHIM_H
#define SWIFTVT_SHIM_H

#include "swiftvt-plugin.h"
#include "swiftvt-debug.h"
#include "swiftvt-object.h"
#include "swiftvt-element.h"
#include "swiftvt-buffer.h"
#include "swiftvt-caps.h"
#include "swiftvt-pad.h"
#include "swiftvt-video.h"
#include "swiftvt-base.h"

#endif
