// The software H.264 encoder: libx264 behind SwiftVT's EncoderBackend.
//
// How CompressionProperties map to x264 (x264_param_t):
//
// | property                     | x264                                                                     |
// |------------------------------|--------------------------------------------------------------------------|
// | averageBitRate               | rc.i_rc_method = X264_RC_ABR, rc.i_bitrate = bits/s / 1000 (kbit/s),      |
// |                              | x264's defaults otherwise (measured within 0.5 % on 300 frames of 720p,   |
// |                              | see Tests/SwiftVTCompressionTests/BitRateTests.swift). A change while     |
// |                              | encoding drains and reopens the encoder (x264 cannot reconfig ABR), as   |
// |                              | does setting or clearing it (ABR <-> CRF) or the limits (VBV on <-> off) |
// | quality (no bit rate)        | rc.i_rc_method = X264_RC_CRF, rc.f_rf_constant = 51 * (1 - quality)       |
// |                              | (1 -> CRF 0, lossless-ish; 0.55 -> CRF 23, x264's default; 0 -> CRF 51)  |
// | neither                      | CRF 23 (x264's default)                                                  |
// | dataRateLimits               | VBV: rc.i_vbv_max_bitrate, rc.i_vbv_buffer_size (kbit) of the            |
// |                              | DataRateBuffer.planningInside (CompressionTypes.swift): 90 % of the      |
// |                              | strictest limit's rate, 40 % of it as buffer (measured on the 720p clip)|
// | realTime                     | preset "veryfast" + tune "zerolatency" (no look-ahead, no B-frames,      |
// |                              | sliced threads); otherwise preset "medium"                               |
// | prioritizeEncodingSpeed...   | preset "veryfast" (no tune)                                              |
// | pixel format                 | i_csp I420/NV12/I422/I444, with X264_CSP_HIGH_DEPTH and i_bitdepth 10    |
// |                              | for the 10-bit planar formats (libx264-164 codes both); x264 writes      |
// |                              | profile_idc from it: High 10, High 4:2:2, High 4:4:4 Predictive          |
// | profileLevel                 | x264_param_apply_profile("baseline"/"main"/"high"/"high10"/"high422"/    |
// |                              | "high444"), i_level_idc (-1 =                                            |
// |                              | auto); constrained-baseline = "baseline", and constraint_set1_flag is    |
// |                              | checked (x264 writes it for baseline: no FMO/ASO) and set in the SPS     |
// | entropyMode                  | b_cabac (nil = CABAC unless the profile is baseline)                     |
// | allowFrameReordering = false | i_bframe = 0                                                             |
// | maxKeyFrameInterval N        | i_keyint_max = N (the session also forces an IDR after N frames)          |
// | maxKeyFrameIntervalDuration  | i_keyint_max <= duration * frame rate; the session forces the IDR in time |
// | (neither)                    | x264's default i_keyint_max 250                                          |
// | expectedFrameRate            | i_fps_num/i_fps_den, b_vfr_input = 0 (VUI timing = the rate); without    |
// |                              | it the first frame's duration, b_vfr_input = 1 with i_timebase 1/90000   |
// | allowTemporalCompression=false | i_keyint_max = 1, i_bframe = 0 (every frame IDR)                       |
// | maxFrameDelayCount n         | i_sync_lookahead = 0, b_sliced_threads = 1 (no frame-thread delay),       |
// |                              | rc.i_lookahead = n, i_bframe <= n; checked: maximum delayed frames <= n  |
// | threadCount                  | i_threads (0 = X264_THREADS_AUTO)                                         |
// | colorPrimaries ...           | vui.i_colorprim, vui.i_transfer, vui.i_colmatrix (H.273 code points)      |
// | fullRange                    | vui.b_fullrange (nil: from the pixel format, '420f' = full)               |
// | fieldCoding                  | b_interlaced = 1, b_tff = top field first (interlaced only)              |
// | min/maxAllowedFrameQP        | rc.i_qp_min, rc.i_qp_max (+ QpBdOffsetY at 10 bits: x264 counts QP'Y)    |
// | calculatesMeanSquaredError   | analyse.b_psnr; pic_out.prop.f_psnr[0] (luma) as the frame's MSE         |
// | maxConsecutiveBFrames        | i_bframe                                                                 |
// | referenceBufferCount         | i_frame_reference (B-pyramid off below 3)                                |
// | spatialAdaptiveQP = false    | rc.i_aq_mode = X264_AQ_NONE                                              |
// | suggestedLookAheadFrameCount | rc.i_lookahead (0: no macroblock tree); maxFrameDelayCount wins          |
// | slicesPerPicture             | i_slice_count                                                            |
// | constantQuantizers           | X264_RC_CQP: i_qp_constant P, f_ip_factor/f_pb_factor from I and B       |
// | masteringDisplayColorVolume  | mastering_display (SEI with each IDR picture)                            |
// | contentLightLevelInfo        | content_light_level (SEI with each IDR picture)                          |
//
// Output: b_annexb = 0, so x264 writes each NAL unit with a 4-byte big-endian length instead of a
// start code: the payload is AVCC as it stands. b_repeat_headers = 0: the SPS/PPS come from
// x264_encoder_headers into the format description only.
//
// Input pictures are not copied: x264_picture_t's planes point at the PixelBuffer's planes (with
// their strides); x264 copies the picture into its own frame inside x264_encoder_encode, so the
// PixelBuffer only has to live for that call.
//
// Time stamps: PTS go to x264 as i_pts in a 1/90000 timebase; the original MediaTime PTS and
// duration travel with the frame (x264_picture_t.opaque holds a token) and are put back on the
// output unchanged. DTS is x264's i_dts: with B-frames x264 makes DTS the PTS of earlier frames
// and, for the first frames, extrapolates before the first PTS (DTS of the first frame = first
// PTS - reorder delay * frame duration), so DTS <= PTS and DTS is monotonic, as VideoToolbox does;
// such DTS may be negative when the first PTS is 0 (a muxer or GStreamer element shifts them).
// When an x264 DTS equals the 90 kHz value of an input PTS, that PTS's exact MediaTime is used.
import CX264
import H264
import MediaCore
import NALBitstream
import SwiftVT

