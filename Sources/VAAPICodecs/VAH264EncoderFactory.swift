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
    ) -> VTError.Reason? {
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
        case .failure(let unsupported): throw VTError(.unsupportedFormat, reason: unsupported.reason)
        }
        return VAH264Encoder(choice: choice, configuration: configuration)
    }

    /// The device, profile, entrypoint and options for such pictures, or why this device cannot.
    private func choose(
        width: Int, height: Int, pixelFormat: PixelFormat, properties: CompressionProperties
    ) -> Result<VAH264EncodeChoice, UnsupportedStream> {
        guard pixelFormat == .i420 || pixelFormat == .nv12VideoRange || pixelFormat == .nv12FullRange else {
            return .failure(
                UnsupportedStream(
                    reason: .inputPixelFormatNotEncoded(
                        pixelFormat, encodes: "encodes 8-bit 4:2:0 pictures (I420, NV12) only")
                ))
        }
        let device: VADevice
        switch openDevice() {
        case .success(let opened): device = opened
        case .failure(let unavailable): return .failure(UnsupportedStream(unavailable.reason))
        }
        if properties.fieldCoding != .progressive {
            return .failure(
                UnsupportedStream(
                    "fieldCoding: the VA-API encoder codes frames only, not \(properties.fieldCoding.rawValue) pictures"
                ))
        }
        if properties.masteringDisplayColorVolume != nil || properties.contentLightLevelInfo != nil {
            return .failure(
                UnsupportedStream(
                    "HDR metadata (mastering display, content light level) was given, and SwiftVT's VA-API encoder writes no SEI for it"
                ))
        }
        if let count = properties.slicesPerPicture, count > 1 {
            return .failure(
                UnsupportedStream(
                    "\(count) slices per picture were asked for, and SwiftVT's VA-API encoder codes one slice per picture"
                ))
        }
        if properties.intraRefresh {
            // VA-API's rolling intra refresh (VAEncMiscParameterRIR) is a per-driver extension
            // without the recovery point SEI a joining decoder needs; the software encoders write it.
            return .failure(
                UnsupportedStream(
                    "intra refresh was asked for, and SwiftVT's VA-API encoder codes key frames (no rolling intra refresh)"
                ))
        }
        if !properties.spatialAdaptiveQP {
            return .failure(
                UnsupportedStream(
                    "adaptive quantization off was asked for, and VA-API has no switch for a device's adaptive quantization"
                ))
        }
        if properties.requestsLossless {
            return .failure(
                UnsupportedStream(
                    "quality \(properties.quality ?? 1) asks for lossless coding (High 4:4:4 Predictive), which VA-API's H.264 encoders do not offer"
                ))
        }
        let wanted = properties.profileLevel?.profile
        // An automatic profile takes the best the device encodes; a named one only itself (its
        // profile_idc is what the stream promises).
        let candidates: [(VAProfile, H264ProfileLevel.Profile)]
        switch wanted {
        case nil:
            candidates = [
                (VAProfileH264High, .high), (VAProfileH264Main, .main),
                (VAProfileH264ConstrainedBaseline, .constrainedBaseline)
            ]
        case .high?: candidates = [(VAProfileH264High, .high)]
        case .main?: candidates = [(VAProfileH264Main, .main)]
        case .baseline?, .constrainedBaseline?: candidates = [(VAProfileH264ConstrainedBaseline, .constrainedBaseline)]
        // No VAProfile encodes these (the pixel formats they need are refused above anyway).
        case .high10?, .high422?, .high444Predictive?: candidates = []
        }
        // Every entrypoint of the profile that can serve the properties, in the order they are
        // tried: iHD's low-power EncSliceLP (VDEnc) often offers constant QP only, and an
        // advertised rate-control mode may still be refused when the context is made, so the
        // encoder keeps the others to move on to (VAH264Encoder+CapabilityFallbacks).
        var found: (VAProfile, H264ProfileLevel.Profile)?
        var endpoints: [VAH264EncodeEndpoint] = []
        var refusals: [String] = []
        for (profile, name) in candidates {
            for entrypoint in [VAEntrypointEncSlice, VAEntrypointEncSliceLP]
            where device.capabilities.supports(profile: profile, entrypoint: entrypoint) {
                if let maximum = device.capabilities.maxPictureSize(profile: profile, entrypoint: entrypoint),
                    width > maximum.width || height > maximum.height
                {
                    refusals.append(
                        "\(width)x\(height) is larger than the \(maximum.width)x\(maximum.height) \(device.summary) encodes"
                    )
                    continue
                }
                // The encoder's surfaces are whole macroblocks (the SPS crops the rest).
                let coded = (width: (width + 15) / 16 * 16, height: (height + 15) / 16 * 16)
                if let minimum = Self.minimumPictureSize(
                    device, profile: profile, entrypoint: entrypoint, codedWidth: coded.width, codedHeight: coded.height
                ),
                    coded.width < minimum.width || coded.height < minimum.height
                {
                    refusals.append(
                        "\(width)x\(height) (coded as \(coded.width)x\(coded.height), whole macroblocks) is smaller "
                            + "than the \(minimum.width)x\(minimum.height) \(device.summary) encodes at least")
                    continue
                }
                let options: VAH264EncodeOptions
                do {
                    options = try VAH264EncodeOptions.read(
                        device.connection, profile: profile, entrypoint: entrypoint, vendor: device.connection.vendor)
                } catch {
                    refusals.append("\(device.summary) cannot describe its H.264 encoder: \(error)")
                    continue
                }
                let endpoint = VAH264EncodeEndpoint(entrypoint: entrypoint, options: options)
                if let missing = endpoint.missingRateControl(for: properties, device: device.summary) {
                    refusals.append(missing)
                    continue
                }
                endpoints.append(endpoint)
            }
            if !endpoints.isEmpty {
                found = (profile, name)
                break
            }
        }
        guard let (profile, profileName) = found else {
            if let first = refusals.first { return .failure(UnsupportedStream(first)) }
            let asked = wanted.map { "the \($0.rawValue) profile" } ?? "any H.264 profile"
            return .failure(
                UnsupportedStream(
                    "\(device.summary) has no H.264 encoder for \(asked) (VAEntrypointEncSlice or EncSliceLP; the device offers "
                        + "\(device.capabilities.summary))"))
        }
        return .success(
            VAH264EncodeChoice(device: device, profile: profile, profileName: profileName, endpoints: endpoints))
    }

    /// Coded pictures at least this wide and high are not checked against the device's minimum
    /// size: drivers' minimums are a few macroblocks (iHD says 32x32 for H.264 encoding), and the
    /// check costs a config of its own (vaCreateConfig) per session.
    static let minimumSizeCheckedBelow = 128

    /// The smallest surface the device encodes from for the pair (vaQuerySurfaceAttributes'
    /// VASurfaceAttribMinWidth/MinHeight on an encoding config); nil when the driver does not
    /// say, the config cannot be made (making the encoder then says why), or the picture is at
    /// least ``minimumSizeCheckedBelow`` both ways.
    private static func minimumPictureSize(
        _ device: VADevice, profile: VAProfile, entrypoint: VAEntrypoint, codedWidth: Int, codedHeight: Int
    ) -> (width: Int, height: Int)? {
        guard codedWidth < minimumSizeCheckedBelow || codedHeight < minimumSizeCheckedBelow,
            let config = try? VAConfig(
                connection: device.connection, profile: profile, entrypoint: entrypoint,
                attributes: [VAConfigAttrib(type: VAConfigAttribRTFormat, value: UInt32(VA_RT_FORMAT_YUV420))]),
            let attributes = try? device.connection.surfaceAttributes(config: config)
        else { return nil }
        guard attributes.minWidth != nil || attributes.minHeight != nil else { return nil }
        return (attributes.minWidth ?? 1, attributes.minHeight ?? 1)
    }

    public var supportedProperties: [CompressionPropertyKey: String] {
        [
            .averageBitRate:
                "bits per second, > 0: VA_RC_VBR at that target (peak = target), or VA_RC_CBR when a data rate limit equals it",
            .dataRateLimits:
                "[(bytes, seconds)] with a bit rate: DataRateBuffer's rate is the VBR peak (CBR rate when it is below the average) and its buffer the HRD buffer; without a bit rate not applied (CQP), with a notice",
            .hrdBuffer:
                "rate and size with a bit rate: the VBR peak (CBR rate when it is at the average) and the HRD buffer_size; without a bit rate not applied (CQP), with a notice",
            .quality:
                "0...1 when no bit rate is set: VA_RC_ICQ at ICQ_quality_factor 51 * (1 - quality) (x264's CRF scale) where offered, else VA_RC_CQP at that QP (P; I 3 lower, B 2 higher)",
            .realTime: "Bool: no B pictures, the device's fastest quality level",
            .profileLevel:
                "constrained-baseline (for baseline), main, high as the device offers; level or automatic (Table A-1)",
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
            .minAllowedFrameQP: "QP 0...51: CQP and forced QPs clamped; CBR/VBR: VAEncMiscParameterRateControl.min_qp",
            .maxAllowedFrameQP: "QP 0...51: CQP and forced QPs clamped; CBR/VBR: VAEncMiscParameterRateControl.max_qp",
            .maxConsecutiveBFrames:
                "0...16: B pictures between anchors (default 2), where the device takes a list 1 reference (else I/P, with a notice)",
            .referenceBufferCount:
                "1...16: at most; the encoder refers to 1 (P) or 2 (B) frames, so 1 means no B pictures",
            .spatialAdaptiveQP:
                "true only: VA-API has no switch for adaptive quantization (false chooses another backend)",
            .suggestedLookAheadFrameCount: "ignored with a notice: VA-API encoders take no look-ahead count",
            .slicesPerPicture: "1 only (more chooses another backend)",
            .constantQuantizers: "I, P, B QPs 0...51: VA_RC_CQP, each picture at its type's QP",
            .masteringDisplayColorVolume: "not written (chooses another backend)",
            .contentLightLevelInfo: "not written (chooses another backend)",
            .prioritizeEncodingSpeedOverQuality:
                "Bool: the device's fastest quality level (VAEncMiscParameterBufferQualityLevel)"
        ]
    }
}

