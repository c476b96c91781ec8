import CGStreamer
import MediaCore
import SwiftVT

// The enumeration types of the elements' properties. Their numbers are the ones the plugin has
// always registered (a saved pipeline or application that stores the number keeps working), and
// their nicks are what gst-launch-1.0 lines write.

extension HardwarePolicy {
    var number: Int32 {
        switch self {
        case .auto: 0
        case .require: 1
        case .disable: 2
        }
    }

    init(number: Int32) {
        self = Self.allCases.first { $0.number == number } ?? .auto
    }
}

/// What differs between the `hardware` enumerations of the decoders and of the encoders: the
/// software backend each falls back to. One GEnum cannot serve both, since its labels are what
/// gst-inspect-1.0 shows for every element that uses it.
protocol HardwarePolicyWording: Sendable {
    /// The GType name of the enumeration.
    static var typeName: String { get }
    /// The software backend the element uses when it does not use hardware.
    static var softwareBackend: String { get }
    /// The hardware it may use: "VA-API or NVDEC" for the decoders, "VA-API" for the encoders.
    static var hardwareBackends: String { get }
}

/// vtdec's and vtdec_hw's `hardware`: libavcodec decodes in software.
enum DecoderHardwareWording: HardwarePolicyWording {
    static var typeName: String { "SwiftVTDecoderHardwarePolicy" }
    static var softwareBackend: String { "libavcodec" }
    static var hardwareBackends: String { "VA-API or NVDEC" }
}

/// The encoders' `hardware` (vtenc, vtenc_h264, vtenc_h264_hw, vtmultipasssink): x264 encodes in
/// software.
enum EncoderHardwareWording: HardwarePolicyWording {
    static var typeName: String { "SwiftVTEncoderHardwarePolicy" }
    static var softwareBackend: String { "x264; x265 for H.265" }
    static var hardwareBackends: String { "VA-API" }
}

/// A ``HardwarePolicy`` as the GEnum of one kind of element; numbers and nicks are the same for
/// every kind (and as before the enumeration was split), only the labels differ.
struct HardwarePolicySetting<Wording: HardwarePolicyWording>: PropertyEnumeration {
    var policy: HardwarePolicy

    static var allCases: [HardwarePolicySetting] { HardwarePolicy.allCases.map { HardwarePolicySetting(policy: $0) } }
    static var typeName: String { Wording.typeName }
    var number: Int32 { policy.number }
    var nick: String { policy.rawValue }

    var label: String {
        switch policy {
        case .auto:
            "Use \(Wording.hardwareBackends) when a device can take the stream, else software (\(Wording.softwareBackend))"
        case .require: "Use \(Wording.hardwareBackends) or fail with an error"
        case .disable: "Never use \(Wording.hardwareBackends): software (\(Wording.softwareBackend)) only"
        }
    }
}

/// vtenc's `rate-control`.
enum RateControlMode: Int32, PropertyEnumeration {
    case averageBitRate = 0
    case constantBitRate = 1
    case constantQuality = 2
    case constantQP = 3

    static var typeName: String { "SwiftVTRateControl" }
    var number: Int32 { rawValue }

    var nick: String {
        switch self {
        case .averageBitRate: "abr"
        case .constantBitRate: "cbr"
        case .constantQuality: "quality"
        case .constantQP: "cqp"
        }
    }

    var label: String {
        switch self {
        case .averageBitRate: "Average bit rate (bitrate, kbit/s)"
        case .constantBitRate: "Constant bit rate: bitrate as a hard limit over one second"
        case .constantQuality: "Constant quality (quality, 0...1)"
        case .constantQP: "Constant QP per frame type (qp-i, qp-p, qp-b), no rate control"
        }
    }
}

/// `entropy-mode` of the encoders: the session's ``H264EntropyMode`` or automatic.
enum EntropyModeSetting: Int32, PropertyEnumeration {
    case automatic = 0
    case cavlc = 1
    case cabac = 2

    static var typeName: String { "SwiftVTEntropyMode" }
    var number: Int32 { rawValue }

    var nick: String {
        switch self {
        case .automatic: "auto"
        case .cavlc: "cavlc"
        case .cabac: "cabac"
        }
    }

    var label: String {
        switch self {
        case .automatic: "CABAC where the profile allows it, else CAVLC"
        case .cavlc: "CAVLC"
        case .cabac: "CABAC (main and high profiles)"
        }
    }

    /// The session property: nil lets the encoder choose (CABAC unless the profile forbids it).
    var sessionValue: H264EntropyMode? {
        switch self {
        case .automatic: nil
        case .cavlc: .cavlc
        case .cabac: .cabac
        }
    }
}

/// vtmultipasssink's `profile`.
enum ProfileSetting: Int32, PropertyEnumeration {
    case high = 0
    case main = 1
    case constrainedBaseline = 2
    case baseline = 3

    static var typeName: String { "SwiftVTProfile" }
    var number: Int32 { rawValue }
    var nick: String { sessionValue.rawValue }

    var label: String {
        switch self {
        case .high: "High"
        case .main: "Main"
        case .constrainedBaseline: "Constrained baseline"
        case .baseline: "Baseline"
        }
    }

    var sessionValue: H264ProfileLevel.Profile {
        switch self {
        case .high: .high
        case .main: .main
        case .constrainedBaseline: .constrainedBaseline
        case .baseline: .baseline
        }
    }
}

/// vtmultipasssink's `codec`: the coding standard of the file (VideoToolbox's codec type,
/// `kCMVideoCodecType_H264` or `kCMVideoCodecType_HEVC`).
enum CodecSetting: Int32, PropertyEnumeration {
    case h264 = 0
    case h265 = 1

    static var typeName: String { "SwiftVTCodec" }
    var number: Int32 { rawValue }

    var nick: String {
        switch self {
        case .h264: "h264"
        case .h265: "h265"
        }
    }

    var label: String {
        switch self {
        case .h264: "H.264/AVC (x264, or VA-API hardware)"
        case .h265: "H.265/HEVC (x265)"
        }
    }

    /// The session's codec type.
    var codecType: FourCharCode {
        switch self {
        case .h264: .h264
        case .h265: .hevc
        }
    }

    /// The standard's name in messages.
    var standardName: String {
        switch self {
        case .h264: "H.264"
        case .h265: "H.265"
        }
    }
}

/// The encoders' `spatial-adaptive-qp` (VideoToolbox's SpatialAdaptiveQPLevel:
/// kVTQPModulationLevel_Default or _Disable).
enum SpatialAdaptiveQPSetting: Int32, PropertyEnumeration {
    case automatic = 0
    case disable = 1

    static var typeName: String { "SwiftVTSpatialAdaptiveQP" }
    var number: Int32 { rawValue }

    var nick: String {
        switch self {
        case .automatic: "auto"
        case .disable: "disable"
        }
    }

    var label: String {
        switch self {
        case .automatic: "The encoder's own adaptive quantization"
        case .disable: "None: every block at the picture's QP"
        }
    }
}
