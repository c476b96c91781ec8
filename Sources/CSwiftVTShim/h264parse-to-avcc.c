// h264parse-to-avcc: GObject type, pad templates and vfunc trampolines. The behaviour is in
// Swift (Sources/SwiftVTElements/H264ParseToAVCC).
#include "SwiftVTShim.h"
#include "elements.h"

GST_DEBUG_CATEGORY_STATIC(h264parse_to_avcc_debug);

GstDebugCategory *swiftvt_h264parse_to_avcc_debug_category(void) { return h264parse_to_avcc_debug; }

struct _SwiftVTH264ParseToAVCC {
    GstBaseParse parent;
    /// The Swift element object (retained; released in finalize).
    void *swift;
};

G_DEFINE_FINAL_TYPE(SwiftVTH264ParseToAVCC, swiftvt_h264parse_to_avcc, GST_TYPE_BASE_PARSE)

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("video/x-h264, stream-format = (string) byte-stream"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("video/x-h264, stream-format = (string) { avc, avc3 }, "
                    "alignment = (string) au, parsed = (boolean) true"));

#define SELF(parse) ((SwiftVTH264ParseToAVCC *) (parse))

static gboolean start(GstBaseParse *parse) { return swiftvt_h264parse_to_avcc_start(SELF(parse)->swift, parse); }
static gboolean stop(GstBaseParse *parse) { return swiftvt_h264parse_to_avcc_stop(SELF(parse)->swift, parse); }

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
    return GST_BASE_PARSE_CLASS(swiftvt_h264parse_to_avcc_parent_class)->sink_event(parse, event);
}

static void finalize(GObject *object) {
    swiftvt_h264parse_to_avcc_destroy(SELF(object)->swift);
    SELF(object)->swift = NULL;
    G_OBJECT_CLASS(swiftvt_h264parse_to_avcc_parent_class)->finalize(object);
}

static void swiftvt_h264parse_to_avcc_class_init(SwiftVTH264ParseToAVCCClass *klass) {
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    GstBaseParseClass *parse_class = GST_BASE_PARSE_CLASS(klass);

    object_class->finalize = finalize;
    parse_class->start = start;
    parse_class->stop = stop;
    parse_class->set_sink_caps = set_sink_caps;
    parse_class->handle_frame = handle_frame;
    parse_class->sink_event = sink_event;

    gst_element_class_add_static_pad_template(element_class, &sink_template);
    gst_element_class_add_static_pad_template(element_class, &src_template);
    gst_element_class_set_static_metadata(
        element_class, "H.264 Annex B to AVCC converter", "Codec/Parser/Converter/Video",
        "Turns an H.264 byte stream (start codes, in-band SPS/PPS) into access units of "
        "length-prefixed NAL units with the parameter sets in codec_data (avcC), with "
        "timestamps derived from the picture order count when upstream has none",
        "SwiftVT developers");
    GST_DEBUG_CATEGORY_INIT(h264parse_to_avcc_debug, "h264parse-to-avcc", 0, "SwiftVT H.264 Annex B to AVCC converter");
}

static void swiftvt_h264parse_to_avcc_init(SwiftVTH264ParseToAVCC *self) {
    self->swift = swiftvt_h264parse_to_avcc_create(GST_BASE_PARSE(self));
}

gboolean swiftvt_register_h264parse_to_avcc(GstPlugin *plugin) {
    return gst_element_register(plugin, "h264parse-to-avcc", GST_RANK_NONE, swiftvt_h264parse_to_avcc_get_type());
}
