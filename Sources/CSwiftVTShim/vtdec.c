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

    gst_element_class_add_static_pad_template(element_class, &sink_template);
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

gboolean swiftvt_register_vtdec(GstPlugin *plugin) {
    if (vtdec_debug == NULL) GST_DEBUG_CATEGORY_INIT(vtdec_debug, "vtdec", 0, "SwiftVT H.264 decoder");
    // Secondary rank: available to decodebin/playbin, without taking over systems that have a
    // primary decoder (avdec_h264 is primary) by surprise.
    return gst_element_register(plugin, "vtdec", GST_RANK_SECONDARY, register_type("SwiftVTDec", SWIFTVT_HARDWARE_AUTO))
        && gst_element_register(plugin, "vtdec_hw", GST_RANK_SECONDARY + 1,
                                register_type("SwiftVTDecHardware", SWIFTVT_HARDWARE_REQUIRE));
}
