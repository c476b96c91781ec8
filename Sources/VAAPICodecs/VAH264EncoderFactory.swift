import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

/// The hardware H.264 encoder: SwiftVT's own GOP and header logic (``H264CodingPlanner``, the
/// SPS/PPS/slice-header writers) driving a VA-API device's `VAEntrypointEncSlice` (or the
/// low-power `VAEntrypointEncSliceLP`).
public final class VAH264EncoderFactory: EncoderBackendFactory, Sendable {
    let cachedDevice: CachedVADevice

    /// - Parameter log: libva's and the probe's messages (vtenc sends them to GStreamer's debug log).
    public init(log: @escaping @Sendable (String) -> Void = { _ in }) {
        cachedDevice = CachedVADevice(purpose: .encoding, log: log)
    }

    public var name: String { cachedDevice.name }

    public var isHardware: Bool { true }

    private func openDevice() -> Result<VADevice, VADeviceUnavailable> { cachedDevice.open() }

    public func unavailableReason(
        width: Int, height: Int, pixelFormat: PixelFormat, properties: CompressionProperties
    ) -> String? {
        switch choose(width: width, height: height, pixelFormat: pixelFormat, properties: properties) {
        case .success: return nil
        case .failure(let reason): return reason.reason
        }
    }

    public func makeBackend(configuration: EncoderConfiguration) throws(VTError) -> any EncoderBackend {
        let choice: VAH264EncodeChoice
        switch choose(
            width: configuration.width, height: configuration.height, pixelFormat: configuration.pixelFormat,
            properties: configuration.properties)
        {
        case .success(let value): choice = value
        case .failure(let reason): throw VTError(.unsupportedFormat, reason.reason)
        }
        return VAH264Encoder(choice: choice, configuration: configuration)
    }

    /// The device, profile, entrypoint and options for such pictures, or why this device cannot.
    private func choose(
        width: Int, height: Int, pixelFormat: PixelFormat, properties: CompressionProperties
    ) -> Result<VAH264EncodeChoice, UnsupportedStream> {
        guard pixelFormat == .i420 || pixelFormat == .nv12VideoRange || pixelFormat == .nv12FullRange else {
            return .failure(UnsupportedStream(
                "encodes I420 ('y420') and NV12 ('420v', '420f') pictures, not '\(pixelFormat.rawValue)'"))
        }
        let device: VADevice
        switch openDevice() {
        case .success(let opened): device = opened
        case .failure(let unavailable): return .failure(UnsupportedStream(unavailable.reason))
        }
        if properties.fieldCoding != .progressive {
            return .failure(UnsupportedStream(
                "fieldCoding: the VA-API encoder codes frames only, not \(properties.fieldCoding.rawValue) pictures"))
        }
        if properties.requestsLossless {
            return .failure(UnsupportedStream(
                "quality \(properties.quality ?? 1) asks for lossless coding (High 4:4:4 Predictive), which VA-API's H.264 encoders do not offer"))
        }
        let wanted = properties.profileLevel?.profile
        // An automatic profile takes the best the device encodes; a named one only itself (its
        // profile_idc is what the stream promises).
        let candidates: [(VAProfile, H264ProfileLevel.Profile)]
        switch wanted {
        case nil: candidates = [(VAProfileH264High, .high), (VAProfileH264Main, .main), (VAProfileH264ConstrainedBaseline, .constrainedBaseline)]
        case .high?: candidates = [(VAProfileH264High, .high)]
        case .main?: candidates = [(VAProfileH264Main, .main)]
        case .baseline?, .constrainedBaseline?: candidates = [(VAProfileH264ConstrainedBaseline, .constrainedBaseline)]
        case .high444Predictive?: candidates = []  // no VAProfile encodes it
        }
        let entrypoints = [VAEntrypointEncSlice, VAEntrypointEncSliceLP]
        var found: (VAProfile, H264ProfileLevel.Profile, VAEntrypoint)?
        for (profile, name) in candidates {
            if let entrypoint = entrypoints.first(where: { device.capabilities.supports(profile: profile, entrypoint: $0) }) {
                found = (profile, name, entrypoint)
                break
            }
        }
        guard let (profile, profileName, entrypoint) = found else {
            let asked = wanted.map { "the \($0.rawValue) profile" } ?? "any H.264 profile"
            return .failure(UnsupportedStream(
                "\(device.summary) has no H.264 encoder for \(asked) (VAEntrypointEncSlice or EncSliceLP; the device offers "
                    + "\(device.capabilities.summary))"))
        }
        if let maximum = device.capabilities.maxPictureSize(profile: profile, entrypoint: entrypoint),
            width > maximum.width || height > maximum.height
        {
            return .failure(UnsupportedStream(
                "\(width)x\(height) is larger than the \(maximum.width)x\(maximum.height) \(device.summary) encodes"))
        }
        let options: VAH264EncodeOptions
        do {
            options = try VAH264EncodeOptions.read(device.connection, profile: profile, entrypoint: entrypoint)
        } catch {
            return .failure(UnsupportedStream("\(device.summary) cannot describe its H.264 encoder: \(error)"))
        }
        if properties.averageBitRate == nil && options.rateControlModes & UInt32(VA_RC_CQP) == 0 {
            return .failure(UnsupportedStream(
                "quality: \(device.summary) has no constant-QP rate control (VA_RC_CQP), which quality-based encoding "
                    + "needs; set averageBitRate (vtenc: bitrate) to encode there"))
        }
        if properties.averageBitRate != nil && options.rateControlModes & UInt32(VA_RC_CBR | VA_RC_VBR) == 0 {
            return .failure(UnsupportedStream(
                "averageBitRate: \(device.summary) has neither CBR nor VBR rate control"))
        }
        return .success(VAH264EncodeChoice(
            device: device, profile: profile, profileName: profileName, entrypoint: entrypoint, options: options))
    }

