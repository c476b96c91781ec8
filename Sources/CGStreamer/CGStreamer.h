// GStreamer core, base and video libraries, as found through pkg-config (gstreamer-video-1.0
// requires gstreamer-base-1.0 and gstreamer-1.0, so one pkg-config name brings all three).
#include <gst/gst.h>
#include <gst/base/base.h>
#include <gst/video/video.h>
