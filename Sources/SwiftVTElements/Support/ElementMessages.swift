import CGStreamer
import CSwiftVTShim

/// An error or warning for the application, posted on the bus as GST_ELEMENT_ERROR /
/// GST_ELEMENT_WARNING would: `text` says what is wrong and what to do, in words a user
/// understands; `debug` adds the details a developer needs.
struct ElementMessage: Sendable, Error {
    enum Domain: Sendable {
        case stream(GstStreamError)
        case core(GstCoreError)
        case resource(GstResourceError)
        case library(GstLibraryError)
    }

    var domain: Domain
    var text: String
    var debug: String?

    static func stream(_ code: GstStreamError, _ text: String, debug: String? = nil) -> ElementMessage {
        ElementMessage(domain: .stream(code), text: text, debug: debug)
    }

    /// Posts the message from `element`, with the Swift source location.
    func post(
        from element: UnsafeMutableRawPointer, isError: Bool,
        file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) {
        let (quark, code): (GQuark, Int32)
        switch domain {
        case .stream(let value): (quark, code) = (gst_stream_error_quark(), Int32(bitPattern: value.rawValue))
        case .core(let value): (quark, code) = (gst_core_error_quark(), Int32(bitPattern: value.rawValue))
        case .resource(let value): (quark, code) = (gst_resource_error_quark(), Int32(bitPattern: value.rawValue))
        case .library(let value): (quark, code) = (gst_library_error_quark(), Int32(bitPattern: value.rawValue))
        }
        file.withCString { fileName in
            function.withCString { functionName in
                // Session-layer wording (Swift API names, four-character pixel format codes)
                // becomes GStreamer's (properties, caps format names) for every message posted.
                swiftvt_post_message(
                    element.assumingMemoryBound(to: GstElement.self), isError ? 1 : 0, quark, code, SessionWording.gstreamer(text), debug,
                    fileName, functionName, Int32(clamping: line))
            }
        }
    }
}