/// The software H.264 encoder: libx264 (4:2:0 from I420 or NV12; 4:2:2 and 4:4:4 planar; each
/// planar format also with 10 bits, as libx264-164 codes 8 and 10 bits in one library).
public struct X264EncoderFactory: EncoderBackendFactory {
    public init() {}

    public var name: String { "x264 (software)" }
    public var isHardware: Bool { false }

    /// The formats x264enc takes that x264 codes (not YV12, which SwiftVT has no format for):
    /// 4:2:0 is High (or lower), 10-bit 4:2:0 High 10 (A.2.5), 4:2:2 High 4:2:2 (A.2.6), 4:4:4
    /// High 4:4:4 Predictive (A.2.7); x264 writes the profile_idc from the format.
    static let pixelFormats: [PixelFormat] = [
        .i420, .nv12VideoRange, .nv12FullRange, .i422, .i444, .i420TenBit, .i422TenBit, .i444TenBit
    ]

    /// x264's colour space (X264_CSP_*) for one of ``pixelFormats``: 10-bit samples are 16-bit
    /// words (X264_CSP_HIGH_DEPTH, with i_bitdepth 10).
    static func colorSpace(_ format: PixelFormat) -> Int32 {
        let base: Int32
        switch format.chromaSubsampling {
        case .yuv422?: base = cx264_csp_i422()
        case .yuv444?: base = cx264_csp_i444()
        default: base = format == .i420 || format == .i420TenBit ? cx264_csp_i420() : cx264_csp_nv12()
        }
        return format.bitDepth > 8 ? base | cx264_csp_high_depth() : base
    }

    public func unavailableReason(
        width: Int, height: Int, pixelFormat: PixelFormat, properties: CompressionProperties
    ) -> VTError.Reason? {
        guard Self.pixelFormats.contains(pixelFormat) else {
            return .inputPixelFormatNotEncoded(
                pixelFormat, encodes: "encodes NV12 and planar 4:2:0, 4:2:2 and 4:4:4 pictures of 8 or 10 bits")
        }
        if let problem = cx264_load() {
            return .other("libx264 could not be loaded (\(String(cString: problem))): install libx264-164")
        }
        return nil
    }

    public func makeBackend(configuration: EncoderConfiguration) throws(VTError) -> any EncoderBackend {
        if let problem = cx264_load() {
            throw VTError(
                .unsupportedFormat, "libx264 could not be loaded (\(String(cString: problem))): install libx264-164")
        }
        return X264Encoder(configuration: configuration)
    }

    public var supportedProperties: [CompressionPropertyKey: String] {
        [
            .averageBitRate: "bits per second, > 0: ABR (within a few percent over a clip)",
            .dataRateLimits:
                "[(bytes, seconds)], each > 0: VBV of DataRateBuffer.planningInside (90 % of the strictest rate, 40 % as buffer)",
            .hrdBuffer: "rate and size: vbv_max_bitrate and vbv_buffer_size (kbit), signalled as NAL HRD (VBR)",
            .quality: "0...1 when no bit rate is set: CRF 51 * (1 - quality)",
            .realTime: "Bool: preset veryfast + tune zerolatency (no frame delay)",
            .profileLevel:
                "baseline, constrained-baseline, main, high, high-10, high-4:2:2, high-4:4:4 (as the pixel format allows); level 1...6.2 or automatic",
            .entropyMode: "cavlc, cabac (not in baseline profiles)",
            .allowFrameReordering: "Bool: false = no B-frames",
            .maxKeyFrameInterval: "frames >= 0 (0 = x264's default 250)",
            .maxKeyFrameIntervalDuration: "seconds >= 0 (0 = no limit)",
            .expectedFrameRate: "frames per second in (0, 1000]",
            .allowTemporalCompression: "Bool: false = every frame IDR",
            .maxFrameDelayCount: "frames >= 0: limits look-ahead, B-frames and frame threads",
            .fieldCoding:
                "progressive, or interlaced (field/MBAFF coding, b_interlaced) top or bottom field first (b_tff)",
            .colorPrimaries: "H.273 code point, written to the VUI",
            .transferFunction: "H.273 code point, written to the VUI",
            .yCbCrMatrix: "H.273 code point, written to the VUI",
            .fullRange: "Bool, written to the VUI (video_full_range_flag)",
            .minAllowedFrameQP: "QP 0...51: rc.i_qp_min (+ 12 at 10 bits, QP'Y), every mode and forced QPs",
            .maxAllowedFrameQP: "QP 0...51: rc.i_qp_max (+ 12 at 10 bits, QP'Y), every mode and forced QPs",
            .calculatesMeanSquaredError: "Bool: analyse.b_psnr, each frame's luma PSNR as MSE",
            .maxConsecutiveBFrames: "0...16: i_bframe (x264's adaptive B-frame decision places up to that many)",
            .referenceBufferCount: "1...16: i_frame_reference; B-pyramid off below 3 (max_num_ref_frames <= count)",
            .spatialAdaptiveQP: "Bool: false = rc.i_aq_mode X264_AQ_NONE",
            .suggestedLookAheadFrameCount: "0...250: rc.i_lookahead (0 also turns the macroblock tree off)",
            .slicesPerPicture: "1...64: i_slice_count (x264 caps it at the macroblock rows)",
            .constantQuantizers:
                "I, P, B QPs 0...51: X264_RC_CQP, i_qp_constant = P, f_ip_factor and f_pb_factor from the others",
            .masteringDisplayColorVolume: "mastering_display: the SEI with every IDR picture",
            .contentLightLevelInfo: "content_light_level: the SEI with every IDR picture",
            .prioritizeEncodingSpeedOverQuality: "Bool: preset veryfast (without realtime's zerolatency tune)",
            .intraRefresh: "Bool: b_intra_refresh over i_keyint_max frames, recovery point SEI (x264 keeps 1 reference)"
        ]
    }
}

