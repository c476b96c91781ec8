import Glibc
import MediaCore
import NALBitstream

/// How the encoder is chosen and configured (VideoToolbox's encoder specification).
public struct EncoderSpecification: Sendable {
    public var hardwarePolicy: HardwarePolicy
    /// Encoder threads; 0 lets the backend choose.
    public var threadCount: Int

    public init(hardwarePolicy: HardwarePolicy = .auto, threadCount: Int = 0) {
        self.hardwarePolicy = hardwarePolicy
        self.threadCount = threadCount
    }
}

/// `kVTH264EntropyMode_CAVLC` / `kVTH264EntropyMode_CABAC`.
public enum H264EntropyMode: String, Sendable, CaseIterable {
    case cavlc, cabac
}

/// `kVTCompressionPropertyKey_ProfileLevel`: a profile, and a level or automatic.
public struct H264ProfileLevel: Sendable, Hashable {
    public enum Profile: String, Sendable, CaseIterable {
        case baseline
        /// profile_idc 66 with constraint_set1_flag (A.2.1.1).
        case constrainedBaseline = "constrained-baseline"
        case main
        case high
        /// High 10 (A.2.5): 4:2:0 with up to 10 bits per sample.
        case high10 = "high-10"
        /// High 4:2:2 (A.2.6): 4:2:0 or 4:2:2, up to 10 bits per sample.
        case high422 = "high-4:2:2"
        /// High 4:4:4 Predictive (A.2.7): 4:4:4 up to 14 bits, and the profile of lossless
        /// coding (qpprime_y_zero_transform_bypass_flag, 7.4.2.1.1), which x264 uses at QP 0.
        case high444Predictive = "high-4:4:4"
    }

    public var profile: Profile
    /// "1", "1b", "1.1" ... "6.2"; nil lets the encoder choose from size, frame rate and bit rate.
    public var level: String?

    public init(profile: Profile, level: String? = nil) {
        self.profile = profile
        self.level = level
    }

    /// The level names of Table A-1 and their level_idc (1b as 9, as x264 and FFmpeg write it
    /// for non-baseline profiles).
    public static let levels: [String: Int] = [
        "1": 10, "1b": 9, "1.1": 11, "1.2": 12, "1.3": 13, "2": 20, "2.1": 21, "2.2": 22, "3": 30, "3.1": 31,
        "3.2": 32, "4": 40, "4.1": 41, "4.2": 42, "5": 50, "5.1": 51, "5.2": 52, "6": 60, "6.1": 61, "6.2": 62
    ]

    /// level_idc of ``level``, nil when automatic or unknown.
    public var levelIdc: Int? { level.flatMap { Self.levels[$0] } }

    /// Baseline and constrained baseline have neither B slices nor CABAC.
    public var allowsBFramesAndCABAC: Bool { profile != .baseline && profile != .constrainedBaseline }
}

/// How pictures are coded: VideoToolbox's `kVTCompressionPropertyKey_FieldCount` (1 = frames,
/// 2 = two fields per picture) with `kVTCompressionPropertyKey_FieldDetail` (which field comes
/// first in time).
public enum FieldCoding: String, Sendable {
    case progressive
    /// Interlaced, the top field first in time (SEI pic_struct 3, D.2.3; field order "tt").
    case topFieldFirst = "interlaced, top field first"
    /// Interlaced, the bottom field first in time (pic_struct 4; field order "bb").
    case bottomFieldFirst = "interlaced, bottom field first"
}

/// One hard cap (`kVTCompressionPropertyKey_DataRateLimits` holds pairs of bytes and seconds).
public struct DataRateLimit: Sendable, Hashable {
    public var bytes: Int
    public var seconds: Double

    public init(bytes: Int, seconds: Double) {
        self.bytes = bytes
        self.seconds = seconds
    }

    /// Bits per second this window allows.
    public var bitsPerSecond: Double { Double(bytes) * 8 / seconds }

    /// The highest rate a limit may allow (1 Tbit/s, far above every H.264 level).
    public static let highestBitsPerSecond = 1e12
    /// The longest window a limit may span (one day).
    public static let longestWindow = 86_400.0
}

