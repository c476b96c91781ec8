// vtdec / vtdec_hw: GObject types, pad templates, properties and vfunc trampolines of the H.264
// decoder. The behaviour is in Swift (Sources/SwiftVTElements/VTDec). Both names share one
// implementation; they differ only in the default of the `hardware` property, so each is its
// own GType whose class data carries that default (as gst-plugins-bad registers per-device
// elements).
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
    SwiftVTHardwarePolicy default_hardware;
} SwiftVTDecClass;

static GstElementClass *parent_class = NULL;

/// vtdec_hw's sink caps on this machine (the H.264 profiles the VA device decodes), set by
/// swiftvt_register_vtdec before vtdec_hw's class is made; NULL when no device decodes H.264.
/// Kept for the process's life: class_init may read it whenever the class is first used.
static gchar *hardware_sink_caps = NULL;
#define PARENT_TYPE GST_TYPE_VIDEO_DECODER

#define SELF(object) ((SwiftVTDec *) (object))

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("video/x-h264, stream-format = (string) { avc, avc3, byte-stream }, alignment = (string) au"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE("{ I420, NV12, I420_10LE, P010_10LE, Y42B, I422_10LE, Y444, Y444_10LE }")));

enum { PROP_0, PROP_HARDWARE, PROP_MAX_THREADS, PROP_ACTIVE_BACKEND };

GType swiftvt_hardware_policy_get_type(void) {
    static gsize type = 0;
    static const GEnumValue values[] = {
        {SWIFTVT_HARDWARE_AUTO, "Use VA-API when a device can take the stream, else software (libavcodec, x264)", "auto"},
        {SWIFTVT_HARDWARE_REQUIRE, "Use VA-API or fail with an error", "require"},
        {SWIFTVT_HARDWARE_DISABLE, "Never use VA-API: software (libavcodec / x264) only", "disable"},
        {0, NULL, NULL},
    };
    if (g_once_init_enter(&type)) {
        g_once_init_leave(&type, g_enum_register_static("SwiftVTHardwarePolicy", values));
    }
    return type;
}