/// The 90 kHz timebase of the PTS handed to x264.
private let x264Timescale: Int32 = 90_000

/// One libx264 encoder. Used by one thread at a time (the session's owner).
final class X264Encoder: EncoderBackend {
    private let configuration: EncoderConfiguration
    private var encoder: OpaquePointer?
    /// The parameters the encoder was opened with, as x264 completed them (x264_encoder_parameters:
    /// what it codes with; for reconfig, and read back by the tests).
    private(set) var parameters = x264_param_t()
    /// What x264 opened with for adaptive quantization and look-ahead, as x264_encoder_parameters
    /// says (read back by the tests): spatial AQ is on when aq-mode is set with a strength (x264
    /// turns aq-mode 0 into 1 at strength 0 under the macroblock tree, which needs its offsets).
    var openedAdaptiveQuantization: (spatial: Bool, lookahead: Int, macroblockTree: Bool) {
        (
            parameters.rc.i_aq_mode != 0 && parameters.rc.f_aq_strength > 0, Int(parameters.rc.i_lookahead),
            parameters.rc.b_mb_tree != 0
        )
    }
    private(set) var formatDescription: FormatDescription?
    private(set) var frameDelay = 0
    private var frameRate = 30.0
    /// How the open encoder controls its rate: what x264_encoder_reconfig cannot change.
    private var openedRateControl: RateControlShape?

    /// What x264_encoder_reconfig cannot change, and silently keeps (encoder.c,
    /// encoder_try_reconfig; ratecontrol.c): the method (ABR or CRF); whether VBV is on ("VBV
    /// can't be turned on if it wasn't on to begin with", and turning it off is ignored too);
    /// under ABR the target ("We don't support changing the ABR bitrate right now") and the VBV
    /// (with VBV at or below the target, CBR, x264 pins the VBV rate to the old target). A
    /// change of any of these reopens the encoder instead; the rest (CRF, VBV under CRF) is
    /// reconfigured in place.
    private struct RateControlShape: Equatable {
        var abrBitRate: Int?
        /// The limits under ABR; empty under CRF, where reconfig changes them.
        var abrLimits: [DataRateLimit]
        var vbv: Bool
        var constantQuantizers: FrameTypeQuantizers?

        init(_ properties: CompressionProperties) {
            constantQuantizers = properties.constantQuantizers
            abrBitRate = properties.averageBitRate
            abrLimits = properties.averageBitRate == nil ? [] : properties.dataRateLimits
            vbv = properties.plannedVBV != nil
        }
    }

    static func kilobits(_ bitsPerSecond: Int) -> Int32 { Int32(clamping: max(1, (bitsPerSecond + 500) / 1000)) }
    /// The last DTS output: a new encoder (after a flush or a bit-rate change) extrapolates its
    /// first DTS before its first PTS, which may go back behind frames already output.
    private var lastDecodeTimeStamp: MediaTime?
    /// The last access unit output when it was an IDR picture (nil after any other picture).
    private var lastOutputIDR: [UInt8]?
    /// Set when a restart follows an IDR picture: that picture and the parameter sets it was
    /// coded under, for the new encoder's first IDR picture to take another idr_pic_id.
    private var restartAfterIDR: (accessUnit: [UInt8], parameterSets: [[UInt8]])?

    /// What travels with a frame through x264 (keyed by the token in x264_picture_t.opaque).
    private struct Pending {
        var presentationTimeStamp: MediaTime
        var duration: MediaTime
        var frameReference: UInt64
        /// The fractional QP asked for; x264 reports only the whole part (i_qpplus1).
        var quantizer: Double?
    }

    private var pending: [UInt: Pending] = [:]
    /// x264's frame QP (its rate control's, before adaptive quantization) of each frame it has
    /// started and not yet output, in coding order. x264 reports a frame's QP only in the
    /// x264_encoder_encode call that *starts* it (pic_out.i_qpplus1 is set at frame setup, not
    /// when the frame is output): with frame threads that call returns an earlier frame, and
    /// the calls that drain the last frames start none and report 0. Frames start and come out
    /// in the same (coding) order, so the QPs queue here until their frame comes out.
    private var startedFrameQuantizers: [Int32] = []
    private var nextToken: UInt = 1
    /// Recent input PTS by their 90 kHz value, so an x264 DTS that is an input PTS maps back exactly.
    private var recentTimes: [Int64: MediaTime] = [:]
    private var recentOrder: [Int64] = []

    init(configuration: EncoderConfiguration) {
        self.configuration = configuration
    }

    deinit {
        close()
        for offsets in quantizerOffsets.values { offsets.deallocate() }
    }

    private func close() {
        if let encoder { x264_encoder_close(encoder) }
        encoder = nil
        openedRateControl = nil
        startedFrameQuantizers = []
    }

