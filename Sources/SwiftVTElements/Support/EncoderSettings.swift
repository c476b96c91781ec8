import CGStreamer
import MediaCore
import SwiftVT

/// The encoder settings vtenc and vtmultipasssink share: declared once here, as properties
/// (``EncoderProperties``) and as their meaning for a compression session
/// (``apply(to:)``, ``encoderSpecification``).
struct EncoderSettings: Sendable {
    var hardware: HardwarePolicy
    var entropyMode = EntropyModeSetting.automatic
    var allowFrameReordering = true
    var maxKeyframeInterval: Int32 = 0
    var maxThreads: Int32 = 0
    /// -1: unset (the encoder's own bound).
    var minAllowedFrameQP: Int32 = -1
    var maxAllowedFrameQP: Int32 = -1
    /// -1: the encoder's own.
    var bFrames: Int32 = -1
    /// 0: the encoder's own.
    var referenceBufferCount: Int32 = 0
    var spatialAdaptiveQP = SpatialAdaptiveQPSetting.automatic
    /// -1: the encoder's own.
    var lookahead: Int32 = -1
    /// 0: the encoder's own (one).
    var slices: Int32 = 0
    var prioritizeSpeed = false

    /// The backend choice and threads.
    var encoderSpecification: EncoderSpecification {
        EncoderSpecification(hardwarePolicy: hardware, threadCount: Int(maxThreads))
    }

    /// Sets the session properties these settings decide. What a profile forbids (B slices and
    /// CABAC in Baseline, A.2.1) is the session's rule (``CompressionProperties/usesBFrames``,
    /// ``CompressionProperties/validate()``), not the element's.
    func apply(to properties: inout CompressionProperties) {
        properties.allowFrameReordering = allowFrameReordering
        properties.maxKeyFrameInterval = Int(maxKeyframeInterval)
        properties.entropyMode = entropyMode.sessionValue
        properties.minAllowedFrameQP = minAllowedFrameQP >= 0 ? Int(minAllowedFrameQP) : nil
        properties.maxAllowedFrameQP = maxAllowedFrameQP >= 0 ? Int(maxAllowedFrameQP) : nil
        properties.maxConsecutiveBFrames = bFrames >= 0 ? Int(bFrames) : nil
        properties.referenceBufferCount = referenceBufferCount > 0 ? Int(referenceBufferCount) : nil
        properties.spatialAdaptiveQP = spatialAdaptiveQP != .disable
        properties.suggestedLookAheadFrameCount = lookahead >= 0 ? Int(lookahead) : nil
        properties.slicesPerPicture = slices > 0 ? Int(slices) : nil
        properties.prioritizeEncodingSpeedOverQuality = prioritizeSpeed
    }
}

/// Settings that hold the shared encoder settings.
protocol EncoderSettingsHolder: Sendable {
    var encoder: EncoderSettings { get set }
}

/// An encoding element: its settings hold ``EncoderSettings`` and it reports its backend.
protocol EncodingElement: PropertySettingsOwner where Settings: EncoderSettingsHolder {
    /// The encoder in use, for `active-backend`.
    var activeBackend: String { get }
}

/// The properties vtenc and vtmultipasssink share, declared once.
enum EncoderProperties {
    /// `hevc`: the blurb of vtenc_h265, which has no hardware encoder to choose (SwiftVT's VA-API
    /// encoder writes H.264 only) and must not promise one.
    static func hardware<Element: EncodingElement>(default value: HardwarePolicy, hevc: Bool = false)
        -> ElementProperty<Element>
    {
        .hardwarePolicy(
            "hardware", nick: "Hardware encoding",
            blurb: hevc
                ? "Whether hardware encoding is required (VideoToolbox's RequireHardwareAcceleratedVideoEncoder): "
                    + "SwiftVT has no hardware HEVC encoder, so require fails at the state change; auto and disable "
                    + "encode with x265."
                : "Whether to encode on a VA-API device (like VideoToolbox's EnableHardwareAcceleratedVideoEncoder / "
                    + "RequireHardwareAcceleratedVideoEncoder). Takes effect when the next encoding session starts.",
            wording: EncoderHardwareWording.self, default: value, at: \Element.Settings.encoder.hardware)
    }

    static func entropyMode<Element: EncodingElement>() -> ElementProperty<Element> {
        .enumeration(
            "entropy-mode", nick: "Entropy mode", blurb: "Entropy coding of the slices",
            default: EntropyModeSetting.automatic, at: \Element.Settings.encoder.entropyMode)
    }

    static func allowFrameReordering<Element: EncodingElement>() -> ElementProperty<Element> {
        .boolean(
            "allow-frame-reordering", nick: "Allow frame reordering",
            blurb: "Allow B-frames (frames out of presentation order)", default: true,
            at: \Element.Settings.encoder.allowFrameReordering)
    }

    /// `blurb`: the whole blurb, which says what 0 stands for in this element.
    static func maxKeyframeInterval<Element: EncodingElement>(blurb: String) -> ElementProperty<Element> {
        .int(
            "max-keyframe-interval", nick: "Maximum key frame interval", blurb: blurb, 0...Int32.max, default: 0,
            at: \Element.Settings.encoder.maxKeyframeInterval)
    }

