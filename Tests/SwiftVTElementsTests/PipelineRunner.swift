import CGStreamer
import CSwiftVTShim
import Glibc
import Synchronization

/// Runs real GStreamer pipelines in the test process, with the swiftvt plugin registered from
/// the code under test (not from an installed .so) and a private registry file, so that no other
/// run's registry (or blacklist) can influence the result.
enum GStreamerTesting {
    static let isReady: Bool = {
        setenv("GST_REGISTRY", "/tmp/swiftvt-tests-\(getpid()).registry", 1)
        // Keep the pipeline tests quiet unless a developer asks for logs.
        setenv("GST_DEBUG", getenv("GST_DEBUG").map { String(cString: $0) } ?? "0", 1)
        gst_init(nil, nil)
        return swiftvt_register_static() != 0
    }()
}

/// One buffer that reached the capturing sink.
struct CapturedBuffer: Sendable {
    var bytes: [UInt8]
    var pts: UInt64?
    var dts: UInt64?
    var duration: UInt64?
    var isDeltaUnit: Bool
    /// Index into `PipelineResult.caps` of the caps in force for this buffer.
    var capsIndex: Int
}

struct CapturedCaps: Sendable {
    var description: String
    var codecData: [UInt8]?
    var width: Int32?
    var height: Int32?
    /// Buffers captured before these caps arrived.
    var bufferIndex: Int
}

struct PipelineResult: Sendable {
    var buffers: [CapturedBuffer] = []
    var caps: [CapturedCaps] = []
    var errors: [String] = []
    var errorDetails: [String] = []
    var warnings: [String] = []
    var reachedEndOfStream = false
    var timedOut = false
    /// The pipeline description could not be parsed.
    var launchError: String?

    /// Ended by EOS or by an error, within the time limit.
    var ended: Bool { (reachedEndOfStream || !errors.isEmpty) && !timedOut }
}

/// Collects what flows into the sink pad, from the streaming thread.
private final class Collector: Sendable {
    let result = Mutex(PipelineResult())
    let keepBytes: Bool
    init(keepBytes: Bool) { self.keepBytes = keepBytes }
}