    /// Fractional QPs are applied in steps of 1/offsetSteps.
    static let offsetSteps = 16
    /// One macroblock-offset array per fractional step, made on first use and kept for the
    /// backend's life (x264 reads the array inside x264_encoder_encode; sharing one per step
    /// avoids an allocation per frame).
    private var quantizerOffsets: [Int: UnsafeMutableBufferPointer<Float>] = [:]

    /// x264's quant_offsets holds one value per macroblock (16x16, 6.3), in raster order.
    private func uniformQuantizerOffsets(step: Int) -> UnsafeMutablePointer<Float>? {
        if let existing = quantizerOffsets[step] { return existing.baseAddress }
        let macroblocks = ((configuration.width + 15) / 16) * ((configuration.height + 15) / 16)
        let offsets = UnsafeMutableBufferPointer<Float>.allocate(capacity: macroblocks)
        offsets.initialize(repeating: Float(step) / Float(Self.offsetSteps))
        quantizerOffsets[step] = offsets
        return offsets.baseAddress
    }

    // MARK: Parameters

    /// x264_param_t for `properties` (see the table at the top of this file).
    static func makeParameters(
        _ properties: CompressionProperties, configuration: EncoderConfiguration, frameRate: Double
    ) throws(VTError) -> x264_param_t {
        var p = x264_param_t()
        let preset = properties.realTime || properties.prioritizeEncodingSpeedOverQuality ? "veryfast" : "medium"
        let status =
            properties.realTime
            ? x264_param_default_preset(&p, preset, "zerolatency") : x264_param_default_preset(&p, preset, nil)
        guard status == 0 else {
            throw VTError(
                .encoderFailed, "x264 does not know preset \(preset)", backendStatus: status,
                operation: "x264_param_default_preset")
        }
        p.i_log_level = X264_LOG_ERROR
        p.i_width = Int32(configuration.width)
        p.i_height = Int32(configuration.height)
        p.i_csp = X264EncoderFactory.colorSpace(configuration.pixelFormat)
        p.i_bitdepth = Int32(max(8, configuration.pixelFormat.bitDepth))
        p.i_threads = Int32(clamping: configuration.threadCount)
        p.b_annexb = 0
        p.b_repeat_headers = 0
        p.b_aud = 0
        // A declared frame rate (the caps' framerate) is a constant-rate stream: x264 then
        // writes the VUI timing from it (E.2.1: time_scale / (2 * num_units_in_tick) = the
        // frame rate, fixed_frame_rate_flag 1), which players and h264parse read as the rate;
        // x264's timebase becomes 1/fps and the 90 kHz i_pts only orders frames and gives DTS.
        // Without one, variable frame rate input: rate control follows the real PTS and the
        // VUI carries the 1/90000 timebase with fixed_frame_rate_flag 0. x264 then holds one
        // more frame (to know each frame's duration), so not when the delay must be minimal.
        let variableRate =
            properties.expectedFrameRate == nil && !properties.realTime && properties.maxFrameDelayCount == nil
        p.b_vfr_input = variableRate ? 1 : 0
        p.i_timebase_num = 1
        p.i_timebase_den = UInt32(x264Timescale)
        let fps = fraction(frameRate)
        p.i_fps_num = fps.num
        p.i_fps_den = fps.den

        // Rate control.
        if let qps = properties.constantQuantizers {
            // x264 derives the I and B QPs from the P QP and the step ratios (ratecontrol.c:
            // qp_constant[I] = P - 6 log2(ipratio) + 0.5, rounded down; B likewise), which give
            // these back; referenced B pictures get the mean of the B and P QPs.
            p.rc.i_rc_method = X264_RC_CQP
            p.rc.i_qp_constant = Int32(qps.predicted)
            let ratios = qps.stepRatios
            p.rc.f_ip_factor = Float(ratios.intraToPredicted)
            p.rc.f_pb_factor = Float(ratios.predictedToBidirectional)
        } else if let bitRate = properties.averageBitRate {
            p.rc.i_rc_method = X264_RC_ABR
            p.rc.i_bitrate = kilobits(bitRate)
        } else {
            p.rc.i_rc_method = X264_RC_CRF
            p.rc.f_rf_constant = Float(crf(quality: properties.quality))
        }
        applyDataRateLimits(properties, to: &p)

        // GOP.
        if let count = properties.maxConsecutiveBFrames { p.i_bframe = Int32(count) }
        if !properties.usesBFrames { p.i_bframe = 0 }
        if let count = properties.referenceBufferCount {
            // i_frame_reference bounds P references; x264 writes max_num_ref_frames as that plus
            // what B-pyramid and B references need, so the pyramid goes where it would exceed the count.
            p.i_frame_reference = Int32(count)
            if count < 3 { p.i_bframe_pyramid = X264_B_PYRAMID_NONE }
        }
        var keyint = properties.maxKeyFrameInterval > 0 ? properties.maxKeyFrameInterval : Int(p.i_keyint_max)
        if properties.maxKeyFrameIntervalDuration > 0 {
            keyint = min(keyint, max(1, Int(clampingTowardZero: properties.maxKeyFrameIntervalDuration * frameRate)))
        }
        if !properties.allowTemporalCompression { keyint = 1 }
        p.i_keyint_max = Int32(clamping: keyint)
        p.i_keyint_min = min(p.i_keyint_min, max(1, p.i_keyint_max / 2))
        if p.i_keyint_max >= 4 {
            // No scene-cut IDR right after another IDR (x264's automatic minimum, keyint/10,
            // is 1 below 20 frames): two IDR access units in a row must differ in idr_pic_id
            // (7.4.3), which a multi-pass range spliced in by a fresh encoder cannot promise.
            let automatic = p.i_keyint_min > 0 ? p.i_keyint_min : min(p.i_keyint_max / 10, 25)
            p.i_keyint_min = max(automatic, 2)
        }
        if properties.intraRefresh { p.b_intra_refresh = 1 }
        if let count = properties.maxFrameDelayCount {
            p.i_sync_lookahead = 0
            p.b_sliced_threads = 1
            p.rc.i_lookahead = Int32(clamping: count)
            p.i_bframe = min(p.i_bframe, Int32(clamping: count))
            if count == 0 { p.rc.b_mb_tree = 0 }
        }

        // Interlaced input: x264 codes field pairs adaptively (MBAFF or field pictures) and
        // writes the field order in pic_struct SEI (D.2.3), as x264enc does.
        if properties.fieldCoding != .progressive {
            p.b_interlaced = 1
            p.b_tff = properties.fieldCoding == .topFieldFirst ? 1 : 0
        }

        // Entropy coding and profile.
        if let mode = properties.entropyMode { p.b_cabac = mode == .cabac ? 1 : 0 }
        if let profileLevel = properties.profileLevel {
            let name: String
            switch profileLevel.profile {
            case .baseline, .constrainedBaseline: name = "baseline"
            case .main: name = "main"
            case .high: name = "high"
            case .high10: name = "high10"
            case .high422: name = "high422"
            case .high444Predictive: name = "high444"
            }
            let status = x264_param_apply_profile(&p, name)
            guard status == 0 else {
                throw VTError(
                    .invalidProperty,
                    "profileLevel: x264 cannot apply the \(profileLevel.profile.rawValue) profile to these settings",
                    backendStatus: status, operation: "x264_param_apply_profile", property: .profileLevel)
            }
            p.i_level_idc = Int32(profileLevel.levelIdc ?? -1)
        }

        if properties.requestsLossless, p.rc.i_rc_method == X264_RC_CRF {
            // x264 codes QP = CRF + QP_BD_OFFSET (6 * (bit depth - 8), 7.4.2.1.1: QP'Y = QPY +
            // QpBdOffsetY) and is lossless only at QP'Y 0: CRF below 1 is lossless at 8 bits,
            // and needs the offset taken off at 10.
            p.rc.f_rf_constant -= Float(6 * (p.i_bitdepth - 8))
        }

        // QP bounds, in QPY (7.4.2.2); x264 counts QP'Y = QPY + QpBdOffsetY at 10 bits, as for the
        // CRF above. They hold in every mode (x264 clips each macroblock's QP, AQ included) and
        // for forced QPs.
        if !properties.spatialAdaptiveQP { p.rc.i_aq_mode = X264_AQ_NONE }
        if let count = properties.slicesPerPicture { p.i_slice_count = Int32(count) }
        if let count = properties.suggestedLookAheadFrameCount, properties.maxFrameDelayCount == nil {
            // The macroblock tree needs a look-ahead: off without one (as x264 itself turns it).
            p.rc.i_lookahead = Int32(count)
            if count == 0 { p.rc.b_mb_tree = 0 }
        }
        // Per-frame PSNR (x264 measures it on the reconstructed picture; off by default, it costs
        // a pass over every plane).
        if properties.calculatesMeanSquaredError {
            p.analyse.b_psnr = 1
            cx264_set_quiet_info_logging(&p)
        }
        let offset = 6 * (p.i_bitdepth - 8)
        if let low = properties.minAllowedFrameQP { p.rc.i_qp_min = Int32(low) + offset }
        if let high = properties.maxAllowedFrameQP { p.rc.i_qp_max = Int32(high) + offset }

        // HDR SEI with each IDR picture (x264 writes them into the keyframes' access units).
        if let display = properties.masteringDisplayColorVolume {
            p.mastering_display.b_mastering_display = 1
            p.mastering_display.i_green_x = Int32(display.green.x)
            p.mastering_display.i_green_y = Int32(display.green.y)
            p.mastering_display.i_blue_x = Int32(display.blue.x)
            p.mastering_display.i_blue_y = Int32(display.blue.y)
            p.mastering_display.i_red_x = Int32(display.red.x)
            p.mastering_display.i_red_y = Int32(display.red.y)
            p.mastering_display.i_white_x = Int32(display.whitePoint.x)
            p.mastering_display.i_white_y = Int32(display.whitePoint.y)
            p.mastering_display.i_display_max = Int64(display.maxLuminance)
            p.mastering_display.i_display_min = Int64(display.minLuminance)
        }
        if let level = properties.contentLightLevelInfo {
            p.content_light_level.b_cll = 1
            p.content_light_level.i_max_cll = Int32(level.maxContentLightLevel)
            p.content_light_level.i_max_fall = Int32(level.maxPictureAverageLightLevel)
        }

        // VUI colour description (E.2.1).
        if let primaries = properties.colorPrimaries { p.vui.i_colorprim = Int32(primaries.rawValue) }
        if let transfer = properties.transferFunction { p.vui.i_transfer = Int32(transfer.rawValue) }
        if let matrix = properties.yCbCrMatrix { p.vui.i_colmatrix = Int32(matrix.rawValue) }
        p.vui.b_fullrange = (properties.fullRange ?? (configuration.pixelFormat == .nv12FullRange)) ? 1 : 0
        return p
    }