/// What the factory chose for a session.
struct VAH264EncodeChoice: @unchecked Sendable {
    // @unchecked: VADevice is shared as in the decoder (one session uses its contexts).
    var device: VADevice
    var profile: VAProfile
    var profileName: H264ProfileLevel.Profile
    /// The profile's entrypoints that serve the session's properties, the preferred first.
    var endpoints: [VAH264EncodeEndpoint]
}

/// One encoding entrypoint of the chosen profile and what it offers.
struct VAH264EncodeEndpoint: Sendable {
    var entrypoint: VAEntrypoint
    var options: VAH264EncodeOptions

    var name: String { entrypoint == VAEntrypointEncSliceLP ? "VAEntrypointEncSliceLP" : "VAEntrypointEncSlice" }

    /// Why this entrypoint cannot serve `properties`' rate control, or nil when it can.
    func missingRateControl(for properties: CompressionProperties, device: String) -> String? {
        let constantQuality = properties.quality != nil && properties.constantQuantizers == nil
        let qualityModes = UInt32(VA_RC_CQP) | (constantQuality ? UInt32(VA_RC_ICQ) : 0)
        if properties.averageBitRate == nil && options.rateControlModes & qualityModes == 0 {
            return
                "quality: \(device) has no constant-QP rate control (VA_RC_CQP\(constantQuality ? " or VA_RC_ICQ" : "")) "
                + "on \(name), which quality-based encoding needs; set averageBitRate (vtenc: bitrate) to encode there"
        }
        if properties.averageBitRate != nil && options.rateControlModes & UInt32(VA_RC_CBR | VA_RC_VBR) == 0 {
            return "averageBitRate: \(device) has neither CBR nor VBR rate control on \(name)"
        }
        return nil
    }
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
    /// How the device reads VAEncMiscParameterBufferQualityLevel.
    var qualityLevels: QualityLevels

