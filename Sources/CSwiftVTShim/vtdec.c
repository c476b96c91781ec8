// vtdec / vtdec_hw: the GstVideoDecoder vfunc trampolines of the H.264 decoder and its
// registration. Its interface (properties, pad templates, metadata) is declared with its behaviour
// in Swift (Sources/SwiftVTElements/VTDec/VTDec.swift) and installed by the generic class
// (element.c). Both names share one implementation; they differ only in the default of the
// `hardware` property, so each is its own GType whose class data carries that default (as
// gst-plugins-bad registers per-device elements).
#include <stddef.h>
#include "SwiftVTShim.h"
#include "elements.h"

GST_DEBUG_CATEGORY_STATIC(vtdec_debug);

GstDebugCategory *swiftvt_vtdec_debug_category(void) { return vtdec_debug; }

typedef struct {
    GstVideoDecoder parent;
    void *swift;
} SwiftVTDec;

typedef struct {
    GstVideoDecoderClass parent_class;
} SwiftVTDecClass;

static GstElementClass *parent_class = NULL;

#define SELF(object) ((SwiftVTDec *) (object))

static gboolean start(GstVideoDecoder *decoder) { return swiftvt_element_vfunc_step(decoder, SWIFTVT_STEP_START); }
static gboolean stop(GstVideoDecoder *decoder) { return swiftvt_element_vfunc_step(decoder, SWIFTVT_STEP_STOP); }
static gboolean set_format(GstVideoDecoder *decoder, GstVideoCodecState *state) {
    return swiftvt_vtdec_set_format(SELF(decoder)->swift, decoder, state);
}
static GstFlowReturn handle_frame(GstVideoDecoder *decoder, GstVideoCodecFrame *frame) {
    return swiftvt_vtdec_handle_frame(SELF(decoder)->swift, decoder, frame);
}
static GstFlowReturn finish(GstVideoDecoder *decoder) { return swiftvt_vtdec_drain(SELF(decoder)->swift, decoder); }
static GstFlowReturn drain(GstVideoDecoder *decoder) { return swiftvt_vtdec_drain(SELF(decoder)->swift, decoder); }
static gboolean flush(GstVideoDecoder *decoder) { return swiftvt_vtdec_flush(SELF(decoder)->swift, decoder); }
void swiftvt_vtdec_set_output_pool_flushing(GstVideoDecoder *decoder, gboolean flushing) {
    GstBufferPool *pool = gst_video_decoder_get_buffer_pool(decoder);
    if (pool == NULL) return;
    if (gst_buffer_pool_is_active(pool)) gst_buffer_pool_set_flushing(pool, flushing);
    gst_object_unref(pool);
}

static gboolean decide_allocation(GstVideoDecoder *decoder, GstQuery *query) {
    guint downstream_min = 0;
    GstBufferPool *downstream_pool = NULL;
    if (gst_query_get_n_allocation_pools(query) > 0) {
        gst_query_parse_nth_allocation_pool(query, 0, &downstream_pool, NULL, &downstream_min, NULL);
    }
    // Without GstVideoMeta, pictures are copied: into downstream's pool when it offers one, else
    // into vtdec's own bounded copy pool (VTDec.copyForDownstreamWithoutVideoMeta), which grows
    // for a downstream that keeps pictures where a GstBufferPool at its maximum would block.
    swiftvt_vtdec_note_allocation(SELF(decoder)->swift, gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL),
                                  downstream_min, downstream_pool != NULL);
    if (downstream_pool != NULL) gst_object_unref(downstream_pool);
    return GST_VIDEO_DECODER_CLASS(parent_class)->decide_allocation(decoder, query);
}

/// FLUSH_START reaches the element while its streaming thread may be waiting for downstream to
/// give a picture back (its pools are bounded): the flush must wake it, or the FLUSH_STOP that
/// follows would wait for the stream lock forever. FLUSH_STOP then runs the flush vfunc, which
/// ends the flushing state.
static gboolean sink_event(GstVideoDecoder *decoder, GstEvent *event) {
    if (GST_EVENT_TYPE(event) == GST_EVENT_FLUSH_START) swiftvt_vtdec_flush_start(SELF(decoder)->swift);
    return GST_VIDEO_DECODER_CLASS(parent_class)->sink_event(decoder, event);
}

