// The software HEVC encoder: libx265 behind SwiftVT's EncoderBackend (the x264 backend's
// counterpart, X264Encoder.swift).
//
// How CompressionProperties map to x265 (x265_param, set through x265_param_parse by option name):
//
// | property                     | x265                                                                     |
// |------------------------------|--------------------------------------------------------------------------|
// | averageBitRate               | bitrate (kbit/s, ABR). A change while encoding drains and reopens the    |
// |                              | encoder at the next frame (an IDR picture), as does any rate change      |
// | quality (no bit rate)        | crf 51 * (1 - quality), as x264's; above                                 |
// |                              | CompressionProperties.losslessQualityThreshold: lossless (transquant     |
// |                              | bypass, 7.4.3.3.1, cu_transquant_bypass_flag in every CU)                 |
// | neither                      | crf 28 (x265's default)                                                  |
// | dataRateLimits               | vbv-maxrate, vbv-bufsize of DataRateBuffer.planningInside (as x264's)     |
// | realTime                     | preset veryfast + tune zerolatency (no B-frames, no look-ahead, one      |
// |                              | frame thread); otherwise preset medium                                   |
// | prioritizeEncodingSpeed...   | preset veryfast (no tune)                                                |
// | allowFrameReordering = false | bframes 0                                                                |
// | maxKeyFrameInterval N        | keyint N (the session also forces an IDR after N frames)                  |
// | maxKeyFrameIntervalDuration  | keyint <= duration * frame rate; the session forces the IDR in time       |
// | allowTemporalCompression=false | keyint 1, bframes 0 (every picture IDR)                                |
// | maxFrameDelayCount n         | frame-threads 1; n < 4: rc-lookahead 0, bframes 0, cutree 0; else        |
// |                              | bframes <= (n - 4) / 2, rc-lookahead n - 3 - bframes (X265Encoder.       |
// |                              | heldFrames: x265 holds look-ahead + B-frames + 3, measured)               |
// | threadCount                  | pools n, frame-threads min(n, 16) (1 under realTime; 0 = x265 chooses)    |
// | expectedFrameRate            | fps (VUI timing and rate control); else the first frame's duration       |
// | colorPrimaries ...           | colorprim, transfer, colormatrix (H.273 code points, E.3.1)               |
// | fullRange                    | range full/limited (video_full_range_flag)                               |
// | min/maxAllowedFrameQP        | qpmin, qpmax                                                             |
// | maxConsecutiveBFrames        | bframes                                                                  |
// | referenceBufferCount         | ref (b-pyramid off below 3)                                              |
// | spatialAdaptiveQP = false    | aq-mode 0                                                                |
// | suggestedLookAheadFrameCount | rc-lookahead (bframes below it; 0: cutree 0); maxFrameDelayCount wins    |
// | slicesPerPicture             | slices (independent slice segments, at most one per CTU row)             |
// | constantQuantizers           | qp P, ipratio/pbratio from I and B                                       |
// | masteringDisplayColorVolume  | master-display "G(x,y)B(x,y)R(x,y)WP(x,y)L(max,min)"                     |
// | contentLightLevelInfo        | max-cll "MaxCLL,MaxFALL"                                                 |
// | calculatesMeanSquaredError   | not measured: x265 turns psnr off below log level info (Encoder::        |
// |                              | configure), and info would print x265's own lines on stderr              |
// | picture under 64 luma samples | refused: x265 codes nothing smaller than one 64x64 CTU; with smaller   |
// | on a side                    | CTUs the heap was corrupted at 40x34, 48x16, 40x24 (cause not found)     |
// | pixel format                 | the profile (A.3): 8-bit 4:2:0 Main, 10-bit 4:2:0 Main 10, 4:2:2 (8 or   |
// |                              | 10 bits) Main 4:2:2 10, 4:4:4 Main 4:4:4 / Main 4:4:4 10                 |
// | entropyMode                  | cabac or nil; cavlc is refused (HEVC codes every slice with CABAC, 9.3) |
// | profileLevel, fieldCoding    | refused: H.264 profiles do not name HEVC ones; x265's interlaced mode     |
// |                              | (field pictures with pic_struct SEI) is not wired                         |
//
// Keyframes are IDR pictures (open-gop 0): every sync sample starts a closed GOP, as the session's
// GOP logic (forced key frames, key-frame limits) and x264's stream assume.
//
// Output: annexb 0, so x265 writes each NAL unit with a 4-byte big-endian length instead of a
// start code: the payload is hvc1 sample data as it stands. repeat-headers 0 and info 0: the
// VPS/SPS/PPS come from x265_encoder_headers into the format description (hvcC) only, and no
// version SEI goes into the stream.
//
// Bit depth: the x265_api of the picture's depth (cx265_api, CX265.h): Debian's multilib
// libx265-199 has an 8-bit and a 10-bit encoder in one library.
//
// Input pictures are not copied: x265_picture's planes point at the PixelBuffer's planes (with
// their strides, in bytes); x265 copies the picture into its own frame inside
// x265_encoder_encode, so the PixelBuffer only has to live for that call.
//
// Time stamps: as in X264Encoder, PTS go to x265 in a 1/90000 timebase, the original MediaTime
// PTS and duration travel with the frame (x265_picture.userData holds a token), and DTS is x265's
// (with B-frames, earlier frames' PTS, the first ones before the first PTS), kept strictly
// increasing and at or before PTS.
import CX265
import H265
import MediaCore
import SwiftVT