    enum QualityLevels: Sendable, Equatable {
        /// va.h's meaning: 1 (best quality) ... qualityRange (fastest).
        case range
        /// Mesa's gallium frontend (radeonsi, and its others that follow it): `vlVaQualityBits`,
        /// bit 0 "valid", bits 1-2 the preset (0 speed, 1 balanced, 2 quality), bit 3
        /// pre-encoding, bit 4 VBAQ; 0 is the speed preset with both off, 1 its "suggested"
        /// balanced setting. Its EncQualityRange (32 on radeonsi) is the bit-field's size, not a
        /// number of levels, so a midpoint of it (16: bit 4 without the valid bit) means nothing.
        case mesaBitField
    }

    /// The quality level to send, or nil for none: the middle of va.h's range (balanced), or its
    /// fastest level in real time; under Mesa's bit-field the balanced preset, or the speed preset
    /// in real time (both without pre-encoding and VBAQ, which cost time).
    func qualityLevel(realTime: Bool) -> Int? {
        guard qualityRange > 1 else { return nil }
        switch qualityLevels {
        case .range:
            return realTime ? qualityRange : (qualityRange + 1) / 2
        case .mesaBitField:
            let valid = 1
            let balancedPreset = 1 << 1
            return realTime ? 0 : valid | balancedPreset
        }
    }

    static func read(
        _ connection: VADisplayConnection, profile: VAProfile, entrypoint: VAEntrypoint, vendor: String
    ) throws(VAError) -> Self {
        let values = try connection.configAttributes(
            profile: profile, entrypoint: entrypoint,
            types: [
                VAConfigAttribRateControl, VAConfigAttribEncPackedHeaders, VAConfigAttribEncMaxRefFrames,
                VAConfigAttribEncQualityRange
            ])
        let references = values[VAConfigAttribEncMaxRefFrames.rawValue]
        return VAH264EncodeOptions(
            rateControlModes: values[VAConfigAttribRateControl.rawValue] ?? UInt32(VA_RC_CQP),
            packedHeaders: values[VAConfigAttribEncPackedHeaders.rawValue] ?? 0,
            // va.h: bits 0-15 list 0, bits 16-31 list 1; a driver that does not say takes one each.
            maxList0References: references.map { Int($0 & 0xFFFF) } ?? 1,
            maxList1References: references.map { Int($0 >> 16) } ?? 1,
            qualityRange: Int(values[VAConfigAttribEncQualityRange.rawValue] ?? 1),
            // The vendor string is how clients tell Mesa apart (GStreamer's gstvadisplay.c
            // matches the same "Mesa Gallium driver" prefix); nothing in the attributes says it.
            qualityLevels: vendor.hasPrefix("Mesa Gallium driver") ? .mesaBitField : .range)
    }
}
