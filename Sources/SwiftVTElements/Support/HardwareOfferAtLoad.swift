import NVDECCodecs
import SwiftVT
import VAAPICodecs

/// At plugin load (plugin_init): what the machine's hardware offers, for vtdec_hw's rank and sink
/// caps (the profiles any device decodes: VA-API's or NVDEC's) and vtenc_h264_hw's rank (VA-API).
/// Nothing is loaded or opened on a machine with no render node, no X11 display and no NVIDIA
/// driver (libcuda.so.1 absent: one failed dlopen).
struct HardwareOfferAtLoad: Sendable {
    /// vtdec_hw's sink caps (the profiles some device decodes); nil when none decodes H.264.
    var decoderSinkCaps: String?
    var encodes: Bool

    static func probe() -> HardwareOfferAtLoad {
        let log = PluginLog.category
        let offer = VAH264DeviceOffer.probe(log: { log.debug(nil, $0) })
        let nvdec = NVDECH264DecoderFactory.decodableProfiles(log: { log.debug(nil, $0) })
        // The union, in the canonical order (every list is a prefix of the High decoder's).
        let decodable = [offer.decodableProfiles, nvdec.profiles].max { $0.count < $1.count } ?? []
        log.info(
            nil,
            "hardware at plugin load: VA-API: \(offer.summary); CUDA: \(nvdec.summary); vtdec_hw \(decodable.isEmpty ? "not offered to autopluggers" : "decodes \(decodable.joined(separator: ", "))"), vtenc_h264_hw \(offer.encodes ? "offered" : "not offered")"
        )
        guard !decodable.isEmpty else {
            return HardwareOfferAtLoad(decoderSinkCaps: nil, encodes: offer.encodes)
        }
        let caps =
            "video/x-h264, stream-format=(string){ avc, avc3, byte-stream }, alignment=(string)au, profile=(string){ "
            + decodable.joined(separator: ", ") + " }"
        return HardwareOfferAtLoad(decoderSinkCaps: caps, encodes: offer.encodes)
    }
}