private let probeCallback: GstPadProbeCallback = { _, info, userData in
    guard let info, let userData else { return GST_PAD_PROBE_OK }
    let collector = Unmanaged<Collector>.fromOpaque(userData).takeUnretainedValue()
    let type = info.pointee.type.rawValue
    if type & GST_PAD_PROBE_TYPE_BUFFER.rawValue != 0, let data = info.pointee.data {
        let buffer = data.assumingMemoryBound(to: GstBuffer.self)
        var bytes: [UInt8] = []
        if collector.keepBytes {
            var map = GstMapInfo()
            if gst_buffer_map(buffer, &map, swiftvt_map_read()) != 0 {
                // Copy: the test keeps the bytes after the buffer is gone.
                bytes = Array(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
                gst_buffer_unmap(buffer, &map)
            }
        }
        func time(_ value: GstClockTime) -> UInt64? { value == swiftvt_clock_time_none ? nil : UInt64(value) }
        let captured = CapturedBuffer(
            bytes: bytes, pts: time(swiftvt_buffer_pts(buffer)), dts: time(swiftvt_buffer_dts(buffer)),
            duration: time(swiftvt_buffer_duration(buffer)),
            isDeltaUnit: swiftvt_buffer_has_flags(buffer, GST_BUFFER_FLAG_DELTA_UNIT) != 0, capsIndex: 0)
        collector.result.withLock { result in
            var entry = captured
            entry.capsIndex = max(0, result.caps.count - 1)
            result.buffers.append(entry)
        }
    } else if type & (GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue) != 0,
        let data = info.pointee.data
    {
        let event = data.assumingMemoryBound(to: GstEvent.self)
        if event.pointee.type == GST_EVENT_FLUSH_STOP {
            // A flushing seek: what came before is not part of the result.
            collector.result.withLock { result in
                result.buffers.removeAll()
                result.caps =
                    result.caps.last.map {
                        [
                            CapturedCaps(
                                description: $0.description, codecData: $0.codecData,
                                width: $0.width, height: $0.height, bufferIndex: 0)
                        ]
                    } ?? []
            }
        } else if event.pointee.type == GST_EVENT_CAPS {
            var caps: UnsafeMutablePointer<GstCaps>?
            gst_event_parse_caps(event, &caps)
            if let caps {
                let text =
                    gst_caps_to_string(caps).map { pointer in
                        defer { g_free(pointer) }
                        return String(cString: pointer)
                    } ?? ""
                var codecData: [UInt8]?
                if let buffer = swiftvt_caps_get_buffer(caps, "codec_data") {
                    var map = GstMapInfo()
                    if gst_buffer_map(buffer, &map, swiftvt_map_read()) != 0 {
                        codecData = Array(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
                        gst_buffer_unmap(buffer, &map)
                    }
                }
                var width: Int32 = 0
                var height: Int32 = 0
                let hasWidth = swiftvt_caps_get_int(caps, "width", &width) != 0
                let hasHeight = swiftvt_caps_get_int(caps, "height", &height) != 0
                collector.result.withLock { result in
                    result.caps.append(
                        CapturedCaps(
                            description: text, codecData: codecData, width: hasWidth ? width : nil,
                            height: hasHeight ? height : nil, bufferIndex: result.buffers.count))
                }
            }
        }
    }
    return GST_PAD_PROBE_OK
}

/// Runs `description` to EOS or error (or `timeout` seconds), capturing buffers and caps that
/// reach the sink pad of the element named `sink`.
///
/// With `seekTo`, the pipeline is prerolled, then seeks (flushing, to the key frame at or after
/// the position) before playing; only what follows the seek is captured.
///
/// With `whenPrerolled`, the pipeline is prerolled (PAUSED) and the closure runs with it before
/// playing, e.g. to send an event.
func runPipeline(
    _ description: String, timeout: Double = 120, keepBytes: Bool = true, seekTo: UInt64? = nil,
    whenPrerolled: ((UnsafeMutablePointer<GstElement>) -> Void)? = nil
) -> PipelineResult {
    guard GStreamerTesting.isReady else {
        var result = PipelineResult()
        result.launchError = "the swiftvt plugin could not be registered"
        return result
    }
    var parseError: UnsafeMutablePointer<GError>?
    guard let pipeline = gst_parse_launch(description, &parseError) else {
        var result = PipelineResult()
        result.launchError = parseError.map { String(cString: $0.pointee.message) } ?? "parse failed"
        if let parseError { g_error_free(parseError) }
        return result
    }
    if let parseError {
        g_error_free(parseError)
    }
    defer {
        gst_element_set_state(pipeline, GST_STATE_NULL)
        gst_object_unref(pipeline)
    }
    let collector = Collector(keepBytes: keepBytes)
    let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
    if let sink = gst_bin_get_by_name(bin, "sink") {
        if let pad = gst_element_get_static_pad(sink, "sink") {
            let context = Unmanaged.passRetained(collector).toOpaque()
            gst_pad_add_probe(
                pad,
                GstPadProbeType(
                    rawValue: GST_PAD_PROBE_TYPE_BUFFER.rawValue | GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM.rawValue
                        | GST_PAD_PROBE_TYPE_EVENT_FLUSH.rawValue),
                probeCallback, context,
                { context in
                    if let context { Unmanaged<Collector>.fromOpaque(context).release() }
                })
            gst_object_unref(pad)
        }
        gst_object_unref(sink)
    }
    var messages = PipelineResult()
    if let position = seekTo {
        gst_element_set_state(pipeline, GST_STATE_PAUSED)
        var current = GST_STATE_NULL
        var pending = GST_STATE_NULL
        _ = gst_element_get_state(pipeline, &current, &pending, GstClockTime(timeout * 1e9))
        let flags = GstSeekFlags(
            rawValue: GST_SEEK_FLAG_FLUSH.rawValue | GST_SEEK_FLAG_KEY_UNIT.rawValue | GST_SEEK_FLAG_SNAP_AFTER.rawValue
        )
        if gst_element_seek_simple(pipeline, GST_FORMAT_TIME, flags, gint64(position)) == 0 {
            messages.errors.append("the seek to \(position) ns was refused")
        }
        _ = gst_element_get_state(pipeline, &current, &pending, GstClockTime(timeout * 1e9))
    }
    if let whenPrerolled {
        gst_element_set_state(pipeline, GST_STATE_PAUSED)
        var current = GST_STATE_NULL
        var pending = GST_STATE_NULL
        _ = gst_element_get_state(pipeline, &current, &pending, GstClockTime(timeout * 1e9))
        whenPrerolled(pipeline)
    }
    gst_element_set_state(pipeline, GST_STATE_PLAYING)
    let bus = gst_element_get_bus(pipeline)
    defer { if let bus { gst_object_unref(bus) } }
    let deadline = monotonicSeconds() + timeout
    loop: while true {
        let remaining = deadline - monotonicSeconds()
        if remaining <= 0 {
            messages.timedOut = true
            break
        }
        let wanted = GstMessageType(
            rawValue: GST_MESSAGE_ERROR.rawValue | GST_MESSAGE_WARNING.rawValue | GST_MESSAGE_EOS.rawValue)
        guard let message = gst_bus_timed_pop_filtered(bus, GstClockTime(remaining * 1e9), wanted) else { continue }
        defer { gst_message_unref(message) }
        switch message.pointee.type {
        case GST_MESSAGE_EOS:
            messages.reachedEndOfStream = true
            break loop
        case GST_MESSAGE_ERROR:
            let (text, debug) = parsed(message, isError: true)
            messages.errors.append(text)
            messages.errorDetails.append(debug)
            break loop
        case GST_MESSAGE_WARNING:
            messages.warnings.append(parsed(message, isError: false).text)
        default:
            break
        }
    }
    gst_element_set_state(pipeline, GST_STATE_NULL)
    var result = collector.result.withLock { $0 }
    result.errors = messages.errors + result.errors
    result.errorDetails = messages.errorDetails
    result.warnings = messages.warnings
    result.reachedEndOfStream = messages.reachedEndOfStream
    result.timedOut = messages.timedOut
    return result
}

private func parsed(_ message: UnsafeMutablePointer<GstMessage>, isError: Bool) -> (text: String, debug: String) {
    var error: UnsafeMutablePointer<GError>?
    var debug: UnsafeMutablePointer<gchar>?
    if isError {
        gst_message_parse_error(message, &error, &debug)
    } else {
        gst_message_parse_warning(message, &error, &debug)
    }
    defer {
        if let error { g_error_free(error) }
        if let debug { g_free(debug) }
    }
    let text = error.map { String(cString: $0.pointee.message) } ?? ""
    return (text, debug.map { String(cString: $0) } ?? "")
}

func monotonicSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// A file in a fresh temporary directory, removed by the caller.
func temporaryFile(named name: String, contents: [UInt8]) -> String? {
    var template = Array("/tmp/swiftvt-test-XXXXXX".utf8CString)
    guard
        let directory = template.withUnsafeMutableBufferPointer({ buffer in buffer.baseAddress.flatMap { mkdtemp($0) } }
        )
    else {
        return nil
    }
    let path = String(cString: directory) + "/" + name
    guard let handle = fopen(path, "wb") else { return nil }
    defer { fclose(handle) }
    let written = contents.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, handle) }
    return written == contents.count ? path : nil
}

func removeTemporaryFile(_ path: String) {
    unlink(path)
    var directory = path
    while let last = directory.last, last != "/" { directory.removeLast() }
    directory.removeLast()
    rmdir(directory)
}
