import CGStreamer
import CSwiftVTShim
import SwiftVT

/// What vtenc and vtmultipasssink tell the application about their encoder: each notice of the
/// compression session (a property the VA-API encoder could not honour and what it does
/// instead, a hardware encoder that failed under hardware=auto) as a GStreamer WARNING naming
/// the element's property.
enum EncoderNotices {
    /// The element property a session property comes from.
    static func propertyName(_ key: CompressionPropertyKey) -> String {
        switch key {
        case .averageBitRate: "bitrate"
        case .dataRateLimits: "data-rate-limits"
        case .hrdBuffer: "max-bitrate, vbv-buffer-size"
        case .quality: "quality"
        case .realTime: "realtime"
        case .profileLevel: "profile (from downstream caps)"
        case .entropyMode: "entropy-mode"
        case .allowFrameReordering: "allow-frame-reordering"
        case .maxKeyFrameInterval: "max-keyframe-interval"
        case .maxKeyFrameIntervalDuration: "max-keyframe-interval-duration"
        case .expectedFrameRate: "framerate (from the caps)"
        case .allowTemporalCompression: "allow-temporal-compression"
        case .maxFrameDelayCount: "max-frame-delay"
        case .colorPrimaries, .transferFunction, .yCbCrMatrix, .fullRange: "colorimetry (from the caps)"
        case .fieldCoding: "interlace-mode (from the caps)"
        case .minAllowedFrameQP: "min-allowed-frame-qp"
        case .maxAllowedFrameQP: "max-allowed-frame-qp"
        case .calculatesMeanSquaredError: "frame-stats"
        case .maxConsecutiveBFrames: "b-frames"
        case .referenceBufferCount: "reference-buffer-count"
        case .spatialAdaptiveQP: "spatial-adaptive-qp"
        case .suggestedLookAheadFrameCount: "lookahead"
        case .slicesPerPicture: "slices"
        case .constantQuantizers: "qp-i, qp-p, qp-b"
        case .masteringDisplayColorVolume: "mastering-display-info (from the caps)"
        case .contentLightLevelInfo: "content-light-level (from the caps)"
        case .prioritizeEncodingSpeedOverQuality: "prioritize-speed"
        case .intraRefresh: "intra-refresh"
        }
    }

    /// Posts the session's pending notices from `element`;
    /// returns the session's active backend name, which may have changed.
    @discardableResult
    static func post(_ session: CompressionSession, from element: UnsafeMutableRawPointer) -> String {
        for notice in session.takeNotices() {
            let text: String
            let domain: ElementMessage.Domain
            if let property = notice.property {
                text = "\(propertyName(property)): \(notice.message)"
                domain = .library(GST_LIBRARY_ERROR_SETTINGS)
            } else {
                text = notice.message
                domain = .stream(GST_STREAM_ERROR_ENCODE)
            }
            ElementMessage(domain: domain, text: text).post(from: element, isError: false)
        }
        return session.activeBackendName
    }
}
