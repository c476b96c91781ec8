import CGStreamer
import CSwiftVTShim
import H264
import MediaCore
import NALBitstream
import SoftwareCodecs
import SwiftVT
import Synchronization
import VAAPICodecs

/// `vtdec` / `vtdec_hw`: H.264 and H.265 decoding on the VTDecompressionSession model (the seeds'
/// case two). vtdec_hw decodes H.264 only: no hardware backend decodes H.265 yet.
///
/// A GstVideoDecoder subclass that maps caps to a `FormatDescription`, input buffers to
/// `SampleBuffer`s (wrapped, not copied) and the session's `PixelBuffer`s to output buffers
/// (wrapped with a GstVideoMeta when downstream takes one; copied into standard layout only when it
/// does not). All decoding is in the `DecompressionSession` and its backend.
///
/// The element is four files, one per job: this one (state, interface, life cycle, the events
/// and queries it answers), `VTDecInput.swift` (input caps and what downstream takes),
/// `VTDecDecoding.swift` (frames into the session) and `VTDecOutput.swift` (pictures out).
///
/// Locks: `settings`, `state`, `input`, `pictureHashes` and `captions` are never held together, and none is held while
/// calling out of the element (finishing frames, negotiating, queries, posting messages, calls
/// into the session): each is taken for a few field reads or writes. `input` (the sample
/// builder) is the one held across work, the reading of one input frame, which may rewrite the
/// frame into length-prefixed NAL units (a copy); only the streaming thread (set_format,
/// handle_frame, start/stop) ever takes it, so that copy holds up no other thread, while `state`
/// is read by property reads (active-backend) and queries from other threads. `pictureHashes`
/// (verify-picture-hash) is, like `input`, the streaming thread's: it reads each sample's hash SEI.
final class VTDec: VideoDecoderSubclass, PropertySettingsOwner, @unchecked Sendable {
    // `decoder` is the GObject that owns this object (created in instance_init, released in
    // finalize); mutable state is behind the mutexes. The stored properties are internal, not
    // private, only so that the element's other files can use them.
    let decoder: UnsafeMutablePointer<GstVideoDecoder>
    static let debugCategory = DebugCategory(named: "vtdec", description: "SwiftVT H.264 and H.265 decoder")
    let log = VTDec.debugCategory
    var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(decoder) }

    /// Property values, as set on the element (declared in ``interface(for:)``).
    struct Settings: Sendable {
        var hardware: HardwarePolicy
        var maxThreads: Int32 = 0
        /// Check each H.265 picture against its decoded picture hash SEI (D.3.19).
        var verifyPictureHash = false
        /// Which hardware device (``HardwareDeviceChoice``), as set: checked at the state change.
        var hardwareDevice = "auto"
    }

    let settings: Mutex<Settings>

    typealias InputFormat = NALSampleInputFormat

    /// What one run (start to stop) knows, each part from the moment it exists: the input caps
    /// (set_format), downstream's allocation answer, the session (the first frame after the
    /// parameter sets), the output caps (the first picture).
    struct State: SessionElementState {
        var input: InputCaps?
        var downstream = DownstreamAllocation()
        var decoding: Decoding?
        /// The output caps set last.
        var negotiated: (format: GstVideoFormat, width: Int, height: Int)?
        /// Kept after stop: the `active-backend` property.
        var activeBackend = ""
        var waitingForParameterSetsWarned = false

        var session: DecompressionSession? { decoding?.session }
    }

    /// The input state from set_format: output caps take framerate, pixel aspect ratio and
    /// colorimetry from it; the rate also sets the latency.
    struct InputCaps {
        var state: CodecStateReference
        var frameRate: FrameRate?
    }

    /// Downstream's answer to the allocation query.
    struct DownstreamAllocation {
        var supportsVideoMeta = false
        /// A pool of its own: copies go into it.
        var offersPool = false
    }

    /// A running session.
    struct Decoding {
        var session: DecompressionSession
    }

    let state = Mutex(State())
    /// The stream's parameter sets and the description they make; access units as samples.
    let input = Mutex(VTDecStreamInput.h264(H264SampleBuilder()))
    /// verify-picture-hash: the hashes of the pictures in flight, by frame number; streaming
    /// thread only, like `input`.
    let pictureHashes = Mutex(PictureHashBook())
    /// The A/53 captions of the pictures in flight, by frame number; streaming thread only.
    let captions = Mutex(PerPictureValues<ClosedCaptionData>())
    let sessions: SessionFactory<HardwareDecoders>
    /// The caps set_format refused last (one ERROR, not one per sticky-event retry).
    let refusedCaps = CapsRefusals()
    /// Frames the session's output handler delivered, taken after each call into the session.
    let delivered = DeliveredOutput<DecodedFrame>()
    /// Downstream as the decoder's picture pools see it: the min_buffers of the allocation
    /// query raise their bound, and flushing (FLUSH_START, the way down to READY) ends a decode
    /// waiting for downstream to give a picture back.
    let consumer = PixelBufferConsumer()
    /// Where pictures are copied for a downstream that takes no GstVideoMeta and offers no pool
    /// (see ``copyForDownstreamWithoutVideoMeta``); streaming thread only.
    let copyPool = Mutex<PixelBufferPool?>(nil)

    init(instance: UnsafeMutableRawPointer, context: ElementClassContext) {
        decoder = instance.assumingMemoryBound(to: GstVideoDecoder.self)
        settings = Mutex(Settings(hardware: context.defaultHardware))
        sessions = SessionFactory(log: log, element: instance)
        // Output is in presentation order from the session; the base class must not reorder.
        gst_video_decoder_set_packetized(decoder, 1)
        gst_video_decoder_set_needs_format(decoder, 1)
    }

    // MARK: Interface

    static func interface(for context: ElementClassContext) -> ElementInterface<VTDec> {
        let hardwareOnly = context.defaultHardware == .require
        // vtdec_hw with a VA or CUDA device: only the profiles it decodes, so that decodebin does not
        // choose vtdec_hw for a stream the device cannot take (GStreamer's va plugin does the same).
        let sinkCaps = hardwareOnly ? context.hardwareSinkCaps : nil
        // vtdec_hw decodes H.264 only (no hardware backend has an H.265 decoder yet), so it offers
        // autopluggers no H.265 caps.
        let h264Caps = "video/x-h264, stream-format = (string) { avc, avc3, byte-stream }, alignment = (string) au"
        let h265Caps = "video/x-h265, stream-format = (string) { hvc1, hev1, byte-stream }, alignment = (string) au"
        return ElementInterface(
            longName: hardwareOnly ? "SwiftVT H.264 decoder (hardware required)" : "SwiftVT H.264 and H.265 decoder",
            classification: hardwareOnly ? "Codec/Decoder/Video/Hardware" : "Codec/Decoder/Video",
            description: hardwareOnly
                ? "Decodes H.264 on the VideoToolbox decompression-session model: VA-API or NVDEC when available, "
                    + "libavcodec otherwise"
                : "Decodes H.264 and H.265 on the VideoToolbox decompression-session model: H.264 on VA-API or NVDEC "
                    + "when available, libavcodec otherwise",
            padTemplates: [
                .sink(sinkCaps ?? (hardwareOnly ? h264Caps : h264Caps + "; " + h265Caps)),
                .source(
                    "video/x-raw, format = (string) { I420, NV12, I420_10LE, P010_10LE, Y42B, I422_10LE, Y444, Y444_10LE }, "
                        + "width = (int) [ 1, 2147483647 ], height = (int) [ 1, 2147483647 ], framerate = (fraction) [ 0/1, 2147483647/1 ]"
                )
            ],
            properties: [
                .hardwarePolicy(
                    "hardware", nick: "Hardware decoding",
                    blurb:
                        "Whether to decode on a hardware device, VA-API or NVDEC (hardware-device chooses; like "
                        + "VideoToolbox's EnableHardwareAcceleratedVideoDecoder / "
                        + "RequireHardwareAcceleratedVideoDecoder). No hardware backend decodes H.265: require refuses it, "
                        + "auto decodes it with libavcodec. Takes effect when the next decoding session starts.",
                    wording: DecoderHardwareWording.self, default: context.defaultHardware, at: \.hardware),
                .string(
                    "hardware-device", nick: "Hardware device",
                    blurb:
                        "Which hardware device decodes: auto (every device present: VA-API render nodes and displays, "
                        + "then CUDA devices through NVDEC), va (any VA-API device), a DRM render node such as "
                        + "/dev/dri/renderD128, cuda (any CUDA device) or cuda:N (the CUDA device numbered N). "
                        + "Takes effect at the next state change from NULL.",
                    default: "auto", at: \.hardwareDevice),
                .int(
                    "max-threads", nick: "Maximum threads",
                    blurb:
                        "Decoding threads of the software decoder (0 = one per core). Takes effect when the next decoding session starts.",
                    0...256, default: 0, at: \.maxThreads),
                .boolean(
                    "verify-picture-hash", nick: "Verify picture hashes",
                    blurb:
                        "Check every H.265 picture against the stream's decoded picture hash SEI (MD5, CRC or checksum, "
                        + "H.265 D.3.19) and post a WARNING naming the first picture that differs: a conformance check. "
                        + "Takes effect when the next decoding session starts.",
                    default: false, at: \.verifyPictureHash),
                .reported(
                    "active-backend", nick: "Active backend",
                    blurb: "The decoder in use: e.g. \"libavcodec (software)\"; empty before the first session starts",
                    .string(default: "")
                ) { .string($0.activeBackend) }
            ])
    }

    func withSettings<Result>(_ body: (inout Settings) -> Result) -> Result { settings.withLock { body(&$0) } }

    var hardware: HardwarePolicy { settings.withLock { $0.hardware } }

    var activeBackend: String { state.withLock { $0.activeBackend } }

    // MARK: Lifecycle

    /// hardware=require at NULL -> READY and READY -> PAUSED (before the base class's change_state): whether a
    /// VA-API device here decodes H.264 at all. Whether it takes this stream's profile is known
    /// from the caps or the first SPS (vtdec_hw's sink caps already list what the device decodes).
    func prepare(_ transition: GstStateChange) -> Bool {
        // Only a playing consumer that gives nothing back is keeping pictures; a paused one is
        // not consuming at all, and the pools wait for it however long (PixelBufferConsumer).
        if transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING { consumer.setGrowthPermitted(true) }
        if transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED { consumer.setGrowthPermitted(false) }
        if transition == GST_STATE_CHANGE_PAUSED_TO_READY {
            // Before the base class deactivates the pads, which waits for the streaming thread:
            // a decode waiting for downstream to give a picture back must end first.
            setFlushing(true)
            return true
        }
        guard transition == GST_STATE_CHANGE_NULL_TO_READY || transition == GST_STATE_CHANGE_READY_TO_PAUSED else {
            return true
        }
        return checkHardwarePolicy()
    }

    /// Starts or ends flushing of the decoder's pools and of the base class's output pool (the
    /// one pictures are copied into when downstream takes no GstVideoMeta): a decode or an
    /// acquire waiting at a pool's maximum wakes up.
    func setFlushing(_ flushing: Bool) {
        consumer.setFlushing(flushing)
        guard let pool = gst_video_decoder_get_buffer_pool(decoder) else { return }
        defer { gst_object_unref(pool) }
        if gst_buffer_pool_is_active(pool) != 0 { gst_buffer_pool_set_flushing(pool, flushing.gboolean) }
    }

    private func checkHardwarePolicy() -> Bool {
        let deviceName = settings.withLock { $0.hardwareDevice }
        guard let device = HardwareDeviceChoice(parsing: deviceName) else {
            ElementMessage(
                domain: .library(GST_LIBRARY_ERROR_SETTINGS),
                text: "hardware-device=\(deviceName) names no device: use \(HardwareDeviceChoice.accepted).",
                debug: "hardware-device=\(deviceName)"
            ).post(from: object, isError: true)
            return false
        }
        return sessions.checkHardwarePolicy(hardware, work: .decoding, device: device, element: object)
    }

    func start() -> Bool {
        state.resetSession(keepingBackendName: false)
        input.withLock { $0 = .h264(H264SampleBuilder()) }
        pictureHashes.withLock { $0 = PictureHashBook() }
        captions.withLock { $0 = PerPictureValues() }
        refusedCaps.forget()
        consumer.setFlushing(false)
        consumer.setGrowthPermitted(false)
        consumer.setKeepsPictures(false)
        consumer.resetGrowth()
        consumer.setPixelFormatPreferences(nil)
        copyPool.withLock { $0 = nil }
        return true
    }

    /// READY -> NULL: the device is let go; the next open looks for one again.
    func close() -> Bool {
        sessions.close()
        return true
    }

    func stop() -> Bool {
        state.resetSession(keepingBackendName: true)
        input.withLock { $0 = .h264(H264SampleBuilder()) }
        pictureHashes.withLock { $0 = PictureHashBook() }
        captions.withLock { $0 = PerPictureValues() }
        delivered.discardAll()
        return true
    }

    // MARK: Events

    /// FLUSH_START reaches the element while its streaming thread may be waiting for downstream to
    /// give a picture back (its pools are bounded): the flush must wake it, or the FLUSH_STOP that
    /// follows would wait for the stream lock forever. FLUSH_STOP then runs ``flush()``, which
    /// ends the flushing state.
    func sinkEvent(_ event: consuming OwnedEvent) -> Bool {
        if event.type == GST_EVENT_FLUSH_START { setFlushing(true) }
        return parent.sinkEvent(event)
    }
}