/// The decoder buffer model that makes ``CompressionProperties/dataRateLimits`` hard limits.
///
/// VideoToolbox's DataRateLimits require that "the total size of compressed data for any
/// contiguous segment of that duration (in decode time) must not exceed the data size". An
/// encoder's rate control only promises that its buffer model (x264's VBV, VA's HRD: the coded
/// picture buffer of H.264 Annex C, C.1) neither underflows nor overflows: bits arrive at most at
/// `bitsPerSecond` into a buffer of `bufferBits`, and each picture leaves it whole at its
/// decode time. The pictures leaving in any segment are then at most what the buffer held when
/// it began plus what arrived during it. A segment of `seconds` holds at most
/// N = ceil(seconds x frame rate) pictures, whose decode times span (N - 1) / frame rate, so
///
///     bufferBits + bitsPerSecond x (N - 1) / frame rate <= 8 x bytes
///
/// bounds every segment by the limit. Mapping a limit to a buffer of the whole window at the
/// window's rate (as before) allowed twice the limit: a full buffer plus a window of arrivals.
///
/// The split between buffer and rate: ``bufferShare`` of the limit is buffer (room for an IDR
/// picture above the average), the rest arrives over the segment. Measured with x264 (medium,
/// CRF 23, the 300-frame 720p corpus clip, limit 125,000 bytes per second): shares 0.10, 0.20,
/// 0.25 and 0.33 all held every window (67-77 % of the limit at most) at 611-635 kbit/s; x264's
/// VBV planning keeps well inside small buffers, so a larger share only lowers the rate.
public struct DataRateBuffer: Sendable, Equatable {
    /// The most bits per second that enter the buffer (x264 rc.i_vbv_max_bitrate, VA's
    /// bits_per_second peak).
    public var bitsPerSecond: Int
    /// The buffer size in bits (x264 rc.i_vbv_buffer_size, VA's HRD buffer_size).
    public var bufferBits: Int

    /// The share of each limit given to the buffer.
    public static let bufferShare = 0.25

    /// The largest buffer and rate that hold every limit in `limits` at `frameRate` pictures
    /// per second (the rate first: it is what the stream's average may reach). nil without limits.
    public init?(limits: [DataRateLimit], frameRate: Double) {
        guard !limits.isEmpty else { return nil }
        let rate = frameRate.isFinite && frameRate > 0 ? frameRate : 30
        // The decode-time span of the pictures a window may hold (0 when it holds one: the
        // buffer alone bounds it).
        func span(_ limit: DataRateLimit) -> Double {
            // Less than a microsecond of a frame over a whole number of frames is rounding.
            let pictures = max(1, (limit.seconds * rate - 1e-6).rounded(.up))
            return (pictures - 1) / rate
        }
        var bitsPerSecond = Double.infinity
        for limit in limits {
            let bits = Double(limit.bytes) * 8
            let arrival = span(limit)
            // A window of one picture: the picture may be the whole limit; one per frame time.
            let allowed = arrival > 0 ? bits * (1 - Self.bufferShare) / arrival : bits * rate
            bitsPerSecond = min(bitsPerSecond, allowed)
        }
        var bufferBits = Double.infinity
        for limit in limits {
            bufferBits = min(bufferBits, Double(limit.bytes) * 8 - bitsPerSecond * span(limit))
        }
        // Rounded down: the bound must hold. Validated limits are at most 1 Tbit/s.
        self.bitsPerSecond = max(1, Int(clampingTowardZero: bitsPerSecond))
        self.bufferBits = max(1, Int(clampingTowardZero: bufferBits))
    }

    /// The sizing for a rate control that plans far inside its buffer model, as x264's VBV
    /// does: 40 % of the strictest limit as buffer and 90 % of its rate. The bound above is not
    /// proven for it (buffer plus a window of arrivals is 1.3 times the limit) but measured with
    /// vtenc on the 300-frame 720p corpus clip: at 125,000 bytes a second the fullest one-second
    /// window holds 97.9 % of the limit at 772 kbit/s (`rate-control=cbr bitrate=1000`: 93.3 %
    /// at 730 kbit/s), where the proven sizing peaked at 68-76 % at 591-621 kbit/s; 95 % and half
    /// (near x264enc's default vbv-buf-capacity of half a second at the full rate) reached 109 %,
    /// over the limit; 95 % and 30 %, 92.7 % at 753 kbit/s. nil without limits.
    public static func planningInside(limits: [DataRateLimit]) -> DataRateBuffer? {
        guard !limits.isEmpty else { return nil }
        var bitsPerSecond = Double.infinity
        var bufferBits = Double.infinity
        for limit in limits where limit.seconds > 0 {
            let bits = Double(limit.bytes) * 8
            bitsPerSecond = min(bitsPerSecond, 0.9 * bits / limit.seconds)
            bufferBits = min(bufferBits, 0.4 * bits)
        }
        guard bitsPerSecond.isFinite, bufferBits.isFinite else { return nil }
        return DataRateBuffer(
            bitsPerSecond: max(1, Int(clampingTowardZero: bitsPerSecond)),
            bufferBits: max(1, Int(clampingTowardZero: bufferBits)))
    }

    public init(bitsPerSecond: Int, bufferBits: Int) {
        self.bitsPerSecond = bitsPerSecond
        self.bufferBits = bufferBits
    }
}

/// The properties of a compression session, VideoToolbox's `kVTCompressionPropertyKey_*`.
/// Checked by ``validate(width:height:)`` when set; see ``CompressionSession/supportedProperties(for:)``
/// for how a backend maps them.
public struct CompressionProperties: Sendable, Equatable {
    /// Qualities above this ask for lossless coding: quality maps to x264's CRF as
    /// 51 * (1 - quality), and x264 codes every CRF below 1 at QP 0, losslessly (High 4:4:4
    /// Predictive, A.2.11).
    public static let losslessQualityThreshold = 1 - 1.0 / 51