    /// CRF for `quality` 0...1: 51 * (1 - quality), so 1 is CRF 0 (best) and 0 is CRF 51 (worst);
    /// nil is x264's default 23.
    static func crf(quality: Double?) -> Double {
        guard let quality else { return 23 }
        return min(51, max(0, 51 * (1 - quality)))
    }

    /// VBV from the data rate limits (``DataRateBuffer/planningInside(limits:)``: x264's VBV
    /// planning keeps far inside its buffer, so the proven sizing left a third of the limit
    /// unused), rounded down to x264's kbit. An ABR target above the VBV rate is coded at the
    /// VBV rate (x264: "max bitrate less than average bitrate, assuming CBR"): a hard limit wins
    /// over the average.
    private static func applyDataRateLimits(_ properties: CompressionProperties, to p: inout x264_param_t) {
        guard let buffer = properties.plannedVBV else { return }
        p.rc.i_vbv_max_bitrate = Int32(clamping: max(1, buffer.bitsPerSecond / 1000))
        p.rc.i_vbv_buffer_size = Int32(clamping: max(1, buffer.bufferBits / 1000))
        // An HRD buffer asked for by name is signalled: hrd_parameters() in the VUI (E.1.2) with
        // buffering period and picture timing SEI, VBR (cbr_flag 0: no filler data).
        if properties.hrdBuffer != nil { p.i_nal_hrd = X264_NAL_HRD_VBR }
    }