/// The software HEVC encoder: libx265 (planar 4:2:0, 4:2:2 and 4:4:4 pictures of 8 or 10 bits).
public struct X265EncoderFactory: EncoderBackendFactory {
    public init() {}

    public var name: String { "x265 (software)" }
    public var isHardware: Bool { false }
    public var codecType: FourCharCode { .hevc }

    /// The planar formats x265 takes as they are (its NV12 input is not supported, x265.h).
    static let pixelFormats: [PixelFormat] = [.i420, .i422, .i444, .i420TenBit, .i422TenBit, .i444TenBit]

    public func unavailableReason(
        width: Int, height: Int, pixelFormat: PixelFormat, properties: CompressionProperties
    ) -> VTError.Reason? {
        guard Self.pixelFormats.contains(pixelFormat) else {
            return .inputPixelFormatNotEncoded(
                pixelFormat, encodes: "encodes planar 4:2:0, 4:2:2 and 4:4:4 pictures of 8 or 10 bits")
        }
        // x265 codes nothing smaller than one coding tree block, 64x64 here: with 32x32 or 16x16
        // blocks (x265's ctu option) the process's heap was corrupted (glibc "free(): invalid next
        // size") at 40x34, 48x16 and 40x24, while x265enc encodes 40x24 with 16x16 blocks on the
        // same libx265: the cause, in this backend or in how it drives x265, is not found yet.
        guard width >= 64, height >= 64 else {
            return .other("encodes pictures of 64x64 or more (one coding tree block), not \(width)x\(height)")
        }
        if let problem = cx265_load() {
            return .other("libx265 could not be loaded (\(String(cString: problem))): install libx265-199")
        }
        if cx265_api(Int32(pixelFormat.bitDepth)) == nil {
            return .other("the installed libx265 has no \(pixelFormat.bitDepth)-bit encoder of build \(cx265_build())")
        }
        return nil
    }

    public func makeBackend(configuration: EncoderConfiguration) throws(VTError) -> any EncoderBackend {
        if let problem = cx265_load() {
            throw VTError(
                .unsupportedFormat, "libx265 could not be loaded (\(String(cString: problem))): install libx265-199")
        }
        guard let api = cx265_api(Int32(configuration.pixelFormat.bitDepth)) else {
            throw VTError(
                .unsupportedFormat,
                "the installed libx265 has no \(configuration.pixelFormat.bitDepth)-bit encoder of build \(cx265_build())"
            )
        }
        try X265Encoder.refuseUnsupported(configuration.properties)
        return X265Encoder(configuration: configuration, api: api)
    }

    public var supportedProperties: [CompressionPropertyKey: String] {
        [
            .averageBitRate: "bits per second, > 0: ABR",
            .dataRateLimits:
                "[(bytes, seconds)], each > 0: VBV of DataRateBuffer.planningInside (90 % of the strictest rate, 40 % as buffer)",
            .hrdBuffer: "rate and size: vbv-maxrate and vbv-bufsize (kbit), signalled with hrd=1",
            .quality: "0...1 when no bit rate is set: CRF 51 * (1 - quality); 1 = lossless",
            .realTime: "Bool: preset veryfast + tune zerolatency (no frame delay)",
            .entropyMode: "cabac only (HEVC has no CAVLC)",
            .allowFrameReordering: "Bool: false = no B-frames",
            .maxKeyFrameInterval: "frames >= 0 (0 = x265's default 250)",
            .maxKeyFrameIntervalDuration: "seconds >= 0 (0 = no limit)",
            .expectedFrameRate: "frames per second in (0, 1000]",
            .allowTemporalCompression: "Bool: false = every frame IDR",
            .maxFrameDelayCount: "frames >= 0: limits look-ahead, B-frames and frame threads",
            .colorPrimaries: "H.273 code point, written to the VUI",
            .transferFunction: "H.273 code point, written to the VUI",
            .yCbCrMatrix: "H.273 code point, written to the VUI",
            .fullRange: "Bool, written to the VUI (video_full_range_flag)",
            .minAllowedFrameQP: "QP 0...51: qpmin, every mode and forced QPs",
            .maxAllowedFrameQP: "QP 0...51: qpmax, every mode and forced QPs",
            .maxConsecutiveBFrames: "0...16: bframes",
            .referenceBufferCount: "1...16: ref; b-pyramid off below 3",
            .spatialAdaptiveQP: "Bool: false = aq-mode 0",
            .suggestedLookAheadFrameCount: "0...250: rc-lookahead (B-frames cut below it; 0: no cutree)",
            .slicesPerPicture: "1...64: slices (at most one per CTU row)",
            .constantQuantizers: "I, P, B QPs 0...51: qp = P, ipratio and pbratio from the others",
            .masteringDisplayColorVolume: "master-display",
            .contentLightLevelInfo: "max-cll",
            .prioritizeEncodingSpeedOverQuality: "Bool: preset veryfast (no tune)"
        ]
    }
}