    /// Whether these properties ask for lossless coding (quality above
    /// ``losslessQualityThreshold`` without a bit rate).
    public var requestsLossless: Bool { averageBitRate == nil && (quality ?? 0) > Self.losslessQualityThreshold }

    /// Target average bit rate in bits per second; nil = not set.
    public var averageBitRate: Int?
    /// Hard caps: no window of `seconds` (in decode time) holds more than `bytes`; several
    /// windows allowed, every one held (``dataRateBuffer(frameRate:)``).
    public var dataRateLimits: [DataRateLimit]
    /// The hypothetical reference decoder's buffer (H.264 and H.265 Annex C; x264's and x265's
    /// VBV): the peak rate entering it and its size, which the stream neither overflows nor
    /// underflows (x264enc vbv-buf-capacity, vah264enc cpb-size, nvh264enc max-bitrate and
    /// vbv-buffer-size; VideoToolbox expresses buffers through DataRateLimits only, which derive
    /// one when this is nil). Its rate at or below ``averageBitRate`` means constant bit rate, above
    /// it a VBR peak. x264 and x265 signal it in the VUI's HRD parameters (E.1.2, VBR: cbr_flag 0).
    public var hrdBuffer: DataRateBuffer?
    /// 0...1, used when no bit rate is set.
    public var quality: Double?
    /// Encode for live use: no look-ahead, no frame reordering delay.
    public var realTime: Bool
    /// nil = the encoder chooses (High, automatic level).
    public var profileLevel: H264ProfileLevel?
    /// nil = CABAC when the profile allows it.
    public var entropyMode: H264EntropyMode?
    /// false = no B-frames (output order = input order).
    public var allowFrameReordering: Bool
    /// Frames between key frames at most; 0 = no limit.
    public var maxKeyFrameInterval: Int
    /// Seconds between key frames at most; 0 = no limit. The stricter of the two applies.
    public var maxKeyFrameIntervalDuration: Double
    /// Frames per second expected; nil = taken from the first frame's duration.
    public var expectedFrameRate: Double?
    /// false = every frame is an IDR frame.
    public var allowTemporalCompression: Bool
    /// Frames the encoder may hold before the first output at most; nil = unlimited.
    public var maxFrameDelayCount: Int?
    /// Written to the SPS VUI.
    public var colorPrimaries: ColorPrimaries?
    public var transferFunction: TransferFunction?
    public var yCbCrMatrix: YCbCrMatrix?
    public var fullRange: Bool?
    /// Frames or fields (``FieldCoding``); interlaced coding needs a profile that allows field
    /// macroblocks (frame_mbs_only_flag 0: Main or High, not Baseline, A.2.1).
    public var fieldCoding: FieldCoding = .progressive
    /// The lowest and highest QP a frame may be coded at (`kVTCompressionPropertyKey_MinAllowedFrameQP`,
    /// `MaxAllowedFrameQP`), 0...51 (the 8-bit luma QP range, H.264 7.4.2.2, H.265 7.4.3.3); nil =
    /// the encoder's own bounds. They bound every rate-control mode and multi-pass's quantizers.
    public var minAllowedFrameQP: Int?
    public var maxAllowedFrameQP: Int?
    /// Measure each frame's luma MSE against its input (`kVTCompressionPropertyKey_CalculateMeanSquaredError`):
    /// ``EncodedFrameAnalysis/lumaMeanSquaredError``, where the backend can (x264; not x265, which
    /// measures only when it logs at info level, nor VA-API).
    public var calculatesMeanSquaredError = false
    /// B-frames in a row at most (0...16; nil = the encoder's own: x264 and x265 up to 3 or 4,
    /// VA-API 2). VideoToolbox only allows or forbids them (``allowFrameReordering``); the peers
    /// count them (x264enc bframes, vah264enc b-frames). Needs ``allowFrameReordering``.
    public var maxConsecutiveBFrames: Int?
    /// Reference frames at most (`kVTCompressionPropertyKey_ReferenceBufferCount`; H.264
    /// max_num_ref_frames, 7.4.2.1.1; H.265 sps_max_dec_pic_buffering_minus1, 7.4.3.2.1), 1...16;
    /// nil = the encoder's own. With 1, B-frames (which refer to two) are not coded.
    public var referenceBufferCount: Int?
    /// false turns the encoder's spatial adaptive quantization off (`kVTCompressionPropertyKey_SpatialAdaptiveQPLevel`
    /// = `kVTQPModulationLevel_Disable`): every block of a picture at its QP, what PSNR rewards and
    /// the eye does not; true (the default) leaves the encoder's own.
    public var spatialAdaptiveQP = true
    /// Frames the rate control looks ahead (`kVTCompressionPropertyKey_SuggestedLookAheadFrameCount`),
    /// 0...250; nil = the encoder's own. A suggestion: an encoder without a look-ahead ignores it.
    public var suggestedLookAheadFrameCount: Int?
    /// Slices per picture (x264enc slices, vah264enc num-slices; VideoToolbox has no key): 1...64,
    /// nil = the encoder's own (one). Each slice is decodable on its own (H.264 7.4.3, H.265
    /// 7.4.7.1: independent slice segments), for error resilience and parallel decoding.
    public var slicesPerPicture: Int?
    /// Constant QP per frame type (vah264enc rate-control=cqp with qpi/qpp/qpb, x264enc quantizer,
    /// nvh264enc qp-const-*; VideoToolbox has no key): no rate control, every I, P and B picture at
    /// its QP (an encoder may code the B pictures other frames refer to between the B and P QPs,
    /// as x264 and x265 do). Wins over a bit rate and quality; nil = rate control.
    public var constantQuantizers: FrameTypeQuantizers?
    /// The mastering display (`kVTCompressionPropertyKey_MasteringDisplayColorVolume`, SMPTE ST
    /// 2086): written as the mastering display colour volume SEI (H.264 D.1.29, H.265 D.2.28) with
    /// every IDR/IRAP picture; nil = none.
    public var masteringDisplayColorVolume: MasteringDisplayColorVolume?
    /// MaxCLL and MaxFALL (`kVTCompressionPropertyKey_ContentLightLevelInfo`, CTA-861.3): the
    /// content light level information SEI (H.264 D.1.31, H.265 D.2.35); nil = none.
    public var contentLightLevelInfo: ContentLightLevelInfo?
    /// Trade compression for speed (`kVTCompressionPropertyKey_PrioritizeEncodingSpeedOverQuality`;
    /// x264enc speed-preset, vah264enc target-usage): the encoder's fast settings without real
    /// time's limits (look-ahead and B-frames stay).
    public var prioritizeEncodingSpeedOverQuality = false
    /// Periodic intra refresh instead of periodic IDR pictures (x264enc intra-refresh, x265
    /// --intra-refresh; VideoToolbox has no key): a column of intra blocks sweeps each picture over
    /// ``maxKeyFrameInterval`` frames, and a recovery point SEI (H.264 D.2.8, H.265 D.3.8) says
    /// where a decoder joining there has a whole picture again. Only the first picture (and one a
    /// caller forces) is IDR: the bit rate has no key-frame peaks, for low-latency streaming.
    public var intraRefresh = false

