import VAAPICodecs

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
        log.info(
            nil,
            "VA-API at plugin load: \(offer.summary); vtdec_hw \(offer.decodableProfiles.isEmpty ? "not offered to autopluggers" : "decodes \(offer.decodableProfiles.joined(separator: ", "))"), vtenc_h264_hw \(offer.encodes ? "offered" : "not offered")"
        )
        guard !offer.decodableProfiles.isEmpty else {
            return VADeviceOfferAtLoad(decoderSinkCaps: nil, encodes: offer.encodes)
        }
        let caps =
            "video/x-h264, stream-format=(string){ avc, avc3, byte-stream }, alignment=(string)au, profile=(string){ "
            + offer.decodableProfiles.joined(separator: ", ") + " }"
        return VADeviceOfferAtLoad(decoderSinkCaps: caps, encodes: offer.encodes)
    }
}
