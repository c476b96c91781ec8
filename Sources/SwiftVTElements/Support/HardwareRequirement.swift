import CGStreamer
import CSwiftVTShim
import SwiftVT

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
        // Decoders look at every device API (VA-API, NVDEC); SwiftVT's hardware encoder is VA-API's.
        let (devices, verb, fallback) =
            work == .decoding
            ? ("hardware device", "decodes", "hardware=auto (or the vtdec element) to decode with libavcodec")
            : ("VA-API device", "encodes", "hardware=auto (or the vtenc element) to encode with x264")
        ElementMessage(
            domain: .resource(GST_RESOURCE_ERROR_NOT_FOUND),
            text: "hardware=require, but no \(devices) here \(verb) H.264: \(reason)"
                + "\(reason.hasSuffix(".") ? "" : ".") Use \(fallback).",
            debug: reason
        ).post(from: element, isError: true)
        return false
    }

    /// hardware=require on an HEVC encoder (vtenc_h265): never met, as SwiftVT's VA-API encoder
    /// writes H.264 only; false after posting the element's one ERROR, true for any other policy.
    static func checkHEVCEncoding(_ policy: HardwarePolicy, element: UnsafeMutableRawPointer) -> Bool {
        guard policy == .require else { return true }
        ElementMessage(
            domain: .resource(GST_RESOURCE_ERROR_NOT_FOUND),
            text: "hardware=require, but there is no hardware HEVC encoder in SwiftVT (its VA-API encoder writes "
                + "H.264 only). Use hardware=auto or hardware=disable to encode HEVC with x265.",
            debug: "vtenc_h265: hardware=require"
        )
        .post(from: element, isError: true)
        return false
    }
}