    /// The QPs the bounds allow: 0...51 narrowed by ``minAllowedFrameQP`` and ``maxAllowedFrameQP``.
    public var allowedFrameQPs: ClosedRange<Int> {
        let low = min(max(minAllowedFrameQP ?? 0, 0), 51)
        return low...max(low, min(maxAllowedFrameQP ?? 51, 51))
    }

    public init(
        averageBitRate: Int? = nil, dataRateLimits: [DataRateLimit] = [], quality: Double? = nil,
        realTime: Bool = false, profileLevel: H264ProfileLevel? = nil, entropyMode: H264EntropyMode? = nil,
        allowFrameReordering: Bool = true, maxKeyFrameInterval: Int = 0, maxKeyFrameIntervalDuration: Double = 0,
        expectedFrameRate: Double? = nil, allowTemporalCompression: Bool = true, maxFrameDelayCount: Int? = nil,
        colorPrimaries: ColorPrimaries? = nil, transferFunction: TransferFunction? = nil,
        yCbCrMatrix: YCbCrMatrix? = nil, fullRange: Bool? = nil
    ) {
        self.averageBitRate = averageBitRate
        self.dataRateLimits = dataRateLimits
        self.quality = quality
        self.realTime = realTime
        self.profileLevel = profileLevel
        self.entropyMode = entropyMode
        self.allowFrameReordering = allowFrameReordering
        self.maxKeyFrameInterval = maxKeyFrameInterval
        self.maxKeyFrameIntervalDuration = maxKeyFrameIntervalDuration
        self.expectedFrameRate = expectedFrameRate
        self.allowTemporalCompression = allowTemporalCompression
        self.maxFrameDelayCount = maxFrameDelayCount
        self.colorPrimaries = colorPrimaries
        self.transferFunction = transferFunction
        self.yCbCrMatrix = yCbCrMatrix
        self.fullRange = fullRange
    }

    /// The strictest of ``dataRateLimits`` (the lowest bits per second), nil when there is none.
    public var strictestDataRateLimit: DataRateLimit? {
        dataRateLimits.min { $0.bitsPerSecond < $1.bitsPerSecond }
    }

    /// The leaky-bucket buffer (x264's VBV, VA's HRD) that holds every one of
    /// ``dataRateLimits`` as a hard limit, nil when there is none. See ``DataRateBuffer``.
    public func dataRateBuffer(frameRate: Double) -> DataRateBuffer? {
        hrdBuffer ?? DataRateBuffer(limits: dataRateLimits, frameRate: frameRate)
    }

    /// The VBV of an encoder whose rate control plans far inside its buffer (x264, x265): the
    /// HRD buffer as given, else ``DataRateBuffer/planningInside(limits:)`` of the limits.
    public var plannedVBV: DataRateBuffer? {
        hrdBuffer ?? DataRateBuffer.planningInside(limits: dataRateLimits)
    }

