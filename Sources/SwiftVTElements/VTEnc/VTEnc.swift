import CGStreamer
import CSwiftVTShim
import H264
import MediaCore
import SoftwareCodecs
import SwiftVT
import Synchronization
import VAAPICodecs

/// `vtenc` / `vtenc_h264` / `vtenc_h264_hw`: H.264 encoding on the VTCompressionSession model
/// (the seeds' cases three and four); `vtenc_h265`: HEVC, the same element for the codec of its
/// table row (``ElementClassContext/codecType``), as VideoToolbox encodes both through one
/// session API.
///
/// A GstVideoEncoder subclass: input frames are wrapped as `PixelBuffer`s (no copy), handed to a
/// `CompressionSession` with their presentation times, and the session's sample buffers (AVCC, in
/// decode order, SPS/PPS in the format description) become output buffers: AVCC with
/// `codec_data` for `stream-format=avc`, the same with SPS/PPS also in band before every IDR for
/// `avc3` (headers with every key frame), Annex B with SPS/PPS before every IDR for
/// `byte-stream` (ready for `rtph264pay`), each access unit led by an access unit delimiter as
/// x264enc's. HEVC (x265) samples are hvc1 (VPS/SPS/PPS in the hvcC record, `codec_data`), and
/// also go out as hev1 (parameter sets in band before every IRAP picture) or Annex B byte-stream.
/// All encoding decisions are in the session.
///
/// Locks: `settings`, `state` and `delivered` are never held together, and none is held while
/// calling out (finishing frames, negotiating, posting messages).
final class VTEnc: VideoEncoderSubclass, EncodingElement, @unchecked Sendable {
    // `encoder` is the GObject that owns this object; mutable state is behind the mutexes.
    let encoder: UnsafeMutablePointer<GstVideoEncoder>
    static let debugCategory = DebugCategory(named: "vtenc", description: "SwiftVT H.264 and HEVC encoder")
    /// Named sets of property values (GstPreset), as x264enc.
    static var implementsPreset: Bool { true }
    let log = VTEnc.debugCategory
    var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(encoder) }

    /// Property values, as set on the element (declared in ``interface(for:)``).
    struct Settings: EncoderSettingsHolder {
        var encoder: EncoderSettings
        var bitrateKilobits: UInt32 = 0
        var rateControl = RateControlMode.averageBitRate
        var dataRateLimits = ""
        /// max-bitrate and vbv-buffer-size (kbit/s, kbit; 0 = unset).
        var maxBitrateKilobits: UInt32 = 0
        var bufferKilobits: UInt32 = 0
        var intraRefresh = false
        var quality = 0.5
        var realtime = false
        var maxKeyframeIntervalDuration: UInt64 = 0
        var frameStatistics = false
        /// H.264 only: an access unit delimiter first in every access unit.
        var accessUnitDelimiters = true
        /// vtenc_h265's aud, off by default (x265enc writes none).
        var hevcAccessUnitDelimiters = false
        var quantizerI: UInt32 = 23
        var quantizerP: UInt32 = 26
        var quantizerB: UInt32 = 28
    }

    private let settings: Mutex<Settings>
    /// `.h264` (vtenc, vtenc_h264, vtenc_h264_hw) or `.hevc` (vtenc_h265), fixed by the GType.
    let codecType: FourCharCode

    /// The output's form, in the element's codec.
    enum StreamFormat: Sendable, Equatable {
        case h264(H264Output.StreamFormat)
        case h265(H265Output.StreamFormat)

        /// The caps' `stream-format`.
        var name: String {
            switch self {
            case .h264(let format): format.rawValue
            case .h265(let format): format.rawValue
            }
        }
    }

    /// What exists while a session encodes, made together when the caps are set and dropped
    /// together at stop: no field is meaningful without the others.
    struct Encoding: Sendable {
        var session: CompressionSession
        var inputState: CodecStateReference
        var width: Int
        var height: Int
        var pixelFormat: PixelFormat
        var frameRate: FrameRate
        var streamFormat: StreamFormat
        /// Downstream's profiles and levels, for the output caps' labels (H.264, and H.265).
        var downstream: H264DownstreamConstraints
        var hevcDownstream: H265DownstreamConstraints?
        /// Time stamps made up for input frames without any (see encode(_:)).
        var untimedFrames = UntimedFrameClock()
        /// The SPS/PPS the output caps were made for.
        var negotiatedParameterSets: [[UInt8]]?
        /// Whether unwritable caption metas were warned about (once per stream).
        var warnedMalformedCaptions = false
    }

    struct State: SessionElementState {
        /// nil until caps made a session (idle), then the session and what came with it.
        var encoding: Encoding?
        /// Kept after stop: the `active-backend` property.
        var activeBackend = ""

        var session: CompressionSession? { encoding?.session }
    }

    /// What one frame needs from the state, taken under one lock.
    private struct FrameSnapshot {
        var session: CompressionSession
        var inputState: CodecStateReference
        var pixelFormat: PixelFormat
        var presentationTime: GstClockTime
        var activeBackend: String
    }

    let state = Mutex(State())
    let delivered = DeliveredOutput<EncodedFrame>()
    /// The caps set_format refused last (one ERROR, not one per sticky-event retry).
    private let refusedCaps = CapsRefusals()
    private let sessions: SessionFactory<VAH264EncoderFactory>

    init(instance: UnsafeMutableRawPointer, context: ElementClassContext) {
        encoder = instance.assumingMemoryBound(to: GstVideoEncoder.self)
        settings = Mutex(Settings(encoder: EncoderSettings(hardware: context.defaultHardware)))
        codecType = context.codecType
        sessions = SessionFactory(log: log, element: instance)
    }

    func withSettings<Result>(_ body: (inout Settings) -> Result) -> Result { settings.withLock { body(&$0) } }

    // MARK: Interface

    static func interface(for context: ElementClassContext) -> ElementInterface<VTEnc> {
        let hevc = context.codecType == .hevc
        let hardwareOnly = context.defaultHardware == .require
        let codecName = hevc ? "H.265" : "H.264"
        return ElementInterface(
            longName: "SwiftVT \(codecName) encoder" + (hardwareOnly ? " (hardware required)" : ""),
            classification: hardwareOnly ? "Codec/Encoder/Video/Hardware" : "Codec/Encoder/Video",
            description: hevc
                ? "Encodes H.265 (HEVC) on the VideoToolbox compression-session model with x265"
                : "Encodes H.264 on the VideoToolbox compression-session model: VA-API when available, x264 otherwise",
            padTemplates: hevc ? hevcPadTemplates : h264PadTemplates,
            properties: properties(for: context))
    }

    private static let h264PadTemplates: [PadTemplate] = [
        // x264enc's formats that x264 codes (not YV12), in two structures: 8-bit 4:2:0
        // first, so that an upstream free to choose (videotestsrc, which fixates the
        // first structure of the caps it is offered) makes what every H.264 decoder
        // plays, as vtenc did before it took the others; x264enc's one list makes High
        // 4:4:4 from videotestsrc. Any size down to 1x1 as x264enc: H.264 codes whole
        // macroblocks and crops the rest (frame_crop_*_offset, 7.4.2.1.1); 4:2:0 needs
        // even sizes and 4:2:2 an even width (refused at the caps, as x264 does).
        .sink(
            "video/x-raw, format = (string) { NV12, I420 }, "
                + "width = (int) [ 1, 2147483647 ], height = (int) [ 1, 2147483647 ], framerate = (fraction) [ 0/1, 2147483647/1 ]; "
                + "video/x-raw, format = (string) { Y42B, Y444, I420_10LE, I422_10LE, Y444_10LE }, "
                + "width = (int) [ 1, 2147483647 ], height = (int) [ 1, 2147483647 ], framerate = (fraction) [ 0/1, 2147483647/1 ]"
        ),
        // GstVideoEncoder's caps query puts downstream's width and height on the sink
        // caps, so this range is also the sink's.
        .source(
            "video/x-h264, stream-format = (string) { avc, avc3, byte-stream }, alignment = (string) au, "
                + "profile = (string) { high, main, constrained-baseline, baseline, progressive-high, high-10, high-4:2:2, high-4:4:4 }, "
                + "width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], framerate = (fraction) [ 0/1, 2147483647/1 ]"
        )
    ]

    private static let hevcPadTemplates: [PadTemplate] = [
        // The planar formats x265 takes (x265enc's up to 10 bits; x265 reads no NV12, x265.h),
        // 8-bit 4:2:0 first for the reason vtenc's sink gives: videotestsrc then makes Main
        // (A.3.2), which every HEVC decoder plays, not Main 4:4:4. From 64x64: x265 codes nothing
        // smaller than one coding tree block, 64x64 in the x265 backend (see X265Encoder); a
        // size off the block grid is cropped with the conformance window
        // (7.4.3.2.1). 4:2:0 needs even sizes and 4:2:2 an even width (refused at the caps).
        .sink(
            "video/x-raw, format = (string) I420, "
                + "width = (int) [ 64, 2147483647 ], height = (int) [ 64, 2147483647 ], framerate = (fraction) [ 0/1, 2147483647/1 ]; "
                + "video/x-raw, format = (string) { Y42B, Y444, I420_10LE, I422_10LE, Y444_10LE }, "
                + "width = (int) [ 64, 2147483647 ], height = (int) [ 64, 2147483647 ], framerate = (fraction) [ 0/1, 2147483647/1 ]"
        ),
        // hvc1 first: the default (parameter sets in codec_data only, as mp4mux and VideoToolbox
        // want them). The profiles x265 writes for those formats (A.3.2 to A.3.5), with its intra
        // variants (every picture a key frame), under h265parse's names.
        .source(
            "video/x-h265, stream-format = (string) { hvc1, hev1, byte-stream }, alignment = (string) au, "
                + "profile = (string) { main, main-10, main-422-10, main-444, main-444-10, main-intra, main-10-intra, "
                + "main-422-10-intra, main-444-intra, main-444-10-intra, main-still-picture }, "
                + "width = (int) [ 64, 16384 ], height = (int) [ 64, 16384 ], framerate = (fraction) [ 0/1, 2147483647/1 ]"
        )
    ]

    /// vtenc's properties; vtenc_h265 leaves out entropy-mode (HEVC codes every slice with CABAC,
    /// 9.3: there is nothing to choose) and intra-refresh (x265 writes no recovery point SEI for
    /// it), has aud off by default (as x265enc) and says x265 where vtenc says x264.
    private static func properties(for context: ElementClassContext) -> [ElementProperty<VTEnc>] {
        let hevc = context.codecType == .hevc
        let rateProperties: [ElementProperty<VTEnc>] = [
            .uint(
                "bitrate", nick: "Bit rate", blurb: "Target average bit rate in kbit/s (0 = the encoder chooses)",
                0...2_000_000, default: 0, .playing, at: \.bitrateKilobits,
                didChange: { $0.applyBitRateChange(of: "bitrate") }),
            .enumeration(
                "rate-control", nick: "Rate control", blurb: "How the bit rate is controlled",
                default: RateControlMode.averageBitRate, at: \.rateControl,
                didChange: { $0.warnIfEncoding(changed: "rate-control") }),
            .string(
                "data-rate-limits", nick: "Data rate limits",
                blurb:
                    "Hard limits as BYTES,SECONDS pairs separated by ';' (VideoToolbox's DataRateLimits), e.g. \"250000,1;400000,2\"",
                default: "", .playing, at: \.dataRateLimits,
                didChange: { $0.applyBitRateChange(of: "data-rate-limits") }),
            .uint(
                "max-bitrate", nick: "Maximum bit rate",
                blurb:
                    "Peak rate in kbit/s filling the decoder's buffer (H.264/H.265 Annex C HRD, x264's VBV; nvh264enc "
                    + "max-bitrate, x264enc vbv max rate, vah264enc's VBR peak): above bitrate it is a VBR peak, equal "
                    + "to it CBR; written to the VUI's HRD parameters. 0 = none (bitrate when vbv-buffer-size is set)",
                0...2_000_000, default: 0, .playing, at: \.maxBitrateKilobits,
                didChange: { $0.applyBitRateChange(of: "max-bitrate") }),
            .uint(
                "vbv-buffer-size", nick: "VBV buffer size",
                blurb:
                    "Decoder buffer size in kbit (nvh264enc vbv-buffer-size, vah264enc cpb-size; x264enc's "
                    + "vbv-buf-capacity in time); the stream never under- or overflows it at max-bitrate. 0 = one "
                    + "second at the peak rate when max-bitrate is set, else none",
                0...2_000_000, default: 0, .playing, at: \.bufferKilobits,
                didChange: { $0.applyBitRateChange(of: "vbv-buffer-size") }),
            .uint(
                "qp-i", nick: "QP of I pictures",
                blurb: "QP of the I pictures with rate-control=cqp (vah264enc qpi, nvh264enc qp-const-i)", 0...51,
                default: 23, at: \.quantizerI, didChange: { $0.warnIfEncoding(changed: "qp-i") }),
            .uint(
                "qp-p", nick: "QP of P pictures",
                blurb: "QP of the P pictures with rate-control=cqp (vah264enc qpp, x264enc quantizer)", 0...51,
                default: 26, at: \.quantizerP, didChange: { $0.warnIfEncoding(changed: "qp-p") }),
            .uint(
                "qp-b", nick: "QP of B pictures",
                blurb:
                    "QP of the B pictures with rate-control=cqp (vah264enc qpb); B pictures other frames refer to are "
                    + "coded between it and qp-p with x264 and x265", 0...51, default: 28, at: \.quantizerB,
                didChange: { $0.warnIfEncoding(changed: "qp-b") }),
            .double(
                "quality", nick: "Quality",
                blurb:
                    "Quality from 0 (smallest) to 1 (best), used with rate-control=quality: constant quality at CRF "
                    + "51 * (1 - quality) for x264 and x265 (0.6: CRF 20.4), the same ICQ quality factor on VA-API "
                    + "devices that offer ICQ, else that constant QP; changeable while playing",
                0...1, default: 0.5, .playing, at: \.quality, didChange: { $0.applyBitRateChange(of: "quality") }),
            .boolean(
                "realtime", nick: "Real time",
                blurb: "Encode for real time: no lookahead, no frame delay beyond the reported latency",
                default: false,
                at: \.realtime),
            EncoderProperties.allowFrameReordering(),
            EncoderProperties.maxKeyframeInterval(
                blurb: "Frames between key frames at most (0 = the encoder default, 250 for \(hevc ? "x265" : "x264"))"),
            .uint64(
                "max-keyframe-interval-duration", nick: "Maximum key frame interval duration",
                blurb: "Time between key frames at most, in nanoseconds (0 = no limit)", 0...UInt64.max, default: 0,
                at: \.maxKeyframeIntervalDuration)
        ]
        let entropy: [ElementProperty<VTEnc>] =
            hevc
            ? [
                .boolean(
                    "aud", nick: "Access unit delimiters",
                    blurb:
                        "An access unit delimiter (H.265 7.3.2.5) first in every access unit, in every stream format "
                        + "(MPEG-TS wants them, H.222.0 2.17); off by default, as x265enc writes none",
                    default: false, .playing, at: \.hevcAccessUnitDelimiters)
            ]
            : [
                EncoderProperties.entropyMode(),
                .boolean(
                    "aud", nick: "Access unit delimiters",
                    blurb:
                        "An access unit delimiter (H.264 7.3.2.4) first in every access unit, in every stream format "
                        + "(x264enc's aud; MPEG-TS wants them, H.222.0 2.14.1); false saves 6 bytes a frame",
                    default: true, .playing, at: \.accessUnitDelimiters),
                .boolean(
                    "intra-refresh", nick: "Intra refresh",
                    blurb:
                        "Periodic intra refresh instead of key frames (x264enc intra-refresh): a column of intra "
                        + "blocks sweeps the picture every max-keyframe-interval frames, with a recovery point SEI "
                        + "(D.2.8); only the first frame is IDR, so the bit rate has no key-frame peaks (low-latency "
                        + "streaming). x264 only: VA-API devices are not asked", default: false, at: \.intraRefresh,
                    didChange: { $0.warnIfEncoding(changed: "intra-refresh") })
            ]
        let statistics: ElementProperty<VTEnc> = .boolean(
            "frame-stats", nick: "Frame statistics",
            blurb:
                "Post the element message vtenc-frame-stats for every frame: pts, dts, frame-type, keyframe, qp, bits, and "
                + "mse-y/psnr-y where the encoder measures them (x264: VideoToolbox's CalculateMeanSquaredError, asked "
                + "for when the encoding session starts; nvh264enc's frame-stats)", default: false, .playing,
            at: \.frameStatistics)
        return rateProperties + EncoderProperties.frameQPBounds() + EncoderProperties.gopStructure()
            + EncoderProperties.adaptiveQuantization() + entropy
            + [statistics] + [
                EncoderProperties.hardware(default: context.defaultHardware, hevc: hevc),
                EncoderProperties.maxThreads(),
                EncoderProperties.activeBackend()
            ]
    }

    /// A property that takes effect when the next session starts, set while one runs (GObject
    /// does not refuse a write outside its flags' states): one WARNING says so, rather than a
    /// value read back as set and silently not used.
    private func warnIfEncoding(changed name: String) {
        guard state.withLock({ $0.session }) != nil else { return }
        ElementMessage(
            domain: .library(GST_LIBRARY_ERROR_SETTINGS),
            text: "\(name) changes only before the stream starts (NULL or READY); the encoder goes on as it was "
                + "until it next starts. While playing, change bitrate or data-rate-limits instead"
        )
        .post(from: object, isError: false)
    }

    /// The bit rate (and its limits) may change while encoding, from any mode to any other (a
    /// bit rate set on an encoder started without one, limits added or removed): the session
    /// applies it at the next frame (VideoToolbox's AverageBitRate and DataRateLimits are
    /// likewise settable during a session). A value that cannot be applied is one WARNING
    /// saying why, and the encoder goes on as it was: the property reads back what was set,
    /// so silence would pass for success.
    private func applyBitRateChange(of name: String) {
        guard let session = state.withLock({ $0.session }) else { return }
        let mode = settings.withLock { $0.rateControl }
        // Under quality the limits still apply (x264's VBV under CRF); under cqp nothing does.
        if (name == "bitrate" && mode == .constantQuality) || (name == "quality" && mode != .constantQuality)
            || mode == .constantQP
        {
            // rate-control (which picks what bitrate means) is fixed while a session runs.
            ElementMessage(
                domain: .library(GST_LIBRARY_ERROR_SETTINGS),
                text:
                    "\(name) is not used with rate-control=\(mode.nick) (\(mode == .constantQP ? "qp-i, qp-p and qp-b decide" : mode == .constantQuality ? "quality decides" : "bitrate decides") the rate); set rate-control="
                    + "\(name == "quality" ? "quality" : "abr or cbr") before the stream starts; the encoder goes on as it was"
            )
            .post(from: object, isError: false)
            return
        }
        let (properties, problem) = compressionProperties()
        if let problem {
            ElementMessage(
                domain: .library(GST_LIBRARY_ERROR_SETTINGS), text: problem + "; the encoder goes on as it was"
            )
            .post(from: object, isError: false)
            return
        }
        do throws(VTError) {
            try session.setProperties { current in
                current.averageBitRate = properties.averageBitRate
                current.dataRateLimits = properties.dataRateLimits
                current.hrdBuffer = properties.hrdBuffer
                current.quality = properties.quality
            }
            log.info(
                object,
                "bit rate now \(properties.averageBitRate.map { "\($0 / 1000) kbit/s" } ?? "automatic"), "
                    + "\(properties.dataRateLimits.count) data rate limits, from the next frame")
        } catch {
            ElementMessage(
                domain: .library(GST_LIBRARY_ERROR_SETTINGS),
                text:
                    "the new bit rate could not be applied while encoding (\(GStreamerWording.message(error))); the encoder goes on as it was"
            )
            .post(from: object, isError: false)
        }
    }

    /// The session properties the element's settings mean, or what is wrong with them.
    private func compressionProperties() -> (CompressionProperties, String?) {
        let current = settings.withLock { $0 }
        var properties = CompressionProperties()
        let bitrate = current.bitrateKilobits > 0 ? Int(current.bitrateKilobits) * 1000 : nil
        switch current.rateControl {
        case .constantQuality:
            properties.quality = current.quality
        case .constantQP:
            properties.constantQuantizers = FrameTypeQuantizers(
                intra: Int(current.quantizerI), predicted: Int(current.quantizerP),
                bidirectional: Int(current.quantizerB))
            // No rate to control: bitrate and data-rate-limits are not used (said at the caps).
            if bitrate != nil || !current.dataRateLimits.isEmpty || current.maxBitrateKilobits > 0
                || current.bufferKilobits > 0
            {
                return (
                    properties,
                    "bitrate, data-rate-limits, max-bitrate and vbv-buffer-size are not used with rate-control=cqp (qp-i, "
                        + "qp-p and qp-b decide the rate); unset them or choose rate-control=abr or cbr"
                )
            }
        case .constantBitRate:
            guard let bitrate else {
                return (properties, "rate-control=cbr needs a bitrate (kbit/s); set bitrate or use rate-control=abr")
            }
            properties.averageBitRate = bitrate
            // Constant bit rate: the average is also the limit over every second (or the
            // buffer's rate, when vbv-buffer-size sizes it below).
            if current.bufferKilobits == 0 {
                properties.dataRateLimits = [DataRateLimit(bytes: bitrate / 8, seconds: 1)]
            }
            if current.maxBitrateKilobits > 0, Int(current.maxBitrateKilobits) * 1000 != bitrate {
                return (
                    properties,
                    "rate-control=cbr codes at bitrate (\(bitrate / 1000) kbit/s); max-bitrate (\(current.maxBitrateKilobits) "
                        + "kbit/s) is a VBR peak: unset it or use rate-control=abr"
                )
            }
        case .averageBitRate:
            properties.averageBitRate = bitrate
        }
        if !current.dataRateLimits.isEmpty {
            guard let limits = Self.parseDataRateLimits(current.dataRateLimits) else {
                return (
                    properties,
                    "data-rate-limits \"\(current.dataRateLimits)\" is not a list of BYTES,SECONDS pairs separated by ';' (e.g. \"250000,1;400000,2\")"
                )
            }
            properties.dataRateLimits += limits
        }
        if current.maxBitrateKilobits > 0 || current.bufferKilobits > 0 {
            guard current.dataRateLimits.isEmpty else {
                return (
                    properties,
                    "data-rate-limits and max-bitrate/vbv-buffer-size both describe the decoder's buffer; use one or the other"
                )
            }
            let peak = current.maxBitrateKilobits > 0 ? Int(current.maxBitrateKilobits) * 1000 : bitrate
            guard let peak else {
                return (
                    properties,
                    "vbv-buffer-size needs the rate that fills the buffer: set max-bitrate (or bitrate)"
                )
            }
            if let bitrate, peak < bitrate {
                return (
                    properties,
                    "max-bitrate \(peak / 1000) kbit/s is below bitrate \(bitrate / 1000) kbit/s, a peak the average would "
                        + "exceed; raise max-bitrate or lower bitrate"
                )
            }
            properties.hrdBuffer = DataRateBuffer(
                bitsPerSecond: peak, bufferBits: current.bufferKilobits > 0 ? Int(current.bufferKilobits) * 1000 : peak)
        }
        properties.realTime = current.realtime
        properties.intraRefresh = current.intraRefresh
        properties.maxKeyFrameIntervalDuration = Double(current.maxKeyframeIntervalDuration) / 1e9
        properties.calculatesMeanSquaredError = current.frameStatistics
        current.encoder.apply(to: &properties)
        return (properties, nil)
    }

    static func parseDataRateLimits(_ text: String) -> [DataRateLimit]? {
        var limits: [DataRateLimit] = []
        for pair in text.split(separator: ";") {
            let fields = pair.split(separator: ",").map { $0.trimmingSpaces }
            guard fields.count == 2, let bytes = Int(fields[0]), let seconds = Double(fields[1]), bytes > 0, seconds > 0
            else {
                return nil
            }
            limits.append(DataRateLimit(bytes: bytes, seconds: seconds))
        }
        return limits.isEmpty ? nil : limits
    }

    var activeBackend: String { state.withLock { $0.activeBackend } }

    /// Input frames the session may hold at once: its frame delay and the frame being encoded;
    /// 0 before a session exists.
    private var heldInputFrames: UInt32 {
        state.withLock { $0.session }.map { UInt32(clamping: $0.frameDelay + 1) } ?? 0
    }

    /// The allocation query upstream sends after the caps (the session exists by then): the base
    /// class keeps every input buffer until its frame is encoded, so vtenc holds the session's
    /// frame delay plus one. Saying so as min_buffers (as x264enc does) lets an upstream with a
    /// bounded pool - vtdec - allow for them instead of waiting for buffers vtenc keeps until it
    /// gets more.
    func proposeAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool {
        var caps: UnsafeMutablePointer<GstCaps>?
        gst_query_parse_allocation(query, &caps, nil)
        let held = heldInputFrames
        var info = GstVideoInfo()
        if let caps, held > 0, gst_query_get_n_allocation_pools(query) == 0, gst_video_info_from_caps(&info, caps) != 0
        {
            gst_query_add_allocation_pool(query, nil, guint(swiftvt_video_info_size(&info)), held, 0)
        }
        return parent.proposeAllocation(query)
    }

    // MARK: Lifecycle

    /// hardware=require at NULL -> READY and READY -> PAUSED (before the base class's change_state): whether a
    /// VA-API device here encodes H.264 at all (sizes and profiles are checked at set_format).
    func prepare(_ transition: GstStateChange) -> Bool {
        guard transition == GST_STATE_CHANGE_NULL_TO_READY || transition == GST_STATE_CHANGE_READY_TO_PAUSED else {
            return true
        }
        return checkHardwarePolicy()
    }

    private func checkHardwarePolicy() -> Bool {
        let policy = settings.withLock { $0.encoder.hardware }
        if codecType == .hevc { return HardwareRequirement.checkHEVCEncoding(policy, element: object) }
        return sessions.checkHardwarePolicy(policy, work: .encoding, element: object)
    }

    func start() -> Bool {
        state.resetSession(keepingBackendName: false)
        refusedCaps.forget()
        return true
    }

    /// READY -> NULL: the device is let go; the next open looks for one again.
    func close() -> Bool {
        sessions.close()
        return true
    }

    func stop() -> Bool {
        state.resetSession(keepingBackendName: true)
        delivered.discardAll()
        return true
    }

    /// New input caps: a session for them, with one ERROR (not one per sticky-event retry) for
    /// caps, settings or a downstream that can never work.
    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool {
        guard let caps = swiftvt_codec_state_caps(input) else { return false }
        if let reason = refusedCaps.reasonPosted(for: caps) {
            log.debug(object, "refusing the same caps again: \(reason)")
            return false
        }
        guard let refusal = configure(for: input) else { return true }
        refusedCaps.refuse(caps, with: refusal, from: object)
        return false
    }

    /// Makes the session for the input caps and negotiates the output when it can; the ERROR to
    /// post otherwise.
    private func configure(for input: UnsafeMutablePointer<GstVideoCodecState>) -> ElementMessage? {
        let info = swiftvt_codec_state_info(input)
        let width = Int(swiftvt_video_info_width(info))
        let height = Int(swiftvt_video_info_height(info))
        // The sink template lets only formats of the table through.
        let format = info.flatMap { VideoFormatMapping.pixelFormat(of: $0.pointee) } ?? .i420
        let rate = FrameRate(Int(swiftvt_video_info_fps_n(info)), Int(swiftvt_video_info_fps_d(info)))
        // A caps change: what was queued under the old format goes out first.
        if let running = state.withLock({ $0.session }) {
            _ = complete(running)
            running.invalidate()
        }
        let pad = swiftvt_video_encoder_src_pad(encoder)
        let hevc = codecType == .hevc
        let preferred = swiftvt_pad_peer_preferred_string(pad, "stream-format", hevc ? "hvc1" : "avc").map {
            String(cString: $0)
        }
        let streamFormat: StreamFormat =
            hevc
            ? .h265(preferred.flatMap(H265Output.StreamFormat.init(rawValue:)) ?? .hvc1)
            : .h264(preferred.flatMap(H264Output.StreamFormat.init(rawValue:)) ?? .avc)
        // Downstream's H.264 profiles and levels; an HEVC profile follows the input format alone.
        let downstream =
            hevc
            ? H264DownstreamConstraints(profiles: nil, levels: nil)
            : pad.map { H264DownstreamConstraints(sourcePad: $0) }
                ?? H264DownstreamConstraints(profiles: nil, levels: nil)
        let (properties, problem) = compressionProperties()
        if let problem {
            return ElementMessage(domain: .library(GST_LIBRARY_ERROR_SETTINGS), text: problem)
        }
        var sessionProperties = properties
        if let framesPerSecond = rate.framesPerSecond { sessionProperties.expectedFrameRate = framesPerSecond }
        // Colorimetry in the caps becomes the VUI; HDR metadata (mastering-display-info,
        // content-light-level) the SEI.
        if let caps = input.pointee.caps, let info {
            VideoSignalCaps.apply(caps: caps, info: info.pointee, to: &sessionProperties)
        }
        switch swiftvt_video_info_interlace_mode(info) {
        case GST_VIDEO_INTERLACE_MODE_PROGRESSIVE:
            break
        case let mode where hevc:
            // HEVC has no interlaced coding tools: fields are coded as pictures with a pic_struct
            // SEI (D.3.3), which the x265 backend does not write.
            return .stream(
                GST_STREAM_ERROR_FORMAT,
                "interlace-mode=\(String(cString: gst_video_interlace_mode_to_string(mode))) is not encoded as HEVC "
                    + "(x265's field coding is not wired); deinterlace upstream (deinterlace) or use vtenc for H.264")
        case GST_VIDEO_INTERLACE_MODE_INTERLEAVED, GST_VIDEO_INTERLACE_MODE_MIXED:
            // Both fields in each buffer: coded interlaced, in the caps' field order (bottom
            // field first unless the caps say top, as x264enc reads them).
            sessionProperties.fieldCoding =
                swiftvt_video_info_field_order(info) == GST_VIDEO_FIELD_ORDER_TOP_FIELD_FIRST
                ? .topFieldFirst : .bottomFieldFirst
        default:
            return .stream(
                GST_STREAM_ERROR_FORMAT,
                "interlace-mode=\(String(cString: gst_video_interlace_mode_to_string(swiftvt_video_info_interlace_mode(info)))) (one field per buffer) is not encoded; "
                    + "weave the fields into frames upstream (interlace-mode=interleaved)")
        }
        let profile: H264ProfileLevel.Profile?
        let level: String?
        if hevc {
            (profile, level) = (nil, nil)
        } else {
            do throws(DownstreamRefusal) {
                profile = try downstream.encoderProfile(
                    lossless: sessionProperties.requestsLossless, pixelFormat: format)
                level = try downstream.encoderLevel(
                    width: width, height: height, frameRate: sessionProperties.expectedFrameRate,
                    bitRate: sessionProperties.averageBitRate, high: profile != .main && profile != .constrainedBaseline
                )
            } catch {
                return .stream(
                    GST_STREAM_ERROR_FORMAT,
                    "cannot encode \(width)x\(height) \(VideoFormatMapping.gstreamerName(for: format) ?? format.description) for downstream: \(error.reason)"
                )
            }
        }
        if profile != nil || level != nil {
            // A level alone still needs a profile to name: the one x264 writes for the format
            // (High, High 10, High 4:2:2, or High 4:4:4 Predictive for 4:4:4 and lossless).
            let named =
                profile
                ?? H264DownstreamConstraints.profile(coding: format, lossless: sessionProperties.requestsLossless)
            sessionProperties.profileLevel = H264ProfileLevel(profile: named, level: level)
        }
        let configuration = settings.withLock { $0.encoder }
        let handler: CompressionOutputHandler = { [delivered] frame in delivered.append(frame) }
        do throws(VTError) {
            let session = try sessions.makeCompressionSession(
                codecType: codecType, width: width, height: height, sourcePixelFormat: format, settings: configuration,
                properties: sessionProperties, outputHandler: handler)
            try session.prepareToEncodeFrames()
            EncoderNotices.post(session, from: object)
            let encoding = Encoding(
                session: session, inputState: CodecStateReference(input), width: width, height: height,
                pixelFormat: format,
                frameRate: rate, streamFormat: streamFormat, downstream: downstream,
                hevcDownstream: hevc ? pad.map { H265DownstreamConstraints(sourcePad: $0) } : nil)
            state.withLock { state in
                state.encoding = encoding
                state.activeBackend = session.activeBackendName
            }
            // B-frames put DTS before PTS: start PTS at 1000 hours, as x264enc does, so DTS never
            // has to be negative.
            if session.properties.usesBFrames {
                gst_video_encoder_set_min_pts(encoder, GstClockTime(swiftvt_second) * 60 * 60 * 1000)
            }
            let frames = session.frameDelay
            let frameDuration = rate.frameDuration() ?? MediaTime(value: 1, timescale: 25)
            let latency = GstClockTime(frameDuration.multiplied(by: frames).gstreamerNanoseconds)
            gst_video_encoder_set_latency(encoder, latency, latency)
            log.info(
                object,
                "encoding \(width)x\(height) \(format) with \(session.activeBackendName) to \(streamFormat.name), \(frames) frames of delay"
            )
            // The output caps now, when the encoder has written its SPS/PPS already (x264 at
            // prepare): a downstream that refuses them fails the caps event with one error
            // instead of the first frame (or, with a long look-ahead, the EOS drain).
            if let description = session.formatDescription,
                case .failed(_, let message)? = negotiateIfNeeded(description)
            {
                return message
            }
            return nil
        } catch {
            return SessionFactory.failure(error, width: width, height: height, format: format)
        }
    }

    // MARK: Frames

    func handleFrame(_ frame: consuming CodecFrame) -> GstFlowReturn {
        // The base class keeps the frame pending (its own reference) until outputDelivered
        // finishes it by number; this reference goes when encode returns.
        let flow = encode(frame)
        return flow == GST_FLOW_OK ? outputDelivered() : flow
    }

    /// Hands the frame's picture to the session; GST_FLOW_OK when it took it. The state is read
    /// once per frame (one lock), and written again only when the backend changed.
    private func encode(_ frame: consuming CodecFrame) -> GstFlowReturn {
        let frameNumber = frame.systemFrameNumber
        let timedPTS = frame.presentationTimeStamp
        let duration = frame.duration
        // Frames without time stamps (an appsrc that sets none) are encoded like x264enc does:
        // in arrival order, at the caps' frame rate; the session needs a presentation time per
        // frame, so one is made up from the last one plus a frame (the output keeps none).
        let snapshot = state.withLock { state -> FrameSnapshot? in
            guard var encoding = state.encoding else { return nil }
            let pts = encoding.untimedFrames.presentationTime(
                of: timedPTS, duration: duration, frameRate: encoding.frameRate)
            state.encoding = encoding
            return FrameSnapshot(
                session: encoding.session, inputState: encoding.inputState, pixelFormat: encoding.pixelFormat,
                presentationTime: pts, activeBackend: state.activeBackend)
        }
        guard let snapshot, let input = frame.inputBuffer else { return GST_FLOW_NOT_NEGOTIATED }
        let session = snapshot.session
        let pts = snapshot.presentationTime
        let forceKeyFrame = frame.isForceKeyFrame
        // GstVideoCaptionMeta on the frame: written as A/53 SEI with its picture, as x264enc does.
        let (captions, malformedCaptions) = CaptionMeta.read(input)
        if malformedCaptions { warnMalformedCaptions() }
        guard
            let image = MappedVideoFrame.pixelBuffer(
                input, info: swiftvt_codec_state_info(snapshot.inputState.pointer),
                format: snapshot.pixelFormat)
        else {
            ElementMessage.stream(
                GST_STREAM_ERROR_FORMAT,
                "an input frame could not be read (mapping failed or its layout does not match the caps)"
            )
            .post(from: object, isError: true)
            return GST_FLOW_ERROR
        }
        do throws(VTError) {
            try session.encode(
                image,
                presentationTimeStamp: MediaTime(gstreamerNanoseconds: UInt64(pts)),
                duration: duration == swiftvt_clock_time_none
                    ? .invalid : MediaTime(gstreamerNanoseconds: UInt64(duration)),
                frameProperties: FrameProperties(forceKeyFrame: forceKeyFrame, closedCaptions: captions),
                frameReference: UInt64(frameNumber))
        } catch {
            noteBackend(of: session, known: snapshot.activeBackend)
            ElementMessage.stream(
                GST_STREAM_ERROR_ENCODE, encodingFailure(error, session: session), debug: error.description
            )
            .post(from: object, isError: true)
            return GST_FLOW_ERROR
        }
        noteBackend(of: session, known: snapshot.activeBackend)
        return GST_FLOW_OK
    }

    /// One WARNING per stream for caption metas that cannot be written (a type GStreamer added
    /// later, or bytes that are not their type's layout); the frame is encoded without them.
    private func warnMalformedCaptions() {
        let first = state.withLock { state -> Bool in
            guard state.encoding?.warnedMalformedCaptions == false else { return false }
            state.encoding?.warnedMalformedCaptions = true
            return true
        }
        guard first else { return }
        ElementMessage.stream(
            GST_STREAM_ERROR_FORMAT,
            "a GstVideoCaptionMeta on an input frame is not CEA-708 (raw or CDP) or CEA-608 (raw or S334-1A) data "
                + "of its type's layout; those captions are not written (check the element that attached them)"
        )
        .post(from: object, isError: false)
    }

    /// Posts the session's notices and keeps active-backend current (written only when it
    /// changed from `known`, the name last read).
    private func noteBackend(of session: CompressionSession, known: String? = nil) {
        let name = EncoderNotices.post(session, from: object)
        guard name != known else { return }
        state.withLock { $0.activeBackend = name }
    }

    /// The text of an encoding error: under hardware=require a failing VA-API encoder says that
    /// no fallback was allowed.
    private func encodingFailure(_ error: VTError, session: CompressionSession) -> String {
        let hardware = settings.withLock { $0.encoder.hardware }
        if session.isHardwareAccelerated && hardware == .require {
            return "the VA-API encoder failed: \(GStreamerWording.message(error)). hardware=require allows no "
                + "software fallback; use hardware=auto to continue with x264."
        }
        return "encoding failed: \(GStreamerWording.message(error))"
    }

    /// EOS: the held frames go out. GstVideoEncoder drops a flow error returned here without a
    /// message, so an unreported one is posted: a stream must not end "successfully" without
    /// its frames.
    func finish() -> GstFlowReturn {
        guard let session = state.withLock({ $0.session }) else { return GST_FLOW_OK }
        let flow = complete(session)
        if flow == GST_FLOW_NOT_NEGOTIATED || flow == GST_FLOW_NOT_LINKED {
            let name = gst_flow_get_name(flow).map { String(cString: $0) } ?? "\(flow.rawValue)"
            ElementMessage.stream(
                GST_STREAM_ERROR_FAILED,
                "the last frames could not be sent downstream (\(name)) at the end of the stream"
            )
            .post(from: object, isError: true)
        }
        return flow
    }

    private func complete(_ session: CompressionSession) -> GstFlowReturn {
        do throws(VTError) {
            try session.completeFrames()
        } catch {
            noteBackend(of: session)
            ElementMessage.stream(
                GST_STREAM_ERROR_ENCODE, encodingFailure(error, session: session), debug: error.description
            )
            .post(from: object, isError: true)
            return GST_FLOW_ERROR
        }
        noteBackend(of: session)
        return outputDelivered()
    }

    /// A flush (seek): the session completes its delayed frames into the void (the base class has
    /// dropped their pending frames already) and stays; the next frame starts a new GOP with an
    /// IDR picture (``CompressionSession/completeFrames(until:)``).
    func flush() -> Bool {
        delivered.discardAll()
        guard let session = state.withLock({ $0.session }) else { return true }
        // Complete into the void: the base class has already dropped its pending frames.
        try? session.completeFrames()
        delivered.discardAll()
        return true
    }
}