/// The 90 kHz timebase of the PTS handed to x265.
private let x265Timescale: Int32 = 90_000

/// One libx265 encoder. Used by one thread at a time (the session's owner).
final class X265Encoder: EncoderBackend {
    private let configuration: EncoderConfiguration
    private let api: UnsafePointer<x265_api>
    private var encoder: OpaquePointer?
    /// The parameters the encoder was opened with (x265_picture_init reads them); owned here.
    private var parameters: UnsafeMutablePointer<x265_param>?
    private(set) var formatDescription: FormatDescription?
    /// The encoder's PPS and SPS, parsed once per open: each picture's slice QP is read back from
    /// its first slice segment header (``sliceQuantizer(_:)``).
    private var parameterSets: (pps: H265PictureParameterSet, sps: H265SequenceParameterSet)?
    private(set) var frameDelay = 0
    private var frameRate = 30.0
    private var openedProperties: CompressionProperties?
    /// The last DTS output: a new encoder (after a flush or a rate change) extrapolates its first
    /// DTS before its first PTS, which may go back behind frames already output.
    private var lastDecodeTimeStamp: MediaTime?
    private var usesBFrames = false

    /// What travels with a frame through x265 (keyed by the token in x265_picture.userData).
    private struct Pending {
        var presentationTimeStamp: MediaTime
        var duration: MediaTime
        var frameReference: UInt64
        var quantizer: Double?
    }

    private var pending: [UInt: Pending] = [:]
    private var nextToken: UInt = 1
    /// Recent input PTS by their 90 kHz value, so an x265 DTS that is an input PTS maps back exactly.
    private var recentTimes: [Int64: MediaTime] = [:]
    private var recentOrder: [Int64] = []

    init(configuration: EncoderConfiguration, api: UnsafePointer<x265_api>) {
        self.configuration = configuration
        self.api = api
    }

    deinit { close() }

    private func close() {
        if let encoder { cx265_encoder_close(api, encoder) }
        encoder = nil
        if let parameters { cx265_param_free(api, parameters) }
        parameters = nil
        openedProperties = nil
    }

    // MARK: Parameters

    /// The properties x265 cannot honour, refused by name before an encoder is made (what HEVC
    /// itself rules out, CAVLC and H.264 profiles, is ``CompressionProperties/validate(codecType:)``'s).
    static func refuseUnsupported(_ properties: CompressionProperties) throws(VTError) {
        try properties.validate(codecType: .hevc)
        if properties.fieldCoding != .progressive {
            throw .invalidProperty(.fieldCoding, "the x265 backend codes progressive frames only")
        }
        if properties.intraRefresh {
            // x265's --intra-refresh writes no recovery point SEI (D.3.8): a decoder joining
            // the stream could not tell when its pictures are whole again.
            throw .invalidProperty(
                .intraRefresh, "x265's intra refresh writes no recovery point SEI; HEVC streams keep key frames")
        }
    }

    /// CRF for `quality` 0...1 (x264's mapping); nil is x265's default 28.
    static func crf(quality: Double?) -> Double {
        guard let quality else { return 28 }
        return min(51, max(0, 51 * (1 - quality)))
    }

    static func kilobits(_ bitsPerSecond: Int) -> Int { max(1, (bitsPerSecond + 500) / 1000) }

    /// The x265 profile (x265_profile_names) of a pixel format: A.3.2 Main, A.3.3 Main 10, A.3.5
    /// format range extensions (4:2:2 has no 8-bit profile: 8-bit 4:2:2 is Main 4:2:2 10).
    static func profileName(_ format: PixelFormat) -> String {
        let tenBit = format.bitDepth > 8
        switch format.chromaSubsampling {
        case .yuv422?: return "main422-10"
        case .yuv444?: return tenBit ? "main444-10" : "main444-8"
        default: return tenBit ? "main10" : "main"
        }
    }