    /// B-frames are allowed: reordering on, temporal compression on, and a profile that has them.
    public var usesBFrames: Bool {
        allowFrameReordering && allowTemporalCompression && (profileLevel?.allowsBFramesAndCABAC ?? true)
            && maxFrameDelayCount != 0 && maxConsecutiveBFrames != 0 && referenceBufferCount != 1
    }

    /// Checks every value on its own and against the others, and against the codec
    /// (`codecType` ``FourCharCode/hevc``: no CAVLC, H.265 9.3; no H.264 profile).
    ///
    /// - Throws: ``VTError/Code/invalidProperty`` naming the first property at fault.
    public func validate(codecType: FourCharCode = .h264) throws(VTError) {
        if codecType == .hevc {
            if entropyMode == .cavlc {
                throw .invalidProperty(
                    .entropyMode,
                    "HEVC has no CAVLC: every slice segment is coded with CABAC (H.265 9.3); use .cabac or nil")
            }
            if let profileLevel {
                throw .invalidProperty(
                    .profileLevel,
                    "\(profileLevel.profile.rawValue) is an H.264 profile; the HEVC profile follows the pixel format (Main, Main 10, Main 4:2:2 10, Main 4:4:4), leave profileLevel nil"
                )
            }
        }
        if let rate = averageBitRate, rate <= 0 {
            throw .invalidProperty(.averageBitRate, "\(rate) bits per second is not positive")
        }
        for limit in dataRateLimits {
            guard limit.bytes > 0, limit.seconds > 0, limit.seconds.isFinite else {
                throw .invalidProperty(
                    .dataRateLimits,
                    "a limit of \(limit.bytes) bytes per \(limit.seconds) seconds is not a positive amount over a positive time"
                )
            }
            // The backends work in bits and in bits per second (x264's VBV, VA-API's HRD): a
            // limit whose bits do not fit an Int, or whose rate is beyond any H.264 level
            // (Table A-1 tops out near 800 Mbit/s; 10^12 leaves room for every profile), means
            // no limit the encoder could act on.
            guard limit.bytes <= Int.max / 8, limit.seconds <= DataRateLimit.longestWindow,
                limit.bitsPerSecond <= DataRateLimit.highestBitsPerSecond
            else {
                throw .invalidProperty(
                    .dataRateLimits,
                    "a limit of \(limit.bytes) bytes per \(limit.seconds) seconds is out of range: at most \(Int(DataRateLimit.highestBitsPerSecond / 8)) bytes per second, "
                        + "over windows of at most \(Int(DataRateLimit.longestWindow)) seconds")
            }
        }
        if let buffer = hrdBuffer {
            let highest = Int(DataRateLimit.highestBitsPerSecond)
            guard (1...highest).contains(buffer.bitsPerSecond), (1...highest).contains(buffer.bufferBits) else {
                throw .invalidProperty(
                    .hrdBuffer,
                    "a buffer of \(buffer.bufferBits) bits filled at \(buffer.bitsPerSecond) bit/s is out of range: both "
                        + "positive, at most \(highest)")
            }
            if !dataRateLimits.isEmpty {
                throw .invalidProperty(
                    .hrdBuffer,
                    "data rate limits describe a buffer of their own: give either the limits or the HRD buffer")
            }
            if let average = averageBitRate, average > buffer.bitsPerSecond {
                throw .invalidProperty(
                    .hrdBuffer,
                    "the buffer's peak rate \(buffer.bitsPerSecond) bit/s is below the average bit rate \(average) bit/s, "
                        + "which could never be reached; raise the peak or lower the average")
            }
        }
        if let quality, !(0...1).contains(quality) {
            throw .invalidProperty(.quality, "\(quality) is outside 0...1")
        }
        if let level = profileLevel?.level, H264ProfileLevel.levels[level] == nil {
            throw .invalidProperty(
                .profileLevel, "level \"\(level)\" is not an H.264 level (use \"3.1\", \"4\", ... or nil for automatic)"
            )
        }
        if let profile = profileLevel, !profile.allowsBFramesAndCABAC, fieldCoding != .progressive {
            throw .invalidProperty(
                .fieldCoding,
                "interlaced coding is not allowed in the \(profile.profile.rawValue) profile (frame_mbs_only_flag is 1 there, A.2.1); use main or high"
            )
        }
        if let profile = profileLevel, !profile.allowsBFramesAndCABAC, entropyMode == .cabac {
            throw .invalidProperty(.entropyMode, reason: .entropyModeNotAllowed(profile: profile.profile))
        }
        guard maxKeyFrameInterval >= 0 else {
            throw .invalidProperty(.maxKeyFrameInterval, "\(maxKeyFrameInterval) is negative (0 means no limit)")
        }
        guard maxKeyFrameIntervalDuration >= 0, maxKeyFrameIntervalDuration.isFinite else {
            throw .invalidProperty(
                .maxKeyFrameIntervalDuration, "\(maxKeyFrameIntervalDuration) seconds is negative (0 means no limit)")
        }
        if let rate = expectedFrameRate, !(rate > 0 && rate <= 1000) {
            throw .invalidProperty(.expectedFrameRate, "\(rate) frames per second is outside (0, 1000]")
        }
        if let count = maxFrameDelayCount, count < 0 {
            throw .invalidProperty(.maxFrameDelayCount, "\(count) is negative (nil means unlimited)")
        }
        for (key, value) in [
            (CompressionPropertyKey.minAllowedFrameQP, minAllowedFrameQP), (.maxAllowedFrameQP, maxAllowedFrameQP)
        ] {
            if let value, !(0...51).contains(value) {
                throw .invalidProperty(key, "QP \(value) is outside 0...51 (nil means the encoder's own bound)")
            }
        }
        if let count = maxConsecutiveBFrames {
            guard (0...16).contains(count) else {
                throw .invalidProperty(
                    .maxConsecutiveBFrames, "\(count) B-frames is outside 0...16 (nil: the encoder's own)")
            }
            if count > 0 && !allowFrameReordering {
                throw .invalidProperty(
                    .maxConsecutiveBFrames,
                    "\(count) B-frames need frame reordering, which allowFrameReordering false forbids; allow it or ask for 0"
                )
            }
            if count > 0 && realTime {
                throw .invalidProperty(
                    .maxConsecutiveBFrames,
                    "\(count) B-frames would hold frames back, which realTime forbids (no frame delay); drop one or the other"
                )
            }
        }
        if let qps = constantQuantizers {
            for (name, qp) in [("I", qps.intra), ("P", qps.predicted), ("B", qps.bidirectional)]
            where !(0...51).contains(qp) {
                throw .invalidProperty(.constantQuantizers, "the \(name) pictures' QP \(qp) is outside 0...51")
            }
            if averageBitRate != nil || !dataRateLimits.isEmpty || hrdBuffer != nil {
                throw .invalidProperty(
                    .constantQuantizers,
                    "constant QPs control no rate: remove averageBitRate, dataRateLimits and hrdBuffer")
            }
        }
        if let count = slicesPerPicture, !(1...64).contains(count) {
            throw .invalidProperty(.slicesPerPicture, "\(count) slices is outside 1...64")
        }
        if let count = suggestedLookAheadFrameCount, !(0...250).contains(count) {
            throw .invalidProperty(.suggestedLookAheadFrameCount, "\(count) frames is outside 0...250")
        }
        if let count = referenceBufferCount, !(1...16).contains(count) {
            throw .invalidProperty(.referenceBufferCount, "\(count) reference frames is outside 1...16 (7.4.2.1.1)")
        }
        if let low = minAllowedFrameQP, let high = maxAllowedFrameQP, low > high {
            throw .invalidProperty(
                .minAllowedFrameQP,
                "the minimum QP \(low) is above the maximum QP \(high); lower the minimum or raise the maximum")
        }
        if requestsLossless, let low = minAllowedFrameQP, low > 0 {
            throw .invalidProperty(
                .minAllowedFrameQP,
                "QP \(low) rules out lossless coding, which quality \(quality ?? 1) asks for (it codes at QP 0); lower the quality or drop the bound"
            )
        }
    }