    static func maxThreads<Element: EncodingElement>() -> ElementProperty<Element> {
        .int(
            "max-threads", nick: "Maximum threads", blurb: "Encoding threads of the software encoder (0 = automatic)",
            0...256, default: 0, at: \Element.Settings.encoder.maxThreads)
    }

    /// `min-allowed-frame-qp` and `max-allowed-frame-qp` (VideoToolbox's MinAllowedFrameQP and
    /// MaxAllowedFrameQP; x264enc's qp-min/qp-max, vah264enc's min-qp/max-qp).
    static func frameQPBounds<Element: EncodingElement>() -> [ElementProperty<Element>] {
        [
            .int(
                "min-allowed-frame-qp", nick: "Minimum allowed frame QP",
                blurb:
                    "Lowest QP a frame may be coded at, 0...51 (VideoToolbox's MinAllowedFrameQP; x264enc qp-min, "
                    + "vah264enc min-qp), in every rate-control mode; -1 = the encoder's own", -1...51, default: -1,
                at: \Element.Settings.encoder.minAllowedFrameQP),
            .int(
                "max-allowed-frame-qp", nick: "Maximum allowed frame QP",
                blurb:
                    "Highest QP a frame may be coded at, 0...51 (VideoToolbox's MaxAllowedFrameQP; x264enc qp-max, "
                    + "vah264enc max-qp), in every rate-control mode: a quality floor that a bit rate may overshoot "
                    + "to keep; -1 = the encoder's own", -1...51, default: -1,
                at: \Element.Settings.encoder.maxAllowedFrameQP)
        ]
    }

    /// `b-frames` (vah264enc's name, x264enc's bframes: VideoToolbox has only
    /// AllowFrameReordering) and `reference-buffer-count` (VideoToolbox's ReferenceBufferCount;
    /// x264enc ref, vah264enc ref-frames).
    static func gopStructure<Element: EncodingElement>() -> [ElementProperty<Element>] {
        [
            .int(
                "b-frames", nick: "B-frames",
                blurb:
                    "B-frames in a row at most (vah264enc b-frames, x264enc bframes; VideoToolbox only allows or forbids "
                    + "them: allow-frame-reordering); 0 = none, -1 = the encoder's own (x264 3, x265 4, VA-API 2)",
                -1...16, default: -1, at: \Element.Settings.encoder.bFrames),
            .int(
                "reference-buffer-count", nick: "Reference buffer count",
                blurb:
                    "Reference frames at most (VideoToolbox's ReferenceBufferCount; x264enc ref, vah264enc ref-frames); "
                    + "1 codes no B-frames (they refer to two); 0 = the encoder's own", 0...16, default: 0,
                at: \Element.Settings.encoder.referenceBufferCount)
        ]
    }

    /// `spatial-adaptive-qp` (VideoToolbox's SpatialAdaptiveQPLevel; x264enc/nvh264enc aq) and
    /// `lookahead` (VideoToolbox's SuggestedLookAheadFrameCount; x264enc/nvh264enc rc-lookahead).
    static func adaptiveQuantization<Element: EncodingElement>() -> [ElementProperty<Element>] {
        [
            .enumeration(
                "spatial-adaptive-qp", nick: "Spatial adaptive QP",
                blurb:
                    "Adaptive quantization within pictures (VideoToolbox's SpatialAdaptiveQPLevel; x264enc and nvh264enc "
                    + "aq): auto, the encoder's own, or disable (every block at the picture's QP; VA-API cannot, so the "
                    + "software encoder is used, or hardware=require fails)",
                default: SpatialAdaptiveQPSetting.automatic,
                at: \Element.Settings.encoder.spatialAdaptiveQP),
            .int(
                "lookahead", nick: "Look-ahead",
                blurb:
                    "Frames the rate control looks ahead (VideoToolbox's SuggestedLookAheadFrameCount; x264enc and "
                    + "nvh264enc rc-lookahead); -1 = the encoder's own, 0 = none; VA-API devices take no count (said in a "
                    + "warning)", -1...250, default: -1, at: \Element.Settings.encoder.lookahead),
            .int(
                "slices", nick: "Slices",
                blurb:
                    "Slices per picture, each decodable on its own (x264enc slices, vah264enc num-slices; VideoToolbox has "
                    + "no key); 0 = the encoder's own (one). SwiftVT's VA-API encoder codes one: more chooses x264, or "
                    + "hardware=require fails", 0...64, default: 0, at: \Element.Settings.encoder.slices),
            .boolean(
                "prioritize-speed", nick: "Prioritize speed",
                blurb:
                    "Encode faster at some cost in compression (VideoToolbox's PrioritizeEncodingSpeedOverQuality; "
                    + "x264enc speed-preset, vah264enc target-usage): x264/x265 preset veryfast, the VA-API device's fastest "
                    + "quality level; unlike realtime, look-ahead and B-frames stay", default: false,
                at: \Element.Settings.encoder.prioritizeSpeed)
        ]
    }

    static func activeBackend<Element: EncodingElement>() -> ElementProperty<Element> {
        .reported(
            "active-backend", nick: "Active backend",
            blurb: "The encoder in use: e.g. \"x264 (software)\"; empty before the first session starts",
            .string(default: "")
        ) { .string($0.activeBackend) }
    }
}