    /// A frame rate as a fraction (1000 * rate / 1000, reduced by nothing: x264 reduces it).
    private static func fraction(_ rate: Double) -> (num: UInt32, den: UInt32) {
        let rounded = (rate * 1001).rounded()
        // 29.97 and friends are 30000/1001; whole rates come out exactly.
        if abs(rounded / 1001 - rate) < 1e-9 || abs((rate * 1000).rounded() - rate * 1000) > 1e-6 {
            return (UInt32(clamping: Int(rounded)), 1001)
        }
        return (UInt32(clamping: Int((rate * 1000).rounded())), 1000)
    }

    // MARK: EncoderBackend

    func prepare(properties: CompressionProperties, frameRate: Double) throws(VTError) {
        close()
        self.frameRate = frameRate
        var p = try Self.makeParameters(properties, configuration: configuration, frameRate: frameRate)
        guard let opened = cx264_encoder_open(&p) else {
            throw VTError(
                .encoderFailed,
                "x264 refused the settings (\(configuration.width)x\(configuration.height), \(describe(properties)))",
                operation: "x264_encoder_open")
        }
        encoder = opened
        openedRateControl = RateControlShape(properties)
        x264_encoder_parameters(opened, &parameters)
        frameDelay = Int(x264_encoder_maximum_delayed_frames(opened))
        if let count = properties.maxFrameDelayCount, frameDelay > count {
            close()
            throw .invalidProperty(
                .maxFrameDelayCount,
                "x264 needs \(frameDelay) frames of delay with these settings, more than \(count); raise the count")
        }
        formatDescription = try headers(opened, properties: properties)
    }

    private func describe(_ properties: CompressionProperties) -> String {
        var parts: [String] = []
        if let rate = properties.averageBitRate { parts.append("\(rate) bit/s") }
        if let profile = properties.profileLevel {
            parts.append("profile \(profile.profile.rawValue) level \(profile.level ?? "auto")")
        }
        return parts.isEmpty ? "default settings" : parts.joined(separator: ", ")
    }

    /// The SPS and PPS as a format description.
    private func headers(_ encoder: OpaquePointer, properties: CompressionProperties) throws(VTError)
        -> FormatDescription
    {
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        let status = x264_encoder_headers(encoder, &nals, &count)
        guard status >= 0, let nals else {
            throw VTError(
                .encoderFailed, "x264 could not write the SPS/PPS", backendStatus: status,
                operation: "x264_encoder_headers")
        }
        var sets: [[UInt8]] = []
        for index in 0..<Int(count) {
            let nal = nals[index]
            guard nal.i_type == Int32(NAL_SPS.rawValue) || nal.i_type == Int32(NAL_PPS.rawValue),
                let payload = nal.p_payload, nal.i_payload > 4
            else { continue }
            // Drop the 4-byte length (b_annexb = 0): the avcC record holds bare NAL units.
            var unit = Array(UnsafeBufferPointer(start: payload + 4, count: Int(nal.i_payload) - 4))
            if nal.i_type == Int32(NAL_SPS.rawValue), properties.profileLevel?.profile == .constrainedBaseline,
                unit.count > 2, unit[2] & 0x40 == 0
            {
                // Constrained baseline (A.2.1.1) is profile_idc 66 with constraint_set1_flag; x264
                // sets the flag for baseline itself (it uses no FMO/ASO/redundant slices), so this
                // only runs for an x264 that does not. Byte 2 is the constraint byte right after
                // profile_idc 66, so setting a bit cannot create an emulation-prevention pattern.
                unit[2] |= 0x40
            }
            sets.append(unit)
        }
        do {
            return try FormatDescription(h264ParameterSets: sets)
        } catch {
            throw VTError(
                .encoderFailed, "x264's SPS/PPS do not make an H.264 format description: \(error)",
                operation: "x264_encoder_headers")
        }
    }