    /// The value of `key`, for comparisons and messages.
    func differs(from other: CompressionProperties, in key: CompressionPropertyKey) -> Bool {
        switch key {
        case .averageBitRate: averageBitRate != other.averageBitRate
        case .dataRateLimits: dataRateLimits != other.dataRateLimits
        case .hrdBuffer: hrdBuffer != other.hrdBuffer
        case .quality: quality != other.quality
        case .realTime: realTime != other.realTime
        case .profileLevel: profileLevel != other.profileLevel
        case .entropyMode: entropyMode != other.entropyMode
        case .allowFrameReordering: allowFrameReordering != other.allowFrameReordering
        case .maxKeyFrameInterval: maxKeyFrameInterval != other.maxKeyFrameInterval
        case .maxKeyFrameIntervalDuration: maxKeyFrameIntervalDuration != other.maxKeyFrameIntervalDuration
        case .expectedFrameRate: expectedFrameRate != other.expectedFrameRate
        case .allowTemporalCompression: allowTemporalCompression != other.allowTemporalCompression
        case .maxFrameDelayCount: maxFrameDelayCount != other.maxFrameDelayCount
        case .colorPrimaries: colorPrimaries != other.colorPrimaries
        case .transferFunction: transferFunction != other.transferFunction
        case .yCbCrMatrix: yCbCrMatrix != other.yCbCrMatrix
        case .fullRange: fullRange != other.fullRange
        case .fieldCoding: fieldCoding != other.fieldCoding
        case .minAllowedFrameQP: minAllowedFrameQP != other.minAllowedFrameQP
        case .maxAllowedFrameQP: maxAllowedFrameQP != other.maxAllowedFrameQP
        case .calculatesMeanSquaredError: calculatesMeanSquaredError != other.calculatesMeanSquaredError
        case .maxConsecutiveBFrames: maxConsecutiveBFrames != other.maxConsecutiveBFrames
        case .referenceBufferCount: referenceBufferCount != other.referenceBufferCount
        case .spatialAdaptiveQP: spatialAdaptiveQP != other.spatialAdaptiveQP
        case .suggestedLookAheadFrameCount: suggestedLookAheadFrameCount != other.suggestedLookAheadFrameCount
        case .slicesPerPicture: slicesPerPicture != other.slicesPerPicture
        case .constantQuantizers: constantQuantizers != other.constantQuantizers
        case .masteringDisplayColorVolume: masteringDisplayColorVolume != other.masteringDisplayColorVolume
        case .contentLightLevelInfo: contentLightLevelInfo != other.contentLightLevelInfo
        case .prioritizeEncodingSpeedOverQuality:
            prioritizeEncodingSpeedOverQuality != other.prioritizeEncodingSpeedOverQuality
        case .intraRefresh: intraRefresh != other.intraRefresh
        }
    }
}

