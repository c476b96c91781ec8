import CVA
import SwiftVT
import VAPlumbing

/// What the machine's VA-API device offers SwiftVT's H.264 elements: read at plugin load to
/// decide whether the hardware-only variants (`vtdec_hw`, `vtenc_h264_hw`) are offered to
/// autopluggers and with which sink caps, as GStreamer's va plugin registers its elements per
/// device (sys/va/plugin.c).
public struct VAH264DeviceOffer: Sendable {
    /// The H.264 profiles the device decodes, by their GStreamer caps names (the `profile` field
    /// of `video/x-h264`), most constrained first; empty when it decodes none.
    public var decodableProfiles: [String]
    /// Whether the device has an H.264 encoding entrypoint (EncSlice or EncSliceLP).
    public var encodes: Bool
    /// "<vendor> on <display>: <profiles and entrypoints>", or why there is no device.
    public var summary: String

    /// Nothing: no device, or none with H.264.
    public static func none(_ reason: String) -> VAH264DeviceOffer {
        VAH264DeviceOffer(decodableProfiles: [], encodes: false, summary: reason)
    }

    /// Opens the first VA display that initialises (as the elements' sessions do), reads its
    /// H.264 entrypoints and closes it again.
    public static func probe(log: @escaping @Sendable (String) -> Void = { _ in }) -> VAH264DeviceOffer {
        guard VADisplayConnection.hasCandidateDisplays() else {
            return .none("no VA-API device: no DRM render node and no X11 display")
        }
        switch VADevice.open(for: nil, log: log) {
        case .failure(let unavailable):
            return .none(unavailable.reason)
        case .success(let device):
            return VAH264DeviceOffer(
                decodableProfiles: decodableProfiles(device.capabilities),
                encodes: encodingEntrypoint(device.capabilities) != nil,
                summary: "\(device.summary): \(device.capabilities.summary)")
        }
    }

    /// The caps profiles a device with these decoding profiles takes. A Main decoder decodes
    /// Constrained Baseline, and a High decoder Main (A.2.4); Baseline streams decode on them when
    /// they use no FMO/ASO (VAH264Profiles.candidates checks that per stream, with a clear error).
    static func decodableProfiles(_ capabilities: VACapabilities) -> [String] {
        let decodes = { (profile: VAProfile) in capabilities.supports(profile: profile, entrypoint: VAEntrypointVLD) }
        return H264DeviceStreamCheck.capsProfiles(
            constrainedBaseline: decodes(VAProfileH264ConstrainedBaseline), main: decodes(VAProfileH264Main),
            high: decodes(VAProfileH264High))
    }

    /// The first H.264 encoding endpoint of the device, if it has one.
    static func encodingEntrypoint(_ capabilities: VACapabilities) -> (VAProfile, VAEntrypoint)? {
        for profile in [VAProfileH264High, VAProfileH264Main, VAProfileH264ConstrainedBaseline] {
            for entrypoint in [VAEntrypointEncSlice, VAEntrypointEncSliceLP]
            where capabilities.supports(profile: profile, entrypoint: entrypoint) {
                return (profile, entrypoint)
            }
        }
        return nil
    }
}

extension CachedVADevice {
    /// Why no device here does this factory's work with H.264 (decoding: `VAEntrypointVLD`,
    /// encoding: EncSlice or EncSliceLP), or nil when one does: the element-level check behind
    /// hardware=require at a state change, before any stream is known. (Whether it takes a
    /// particular stream is decided per session.)
    func h264UnavailableReason() -> String? {
        switch open() {
        case .failure(let unavailable): return unavailable.reason
        case .success: return nil
        }
    }
}

extension VAH264DecoderFactory {
    /// Why no VA-API device here decodes H.264, or nil when one does (opens and keeps the device).
    public func deviceUnavailableReason() -> String? { cachedDevice.h264UnavailableReason() }
}

extension VAH264EncoderFactory {
    /// Why no VA-API device here encodes H.264, or nil when one does (opens and keeps the device).
    public func deviceUnavailableReason() -> String? { cachedDevice.h264UnavailableReason() }
}