    static func colorSpace(_ format: PixelFormat) -> (option: String, value: Int32) {
        switch format.chromaSubsampling {
        case .yuv422?: return ("i422", cx265_csp_i422())
        case .yuv444?: return ("i444", cx265_csp_i444())
        default: return ("i420", cx265_csp_i420())
        }
    }

    /// x265_param for `properties` (see the table at the top of this file); the caller frees it.
    private func makeParameters(_ properties: CompressionProperties, frameRate: Double) throws(VTError)
        -> UnsafeMutablePointer<x265_param>
    {
        try Self.refuseUnsupported(properties)
        guard let p = cx265_param_alloc(api) else {
            throw VTError(.encoderFailed, "x265 could not allocate its parameters", operation: "x265_param_alloc")
        }
        do {
            try fill(p, properties, frameRate: frameRate)
        } catch {
            cx265_param_free(api, p)
            throw error
        }
        return p
    }

    private func fill(_ p: UnsafeMutablePointer<x265_param>, _ properties: CompressionProperties, frameRate: Double)
        throws(VTError)
    {
        let preset = properties.realTime || properties.prioritizeEncodingSpeedOverQuality ? "veryfast" : "medium"
        let tune: String? = properties.realTime ? "zerolatency" : nil
        let status = cx265_param_default_preset(api, p, preset, tune)
        guard status == 0 else {
            throw VTError(
                .encoderFailed, "x265 does not know preset \(preset)", backendStatus: status,
                operation: "x265_param_default_preset")
        }
        func set(_ name: String, _ value: String, property: CompressionPropertyKey? = nil) throws(VTError) {
            let status = cx265_param_parse(api, p, name, value)
            guard status == 0 else {
                let message = "x265 refused option \(name)=\(value)"
                if let property { throw .invalidProperty(property, message) }
                throw VTError(.encoderFailed, message, backendStatus: status, operation: "x265_param_parse")
            }
        }
        let format = configuration.pixelFormat
        try set("log-level", "error")
        try set("input-res", "\(configuration.width)x\(configuration.height)")
        try set("input-csp", Self.colorSpace(format).option)
        try set("annexb", "0")
        try set("repeat-headers", "0")
        try set("info", "0")
        try set("aud", "0")
        try set("open-gop", "0")
        let fps = Self.fraction(frameRate)
        try set("fps", "\(fps.num)/\(fps.den)", property: .expectedFrameRate)
        if configuration.threadCount > 0 {
            try set("pools", "\(configuration.threadCount)")
            // Each frame thread beyond the first holds a frame: real time keeps zerolatency's one.
            if !properties.realTime { try set("frame-threads", "\(min(configuration.threadCount, 16))") }
        }

        // Rate control.
        if let qps = properties.constantQuantizers {
            // x265's constant QP is the P QP; I and B come from the step ratios, as in x264.
            let ratios = qps.stepRatios
            try set("qp", "\(qps.predicted)", property: .constantQuantizers)
            try set("ipratio", "\(ratios.intraToPredicted)", property: .constantQuantizers)
            try set("pbratio", "\(ratios.predictedToBidirectional)", property: .constantQuantizers)
        } else if let bitRate = properties.averageBitRate {
            try set("bitrate", "\(Self.kilobits(bitRate))", property: .averageBitRate)
        } else if properties.requestsLossless {
            try set("lossless", "1", property: .quality)
        } else {
            try set("crf", "\(Self.crf(quality: properties.quality))", property: .quality)
        }
        // QP bounds (x265 counts QPY, as the slice header: 7.4.7.1).
        if let low = properties.minAllowedFrameQP { try set("qpmin", "\(low)", property: .minAllowedFrameQP) }
        if let high = properties.maxAllowedFrameQP { try set("qpmax", "\(high)", property: .maxAllowedFrameQP) }
        if let buffer = properties.plannedVBV {
            let key: CompressionPropertyKey = properties.hrdBuffer != nil ? .hrdBuffer : .dataRateLimits
            try set("vbv-maxrate", "\(max(1, buffer.bitsPerSecond / 1000))", property: key)
            try set("vbv-bufsize", "\(max(1, buffer.bufferBits / 1000))", property: key)
            // An HRD buffer asked for by name is signalled in the VPS and SPS VUI (E.2.2).
            if properties.hrdBuffer != nil { try set("hrd", "1", property: key) }
        }

        // GOP.
        if let count = properties.maxConsecutiveBFrames {
            try set("bframes", "\(count)", property: .maxConsecutiveBFrames)
        }
        if !properties.usesBFrames { try set("bframes", "0", property: .allowFrameReordering) }
        if !properties.spatialAdaptiveQP { try set("aq-mode", "0", property: .spatialAdaptiveQP) }
        // x265's slices are independent slice segments split at CTU rows (at most one per row).
        if let count = properties.slicesPerPicture { try set("slices", "\(count)", property: .slicesPerPicture) }
        if let count = properties.suggestedLookAheadFrameCount, properties.maxFrameDelayCount == nil {
            // x265 wants a look-ahead longer than its B-frame run: B-frames are cut to fit, and
            // cutree, which needs a look-ahead, goes with the last of it.
            try set("rc-lookahead", "\(count)", property: .suggestedLookAheadFrameCount)
            if Int(p.pointee.bframes) >= count {
                try set("bframes", "\(max(0, count - 1))", property: .suggestedLookAheadFrameCount)
            }
            if count == 0 { try set("cutree", "0", property: .suggestedLookAheadFrameCount) }
        }
        if let count = properties.referenceBufferCount {
            // x265's ref (1...16) bounds the pictures each one refers to; the DPB it signals
            // also holds the B-pyramid's reference, which goes where the count is too small.
            try set("ref", "\(count)", property: .referenceBufferCount)
            if count < 3 { try set("b-pyramid", "0", property: .referenceBufferCount) }
        }
        var keyint = properties.maxKeyFrameInterval > 0 ? properties.maxKeyFrameInterval : Int(p.pointee.keyframeMax)
        if properties.maxKeyFrameIntervalDuration > 0 {
            keyint = min(keyint, max(1, Int(clampingTowardZero: properties.maxKeyFrameIntervalDuration * frameRate)))
        }
        if !properties.allowTemporalCompression { keyint = 1 }
        try set("keyint", "\(keyint)", property: .maxKeyFrameInterval)
        if Int(p.pointee.keyframeMin) > keyint { try set("min-keyint", "\(keyint)", property: .maxKeyFrameInterval) }
        if let count = properties.maxFrameDelayCount {
            // One frame thread, and a look-ahead and B-frame run that fit the count by
            // ``heldFrames``: below 4 frames no look-ahead fits, so none (and no cutree, which
            // needs it) and no B-frames; above, B-frame runs of up to a quarter of it.
            try set("frame-threads", "1", property: .maxFrameDelayCount)
            if count < Self.lookaheadOverhead + 1 {
                try set("bframes", "0", property: .maxFrameDelayCount)
                try set("rc-lookahead", "0", property: .maxFrameDelayCount)
                try set("cutree", "0", property: .maxFrameDelayCount)
            } else {
                let bframes = min(Int(p.pointee.bframes), (count - Self.lookaheadOverhead - 1) / 2)
                try set("bframes", "\(bframes)", property: .maxFrameDelayCount)
                try set(
                    "rc-lookahead", "\(count - Self.lookaheadOverhead - bframes)", property: .maxFrameDelayCount)
            }
        }

        // HDR SEI (D.2.28, D.2.35), in x265's own text: G, B, R, white point, luminance max, min.
        if let d = properties.masteringDisplayColorVolume {
            let text =
                "G(\(d.green.x),\(d.green.y))B(\(d.blue.x),\(d.blue.y))R(\(d.red.x),\(d.red.y))"
                + "WP(\(d.whitePoint.x),\(d.whitePoint.y))L(\(d.maxLuminance),\(d.minLuminance))"
            try set("master-display", text, property: .masteringDisplayColorVolume)
        }
        if let level = properties.contentLightLevelInfo {
            try set(
                "max-cll", "\(level.maxContentLightLevel),\(level.maxPictureAverageLightLevel)",
                property: .contentLightLevelInfo)
        }

        // VUI colour description (E.3.1).
        if let primaries = properties.colorPrimaries {
            try set("colorprim", "\(primaries.rawValue)", property: .colorPrimaries)
        }
        if let transfer = properties.transferFunction {
            try set("transfer", "\(transfer.rawValue)", property: .transferFunction)
        }
        if let matrix = properties.yCbCrMatrix { try set("colormatrix", "\(matrix.rawValue)", property: .yCbCrMatrix) }
        if let full = properties.fullRange { try set("range", full ? "full" : "limited", property: .fullRange) }

        // Profile: checks the settings against it (and lowers what it does not allow).
        let profile = Self.profileName(format)
        let applied = cx265_param_apply_profile(api, p, profile)
        guard applied == 0 else {
            throw VTError(
                .unsupportedFormat, "x265 cannot apply the \(profile) profile to '\(format.rawValue)' pictures",
                backendStatus: applied, operation: "x265_param_apply_profile")
        }
    }