/// The names of the ``CompressionProperties`` (VideoToolbox's property keys), for
/// ``CompressionSession/supportedProperties(for:)`` and error messages.
public enum CompressionPropertyKey: String, CaseIterable, Sendable {
    case averageBitRate, dataRateLimits, hrdBuffer, quality, realTime, profileLevel, entropyMode, allowFrameReordering
    case maxKeyFrameInterval, maxKeyFrameIntervalDuration, expectedFrameRate, allowTemporalCompression
    case maxFrameDelayCount, colorPrimaries, transferFunction, yCbCrMatrix, fullRange, fieldCoding
    case minAllowedFrameQP, maxAllowedFrameQP, calculatesMeanSquaredError, maxConsecutiveBFrames, referenceBufferCount
    case spatialAdaptiveQP, suggestedLookAheadFrameCount, slicesPerPicture, constantQuantizers
    case masteringDisplayColorVolume, contentLightLevelInfo, prioritizeEncodingSpeedOverQuality, intraRefresh

    /// The rate-control properties: these may change while encoding (from the next frame on).
    public static let changeableWhileEncoding: Set<CompressionPropertyKey> = [
        .averageBitRate, .dataRateLimits, .hrdBuffer, .quality
    ]
}

/// Per-frame options of ``CompressionSession/encode(_:presentationTimeStamp:duration:frameProperties:frameReference:)``
/// (`kVTEncodeFrameOptionKey_*`).
public struct FrameProperties: Sendable {
    /// Make this frame an IDR frame (`kVTEncodeFrameOptionKey_ForceKeyFrame`).
    public var forceKeyFrame: Bool
    /// Closed captions of this picture (SwiftVT's; VideoToolbox has no such option: GStreamer's
    /// encoders take them from GstVideoCaptionMeta), written as ATSC A/53 user data SEI in the
    /// picture's access unit (x264, x265, VA-API on a device that takes raw packed headers; a
    /// device that does not says so once in a notice, and the captions are dropped).
    public var closedCaptions: ClosedCaptionData?

    public init(forceKeyFrame: Bool = false, closedCaptions: ClosedCaptionData? = nil) {
        self.forceKeyFrame = forceKeyFrame
        self.closedCaptions = closedCaptions
    }
}

/// One output of a compression session (the arguments of VideoToolbox's output callback).
public struct EncodedFrame: Sendable {
    /// nil on success.
    public var status: VTError?
    /// One access unit: AVCC NAL units with 4-byte lengths, no SPS/PPS in band; its format
    /// description holds the SPS/PPS; timing PTS, DTS and duration; sample attachments
    /// `notSync`, `dependsOnOthers`, `isDependedOnByOthers`. nil when the frame was dropped or failed.
    public var sampleBuffer: SampleBuffer?
    /// The value given to ``CompressionSession/encode(_:presentationTimeStamp:duration:frameProperties:frameReference:)``
    /// with the picture this came from (`sourceFrameRefCon`).
    public var frameReference: UInt64
    /// What the encoder did with the frame (its type and quantizer), for multi-pass rate
    /// control; nil when the backend does not say.
    public var analysis: EncodedFrameAnalysis?

    public init(
        status: VTError? = nil, sampleBuffer: SampleBuffer? = nil, frameReference: UInt64 = 0,
        analysis: EncodedFrameAnalysis? = nil
    ) {
        self.status = status
        self.sampleBuffer = sampleBuffer
        self.frameReference = frameReference
        self.analysis = analysis
    }
}

extension EncodedFrame {
    /// One coded access unit (AVCC NAL units) as an output frame, in one block buffer; a frame
    /// carrying an error status instead when the sample cannot be made (`encoderName` says whose
    /// output it was).
    public static func accessUnit(
        _ bytes: [UInt8], formatDescription: FormatDescription?, timing: SampleTimingInfo,
        attachments: SampleAttachments,
        frameReference: UInt64, analysis: EncodedFrameAnalysis, encoderName: String
    ) -> EncodedFrame {
        do {
            let sample = try SampleBuffer(
                dataBuffer: BlockBuffer(bytes), formatDescription: formatDescription, sampleCount: 1,
                timings: .uniform(timing), sizes: .uniform(bytes.count), sampleAttachments: [attachments])
            return EncodedFrame(sampleBuffer: sample, frameReference: frameReference, analysis: analysis)
        } catch {
            return EncodedFrame(
                status: VTError(.encoderFailed, "could not wrap \(encoderName)'s output: \(error)"),
                frameReference: frameReference)
        }
    }
}

