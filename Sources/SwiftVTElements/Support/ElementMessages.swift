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

    /// The element instance's name (GST_OBJECT_NAME), nil when it has none.
    static func instanceName(of element: UnsafeMutableRawPointer) -> String? {
        guard let name = gst_object_get_name(element.assumingMemoryBound(to: GstObject.self)) else { return nil }
        defer { g_free(name) }
        return String(cString: name)
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
        // Every message starts with the name of the element instance that posts it ("vtenc0: ...",
        // "enc: ..." for name=enc, "vtenc_h264_hw0: ..."): applications that show only the text
        // (playbin, GstDiscoverer) still say which element spoke, and the element's code never
        // spells a name of its own that a renamed or aliased instance would contradict.
        let name = Self.instanceName(of: element)
        let posted = name.map { "\($0): \(text)" } ?? text
        file.withCString { fileName in
            function.withCString { functionName in
                swiftvt_post_message(
                    element.assumingMemoryBound(to: GstElement.self), isError ? 1 : 0, quark, code, posted, debug,
                    fileName, functionName, Int32(clamping: line))
            }
        }
    }
}