    /// Frames x265's look-ahead holds beyond its depth and B-frame run (its pre-analysis queue).
    static let lookaheadOverhead = 3

    /// Frames libx265 3.5 takes before it outputs the first, measured (320x192, preset medium,
    /// frame threads 1-3): none without look-ahead and one frame thread; otherwise depth + B-frames
    /// + 3 with look-ahead (depth 1: 4; depth 2 with 1 B-frame: 6; 20 and 4: 27), and one more per
    /// further frame thread (two more for the second without look-ahead). x265 does not report it.
    static func heldFrames(lookahead: Int, bframes: Int, frameThreads: Int) -> Int {
        let threads = max(0, frameThreads - 1)
        guard lookahead > 0 else { return threads > 0 ? threads + 1 : 0 }
        return lookahead + bframes + lookaheadOverhead + threads
    }

    /// A frame rate as a fraction (29.97 and friends as n/1001, others in thousandths).
    private static func fraction(_ rate: Double) -> (num: Int, den: Int) {
        let rounded = (rate * 1001).rounded()
        if abs(rounded / 1001 - rate) < 1e-9 || abs((rate * 1000).rounded() - rate * 1000) > 1e-6 {
            return (max(1, Int(rounded)), 1001)
        }
        return (max(1, Int((rate * 1000).rounded())), 1000)
    }

