import MediaCore
import SwiftVT

/// The session layer's errors in GStreamer's terms. A ``VTError``'s `message` speaks the Swift API
/// (`hardwarePolicy .require`, `pixelFormats`, four-character pixel format codes); a GStreamer user
/// sets element properties and reads caps, so what the elements post is worded here, from the
/// error's ``VTError/Reason`` rather than from its text.
enum GStreamerWording {
    /// GStreamer's caps name of `format` ("Y444_10LE" for 'I410'); formats without one keep their
    /// four-character code.
    static func name(of format: PixelFormat) -> String {
        VideoFormatMapping.gstreamerName(for: format) ?? "'\(format.rawValue)'"
    }

    /// "[I420, NV12]".
    static func names(of formats: [PixelFormat]) -> String {
        "[\(formats.map(name(of:)).joined(separator: ", "))]"
    }

    /// The whole of `error`'s message, with the other backends tried when there were several.
    static func message(_ error: VTError) -> String {
        let worded = text(error.reason)
        guard !error.backendsTried.isEmpty else { return worded }
        return worded + " (tried: \(list(error.backendsTried)))"
    }

    /// The message of a property error without the API's key name in front (the caller names the
    /// element's property instead).
    static func problem(_ error: VTError) -> String {
        switch error.reason {
        case .entropyModeNotAllowed(let profile):
            return "CABAC is not allowed in the \(profile.rawValue) profile; use entropy-mode=cavlc or auto"
        default:
            let worded = message(error)
            guard let property = error.property else { return worded }
            let prefix = "\(property.rawValue): "
            return worded.hasPrefix(prefix) ? String(worded.dropFirst(prefix.count)) : worded
        }
    }

    static func text(_ reason: VTError.Reason) -> String {
        switch reason {
        case .other(let text):
            return text
        case .hardwareRequired(.decoding, let tried):
            return "hardware=require, but no hardware decoder can take this stream. Tried: \(list(tried)). "
                + "Use hardware=auto to decode it with libavcodec."
        case .hardwareRequired(.encoding, let tried):
            return "hardware=require, but no hardware encoder can take these pictures. Tried: \(list(tried)). "
                + "Use hardware=auto to fall back to x264."
        case .noBackend(.decoding, let tried):
            return "no decoder can take this stream. Tried: \(list(tried))"
        case .noBackend(.encoding, let tried):
            return "no encoder can take these pictures. Tried: \(list(tried))"
        case .oddDimension(let dimension, let value, let format):
            return "\(dimension) \(value) is odd, and \(VTError.Reason.chroma(format)) pictures (\(name(of: format))) "
                + "need an even \(dimension); crop or pad by one pixel"
        case .pictureMismatch(let width, let height, let format, let sessionWidth, let sessionHeight, let sessionFormat):
            return "the picture is \(width)x\(height) \(name(of: format)) but the caps say "
                + "\(sessionWidth)x\(sessionHeight) \(name(of: sessionFormat))"
        case .entropyModeNotAllowed(let profile):
            return
                "entropy-mode: CABAC is not allowed in the \(profile.rawValue) profile; use entropy-mode=cavlc or auto"
        case .inputPixelFormatNotEncoded(let format, let encodes):
            return "\(encodes), not \(name(of: format))"
        case .outputPixelFormatsUnavailable(let requested, let native):
            return "none of the formats downstream accepts \(names(of: requested)) can be produced: this stream "
                + "decodes to \(name(of: native)), and the libavcodec backend outputs that format or converts 4:2:0 "
                + "to NV12 (8-bit) or P010_10LE (10-bit); let downstream accept one of those (video/x-raw caps)"
        case .outputPixelFormatsNotOffered(let backend, let requested, let offered):
            // NV12 video and full range share a caps name.
            var outputs: [String] = []
            for gstreamerName in offered.map(name(of:)) where !outputs.contains(gstreamerName) {
                outputs.append(gstreamerName)
            }
            return
                "\(backend) outputs \(outputs.joined(separator: " or ")), and downstream accepts none of them (it accepts \(names(of: requested)))"
        case .decodedFormatChanged(let format):
            return "the stream changed to \(name(of: format)), which none of the formats downstream accepts can hold"
        case .outputPicturesUnavailable(let format, let detail):
            return "cannot make \(name(of: format)) pictures" + (detail.map { ": \($0)" } ?? "")
        }
    }

    static func text(_ refusal: VTError.BackendRefusal) -> String {
        switch refusal.why {
        case .excludedByHardwarePolicy(let policy):
            return
                "\(refusal.backend): \(policy == .disable ? "hardware" : "software"), excluded by hardware=\(policy.rawValue)"
        case .notInThisBuild:
            return "no \(refusal.backend): SwiftVT's VA-API backend is not available in this build"
        case .unavailable(let reason):
            return "\(refusal.backend): \(text(reason))"
        case .failed(let error):
            return "\(refusal.backend): \(message(error))"
        }
    }

    /// The refusals joined for a message; "no backends were given" when there are none.
    static func list(_ refusals: [VTError.BackendRefusal]) -> String {
        refusals.isEmpty ? "no backends were given" : refusals.map(text).joined(separator: "; ")
    }
}