/// The encoder's own account of one coded frame.
public struct EncodedFrameAnalysis: Sendable, Equatable {
    public var frameType: AnalysisFrameType
    /// The frame's quantizer (QP) as its rate control set it: the picture-level QP that forcing
    /// the same value in a later pass reproduces (x264's frame QP, x265's slice QP), before the
    /// per-block offsets of adaptive quantization and the macroblock or CU tree.
    public var quantizer: Double
    /// The mean squared error of the coded luma against the input, where the backend measures it
    /// and ``CompressionProperties/calculatesMeanSquaredError`` asked for it (VideoToolbox's
    /// CalculateMeanSquaredError and its per-frame quality metrics); nil otherwise.
    public var lumaMeanSquaredError: Double?

    public init(frameType: AnalysisFrameType, quantizer: Double, lumaMeanSquaredError: Double? = nil) {
        self.frameType = frameType
        self.quantizer = quantizer
        self.lumaMeanSquaredError = lumaMeanSquaredError
    }

    /// The luma MSE from a PSNR in dB of samples of `bitDepth` bits: peak^2 / 10^(PSNR / 10),
    /// peak = 2^bitDepth - 1 (encoders report PSNR; a PSNR of infinity is an MSE of 0).
    public static func meanSquaredError(psnr: Double, bitDepth: Int) -> Double {
        let peak = Double((1 << bitDepth) - 1)
        return psnr.isFinite ? peak * peak / pow(10, psnr / 10) : 0
    }

    /// The inverse: PSNR in dB of `lumaMeanSquaredError` (100 for an MSE of 0); nil without one.
    public func lumaPSNR(bitDepth: Int) -> Double? {
        guard let mse = lumaMeanSquaredError else { return nil }
        let peak = Double((1 << bitDepth) - 1)
        return mse > 0 ? 10 * log10(peak * peak / mse) : 100
    }
}

/// Receives every output of a compression session, in decode order, on the thread that called
/// `encode` or `completeFrames`, with no session lock held.
public typealias CompressionOutputHandler = @Sendable (EncodedFrame) -> Void

/// The QP of each frame type under constant QP (``CompressionProperties/constantQuantizers``).
public struct FrameTypeQuantizers: Sendable, Hashable {
    public var intra: Int
    public var predicted: Int
    public var bidirectional: Int

    public init(intra: Int, predicted: Int, bidirectional: Int) {
        self.intra = intra
        self.predicted = predicted
        self.bidirectional = bidirectional
    }

    /// x264's and x265's way to say it: the P QP, and the I and B ones as quantizer-step ratios
    /// (ipratio, pbratio: the step doubles every 6 QP, H.264 8.5.12.1, H.265 8.6.2), from which
    /// they round back to these QPs.
    public var stepRatios: (intraToPredicted: Double, predictedToBidirectional: Double) {
        (pow(2, Double(predicted - intra) / 6), pow(2, Double(bidirectional - predicted) / 6))
    }
}

/// A CIE 1931 chromaticity in 0.00002 units (0...50000), as the mastering display SEI codes it.
public struct Chromaticity: Sendable, Hashable {
    public var x: UInt16
    public var y: UInt16

    public init(x: UInt16, y: UInt16) {
        self.x = x
        self.y = y
    }
}

/// SMPTE ST 2086 mastering display colour volume, in the units of its SEI message (H.265
/// D.3.28): primaries and white point in 0.00002, luminance in 0.0001 cd/m^2.
public struct MasteringDisplayColorVolume: Sendable, Hashable {
    public var green: Chromaticity
    public var blue: Chromaticity
    public var red: Chromaticity
    public var whitePoint: Chromaticity
    public var maxLuminance: UInt32
    public var minLuminance: UInt32

    public init(
        green: Chromaticity, blue: Chromaticity, red: Chromaticity, whitePoint: Chromaticity, maxLuminance: UInt32,
        minLuminance: UInt32
    ) {
        self.green = green
        self.blue = blue
        self.red = red
        self.whitePoint = whitePoint
        self.maxLuminance = maxLuminance
        self.minLuminance = minLuminance
    }
}

/// CTA-861.3 content light level: MaxCLL and MaxFALL in cd/m^2 (0 = unknown).
public struct ContentLightLevelInfo: Sendable, Hashable {
    public var maxContentLightLevel: UInt16
    public var maxPictureAverageLightLevel: UInt16

    public init(maxContentLightLevel: UInt16, maxPictureAverageLightLevel: UInt16) {
        self.maxContentLightLevel = maxContentLightLevel
        self.maxPictureAverageLightLevel = maxPictureAverageLightLevel
    }
}