    // MARK: EncoderBackend

    func prepare(properties: CompressionProperties, frameRate: Double) throws(VTError) {
        close()
        self.frameRate = frameRate
        let p = try makeParameters(properties, frameRate: frameRate)
        parameters = p
        guard let opened = cx265_encoder_open(api, p) else {
            close()
            throw VTError(
                .encoderFailed, "x265 refused the settings (\(configuration.width)x\(configuration.height))",
                operation: "x265_encoder_open")
        }
        encoder = opened
        openedProperties = properties
        // What the encoder settled on (x265 adjusts look-ahead and threads while opening).
        cx265_encoder_parameters(api, opened, p)
        usesBFrames = p.pointee.bframes > 0
        frameDelay = Self.heldFrames(
            lookahead: Int(p.pointee.lookaheadDepth), bframes: Int(p.pointee.bframes),
            frameThreads: Int(p.pointee.frameNumThreads))
        if let count = properties.maxFrameDelayCount, frameDelay > count {
            close()
            throw .invalidProperty(
                .maxFrameDelayCount,
                "x265 needs \(frameDelay) frames of delay with these settings, more than \(count); raise the count")
        }
        let description = try headers(opened)
        formatDescription = description
        parameterSets = Self.parsedParameterSets(description)
    }

    private static func parsedParameterSets(_ description: FormatDescription)
        -> (pps: H265PictureParameterSet, sps: H265SequenceParameterSet)?
    {
        guard let ppsBytes = description.hevcPictureParameterSets.first,
            let spsBytes = description.hevcSequenceParameterSets.first,
            let pps = try? H265PictureParameterSet.parse(nalUnit: ppsBytes),
            let sps = try? H265SequenceParameterSet.parse(nalUnit: spsBytes)
        else { return nil }
        return (pps, sps)
    }

    /// The picture's rate-control QP: SliceQpY of its first slice segment (H.265 7-54), where
    /// x265 codes the frame QP its rate control chose (or the forced one); adaptive quantization
    /// and cutree move each CU from there with cu_qp_delta (7.4.9.14). This, not x265's
    /// frame_stats.qp (the mean after those offsets), is what a forced QP reproduces: forcing a
    /// first pass's mean QP added the offsets twice and coded the 720p clip 25 % over its target.
    /// nil when the header does not parse (then the mean is used).
    private func sliceQuantizer(_ nalUnit: UnsafeRawBufferPointer) -> Double? {
        guard let (pps, sps) = parameterSets,
            let header = try? H265SliceSegmentHeader.parse(
                nalUnit: nalUnit, pictureParameterSet: { $0 == pps.picParameterSetID ? pps : nil },
                sequenceParameterSet: { $0 == sps.seqParameterSetID ? sps : nil }, extent: .throughQuantizer)
        else { return nil }
        return Double(header.sliceQpY)
    }

    /// The VPS, SPS and PPS as an `hvc1` format description (hvcC).
    private func headers(_ encoder: OpaquePointer) throws(VTError) -> FormatDescription {
        var nals: UnsafeMutablePointer<x265_nal>?
        var count: UInt32 = 0
        let status = cx265_encoder_headers(api, encoder, &nals, &count)
        guard status >= 0, let nals else {
            close()
            throw VTError(
                .encoderFailed, "x265 could not write the VPS/SPS/PPS", backendStatus: status,
                operation: "x265_encoder_headers")
        }
        var sets: [[UInt8]] = []
        for index in 0..<Int(count) {
            let nal = nals[index]
            // 32 VPS, 33 SPS, 34 PPS (Table 7-1); x265 may add SEI, which the record does not hold.
            guard (32...34).contains(nal.type), let payload = nal.payload, nal.sizeBytes > 4 else { continue }
            // Drop the 4-byte length (annexb 0): the hvcC record holds bare NAL units.
            sets.append(Array(UnsafeBufferPointer(start: payload + 4, count: Int(nal.sizeBytes) - 4)))
        }
        do {
            return try FormatDescription(hevcParameterSets: sets)
        } catch {
            close()
            throw VTError(
                .encoderFailed, "x265's VPS/SPS/PPS do not make an HEVC format description: \(error)",
                operation: "x265_encoder_headers")
        }
    }

