// h264parse-to-avcc: the GstBaseParse vfunc trampolines and the registration. Its interface (pad
// templates, metadata) is declared with its behaviour in Swift
// (Sources/SwiftVTElements/H264ParseToAVCC/H264ParseToAVCC.swift) and installed by the generic
// class (element.c).
#include <stddef.h>
#include "SwiftVTShim.h"
#include "elements.h"

GST_DEBUG_CATEGORY_STATIC(h264parse_to_avcc_debug);

GstDebugCategory *swiftvt_h264parse_to_avcc_debug_category(void) { return h264parse_to_avcc_debug; }

typedef struct {
    GstBaseParse parent;
    /// The Swift element object (retained; released in finalize).
    void *swift;
} SwiftVTH264ParseToAVCC;

typedef struct {
    GstBaseParseClass parent_class;
} SwiftVTH264ParseToAVCCClass;

static GstBaseParseClass *parent_class = NULL;

#define SELF(parse) ((SwiftVTH264ParseToAVCC *) (parse))

static gboolean start(GstBaseParse *parse) { return swiftvt_element_vfunc_step(parse, SWIFTVT_STEP_START); }
static gboolean stop(GstBaseParse *parse) { return swiftvt_element_vfunc_step(parse, SWIFTVT_STEP_STOP); }

static gboolean set_sink_caps(GstBaseParse *parse, GstCaps *caps) {
    return swiftvt_h264parse_to_avcc_set_sink_caps(SELF(parse)->swift, parse, caps);
}

static GstFlowReturn handle_frame(GstBaseParse *parse, GstBaseParseFrame *frame, gint *skipsize) {
    return swiftvt_h264parse_to_avcc_handle_frame(SELF(parse)->swift, parse, frame, skipsize);
}

static gboolean sink_event(GstBaseParse *parse, GstEvent *event) {
    switch (GST_EVENT_TYPE(event)) {
    case GST_EVENT_FLUSH_STOP: swiftvt_h264parse_to_avcc_flush(SELF(parse)->swift, parse); break;
    case GST_EVENT_EOS: swiftvt_h264parse_to_avcc_will_drain(SELF(parse)->swift, parse); break;
    default: break;
    }
    return parent_class->sink_event(parse, event);
}

static void wire_vfuncs(gpointer klass) {
    GstBaseParseClass *parse_class = GST_BASE_PARSE_CLASS(klass);
    parent_class = g_type_class_peek_parent(klass);
    parse_class->start = start;
    parse_class->stop = stop;
    parse_class->set_sink_caps = set_sink_caps;
    parse_class->handle_frame = handle_frame;
    parse_class->sink_event = sink_event;
}

static const SwiftVTElementClassData class_data = {"h264parse-to-avcc", SWIFTVT_HARDWARE_AUTO, wire_vfuncs,
                                                   offsetof(SwiftVTH264ParseToAVCC, swift)};

gboolean swiftvt_register_h264parse_to_avcc(GstPlugin *plugin) {
    if (h264parse_to_avcc_debug == NULL)
        GST_DEBUG_CATEGORY_INIT(h264parse_to_avcc_debug, "h264parse-to-avcc", 0, "SwiftVT H.264 Annex B to AVCC converter");
    GType type = swiftvt_register_element_type(GST_TYPE_BASE_PARSE, "SwiftVTH264ParseToAVCC", sizeof(SwiftVTH264ParseToAVCCClass),
                                               sizeof(SwiftVTH264ParseToAVCC), &class_data, FALSE);
    return gst_element_register(plugin, "h264parse-to-avcc", GST_RANK_NONE, type);
}
