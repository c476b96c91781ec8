// vtenc / vtenc_h264 / vtenc_h264_hw: the GstVideoEncoder vfunc trampolines of the H.264 encoder
// and its registration. Its interface (properties, pad templates, metadata) is declared with its
// behaviour in Swift (Sources/SwiftVTElements/VTEnc/VTEnc.swift) and installed by the generic
// class (element.c).
#include <stddef.h>
#include "SwiftVTShim.h"
#include "elements.h"

GST_DEBUG_CATEGORY_STATIC(vtenc_debug);

GstDebugCategory *swiftvt_vtenc_debug_category(void) { return vtenc_debug; }

typedef struct {
    GstVideoEncoder parent;
    void *swift;
} SwiftVTEnc;

typedef struct {
    GstVideoEncoderClass parent_class;
} SwiftVTEncClass;

#define SELF(object) ((SwiftVTEnc *) (object))

static GstElementClass *parent_class = NULL;

static gboolean start(GstVideoEncoder *encoder) { return swiftvt_element_vfunc_step(encoder, SWIFTVT_STEP_START); }
static gboolean stop(GstVideoEncoder *encoder) { return swiftvt_element_vfunc_step(encoder, SWIFTVT_STEP_STOP); }
static gboolean set_format(GstVideoEncoder *encoder, GstVideoCodecState *state) {
    return swiftvt_vtenc_set_format(SELF(encoder)->swift, encoder, state);
}
static GstFlowReturn handle_frame(GstVideoEncoder *encoder, GstVideoCodecFrame *frame) {
    return swiftvt_vtenc_handle_frame(SELF(encoder)->swift, encoder, frame);
}
static GstFlowReturn finish(GstVideoEncoder *encoder) { return swiftvt_vtenc_finish(SELF(encoder)->swift, encoder); }
static gboolean flush(GstVideoEncoder *encoder) { return swiftvt_vtenc_flush(SELF(encoder)->swift, encoder); }

static gboolean close_encoder(GstVideoEncoder *encoder) { return swiftvt_element_vfunc_step(encoder, SWIFTVT_STEP_CLOSE); }

/// The allocation query upstream sends after the caps (the session exists by then): the base
/// class keeps every input buffer until its frame is encoded, so vtenc holds the session's frame
/// delay plus one. Saying so as min_buffers (as x264enc does) lets an upstream with a bounded
/// pool - vtdec - allow for them instead of waiting for buffers vtenc keeps until it gets more.
static gboolean propose_allocation(GstVideoEncoder *encoder, GstQuery *query) {
    GstCaps *caps = NULL;
    gst_query_parse_allocation(query, &caps, NULL);
    GstVideoInfo info;
    guint held = swiftvt_vtenc_held_input_frames(SELF(encoder)->swift);
    if (caps != NULL && held > 0 && gst_query_get_n_allocation_pools(query) == 0 && gst_video_info_from_caps(&info, caps)) {
        gst_query_add_allocation_pool(query, NULL, (guint) GST_VIDEO_INFO_SIZE(&info), held, 0);
    }
    return GST_VIDEO_ENCODER_CLASS(parent_class)->propose_allocation(encoder, query);
}

static void wire_vfuncs(gpointer klass) {
    GstVideoEncoderClass *encoder_class = GST_VIDEO_ENCODER_CLASS(klass);
    parent_class = g_type_class_peek_parent(klass);
    encoder_class->close = close_encoder;
    encoder_class->start = start;
    encoder_class->stop = stop;
    encoder_class->set_format = set_format;
    encoder_class->handle_frame = handle_frame;
    encoder_class->finish = finish;
    encoder_class->flush = flush;
    encoder_class->propose_allocation = propose_allocation;
}

static const SwiftVTElementClassData software_first = {"vtenc", SWIFTVT_HARDWARE_AUTO, wire_vfuncs, offsetof(SwiftVTEnc, swift)};
static const SwiftVTElementClassData hardware_only = {"vtenc", SWIFTVT_HARDWARE_REQUIRE, wire_vfuncs, offsetof(SwiftVTEnc, swift)};

static GType register_type(const char *type_name, const SwiftVTElementClassData *data) {
    return swiftvt_register_element_type(GST_TYPE_VIDEO_ENCODER, type_name, sizeof(SwiftVTEncClass), sizeof(SwiftVTEnc),
                                         data, TRUE);
}

gboolean swiftvt_register_vtenc(GstPlugin *plugin, gboolean va_encodes) {
    if (vtenc_debug == NULL) GST_DEBUG_CATEGORY_INIT(vtenc_debug, "vtenc", 0, "SwiftVT H.264 encoder");
    GType software_type = register_type("SwiftVTEnc", &software_first);
    // Secondary rank: encodebin and friends pick x264enc (primary) unless asked otherwise.
    // vtenc_h264_hw is offered to them only where a VA device encodes H.264 (as vtdec_hw).
    guint hardware_rank = va_encodes ? GST_RANK_SECONDARY + 1 : GST_RANK_NONE;
    return gst_element_register(plugin, "vtenc", GST_RANK_SECONDARY, software_type)
        && gst_element_register(plugin, "vtenc_h264", GST_RANK_SECONDARY, software_type)
        && gst_element_register(plugin, "vtenc_h264_hw", hardware_rank, register_type("SwiftVTEncHardware", &hardware_only));
}