    public var supportedProperties: [CompressionPropertyKey: String] {
        [
            .averageBitRate: "bits per second, > 0: VA_RC_VBR at that target (peak = target), or VA_RC_CBR when a data rate limit equals it",
            .dataRateLimits: "[(bytes, seconds)]: the strictest is the VBR peak and the HRD buffer (window)",
            .quality: "0...1 when no bit rate is set: VA_RC_CQP at QP 51 * (1 - quality) (P; I 3 lower, B 2 higher)",
            .realTime: "Bool: no B pictures, the device's fastest quality level",
            .profileLevel: "constrained-baseline (for baseline), main, high as the device offers; level or automatic (Table A-1)",
            .entropyMode: "cavlc, cabac (CAVLC with a warning when the device refuses CABAC)",
            .allowFrameReordering: "Bool: false = no B pictures (else I B B P)",
            .maxKeyFrameInterval: "frames >= 0 (0 = 250)",
            .maxKeyFrameIntervalDuration: "seconds >= 0 (0 = no limit)",
            .expectedFrameRate: "frames per second: VUI timing and the frame-rate misc parameter",
            .allowTemporalCompression: "Bool: false = every frame IDR",
            .maxFrameDelayCount: "frames >= 0: B pictures at most this many",
            .colorPrimaries: "H.273 code point, written to the VUI",
            .transferFunction: "H.273 code point, written to the VUI",
            .yCbCrMatrix: "H.273 code point, written to the VUI",
            .fullRange: "Bool, written to the VUI (video_full_range_flag)",
        ]
    }
}

/// What the factory chose for a session.
struct VAH264EncodeChoice: @unchecked Sendable {
    // @unchecked: VADevice is shared as in the decoder (one session uses its contexts).
    var device: VADevice
    var profile: VAProfile
    var profileName: H264ProfileLevel.Profile
    var entrypoint: VAEntrypoint
    var options: VAH264EncodeOptions
}

/// The encoder options a (profile, entrypoint) offers (vaGetConfigAttributes).
struct VAH264EncodeOptions: Sendable {
    /// VA_RC_* bits.
    var rateControlModes: UInt32
    /// VA_ENC_PACKED_HEADER_* bits.
    var packedHeaders: UInt32
    /// Reference pictures the encoder takes in list 0 / list 1 (VAConfigAttribEncMaxRefFrames).
    var maxList0References: Int
    var maxList1References: Int
    /// VAConfigAttribEncQualityRange: 1 (or absent) = one quality level.
    var qualityRange: Int

    static func read(_ connection: VADisplayConnection, profile: VAProfile, entrypoint: VAEntrypoint) throws(VAError) -> Self {
        let values = try connection.configAttributes(
            profile: profile, entrypoint: entrypoint,
            types: [VAConfigAttribRateControl, VAConfigAttribEncPackedHeaders, VAConfigAttribEncMaxRefFrames, VAConfigAttribEncQualityRange])
        let references = values[VAConfigAttribEncMaxRefFrames.rawValue]
        return VAH264EncodeOptions(
            rateControlModes: values[VAConfigAttribRateControl.rawValue] ?? UInt32(VA_RC_CQP),
            packedHeaders: values[VAConfigAttribEncPackedHeaders.rawValue] ?? 0,
            // va.h: bits 0-15 list 0, bits 16-31 list 1; a driver that does not say takes one each.
            maxList0References: references.map { Int($0 & 0xFFFF) } ?? 1,
            maxList1References: references.map { Int($0 >> 16) } ?? 1,
            qualityRange: Int(values[VAConfigAttribEncQualityRange.rawValue] ?? 1))
    }
}