    func encode(_ request: EncoderFrameRequest) throws(VTError) -> [EncodedFrame] {
        guard let encoder else {
            throw VTError(.encoderFailed, "the x264 encoder is not open", operation: "x264_encoder_encode")
        }
        if pending.isEmpty, let last = lastDecodeTimeStamp, request.presentationTimeStamp < last {
            // Time went back (a multi-pass range, a seek): a new timeline, whose DTS need not
            // follow the old one's.
            lastDecodeTimeStamp = nil
        }
        var picture = x264_picture_t()
        x264_picture_init(&picture)
        let image = request.image
        picture.img.i_csp = parameters.i_csp
        picture.img.i_plane = Int32(image.planeCount)
        for (index, plane) in image.planes.enumerated() {
            cx264_picture_set_plane(
                &picture, Int32(index), plane.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(plane.bytesPerRow))
        }
        let pts90k = request.presentationTimeStamp.converted(to: x264Timescale).value
        picture.i_pts = pts90k
        picture.i_type = request.frameType == .idr ? X264_TYPE_IDR : X264_TYPE_AUTO
        if let quantizer = request.quantizer {
            // Multi-pass rate control chose this frame's QP. x264 forces whole QPs only
            // (i_qpplus1); the fraction becomes a uniform per-macroblock offset on top of its
            // adaptive quantization, so the macroblocks round to the fractional average.
            let clamped = min(max(quantizer, 0), 51)
            let whole = clamped.rounded(.down)
            picture.i_qpplus1 = Int32(whole) + 1
            let step = Int(((clamped - whole) * Double(Self.offsetSteps)).rounded())
            if step > 0, let offsets = uniformQuantizerOffsets(step: step) {
                picture.prop.quant_offsets = offsets
            }
        }
        if let captions = request.closedCaptions {
            // A/53 captions as user_data_registered_itu_t_t35 (payloadType 4, D.1.6), written in
            // the access unit of this picture wherever reordering puts it.
            for payload in captions.userDataRegisteredPayloads {
                _ = payload.withUnsafeBufferPointer { bytes in
                    cx264_picture_add_sei(&picture, 4, bytes.baseAddress, Int32(bytes.count))
                }
            }
        }
        let token = nextToken
        nextToken &+= 1
        picture.opaque = UnsafeMutableRawPointer(bitPattern: token)
        pending[token] = Pending(
            presentationTimeStamp: request.presentationTimeStamp, duration: request.duration,
            frameReference: request.frameReference, quantizer: request.quantizer.map { min(max($0, 0), 51) })
        remember(pts90k, request.presentationTimeStamp)
        // The planes are read inside this call only (x264 copies them into its own frame).
        let frame = try withExtendedLifetime(image) { () throws(VTError) -> EncodedFrame? in
            try encodeOnce(encoder, input: &picture)
        }
        return frame.map { [$0] } ?? []
    }

    func flush() throws(VTError) -> [EncodedFrame] {
        guard let encoder else { return [] }
        var frames: [EncodedFrame] = []
        // A drain call may return no frame while frame threads finish; x264 says how many are
        // left. Bounded in case a broken library never counts down.
        var attempts = 0
        while x264_encoder_delayed_frames(encoder) > 0, attempts < 4096 {
            if let frame = try encodeOnce(encoder, input: nil) { frames.append(frame) }
            attempts += 1
        }
        // A drained x264 encoder is closed: the session prepares a fresh one (same settings, a
        // new GOP) for the next frame.
        close()
        pending.removeAll()
        return frames
    }

    func reconfigureRateControl(_ properties: CompressionProperties) throws(VTError) -> [EncodedFrame] {
        guard let encoder else { return [] }
        if RateControlShape(properties) != openedRateControl {
            // What x264_encoder_reconfig would silently ignore (see RateControlShape): the held
            // frames are output and a new encoder starts at the next frame with an IDR picture.
            // The stream stays valid (each encoder's GOP is closed; a new SPS, if x264 picks
            // another level, goes out as new caps) where opening x264 in one mode for all
            // (CRF with VBV) would turn an unlimited stream into a limited one.
            let frames = try flush()
            let previousParameterSets = formatDescription?.parameterSets ?? []
            try prepare(properties: properties, frameRate: frameRate)
            // A fresh x264 starts at idr_pic_id 0: right after an IDR picture with that id, two
            // IDR access units in a row would share it, which 7.4.3 forbids (a decoder would
            // take the second for more slices of the first, 7.4.1.2.4).
            restartAfterIDR = lastOutputIDR.map { ($0, previousParameterSets) }
            return frames
        }
        var p = x264_param_t()
        x264_encoder_parameters(encoder, &p)
        if properties.averageBitRate == nil {
            p.rc.f_rf_constant = Float(Self.crf(quality: properties.quality))
        }
        Self.applyDataRateLimits(properties, to: &p)
        let status = x264_encoder_reconfig(encoder, &p)
        guard status >= 0 else {
            throw VTError(
                .invalidProperty, "averageBitRate/dataRateLimits/quality: x264 refused the new rate control values",
                backendStatus: status, operation: "x264_encoder_reconfig", property: .averageBitRate)
        }
        return []
    }

    // MARK: Output

    /// `accessUnit` (an IDR picture after a restart) laid out again with another idr_pic_id when
    /// it has the one of the IDR picture output right before it; nil when it may go out as it
    /// is. Damaged headers leave it as it is (x264 wrote both: they parse).
    private static func idrPictureIDDistinct(
        _ accessUnit: [UInt8], following previous: (accessUnit: [UInt8], parameterSets: [[UInt8]]),
        parameterSets: [[UInt8]]
    ) -> [UInt8]? {
        // Array.withUnsafeBytes rethrows untyped errors: the result decides, not the error.
        let before = try? IDRPictureIDSplicer(parameterSets: previous.parameterSets, nalUnitHeaderLength: 4)
        guard let before,
            let previousID = try? previous.accessUnit.withUnsafeBytes({ try before.idrPictureID(of: $0) }),
            var splicer = try? IDRPictureIDSplicer(
                parameterSets: parameterSets, nalUnitHeaderLength: 4, followingIDRPictureID: previousID)
        else { return nil }
        do {
            return try accessUnit.withUnsafeBytes { try splicer.next($0) }
        } catch {
            return nil
        }
    }