    func encode(_ request: EncoderFrameRequest) throws(VTError) -> [EncodedFrame] {
        guard let encoder, let parameters else {
            throw VTError(.encoderFailed, "the x265 encoder is not open", operation: "x265_encoder_encode")
        }
        if pending.isEmpty, let last = lastDecodeTimeStamp, request.presentationTimeStamp < last {
            // Time went back (a multi-pass range, a seek): a new timeline.
            lastDecodeTimeStamp = nil
        }
        var picture = x265_picture()
        cx265_picture_init(api, parameters, &picture)
        let image = request.image
        picture.colorSpace = Self.colorSpace(configuration.pixelFormat).value
        picture.bitDepth = Int32(max(8, configuration.pixelFormat.bitDepth))
        for (index, plane) in image.planes.enumerated() {
            cx265_picture_set_plane(&picture, Int32(index), plane.baseAddress, Int32(plane.bytesPerRow))
        }
        let pts90k = request.presentationTimeStamp.converted(to: x265Timescale).value
        picture.pts = pts90k
        picture.sliceType = request.frameType == .idr ? cx265_type_idr() : cx265_type_auto()
        if let quantizer = request.quantizer {
            // Multi-pass rate control chose this frame's QP: x265 forces a whole slice QP
            // (forceqp is QP + 1, 0 = automatic); the fraction is rounded.
            picture.forceqp = Int32(min(max(quantizer, 0), 51).rounded()) + 1
        }
        let token = nextToken
        nextToken &+= 1
        picture.userData = UnsafeMutableRawPointer(bitPattern: token)
        pending[token] = Pending(
            presentationTimeStamp: request.presentationTimeStamp, duration: request.duration,
            frameReference: request.frameReference, quantizer: request.quantizer.map { min(max($0, 0), 51) })
        remember(pts90k, request.presentationTimeStamp)
        // A/53 captions as user_data_registered_itu_t_t35 (payloadType 4, H.265 D.2.6) in this
        // picture's access unit: x265 copies userSEI into its frame during the call, so the
        // payloads are lent from one buffer for the call only.
        let captionPayloads = request.closedCaptions?.userDataRegisteredPayloads ?? []
        var captionBytes = captionPayloads.flatMap { $0 }
        // The planes are read inside this call only (x265 copies them into its own frame).
        let frame = try withExtendedLifetime(image) { () throws(VTError) -> EncodedFrame? in
            guard !captionPayloads.isEmpty else { return try encodeOnce(encoder, input: &picture) }
            return try captionBytes.withUnsafeMutableBufferPointer { bytes throws(VTError) -> EncodedFrame? in
                var offset = 0
                var messages = captionPayloads.map { payload -> x265_sei_payload in
                    defer { offset += payload.count }
                    return x265_sei_payload(
                        payloadSize: Int32(payload.count), payloadType: USER_DATA_REGISTERED_ITU_T_T35,
                        payload: bytes.baseAddress.map { $0 + offset })
                }
                return try messages.withUnsafeMutableBufferPointer { list throws(VTError) -> EncodedFrame? in
                    picture.userSEI = x265_sei(numPayloads: Int32(list.count), payloads: list.baseAddress)
                    defer { picture.userSEI = x265_sei() }
                    return try encodeOnce(encoder, input: &picture)
                }
            }
        }
        return frame.map { [$0] } ?? []
    }

    func flush() throws(VTError) -> [EncodedFrame] {
        guard let encoder else { return [] }
        var frames: [EncodedFrame] = []
        // x265 returns 0 once nothing is left; bounded in case a broken library never does.
        var attempts = 0
        while attempts < 4096, let frame = try encodeOnce(encoder, input: nil) {
            frames.append(frame)
            attempts += 1
        }
        // A flushed x265 encoder takes no more pictures: the session prepares a fresh one.
        close()
        pending.removeAll()
        return frames
    }

