// vtmultipasssink: the GstBaseSink vfunc trampolines of the multi-pass encoding sink and its
// registration, plus the GStreamer calls Swift cannot make (variadic functions, calls that must
// run on another thread). Its interface (properties, pad template, metadata) is declared with its
// behaviour in Swift (Sources/SwiftVTElements/VTMultiPassSink/VTMultiPassSink.swift) and installed
// by the generic class (element.c).
#include <stddef.h>
#include "SwiftVTShim.h"
#include "elements.h"

GST_DEBUG_CATEGORY_STATIC(vtmultipasssink_debug);

GstDebugCategory *swiftvt_vtmultipasssink_debug_category(void) { return vtmultipasssink_debug; }

typedef struct {
    GstBaseSink parent;
    void *swift;
} SwiftVTMultiPassSink;

typedef struct {
    GstBaseSinkClass parent_class;
} SwiftVTMultiPassSinkClass;

static GstElementClass *parent_class = NULL;
#define SELF(object) ((SwiftVTMultiPassSink *) (object))

// The run is prepared in the Swift object's prepare(NULL -> READY), before the base class's start.
static gboolean start(GstBaseSink *sink) { return swiftvt_element_vfunc_step(sink, SWIFTVT_STEP_START); }
static gboolean stop(GstBaseSink *sink) { return swiftvt_element_vfunc_step(sink, SWIFTVT_STEP_STOP); }
static gboolean set_caps(GstBaseSink *sink, GstCaps *caps) {
    return swiftvt_vtmultipasssink_set_caps(SELF(sink)->swift, sink, caps);
}
static GstFlowReturn render(GstBaseSink *sink, GstBuffer *buffer) {
    return swiftvt_vtmultipasssink_render(SELF(sink)->swift, sink, buffer);
}

static gboolean event(GstBaseSink *sink, GstEvent *event) {
    if (GST_EVENT_TYPE(event) == GST_EVENT_EOS) {
        switch (swiftvt_vtmultipasssink_eos(SELF(sink)->swift, sink)) {
        case SWIFTVT_EOS_SWALLOW:
            // Another pass follows: the pipeline must not see this EOS (the seek that starts the
            // next range is on its way from another thread).
            gst_event_unref(event);
            return TRUE;
        case SWIFTVT_EOS_FAILED:
            gst_event_unref(event);
            return FALSE;
        default:
            break;  // the file is complete: the base class posts EOS
        }
    }
    return GST_BASE_SINK_CLASS(parent_class)->event(sink, event);
}

static void wire_vfuncs(gpointer klass) {
    GstBaseSinkClass *sink_class = GST_BASE_SINK_CLASS(klass);
    parent_class = g_type_class_peek_parent(klass);
    sink_class->start = start;
    sink_class->stop = stop;
    sink_class->set_caps = set_caps;
    sink_class->render = render;
    sink_class->event = event;
}

static const SwiftVTElementClassData class_data = {"vtmultipasssink", SWIFTVT_HARDWARE_AUTO, wire_vfuncs,
                                                   offsetof(SwiftVTMultiPassSink, swift)};

gboolean swiftvt_register_vtmultipasssink(GstPlugin *plugin) {
    if (vtmultipasssink_debug == NULL)
        GST_DEBUG_CATEGORY_INIT(vtmultipasssink_debug, "vtmultipasssink", 0, "SwiftVT multi-pass H.264 file sink");
    GType type = swiftvt_register_element_type(GST_TYPE_BASE_SINK, "SwiftVTMultiPassSink", sizeof(SwiftVTMultiPassSinkClass),
                                               sizeof(SwiftVTMultiPassSink), &class_data, FALSE);
    return gst_element_register(plugin, "vtmultipasssink", GST_RANK_NONE, type);
}

// MARK: Upstream

gboolean swiftvt_pad_peer_seekable(GstPad *pad) {
    GstQuery *query = gst_query_new_seeking(GST_FORMAT_TIME);
    gboolean seekable = FALSE;
    if (gst_pad_peer_query(pad, query)) gst_query_parse_seeking(query, NULL, &seekable, NULL, NULL);
    gst_query_unref(query);
    return seekable;
}

typedef struct {
    GstClockTime start;
    GstClockTime stop;
} SeekRange;

