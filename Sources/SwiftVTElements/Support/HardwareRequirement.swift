import CGStreamer
import CSwiftVTShim
import MediaCore
import Synchronization
import SwiftVT
import VAAPICodecs

/// An element's VA-API backend factory, made when first needed and kept until the element closes
/// (READY -> NULL): it holds the opened device, so the hardware=require check at the state change
/// and every session after it use one display, and a device that appears later is found at the
/// next open.
final class HardwareFactoryHolder<Factory: Sendable>: Sendable {
    private let factory = Mutex<Factory?>(nil)
    private let make: @Sendable () -> Factory

    init(make: @escaping @Sendable () -> Factory) {
        self.make = make
    }

    var current: Factory {
        factory.withLock { factory in
            if let factory { return factory }
            let made = make()
            factory = made
            return made
        }
    }

    func close() {
        factory.withLock { $0 = nil }
    }
}

/// hardware=require, checked at the element's state change (NULL -> READY and READY -> PAUSED)
/// rather than at the first frame: an element that cannot work fails where decodebin can still
/// try the next factory and where gst-launch-1.0 reports it synchronously ("Failed to set pipeline
/// to PAUSED") instead of through its bus, where an early error can be lost (gst-launch 1.22 quits
/// its main loop from the bus sync handler, before the loop runs).
enum HardwareRequirement {
    enum Work {
        case decoding, encoding
    }

    /// true when `policy` can be met; otherwise posts the element's one ERROR and returns false.
    static func check(
        _ policy: HardwarePolicy, work: Work, element: UnsafeMutableRawPointer, unavailableReason: () -> String?
    ) -> Bool {
        guard policy == .require, let reason = unavailableReason() else { return true }
        let name = factoryName(of: element)
        let (verb, fallback) = work == .decoding
            ? ("decodes", "hardware=auto (or the vtdec element) to decode with libavcodec")
            : ("encodes", "hardware=auto (or the vtenc element) to encode with x264")
        ElementMessage(
            domain: .resource(GST_RESOURCE_ERROR_NOT_FOUND),
            text: "\(name): hardware=require, but no VA-API device here \(verb) H.264: \(SessionWording.gstreamer(reason))"
                + "\(reason.hasSuffix(".") ? "" : ".") Use \(fallback).",
            debug: reason
        ).post(from: element, isError: true)
        return false
    }

    /// The name the user wrote: "vtdec_hw", "vtenc_h264_hw", "vtmultipasssink".
    static func factoryName(of element: UnsafeMutableRawPointer) -> String {
        guard let factory = gst_element_get_factory(element.assumingMemoryBound(to: GstElement.self)),
              let name = gst_object_get_name(UnsafeMutableRawPointer(factory).assumingMemoryBound(to: GstObject.self))
        else { return "SwiftVT" }
        defer { g_free(name) }
        // vtenc and vtenc_h264 are one type registered under two names, and an element knows only
        // the last; both are "vtenc" to the user.
        let factoryName = String(cString: name)
        return factoryName == "vtenc_h264" ? "vtenc" : factoryName
    }
}

/// Session-layer messages speak the Swift API (`hardwarePolicy .require`, `pixelFormats`,
/// four-character pixel format codes); a GStreamer user sets element properties and reads caps, so
/// messages on the bus use those names.
enum SessionWording {
    static func gstreamer(_ text: String) -> String {
        var result = text
        for (swiftName, propertyName) in [
            ("hardwarePolicy .require", "hardware=require"), ("hardwarePolicy .auto", "hardware=auto"),
            ("hardwarePolicy .disable", "hardware=disable"),
            ("add one of those to pixelFormats", "let downstream accept one of those (video/x-raw caps)"),
            ("pixelFormats", "the formats downstream accepts"),
            ("use .cavlc or nil", "use entropy-mode=cavlc or auto"),
        ] {
            result = result.replacing(swiftName, with: propertyName)
        }
        // Four-character codes as PixelFormat prints them ('I410', y420) -> GStreamer format names.
        for format in PixelFormat.allSupported {
            guard let gstreamerName = VideoFormatMapping.gstreamerName(for: format) else { continue }
            let code = format.rawValue.description
            result = result.replacing("'\(code)'", with: gstreamerName)
            result = result.replacing(wholeWord: code, with: gstreamerName)
        }
        return result
    }
}

extension String {
    /// Replaces `word` where it is not part of a longer word (letters, digits, '_').
    fileprivate func replacing(wholeWord word: String, with replacement: String) -> String {
        guard !word.isEmpty, contains(word) else { return self }
        func isWordCharacter(_ character: Character?) -> Bool {
            guard let character else { return false }
            return character.isLetter || character.isNumber || character == "_"
        }
        var output = ""
        var rest = self[...]
        while let range = rest.firstRange(of: word) {
            let before = range.lowerBound == rest.startIndex ? output.last : rest[rest.index(before: range.lowerBound)]
            let after = range.upperBound == rest.endIndex ? nil : rest[range.upperBound]
            output += rest[..<range.lowerBound]
            output += isWordCharacter(before) || isWordCharacter(after) ? word : replacement
            rest = rest[range.upperBound...]
        }
        return output + rest
    }
}

/// At plugin load (plugin_init): what the VA device offers, for vtdec_hw's rank and sink caps and
/// vtenc_h264_hw's rank. Nothing is loaded or opened on a machine with no render node and no X11
/// display.
struct VADeviceOfferAtLoad: Sendable {
    /// vtdec_hw's sink caps (the profiles the device decodes); nil when it decodes no H.264.
    var decoderSinkCaps: String?
    var encodes: Bool

    static func probe() -> VADeviceOfferAtLoad {
        let log = PluginLog.category
        let offer = VAH264DeviceOffer.probe(log: { log.debug(nil, $0) })
        log.info(nil, "VA-API at plugin load: \(offer.summary); vtdec_hw \(offer.decodableProfiles.isEmpty ? "not offered to autopluggers" : "decodes \(offer.decodableProfiles.joined(separator: ", "))"), vtenc_h264_hw \(offer.encodes ? "offered" : "not offered")")
        guard !offer.decodableProfiles.isEmpty else { return VADeviceOfferAtLoad(decoderSinkCaps: nil, encodes: offer.encodes) }
        let caps = "video/x-h264, stream-format=(string){ avc, avc3, byte-stream }, alignment=(string)au, profile=(string){ "
            + offer.decodableProfiles.joined(separator: ", ") + " }"
        return VADeviceOfferAtLoad(decoderSinkCaps: caps, encodes: offer.encodes)
    }
}