    func reconfigureRateControl(_ properties: CompressionProperties) throws(VTError) -> [EncodedFrame] {
        guard encoder != nil else { return [] }
        // x265_encoder_reconfig cannot switch ABR and CRF, nor turn VBV on or off; a restart
        // covers every change the same way: the held frames go out and a new encoder starts at
        // the next frame with an IDR picture (HEVC has no idr_pic_id to keep apart, 7.4.7.1).
        let frames = try flush()
        try prepare(properties: properties, frameRate: frameRate)
        return frames
    }

    // MARK: Output

    private func remember(_ pts90k: Int64, _ time: MediaTime) {
        if recentTimes.updateValue(time, forKey: pts90k) == nil { recentOrder.append(pts90k) }
        if recentOrder.count > 512 {
            for key in recentOrder.prefix(256) { recentTimes[key] = nil }
            recentOrder.removeFirst(256)
        }
    }

    private static func analysisFrameType(_ sliceType: Int32, isIDR: Bool) -> AnalysisFrameType {
        if isIDR { return .idr }
        switch sliceType {
        case cx265_type_idr(), cx265_type_i(): return .intra
        case cx265_type_p(): return .predicted
        default: return .bidirectional
        }
    }

    /// One x265_encoder_encode call (`input` nil = drain one delayed frame).
    private func encodeOnce(_ encoder: OpaquePointer, input: UnsafeMutablePointer<x265_picture>?) throws(VTError)
        -> EncodedFrame?
    {
        var nals: UnsafeMutablePointer<x265_nal>?
        var count: UInt32 = 0
        var output = x265_picture()
        let status = cx265_encoder_encode(api, encoder, &nals, &count, input, &output)
        guard status >= 0 else {
            throw VTError(
                .encoderFailed, "x265 failed to encode a frame", backendStatus: status,
                operation: "x265_encoder_encode")
        }
        guard status > 0, count > 0, let nals else { return nil }
        let token = UInt(bitPattern: output.userData)
        let info =
            pending.removeValue(forKey: token)
            ?? Pending(
                presentationTimeStamp: MediaTime(value: output.pts, timescale: x265Timescale), duration: .invalid,
                frameReference: 0, quantizer: nil)
        // Copied: x265 reuses its output buffer on the next call, and the sample outlives it.
        var data: [UInt8] = []
        var isIRAP = false
        var referenced = false
        var sliceQuantizer: Double?
        for index in 0..<Int(count) {
            let nal = nals[index]
            guard let payload = nal.payload, nal.sizeBytes > 4 else { continue }
            switch nal.type {
            case 32...35:
                continue // VPS/SPS/PPS live in the format description only; no AUD
            case 0...31:
                // Table 7-1: 16...23 are IRAP pictures; an even type up to 14 is a sub-layer
                // non-reference picture (7.4.2.2), every other VCL type may be referenced.
                if (16...23).contains(nal.type) { isIRAP = true }
                if nal.type > 14 || nal.type % 2 == 1 { referenced = true }
                if sliceQuantizer == nil {
                    // After the 4-byte length (annexb 0).
                    sliceQuantizer = self.sliceQuantizer(
                        UnsafeRawBufferPointer(start: payload + 4, count: Int(nal.sizeBytes) - 4))
                }
            default:
                break
            }
            data.append(contentsOf: UnsafeBufferPointer(start: payload, count: Int(nal.sizeBytes)))
        }
        let isIntra = isIRAP || output.sliceType == cx265_type_i() || output.sliceType == cx265_type_idr()
        var decodeTimeStamp = recentTimes[output.dts] ?? MediaTime(value: output.dts, timescale: x265Timescale)
        if let last = lastDecodeTimeStamp, decodeTimeStamp <= last {
            // Keep DTS strictly increasing across encoder restarts (one 90 kHz tick after the last).
            decodeTimeStamp =
                last.converted(to: x265Timescale, rounding: .towardPositiveInfinity)
                + MediaTime(value: 1, timescale: x265Timescale)
        }
        decodeTimeStamp = min(decodeTimeStamp, info.presentationTimeStamp)
        lastDecodeTimeStamp = decodeTimeStamp
        let timing = SampleTimingInfo(
            duration: info.duration, presentationTimeStamp: info.presentationTimeStamp,
            decodeTimeStamp: decodeTimeStamp)
        let attachments = SampleAttachments(
            notSync: !isIRAP, dependsOnOthers: !isIntra, isDependedOnByOthers: referenced,
            earlierDisplayTimesAllowed: usesBFrames)
        return .accessUnit(
            data, formatDescription: formatDescription, timing: timing, attachments: attachments,
            frameReference: info.frameReference,
            analysis: EncodedFrameAnalysis(
                frameType: Self.analysisFrameType(output.sliceType, isIDR: isIRAP),
                quantizer: sliceQuantizer ?? info.quantizer ?? min(51, max(0, output.frameData.qp))),
            encoderName: "x265")
    }
}