    private static func analysisFrameType(_ type: Int32, isIDR: Bool) -> AnalysisFrameType {
        if isIDR { return .idr }
        switch type {
        case X264_TYPE_I, X264_TYPE_KEYFRAME: return .intra
        case X264_TYPE_B, X264_TYPE_BREF: return .bidirectional
        default: return .predicted
        }
    }

    private func remember(_ pts90k: Int64, _ time: MediaTime) {
        if recentTimes.updateValue(time, forKey: pts90k) == nil { recentOrder.append(pts90k) }
        // More than any reorder delay x264 can have (B-frames + look-ahead + threads).
        if recentOrder.count > 512 {
            let old = recentOrder.prefix(256)
            for key in old { recentTimes[key] = nil }
            recentOrder.removeFirst(256)
        }
    }

    /// One x264_encoder_encode call (`input` nil = drain one delayed frame).
    private func encodeOnce(_ encoder: OpaquePointer, input: UnsafeMutablePointer<x264_picture_t>?) throws(VTError)
        -> EncodedFrame?
    {
        var nals: UnsafeMutablePointer<x264_nal_t>?
        var count: Int32 = 0
        var output = x264_picture_t() // zeroed: i_qpplus1 stays 0 when the call starts no frame
        let size = x264_encoder_encode(encoder, &nals, &count, input, &output)
        guard size >= 0 else {
            throw VTError(
                .encoderFailed, "x264 failed to encode a frame", backendStatus: size, operation: "x264_encoder_encode")
        }
        if output.i_qpplus1 > 0 { startedFrameQuantizers.append(output.i_qpplus1 - 1) }
        guard size > 0, let nals else { return nil }
        let frameQuantizer = startedFrameQuantizers.isEmpty ? nil : startedFrameQuantizers.removeFirst()
        let token = UInt(bitPattern: output.opaque)
        let info =
            pending.removeValue(forKey: token)
            ?? Pending(
                presentationTimeStamp: MediaTime(value: output.i_pts, timescale: x264Timescale), duration: .invalid,
                frameReference: 0, quantizer: nil)
        // Copied: x264 reuses its output buffer on the next call, and the sample outlives it.
        var data: [UInt8] = []
        data.reserveCapacity(Int(size))
        var referenced = false
        for index in 0..<Int(count) {
            let nal = nals[index]
            guard let payload = nal.p_payload, nal.i_payload > 4 else { continue }
            switch nal.i_type {
            case Int32(NAL_SPS.rawValue), Int32(NAL_PPS.rawValue), Int32(NAL_AUD.rawValue):
                continue // parameter sets live in the format description only
            case Int32(NAL_SLICE.rawValue), Int32(NAL_SLICE_IDR.rawValue):
                referenced = referenced || nal.i_ref_idc != 0
            default:
                break
            }
            data.append(contentsOf: UnsafeBufferPointer(start: payload, count: Int(nal.i_payload)))
        }
        let isIDR = output.i_type == X264_TYPE_IDR || output.b_keyframe != 0
        let isIntra = isIDR || output.i_type == X264_TYPE_I
        if let previous = restartAfterIDR {
            restartAfterIDR = nil
            if isIDR,
                let rewritten = Self.idrPictureIDDistinct(
                    data, following: previous, parameterSets: formatDescription?.parameterSets ?? [])
            {
                data = rewritten
            }
        }
        lastOutputIDR = isIDR ? data : nil
        var decodeTimeStamp = recentTimes[output.i_dts] ?? MediaTime(value: output.i_dts, timescale: x264Timescale)
        if let last = lastDecodeTimeStamp, decodeTimeStamp <= last {
            // Keep DTS strictly increasing across encoder restarts (one 90 kHz tick after the last).
            decodeTimeStamp =
                last.converted(to: x264Timescale, rounding: .towardPositiveInfinity)
                + MediaTime(value: 1, timescale: x264Timescale)
        }
        decodeTimeStamp = min(decodeTimeStamp, info.presentationTimeStamp)
        lastDecodeTimeStamp = decodeTimeStamp
        let timing = SampleTimingInfo(
            duration: info.duration, presentationTimeStamp: info.presentationTimeStamp,
            decodeTimeStamp: decodeTimeStamp)
        let attachments = SampleAttachments(
            notSync: !isIDR, dependsOnOthers: !isIntra, isDependedOnByOthers: referenced,
            earlierDisplayTimesAllowed: parameters.i_bframe > 0)
        return .accessUnit(
            data, formatDescription: formatDescription, timing: timing, attachments: attachments,
            frameReference: info.frameReference,
            analysis: EncodedFrameAnalysis(
                frameType: Self.analysisFrameType(output.i_type, isIDR: isIDR),
                // x264's ABR may report a frame QP above 51 ("emergency" mode), but the
                // macroblocks are coded at 51 at most (7.4.5: QPY is 0...51 for 8 bits):
                // the analysis gets the QP the frame was coded at.
                // When the QP was not forced, x264's own (see startedFrameQuantizers; the slice
                // header's QP is not it: x264 picks slice_qp_delta to save mb_qp_delta bits, up
                // to 6 QP below the frame QP in P pictures under the macroblock tree).
                quantizer: info.quantizer ?? Double(min(51, max(0, frameQuantizer ?? 0))),
                lumaMeanSquaredError: parameters.analyse.b_psnr != 0
                    ? EncodedFrameAnalysis.meanSquaredError(
                        psnr: Double(output.prop.f_psnr.0), bitDepth: Int(parameters.i_bitdepth)) : nil),
            encoderName: "x264")
    }
}
