import CGStreamer
import CSwiftVTShim

/// `appsrc ! MUXER ! filesink location=LOCATION`, playing: how vtmultipasssink writes .mp4 and
/// .mov files, with GStreamer's own muxers. Owned: ``finish(complete:)`` ends it, and a pipeline
/// abandoned before that is stopped and freed when the value goes.
struct MuxingPipeline: ~Copyable {
    private let running: RunningPipeline
    /// The appsrc, owned by the pipeline (a bin holds its children).
    private let source: UnsafeMutablePointer<GstElement>
    private let caps: CapsReference
    private var pipeline: UnsafeMutablePointer<GstElement> { running.pipeline }

    /// Why the pipeline could not be made or started.
    struct Failure: Error {
        var message: String
    }

    init(muxer: String, location: String, caps: CapsReference) throws(Failure) {
        guard let made = gst_pipeline_new("vtmultipasssink-writer") else {
            throw Failure(message: "could not make a pipeline")
        }
        let pipeline = UnsafeMutableRawPointer(made).assumingMemoryBound(to: GstElement.self)
        let bin = UnsafeMutableRawPointer(made).assumingMemoryBound(to: GstBin.self)
        // From here on `running` owns the pipeline: a failure below stops and frees it.
        let running = RunningPipeline(adopting: pipeline)
        let source = gst_element_factory_make("appsrc", "source")
        let mux = gst_element_factory_make(muxer, "mux")
        let sink = gst_element_factory_make("filesink", "sink")
        guard let source, let mux, let sink else {
            let missing = source == nil ? "appsrc" : mux == nil ? muxer : "filesink"
            // Not in the bin yet: floating references, sunk and released.
            for element in [source, mux, sink] { if let element { gst_object_unref(gst_object_ref_sink(element)) } }
            throw Failure(
                message: "the GStreamer element \(missing) is missing (install gstreamer1.0-plugins-base and -good)")
        }
        let sourceObject = UnsafeMutableRawPointer(source).assumingMemoryBound(to: GObject.self)
        swiftvt_object_set_caps(sourceObject, "caps", caps.pointer)
        gst_util_set_object_arg(sourceObject, "format", "time")
        // Blocks the writer when 16 MB are queued: memory stays bounded whatever the file size.
        gst_util_set_object_arg(sourceObject, "block", "true")
        gst_util_set_object_arg(sourceObject, "max-bytes", "\(UInt64(16) << 20)")
        swiftvt_object_set_string(
            UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GObject.self), "location", location)
        for element in [source, mux, sink] { gst_bin_add(bin, element) }
        // The video request pad by name: linking by caps could pick another request pad, since
        // appsrc answers caps queries only once it runs.
        guard gst_element_link_pads(source, "src", mux, "video_%u") != 0, gst_element_link(mux, sink) != 0 else {
            let media = gst_caps_get_structure(caps.pointer, 0).flatMap { gst_structure_get_name($0) }
            throw Failure(message: "\(muxer) does not take \(media.map { String(cString: $0) } ?? "this stream")")
        }
        guard gst_element_set_state(pipeline, GST_STATE_PLAYING) != GST_STATE_CHANGE_FAILURE else {
            throw Failure(message: "could not start writing \(location)")
        }
        self.running = running
        self.source = source
        self.caps = caps
    }

    /// Pushes `buffer` into the writer; with a `segmentStart` (the first buffer) a time segment
    /// starting there goes before it.
    func push(_ buffer: consuming OwnedBuffer, segmentStart: GstClockTime?) -> GstFlowReturn {
        let sourceObject = UnsafeMutableRawPointer(source).assumingMemoryBound(to: GObject.self)
        // The signals take references of their own (a sample holds its buffer and caps):
        // `buffer`'s goes when this returns.
        return buffer.withBorrowedPointer { buffer in
            guard let segmentStart else { return swiftvt_object_emit_flow_with(sourceObject, "push-buffer", buffer) }
            // The first buffer goes with a segment starting at the time-stamp offset, so running
            // times are the original ones (the first PTS runs at 0) and only the DTS of the first
            // B-frame delay run before 0, as with x264enc's output; qtmux turns those into an edit list.
            var segment = GstSegment()
            gst_segment_init(&segment, GST_FORMAT_TIME)
            segment.start = segmentStart
            segment.position = segmentStart
            guard let sample = gst_sample_new(buffer, caps.pointer, &segment, nil) else { return GST_FLOW_ERROR }
            defer { gst_sample_unref(sample) }
            return swiftvt_object_emit_flow_with(sourceObject, "push-sample", UnsafeMutableRawPointer(sample))
        }
    }

    /// Ends the stream (when `complete`), waits for the file to be finished; the pipeline is
    /// stopped and freed as this returns (with `running`). nil on success, else what went wrong.
    consuming func finish(complete: Bool) -> String? {
        guard complete else { return nil }
        _ = swiftvt_object_emit_flow(
            UnsafeMutableRawPointer(source).assumingMemoryBound(to: GObject.self), "end-of-stream")
        guard let bus = gst_element_get_bus(pipeline) else { return nil }
        defer { gst_object_unref(bus) }
        let types = GstMessageType(rawValue: GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue)
        guard let message = gst_bus_timed_pop_filtered(bus, swiftvt_clock_time_none, types) else { return nil }
        defer { gst_message_unref(message) }
        guard message.pointee.type == GST_MESSAGE_ERROR else { return nil }
        let (text, debug) = Self.error(in: message)
        return "\(text) (\(debug ?? ""))"
    }

    /// The first error the writer posted so far (nil if none), without waiting.
    func postedError() -> String? {
        guard let bus = gst_element_get_bus(pipeline) else { return nil }
        defer { gst_object_unref(bus) }
        guard let message = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR) else { return nil }
        defer { gst_message_unref(message) }
        return Self.error(in: message).text
    }

    private static func error(in message: UnsafeMutablePointer<GstMessage>) -> (text: String, debug: String?) {
        var error: UnsafeMutablePointer<GError>?
        var debug: UnsafeMutablePointer<gchar>?
        gst_message_parse_error(message, &error, &debug)
        defer {
            if let error { g_error_free(error) }
            g_free(debug)
        }
        return (error.map { String(cString: $0.pointee.message) } ?? "error", debug.map { String(cString: $0) })
    }
}

/// The pipeline's one reference: when it goes, the pipeline is stopped and freed.
private struct RunningPipeline: ~Copyable {
    let pipeline: UnsafeMutablePointer<GstElement>

    init(adopting pipeline: UnsafeMutablePointer<GstElement>) {
        self.pipeline = pipeline
    }

    deinit {
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(pipeline)
    }
}
