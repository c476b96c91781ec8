import CGStreamer
import CSwiftVTShim

/// A GStreamer debug category, so that `GST_DEBUG=h264parse-to-avcc:6` shows an element's log
/// with the Swift file, function and line of each message.
struct DebugCategory: @unchecked Sendable {
    // The category is created once (GStreamer keeps one per name) and never freed: sharing the
    // pointer is safe.
    let pointer: UnsafeMutablePointer<GstDebugCategory>?

    /// The category `name` (GST_DEBUG_CATEGORY_INIT): made on first use, the existing one after.
    init(named name: String, description: String) {
        pointer = swiftvt_debug_category_new(name, description)
    }

    func log(
        _ level: GstDebugLevel, _ object: UnsafeMutableRawPointer?, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
        guard swiftvt_log_enabled(pointer, level) != 0 else { return }
        file.withCString { fileName in
            function.withCString { functionName in
                swiftvt_log(
                    pointer, level, object?.assumingMemoryBound(to: GObject.self),
                    fileName, functionName, Int32(clamping: line), message())
            }
        }
    }

    func error(
        _ object: UnsafeMutableRawPointer?, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
        log(GST_LEVEL_ERROR, object, message(), file: file, function: function, line: line)
    }

    func warning(
        _ object: UnsafeMutableRawPointer?, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
        log(GST_LEVEL_WARNING, object, message(), file: file, function: function, line: line)
    }

    func info(
        _ object: UnsafeMutableRawPointer?, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
        log(GST_LEVEL_INFO, object, message(), file: file, function: function, line: line)
    }

    func debug(
        _ object: UnsafeMutableRawPointer?, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
        log(GST_LEVEL_DEBUG, object, message(), file: file, function: function, line: line)
    }

    func trace(
        _ object: UnsafeMutableRawPointer?, _ message: @autoclosure () -> String,
        file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
        log(GST_LEVEL_LOG, object, message(), file: file, function: function, line: line)
    }
}

extension StaticString {
    func withCString<R>(_ body: (UnsafePointer<CChar>) -> R) -> R {
        // A StaticString literal is NUL-terminated UTF-8 in read-only memory.
        UnsafeRawPointer(utf8Start).withMemoryRebound(to: CChar.self, capacity: utf8CodeUnitCount + 1, body)
    }
}

/// A clock time as GStreamer prints it (GST_TIME_FORMAT): `0:00:05.000000000`, and
/// `99:99:99.999999999` for GST_CLOCK_TIME_NONE.
struct ClockTimeText: CustomStringConvertible {
    let time: GstClockTime

    init(_ time: GstClockTime) { self.time = time }

    var description: String {
        guard time != swiftvt_clock_time_none else { return "99:99:99.999999999" }
        let second = UInt64(swiftvt_second)
        let nanoseconds = UInt64(time)
        func padded(_ value: UInt64, _ digits: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, digits - text.count)) + text
        }
        return "\(nanoseconds / (second * 3600)):\(padded(nanoseconds / (second * 60) % 60, 2)):"
            + "\(padded(nanoseconds / second % 60, 2)).\(padded(nanoseconds % second, 9))"
    }
}