static void seek_upstream(GstElement *element, gpointer data) {
    SeekRange *range = data;
    GstBaseSink *sink = GST_BASE_SINK(element);
    // The ranges are in buffer time stamps; a seek position is stream time, which differs when
    // the source's time stamps do not start at 0 (MPEG-TS, files with a start offset): converted
    // with the segment the frames came in (positions before its start convert too, the _full
    // variant). Without it the seek landed before or after the range and the pass got no frame.
    guint64 start = range->start, stop = range->stop, converted;
    GST_OBJECT_LOCK(sink);
    if (sink->segment.format == GST_FORMAT_TIME) {
        if (gst_segment_to_stream_time_full(&sink->segment, GST_FORMAT_TIME, range->start, &converted) == 1)
            start = converted;
        if (GST_CLOCK_TIME_IS_VALID(range->stop) &&
            gst_segment_to_stream_time_full(&sink->segment, GST_FORMAT_TIME, range->stop, &converted) == 1)
            stop = converted;
    }
    GST_OBJECT_UNLOCK(sink);
    GstEvent *seek = gst_event_new_seek(1.0, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH | GST_SEEK_FLAG_ACCURATE,
                                        GST_SEEK_TYPE_SET, start, GST_SEEK_TYPE_SET, stop);
    GST_INFO_OBJECT(sink, "seeking upstream to %" GST_TIME_FORMAT " - %" GST_TIME_FORMAT " (stream time of the range's time stamps %"
                    GST_TIME_FORMAT " - %" GST_TIME_FORMAT ")", GST_TIME_ARGS(start), GST_TIME_ARGS(stop),
                    GST_TIME_ARGS(range->start), GST_TIME_ARGS(range->stop));
    if (!gst_pad_push_event(GST_BASE_SINK_PAD(sink), seek)) {
        GST_ELEMENT_ERROR(sink, RESOURCE, SEEK,
                          ("vtmultipasssink: upstream refused the seek to %" GST_TIME_FORMAT " for the next pass; "
                           "use a seekable source (a file) or max-passes=1",
                           GST_TIME_ARGS(start)),
                          (NULL));
    }
}

void swiftvt_base_sink_seek_upstream_async(GstBaseSink *sink, GstClockTime start, GstClockTime stop) {
    SeekRange *range = g_new(SeekRange, 1);
    range->start = start;
    range->stop = stop;
    // A flushing seek waits for the streaming thread, which is the one asking: it must be
    // sent from elsewhere.
    gst_element_call_async(GST_ELEMENT(sink), seek_upstream, range, g_free);
}

gint64 swiftvt_pad_peer_duration(GstPad *pad) {
    gint64 duration = -1;
    if (!gst_pad_peer_query_duration(pad, GST_FORMAT_TIME, &duration)) return -1;
    return duration;
}

void swiftvt_post_multipass_summary(GstElement *element, const char *location, gint passes, gint frames,
                                    gint frames_reencoded, gdouble bitrate, gdouble target_bitrate, gdouble seconds) {
    GstStructure *structure = gst_structure_new(
        "vtmultipasssink-done", "location", G_TYPE_STRING, location, "passes", G_TYPE_INT, passes, "frames", G_TYPE_INT,
        frames, "frames-reencoded", G_TYPE_INT, frames_reencoded, "bitrate", G_TYPE_DOUBLE, bitrate, "target-bitrate",
        G_TYPE_DOUBLE, target_bitrate, "duration", G_TYPE_DOUBLE, seconds, NULL);
    gst_element_post_message(element, gst_message_new_element(GST_OBJECT(element), structure));
}

void swiftvt_post_progress(GstElement *element, GstProgressType type, const char *code, const char *text, gint percent) {
    GstMessage *message = gst_message_new_progress(GST_OBJECT(element), type, code, text);
    if (!message) return;
    // A message just made has one reference: its structure is writable.
    gst_structure_set(gst_message_writable_structure(message), "percent", G_TYPE_INT, CLAMP(percent, 0, 100), NULL);
    gst_element_post_message(element, message);
}

// MARK: The muxing pipeline that writes .mp4 / .mov