/// Presentation times for input frames that carry none: the session (like
/// VTCompressionSessionEncodeFrame) needs one per frame to order them and to give DTS, so a
/// frame without one is placed one frame after the previous frame (its duration, else the caps'
/// frame rate, else the last duration seen, else 1/25 s).
struct UntimedFrameClock: Sendable {
    private var lastPresentationTime: UInt64?
    private var lastDuration: UInt64?

    mutating func presentationTime(of pts: GstClockTime, duration: GstClockTime, frameRate: FrameRate) -> GstClockTime {
        let none = GstClockTime(swiftvt_clock_time_none)
        if duration != none { lastDuration = UInt64(duration) }
        if pts != none {
            lastPresentationTime = UInt64(pts)
            return pts
        }
        let second = UInt64(swiftvt_second)
        let step: UInt64
        if duration != none {
            step = UInt64(duration)
        } else if frameRate.isKnown {
            step = second * UInt64(frameRate.denominator) / UInt64(frameRate.numerator)
        } else {
            step = lastDuration ?? second / 25
        }
        // Saturating: the previous time stamp (upstream's) may be at the end of the range; the
        // session then reports the frame's time as out of range instead of the element trapping.
        let next = lastPresentationTime.map { $0.addingSaturating(step) } ?? 0
        lastPresentationTime = next
        return GstClockTime(next)
    }
}
