import CGStreamer
import CSwiftVTShim
import MediaCore

/// The seek that starts the next range of a pass (the GStreamer form of VideoToolbox's
/// `resetForReadingTimeRanges`): flushing and accurate, to the range, sent upstream from a
/// GStreamer thread pool thread. A flushing seek waits for the streaming thread, which is the
/// one asking, so it must be sent from elsewhere.
final class UpstreamSeek: Sendable {
    /// The range in buffer time stamps (stop: GST_CLOCK_TIME_NONE for "to the end").
    private let start: GstClockTime
    private let stop: GstClockTime
    private let log: DebugCategory

    private init(start: GstClockTime, stop: GstClockTime, log: DebugCategory) {
        self.start = start
        self.stop = stop
        self.log = log
    }

    /// Sends the seek to `range` from another thread; an ERROR is posted when upstream refuses it.
    static func send(from sink: UnsafeMutablePointer<GstBaseSink>, to range: MediaTimeRange, log: DebugCategory) {
        let seek = UpstreamSeek(
            start: GstClockTime(range.start.gstreamerNanoseconds), stop: GstClockTime(range.end.gstreamerNanoseconds),
            log: log)
        gst_element_call_async(
            UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstElement.self),
            { element, seek in
                guard let element, let seek else { return }
                Unmanaged<UpstreamSeek>.fromOpaque(seek).takeUnretainedValue().perform(from: element)
            },
            Unmanaged.passRetained(seek).toOpaque(),
            { seek in if let seek { Unmanaged<UpstreamSeek>.fromOpaque(seek).release() } })
    }

    private func perform(from element: UnsafeMutablePointer<GstElement>) {
        let sink = UnsafeMutableRawPointer(element).assumingMemoryBound(to: GstBaseSink.self)
        let object = UnsafeMutableRawPointer(element)
        // The ranges are in buffer time stamps; a seek position is stream time, which differs when
        // the source's time stamps do not start at 0 (MPEG-TS, files with a start offset): converted
        // with the segment the frames came in (positions before its start convert too, the _full
        // variant). Without it the seek landed before or after the range and the pass got no frame.
        swiftvt_object_lock(object.assumingMemoryBound(to: GstObject.self))
        var segment = sink.pointee.segment
        swiftvt_object_unlock(object.assumingMemoryBound(to: GstObject.self))
        var streamStart = start
        var streamStop = stop
        if segment.format == GST_FORMAT_TIME {
            var converted: guint64 = 0
            if gst_segment_to_stream_time_full(&segment, GST_FORMAT_TIME, start, &converted) == 1 {
                streamStart = converted
            }
            if stop != swiftvt_clock_time_none,
                gst_segment_to_stream_time_full(&segment, GST_FORMAT_TIME, stop, &converted) == 1
            {
                streamStop = converted
            }
        }
        let flags = GstSeekFlags(rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_ACCURATE.rawValue)
        let seek = gst_event_new_seek(
            1.0, GST_FORMAT_TIME, flags, GST_SEEK_TYPE_SET, gint64(bitPattern: streamStart), GST_SEEK_TYPE_SET,
            gint64(bitPattern: streamStop))
        log.info(
            object,
            "seeking upstream to \(ClockTimeText(streamStart)) - \(ClockTimeText(streamStop)) (stream time of the range's time stamps \(ClockTimeText(start)) - \(ClockTimeText(stop)))"
        )
        guard let seek, gst_pad_push_event(sink.pointee.sinkpad, seek) != 0 else {
            ElementMessage(
                domain: .resource(GST_RESOURCE_ERROR_SEEK),
                text: "upstream refused the seek to \(ClockTimeText(streamStart)) for the next pass; "
                    + "use a seekable source (a file) or max-passes=1"
            )
            .post(from: object, isError: true)
            return
        }
    }
}