GstElement *swiftvt_mux_pipeline_new(const char *muxer, const char *location, GstCaps *caps, GError **error) {
    GstElement *pipeline = gst_pipeline_new("vtmultipasssink-writer");
    GstElement *source = gst_element_factory_make("appsrc", "source");
    GstElement *mux = gst_element_factory_make(muxer, "mux");
    GstElement *sink = gst_element_factory_make("filesink", "sink");
    if (!source || !mux || !sink) {
        g_set_error(error, GST_CORE_ERROR, GST_CORE_ERROR_MISSING_PLUGIN,
                    "the GStreamer element %s is missing (install gstreamer1.0-plugins-base and -good)",
                    !source ? "appsrc" : !mux ? muxer : "filesink");
        if (source) gst_object_unref(source);
        if (mux) gst_object_unref(mux);
        if (sink) gst_object_unref(sink);
        gst_object_unref(pipeline);
        return NULL;
    }
    // Blocks the writer when 16 MB are queued: memory stays bounded whatever the file size.
    g_object_set(source, "caps", caps, "format", GST_FORMAT_TIME, "block", TRUE, "max-bytes", (guint64) 16 << 20, NULL);
    g_object_set(sink, "location", location, NULL);
    gst_bin_add_many(GST_BIN(pipeline), source, mux, sink, NULL);
    // The video request pad by name: linking by caps could pick another request pad, since
    // appsrc answers caps queries only once it runs.
    if (!gst_element_link_pads(source, "src", mux, "video_%u") || !gst_element_link(mux, sink)) {
        g_set_error(error, GST_CORE_ERROR, GST_CORE_ERROR_NEGOTIATION, "%s does not take this H.264 stream", muxer);
        gst_object_unref(pipeline);
        return NULL;
    }
    if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
        g_set_error(error, GST_RESOURCE_ERROR, GST_RESOURCE_ERROR_OPEN_WRITE, "could not start writing %s", location);
        gst_element_set_state(pipeline, GST_STATE_NULL);
        gst_object_unref(pipeline);
        return NULL;
    }
    return pipeline;
}

GstFlowReturn swiftvt_mux_pipeline_push(GstElement *pipeline, GstBuffer *buffer, GstClockTime segment_start) {
    GstElement *source = gst_bin_get_by_name(GST_BIN(pipeline), "source");
    GstFlowReturn flow = GST_FLOW_ERROR;
    if (source && GST_CLOCK_TIME_IS_VALID(segment_start)) {
        // The first buffer goes with a segment starting at the time-stamp offset, so running
        // times are the original ones (the first PTS runs at 0) and only the DTS of the first
        // B-frame delay run before 0, as with x264enc's output; qtmux turns those into an edit list.
        GstSegment segment;
        gst_segment_init(&segment, GST_FORMAT_TIME);
        segment.start = segment_start;
        segment.position = segment_start;
        GstCaps *caps = NULL;
        g_object_get(source, "caps", &caps, NULL);
        GstSample *sample = gst_sample_new(buffer, caps, &segment, NULL);
        g_signal_emit_by_name(source, "push-sample", sample, &flow);
        gst_sample_unref(sample);
        if (caps) gst_caps_unref(caps);
    } else if (source) {
        g_signal_emit_by_name(source, "push-buffer", buffer, &flow);
    }
    if (source) gst_object_unref(source);
    gst_buffer_unref(buffer);
    return flow;
}

gchar *swiftvt_mux_pipeline_finish(GstElement *pipeline, gboolean complete) {
    gchar *problem = NULL;
    GstElement *source = gst_bin_get_by_name(GST_BIN(pipeline), "source");
    if (source && complete) {
        GstFlowReturn flow;
        g_signal_emit_by_name(source, "end-of-stream", &flow);
    }
    if (source) gst_object_unref(source);
    if (complete) {
        GstBus *bus = gst_element_get_bus(pipeline);
        GstMessage *message =
            gst_bus_timed_pop_filtered(bus, GST_CLOCK_TIME_NONE, GST_MESSAGE_EOS | GST_MESSAGE_ERROR);
        if (message && GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
            GError *error = NULL;
            gchar *debug = NULL;
            gst_message_parse_error(message, &error, &debug);
            problem = g_strdup_printf("%s (%s)", error ? error->message : "error", debug ? debug : "");
            g_clear_error(&error);
            g_free(debug);
        }
        if (message) gst_message_unref(message);
        gst_object_unref(bus);
    }
    gst_element_set_state(pipeline, GST_STATE_NULL);
    gst_object_unref(pipeline);
    return problem;
}

/// The first error the writer posted so far (NULL if none), without waiting.
gchar *swiftvt_mux_pipeline_error(GstElement *pipeline) {
    GstBus *bus = gst_element_get_bus(pipeline);
    GstMessage *message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR);
    gchar *problem = NULL;
    if (message) {
        GError *error = NULL;
        gst_message_parse_error(message, &error, NULL);
        problem = g_strdup(error ? error->message : "error");
        g_clear_error(&error);
        gst_message_unref(message);
    }
    gst_object_unref(bus);
    return problem;
}