/// The sink caps query: GstVideoDecoder's proxy of downstream's caps, without the fields that
/// say nothing about the H.264 stream. A downstream that takes any size (fakesink, a src template
/// of ranges) would otherwise add width/height/framerate *ranges*, and an upstream capsfilter
/// such as `video/x-h264,stream-format=byte-stream,alignment=au` then fails with "Output caps are
/// unfixed" where avdec_h264 decodes (its src template has no such ranges). Fixed values that
/// downstream really demands are kept.
static GstCaps *sink_getcaps(GstVideoDecoder *decoder, GstCaps *filter) {
    GstCaps *proxied = gst_video_decoder_proxy_getcaps(decoder, NULL, filter);
    if (proxied == NULL || gst_caps_is_any(proxied) || gst_caps_is_empty(proxied)) return proxied;
    GstCaps *caps = gst_caps_make_writable(proxied);
    static const char *const unfixed_candidates[] = {"width", "height", "framerate", "pixel-aspect-ratio"};
    for (guint i = 0; i < gst_caps_get_size(caps); i++) {
        GstStructure *structure = gst_caps_get_structure(caps, i);
        for (guint f = 0; f < G_N_ELEMENTS(unfixed_candidates); f++) {
            const GValue *value = gst_structure_get_value(structure, unfixed_candidates[f]);
            if (value != NULL && !gst_value_is_fixed(value)) gst_structure_remove_field(structure, unfixed_candidates[f]);
        }
    }
    caps = gst_caps_simplify(caps);
    if (filter != NULL) {
        // Removing fields widened the caps: the answer must still lie within the query's filter.
        GstCaps *filtered = gst_caps_intersect_full(filter, caps, GST_CAPS_INTERSECT_FIRST);
        gst_caps_unref(caps);
        caps = filtered;
    }
    return caps;
}

static gboolean close_decoder(GstVideoDecoder *decoder) { return swiftvt_element_vfunc_step(decoder, SWIFTVT_STEP_CLOSE); }


static void wire_vfuncs(gpointer klass) {
    GstVideoDecoderClass *decoder_class = GST_VIDEO_DECODER_CLASS(klass);
    parent_class = g_type_class_peek_parent(klass);
    decoder_class->close = close_decoder;
    decoder_class->getcaps = sink_getcaps;
    decoder_class->start = start;
    decoder_class->stop = stop;
    decoder_class->set_format = set_format;
    decoder_class->handle_frame = handle_frame;
    decoder_class->finish = finish;
    decoder_class->drain = drain;
    decoder_class->flush = flush;
    decoder_class->decide_allocation = decide_allocation;
    decoder_class->sink_event = sink_event;
}

static const SwiftVTElementClassData software_first = {"vtdec", SWIFTVT_HARDWARE_AUTO, wire_vfuncs, offsetof(SwiftVTDec, swift)};
static const SwiftVTElementClassData hardware_only = {"vtdec", SWIFTVT_HARDWARE_REQUIRE, wire_vfuncs, offsetof(SwiftVTDec, swift)};

static GType register_type(const char *type_name, const SwiftVTElementClassData *data) {
    return swiftvt_register_element_type(GST_TYPE_VIDEO_DECODER, type_name, sizeof(SwiftVTDecClass), sizeof(SwiftVTDec),
                                         data, FALSE);
}

gboolean swiftvt_register_vtdec(GstPlugin *plugin, const gchar *va_sink_caps) {
    if (vtdec_debug == NULL) GST_DEBUG_CATEGORY_INIT(vtdec_debug, "vtdec", 0, "SwiftVT H.264 decoder");
    swiftvt_set_hardware_sink_caps(va_sink_caps);
    // Secondary rank: available to decodebin/playbin, without taking over systems that have a
    // primary decoder (avdec_h264 is primary) by surprise. vtdec_hw outranks vtdec only where a
    // VA device decodes H.264; elsewhere it stays usable by name (and fails at its state change
    // with a clear error) but is never autoplugged, since it could not decode anything.
    guint hardware_rank = va_sink_caps != NULL ? GST_RANK_SECONDARY + 1 : GST_RANK_NONE;
    return gst_element_register(plugin, "vtdec", GST_RANK_SECONDARY, register_type("SwiftVTDec", &software_first))
        && gst_element_register(plugin, "vtdec_hw", hardware_rank,
                                register_type("SwiftVTDecHardware", &hardware_only));
}