static void set_property(GObject *object, guint id, const GValue *value, GParamSpec *spec) {
    switch (id) {
    case PROP_HARDWARE: swiftvt_vtdec_set_hardware(SELF(object)->swift, g_value_get_enum(value)); break;
    case PROP_MAX_THREADS: swiftvt_vtdec_set_max_threads(SELF(object)->swift, g_value_get_int(value)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
    }
}

static void get_property(GObject *object, guint id, GValue *value, GParamSpec *spec) {
    switch (id) {
    case PROP_HARDWARE: g_value_set_enum(value, swiftvt_vtdec_get_hardware(SELF(object)->swift)); break;
    case PROP_MAX_THREADS: g_value_set_int(value, swiftvt_vtdec_get_max_threads(SELF(object)->swift)); break;
    case PROP_ACTIVE_BACKEND: g_value_take_string(value, swiftvt_vtdec_copy_active_backend(SELF(object)->swift)); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
    }
}

static gboolean start(GstVideoDecoder *decoder) { return swiftvt_vtdec_start(SELF(decoder)->swift, decoder); }
static gboolean stop(GstVideoDecoder *decoder) { return swiftvt_vtdec_stop(SELF(decoder)->swift, decoder); }
static gboolean set_format(GstVideoDecoder *decoder, GstVideoCodecState *state) {
    return swiftvt_vtdec_set_format(SELF(decoder)->swift, decoder, state);
}
static GstFlowReturn handle_frame(GstVideoDecoder *decoder, GstVideoCodecFrame *frame) {
    return swiftvt_vtdec_handle_frame(SELF(decoder)->swift, decoder, frame);
}
static GstFlowReturn finish(GstVideoDecoder *decoder) { return swiftvt_vtdec_drain(SELF(decoder)->swift, decoder); }
static GstFlowReturn drain(GstVideoDecoder *decoder) { return swiftvt_vtdec_drain(SELF(decoder)->swift, decoder); }
static gboolean flush(GstVideoDecoder *decoder) { return swiftvt_vtdec_flush(SELF(decoder)->swift, decoder); }
static gboolean decide_allocation(GstVideoDecoder *decoder, GstQuery *query) {
    swiftvt_vtdec_note_allocation(SELF(decoder)->swift, gst_query_find_allocation_meta(query, GST_VIDEO_META_API_TYPE, NULL));
    return GST_VIDEO_DECODER_CLASS(parent_class)->decide_allocation(decoder, query);
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

static gboolean close_decoder(GstVideoDecoder *decoder) { return swiftvt_vtdec_close(SELF(decoder)->swift, decoder); }

/// hardware=require is checked here, before GstVideoDecoder opens or starts the decoder: an
/// unmet policy fails the state change with the element's one ERROR (a failed open/start vfunc
/// would add the base class's generic "Failed to open decoder"), so decodebin, which brings a
/// candidate decoder to READY and PAUSED before using it, moves on to the next factory.
static GstStateChangeReturn change_state(GstElement *element, GstStateChange transition) {
    if ((transition == GST_STATE_CHANGE_NULL_TO_READY || transition == GST_STATE_CHANGE_READY_TO_PAUSED)
        && !swiftvt_vtdec_check_hardware_policy(SELF(element)->swift)) {
        return GST_STATE_CHANGE_FAILURE;
    }
    return parent_class->change_state(element, transition);
}

static void finalize(GObject *object) {
    swiftvt_vtdec_destroy(SELF(object)->swift);
    SELF(object)->swift = NULL;
    G_OBJECT_CLASS(parent_class)->finalize(object);
}

static void class_init(gpointer klass, gpointer class_data) {
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    GstVideoDecoderClass *decoder_class = GST_VIDEO_DECODER_CLASS(klass);
    SwiftVTHardwarePolicy default_hardware = (SwiftVTHardwarePolicy) GPOINTER_TO_INT(class_data);
    ((SwiftVTDecClass *) klass)->default_hardware = default_hardware;
    parent_class = g_type_class_peek_parent(klass);

    object_class->set_property = set_property;
    object_class->get_property = get_property;
    object_class->finalize = finalize;
    element_class->change_state = change_state;
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

    g_object_class_install_property(object_class, PROP_HARDWARE,
        g_param_spec_enum("hardware", "Hardware decoding",
            "Whether to decode on a VA-API device (like VideoToolbox's EnableHardwareAcceleratedVideoDecoder / "
            "RequireHardwareAcceleratedVideoDecoder). Takes effect when the next decoding session starts.",
            swiftvt_hardware_policy_get_type(), default_hardware,
            G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    g_object_class_install_property(object_class, PROP_MAX_THREADS,
        g_param_spec_int("max-threads", "Maximum threads",
            "Decoding threads of the software decoder (0 = one per core). Takes effect when the next decoding session starts.",
            0, 256, 0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY));
    g_object_class_install_property(object_class, PROP_ACTIVE_BACKEND,
        g_param_spec_string("active-backend", "Active backend",
            "The decoder in use: e.g. \"libavcodec (software)\"; empty before the first session starts",
            "", G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

    if (default_hardware == SWIFTVT_HARDWARE_REQUIRE && hardware_sink_caps != NULL) {
        // vtdec_hw with a VA device: only the profiles it decodes, so that decodebin does not
        // choose vtdec_hw for a stream the device cannot take (GStreamer's va plugin does the same).
        GstCaps *caps = gst_caps_from_string(hardware_sink_caps);
        gst_element_class_add_pad_template(element_class, gst_pad_template_new("sink", GST_PAD_SINK, GST_PAD_ALWAYS, caps));
        gst_caps_unref(caps);
    } else {
        gst_element_class_add_static_pad_template(element_class, &sink_template);
    }
    gst_element_class_add_static_pad_template(element_class, &src_template);
    gst_element_class_set_static_metadata(
        element_class,
        default_hardware == SWIFTVT_HARDWARE_REQUIRE ? "SwiftVT H.264 decoder (hardware required)" : "SwiftVT H.264 decoder",
        default_hardware == SWIFTVT_HARDWARE_REQUIRE ? "Codec/Decoder/Video/Hardware" : "Codec/Decoder/Video",
        "Decodes H.264 on the VideoToolbox decompression-session model: VA-API when available, libavcodec otherwise",
        "SwiftVT developers");
    gst_type_mark_as_plugin_api(swiftvt_hardware_policy_get_type(), 0);
}

static void instance_init(GTypeInstance *instance, gpointer klass) {
    SwiftVTDec *self = SELF(instance);
    self->swift = swiftvt_vtdec_create(GST_VIDEO_DECODER(instance), ((SwiftVTDecClass *) klass)->default_hardware);
}

static GType register_type(const char *type_name, SwiftVTHardwarePolicy default_hardware) {
    return swiftvt_register_policy_type(PARENT_TYPE, type_name, sizeof(SwiftVTDecClass), sizeof(SwiftVTDec),
                                        class_init, instance_init, default_hardware, FALSE);
}

gboolean swiftvt_register_vtdec(GstPlugin *plugin, const gchar *va_sink_caps) {
    if (vtdec_debug == NULL) GST_DEBUG_CATEGORY_INIT(vtdec_debug, "vtdec", 0, "SwiftVT H.264 decoder");
    if (va_sink_caps != NULL && hardware_sink_caps == NULL) hardware_sink_caps = g_strdup(va_sink_caps);
    // Secondary rank: available to decodebin/playbin, without taking over systems that have a
    // primary decoder (avdec_h264 is primary) by surprise. vtdec_hw outranks vtdec only where a
    // VA device decodes H.264; elsewhere it stays usable by name (and fails at its state change
    // with a clear error) but is never autoplugged, since it could not decode anything.
    guint hardware_rank = va_sink_caps != NULL ? GST_RANK_SECONDARY + 1 : GST_RANK_NONE;
    return gst_element_register(plugin, "vtdec", GST_RANK_SECONDARY, register_type("SwiftVTDec", SWIFTVT_HARDWARE_AUTO))
        && gst_element_register(plugin, "vtdec_hw", hardware_rank,
                                register_type("SwiftVTDecHardware", SWIFTVT_HARDWARE_REQUIRE));
}
