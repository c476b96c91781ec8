// vtenc / vtenc_h264 / vtenc_h264_hw: GObject types, pad templates, properties and vfunc
// trampolines of the H.264 encoder. The behaviour is in Swift (Sources/SwiftVTElements/VTEnc).
// One table describes the properties; install, set and get all walk it, and set/get hand the
// GValue to Swift, which keeps the values (Settings) — so no property is written out three times.
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
    SwiftVTHardwarePolicy default_hardware;
} SwiftVTEncClass;

static GstElementClass *parent_class = NULL;
#define PARENT_TYPE GST_TYPE_VIDEO_ENCODER

#define SELF(object) ((SwiftVTEnc *) (object))

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS, GST_STATIC_CAPS(GST_VIDEO_CAPS_MAKE("{ NV12, I420 }")));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("video/x-h264, stream-format = (string) { avc, byte-stream }, alignment = (string) au, "
                    "profile = (string) { high, main, constrained-baseline, baseline, progressive-high, high-4:4:4 }, "
                    "width = (int) [ 16, 16384 ], height = (int) [ 16, 16384 ], framerate = (fraction) [ 0/1, MAX ]"));

GType swiftvt_rate_control_get_type(void) {
    static gsize type = 0;
    static const GEnumValue values[] = {
        {SWIFTVT_RATE_CONTROL_ABR, "Average bit rate (bitrate, kbit/s)", "abr"},
        {SWIFTVT_RATE_CONTROL_CBR, "Constant bit rate: bitrate as a hard limit over one second", "cbr"},
        {SWIFTVT_RATE_CONTROL_QUALITY, "Constant quality (quality, 0...1)", "quality"},
        {0, NULL, NULL},
    };
    if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("SwiftVTRateControl", values));
    return type;
}

GType swiftvt_entropy_mode_get_type(void) {
    static gsize type = 0;
    static const GEnumValue values[] = {
        {SWIFTVT_ENTROPY_AUTO, "CABAC where the profile allows it, else CAVLC", "auto"},
        {SWIFTVT_ENTROPY_CAVLC, "CAVLC", "cavlc"},
        {SWIFTVT_ENTROPY_CABAC, "CABAC (main and high profiles)", "cabac"},
        {0, NULL, NULL},
    };
    if (g_once_init_enter(&type)) g_once_init_leave(&type, g_enum_register_static("SwiftVTEntropyMode", values));
    return type;
}

typedef GParamSpec *(*SpecMaker)(SwiftVTHardwarePolicy default_hardware);

static GParamSpec *spec_bitrate(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_uint("bitrate", "Bit rate", "Target average bit rate in kbit/s (0 = the encoder chooses)",
                             0, 2000000, 0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
}
static GParamSpec *spec_rate_control(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_enum("rate-control", "Rate control", "How the bit rate is controlled",
                             swiftvt_rate_control_get_type(), SWIFTVT_RATE_CONTROL_ABR,
                             G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_data_rate_limits(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_string("data-rate-limits", "Data rate limits",
        "Hard limits as BYTES,SECONDS pairs separated by ';' (VideoToolbox's DataRateLimits), e.g. \"250000,1;400000,2\"",
        "", G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_PLAYING);
}
static GParamSpec *spec_quality(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_double("quality", "Quality", "Quality from 0 (smallest) to 1 (best), used with rate-control=quality",
                               0.0, 1.0, 0.5, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_realtime(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_boolean("realtime", "Real time", "Encode for real time: no lookahead, no frame delay beyond the reported latency",
                                FALSE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_allow_frame_reordering(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_boolean("allow-frame-reordering", "Allow frame reordering", "Allow B-frames (frames out of presentation order)",
                                TRUE, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_max_keyframe_interval(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_int("max-keyframe-interval", "Maximum key frame interval", "Frames between key frames at most (0 = the encoder default, 250 for x264)",
                            0, G_MAXINT, 0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_max_keyframe_interval_duration(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_uint64("max-keyframe-interval-duration", "Maximum key frame interval duration",
                               "Time between key frames at most, in nanoseconds (0 = no limit)",
                               0, G_MAXUINT64, 0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_entropy_mode(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_enum("entropy-mode", "Entropy mode", "Entropy coding of the slices",
                             swiftvt_entropy_mode_get_type(), SWIFTVT_ENTROPY_AUTO,
                             G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_hardware(SwiftVTHardwarePolicy default_hardware) {
    return g_param_spec_enum("hardware", "Hardware encoding",
        "Whether to encode on a VA-API device (like VideoToolbox's EnableHardwareAcceleratedVideoEncoder / "
        "RequireHardwareAcceleratedVideoEncoder). Takes effect when the next encoding session starts.",
        swiftvt_hardware_policy_get_type(), default_hardware,
        G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_max_threads(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_int("max-threads", "Maximum threads", "Encoding threads of the software encoder (0 = automatic)",
                            0, 256, 0, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY);
}
static GParamSpec *spec_active_backend(SwiftVTHardwarePolicy h) {
    (void) h;
    return g_param_spec_string("active-backend", "Active backend",
                               "The encoder in use: e.g. \"x264 (software)\"; empty before the first session starts",
                               "", G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
}

/// The property table: ids are the index + 1, and Swift switches on the same ids
/// (SwiftVTEncProperty in SwiftVTShim.h).
static const SpecMaker property_table[] = {
    [SWIFTVT_VTENC_PROP_BITRATE - 1] = spec_bitrate,
    [SWIFTVT_VTENC_PROP_RATE_CONTROL - 1] = spec_rate_control,
    [SWIFTVT_VTENC_PROP_DATA_RATE_LIMITS - 1] = spec_data_rate_limits,
    [SWIFTVT_VTENC_PROP_QUALITY - 1] = spec_quality,
    [SWIFTVT_VTENC_PROP_REALTIME - 1] = spec_realtime,
    [SWIFTVT_VTENC_PROP_ALLOW_FRAME_REORDERING - 1] = spec_allow_frame_reordering,
    [SWIFTVT_VTENC_PROP_MAX_KEYFRAME_INTERVAL - 1] = spec_max_keyframe_interval,
    [SWIFTVT_VTENC_PROP_MAX_KEYFRAME_INTERVAL_DURATION - 1] = spec_max_keyframe_interval_duration,
    [SWIFTVT_VTENC_PROP_ENTROPY_MODE - 1] = spec_entropy_mode,
    [SWIFTVT_VTENC_PROP_HARDWARE - 1] = spec_hardware,
    [SWIFTVT_VTENC_PROP_MAX_THREADS - 1] = spec_max_threads,
    [SWIFTVT_VTENC_PROP_ACTIVE_BACKEND - 1] = spec_active_backend,
};

static void set_property(GObject *object, guint id, const GValue *value, GParamSpec *spec) {
    if (id == 0 || id > G_N_ELEMENTS(property_table)) {
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
        return;
    }
    swiftvt_vtenc_set_property(SELF(object)->swift, id, value);
}

static void get_property(GObject *object, guint id, GValue *value, GParamSpec *spec) {
    if (id == 0 || id > G_N_ELEMENTS(property_table)) {
        G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, spec);
        return;
    }
    swiftvt_vtenc_get_property(SELF(object)->swift, id, value);
}

static gboolean start(GstVideoEncoder *encoder) { return swiftvt_vtenc_start(SELF(encoder)->swift, encoder); }
static gboolean stop(GstVideoEncoder *encoder) { return swiftvt_vtenc_stop(SELF(encoder)->swift, encoder); }
static gboolean set_format(GstVideoEncoder *encoder, GstVideoCodecState *state) {
    return swiftvt_vtenc_set_format(SELF(encoder)->swift, encoder, state);
}
static GstFlowReturn handle_frame(GstVideoEncoder *encoder, GstVideoCodecFrame *frame) {
    return swiftvt_vtenc_handle_frame(SELF(encoder)->swift, encoder, frame);
}
static GstFlowReturn finish(GstVideoEncoder *encoder) { return swiftvt_vtenc_finish(SELF(encoder)->swift, encoder); }
static gboolean flush(GstVideoEncoder *encoder) { return swiftvt_vtenc_flush(SELF(encoder)->swift, encoder); }

static gboolean close_encoder(GstVideoEncoder *encoder) { return swiftvt_vtenc_close(SELF(encoder)->swift, encoder); }

/// hardware=require is checked before GstVideoEncoder opens or starts the encoder, so that an
/// unmet policy fails the state change with the element's one ERROR (a failed open/start vfunc
/// would add the base class's generic "Failed to open encoder").
static GstStateChangeReturn change_state(GstElement *element, GstStateChange transition) {
    if ((transition == GST_STATE_CHANGE_NULL_TO_READY || transition == GST_STATE_CHANGE_READY_TO_PAUSED)
        && !swiftvt_vtenc_check_hardware_policy(SELF(element)->swift)) {
        return GST_STATE_CHANGE_FAILURE;
    }
    return GST_ELEMENT_CLASS(parent_class)->change_state(element, transition);
}

static void finalize(GObject *object) {
    swiftvt_vtenc_destroy(SELF(object)->swift);
    SELF(object)->swift = NULL;
    G_OBJECT_CLASS(parent_class)->finalize(object);
}

static void class_init(gpointer klass, gpointer class_data) {
    GObjectClass *object_class = G_OBJECT_CLASS(klass);
    GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
    GstVideoEncoderClass *encoder_class = GST_VIDEO_ENCODER_CLASS(klass);
    SwiftVTHardwarePolicy default_hardware = (SwiftVTHardwarePolicy) GPOINTER_TO_INT(class_data);
    ((SwiftVTEncClass *) klass)->default_hardware = default_hardware;
    parent_class = g_type_class_peek_parent(klass);

    object_class->set_property = set_property;
    object_class->get_property = get_property;
    object_class->finalize = finalize;
    element_class->change_state = change_state;
    encoder_class->close = close_encoder;
    encoder_class->start = start;
    encoder_class->stop = stop;
    encoder_class->set_format = set_format;
    encoder_class->handle_frame = handle_frame;
    encoder_class->finish = finish;
    encoder_class->flush = flush;

    for (guint i = 0; i < G_N_ELEMENTS(property_table); i++) {
        g_object_class_install_property(object_class, i + 1, property_table[i](default_hardware));
    }
    gst_element_class_add_static_pad_template(element_class, &sink_template);
    gst_element_class_add_static_pad_template(element_class, &src_template);
    gst_element_class_set_static_metadata(
        element_class,
        default_hardware == SWIFTVT_HARDWARE_REQUIRE ? "SwiftVT H.264 encoder (hardware required)" : "SwiftVT H.264 encoder",
        default_hardware == SWIFTVT_HARDWARE_REQUIRE ? "Codec/Encoder/Video/Hardware" : "Codec/Encoder/Video",
        "Encodes H.264 on the VideoToolbox compression-session model: VA-API when available, x264 otherwise",
        "SwiftVT developers");
    gst_type_mark_as_plugin_api(swiftvt_rate_control_get_type(), 0);
    gst_type_mark_as_plugin_api(swiftvt_entropy_mode_get_type(), 0);
}

static void instance_init(GTypeInstance *instance, gpointer klass) {
    SELF(instance)->swift = swiftvt_vtenc_create(GST_VIDEO_ENCODER(instance), ((SwiftVTEncClass *) klass)->default_hardware);
}

static GType register_type(const char *type_name, SwiftVTHardwarePolicy default_hardware) {
    return swiftvt_register_policy_type(PARENT_TYPE, type_name, sizeof(SwiftVTEncClass), sizeof(SwiftVTEnc),
                                        class_init, instance_init, default_hardware, TRUE);
}

gboolean swiftvt_register_vtenc(GstPlugin *plugin, gboolean va_encodes) {
    if (vtenc_debug == NULL) GST_DEBUG_CATEGORY_INIT(vtenc_debug, "vtenc", 0, "SwiftVT H.264 encoder");
    GType software_first = register_type("SwiftVTEnc", SWIFTVT_HARDWARE_AUTO);
    // Secondary rank: encodebin and friends pick x264enc (primary) unless asked otherwise.
    // vtenc_h264_hw is offered to them only where a VA device encodes H.264 (as vtdec_hw).
    guint hardware_rank = va_encodes ? GST_RANK_SECONDARY + 1 : GST_RANK_NONE;
    return gst_element_register(plugin, "vtenc", GST_RANK_SECONDARY, software_first)
        && gst_element_register(plugin, "vtenc_h264", GST_RANK_SECONDARY, software_first)
        && gst_element_register(plugin, "vtenc_h264_hw", hardware_rank,
                                register_type("SwiftVTEncHardware", SWIFTVT_HARDWARE_REQUIRE));
}
