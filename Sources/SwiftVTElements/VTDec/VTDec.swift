import CGStreamer
import CSwiftVTShim
import H264
import MediaCore
import SoftwareCodecs
import VAAPICodecs
import Synchronization
import SwiftVT

/// `vtdec` / `vtdec_hw`: H.264 decoding on the VTDecompressionSession model (the seeds' case two).
///
/// A GstVideoDecoder subclass that maps caps to a `FormatDescription`, input buffers to
/// `SampleBuffer`s (wrapped, not copied) and the session's `PixelBuffer`s to output buffers
/// (wrapped with a GstVideoMeta when downstream takes one; copied into standard layout only when it
/// does not). All decoding is in the `DecompressionSession` and its backend.
///
/// Locks: `settings`, `state` and `input` are never held together, and none is held while
/// calling out of the element (finishing frames, negotiating, queries, posting messages, calls
/// into the session): each is taken for a few field reads or writes. `input` (the sample
/// builder) is the one held across work, the reading of one input frame, which may rewrite the
/// frame into length-prefixed NAL units (a copy); only the streaming thread (set_format,
/// handle_frame, start/stop) ever takes it, so that copy holds up no other thread, while `state`
/// is read by property reads (active-backend) and queries from other threads.
final class VTDec: SwiftElement, PropertySettingsOwner, @unchecked Sendable {
    // `decoder` is the GObject that owns this object (created in instance_init, released in
    // finalize); mutable state is behind the two mutexes.
    private let decoder: UnsafeMutablePointer<GstVideoDecoder>
    private let log = DebugCategory(pointer: swiftvt_vtdec_debug_category())
    private var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(decoder) }

    /// Property values, as set on the element (declared in ``interface(for:)``).
    struct Settings: Sendable {
        var hardware: HardwarePolicy
        var maxThreads: Int32 = 0
    }

    private let settings: Mutex<Settings>

    typealias InputFormat = H264SampleBuilder.InputFormat

    struct State: SessionElementState {
        var frameRate: (numerator: Int32, denominator: Int32)?
        var session: DecompressionSession?
        /// Parameter sets a running session has not seen yet: sent in band before the next frame.
        var pendingInBandParameterSets: [[UInt8]] = []
        var negotiated: (format: GstVideoFormat, width: Int, height: Int)?
        var downstreamSupportsVideoMeta = false
        /// Downstream answered the allocation query with a pool of its own: copies go into it.
        var downstreamOffersPool = false
        var activeBackend = ""
        var waitingForParameterSetsWarned = false
        /// The input state from set_format: output caps take framerate, pixel aspect ratio and
        /// colorimetry from it.
        var inputState: CodecStateReference?
    }

    private let state = Mutex(State())
    /// The stream's parameter sets and the description they make; access units as samples.
    private let input = Mutex(H264SampleBuilder())
    private let sessions: SessionFactory<VAH264DecoderFactory>
    /// The caps set_format refused last (one ERROR, not one per sticky-event retry).
    private let refusedCaps = CapsRefusals()
    /// Frames the session's output handler delivered, taken after each call into the session.
    private let delivered = DeliveredOutput<DecodedFrame>()
    /// Downstream as the decoder's picture pools see it: the min_buffers of the allocation
    /// query raise their bound, and flushing (FLUSH_START, the way down to READY) ends a decode
    /// waiting for downstream to give a picture back.
    private let consumer = PixelBufferConsumer()
    /// Where pictures are copied for a downstream that takes no GstVideoMeta and offers no pool
    /// (see ``copyForDownstreamWithoutVideoMeta``); streaming thread only.
    private let copyPool = Mutex<PixelBufferPool?>(nil)

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
        // vtdec_hw with a VA device: only the profiles it decodes, so that decodebin does not
        // choose vtdec_hw for a stream the device cannot take (GStreamer's va plugin does the same).
        let sinkCaps = hardwareOnly ? context.hardwareSinkCaps : nil
        return ElementInterface(
            longName: hardwareOnly ? "SwiftVT H.264 decoder (hardware required)" : "SwiftVT H.264 decoder",
            classification: hardwareOnly ? "Codec/Decoder/Video/Hardware" : "Codec/Decoder/Video",
            description: "Decodes H.264 on the VideoToolbox decompression-session model: VA-API when available, libavcodec otherwise",
            padTemplates: [
                .sink(sinkCaps ?? "video/x-h264, stream-format = (string) { avc, avc3, byte-stream }, alignment = (string) au"),
                .source("video/x-raw, format = (string) { I420, NV12, I420_10LE, P010_10LE, Y42B, I422_10LE, Y444, Y444_10LE }, "
                    + "width = (int) [ 1, 2147483647 ], height = (int) [ 1, 2147483647 ], framerate = (fraction) [ 0/1, 2147483647/1 ]"),
            ],
            properties: [
                .hardwarePolicy(
                    "hardware", nick: "Hardware decoding",
                    blurb: "Whether to decode on a VA-API device (like VideoToolbox's EnableHardwareAcceleratedVideoDecoder / "
                        + "RequireHardwareAcceleratedVideoDecoder). Takes effect when the next decoding session starts.",
                    wording: DecoderHardwareWording.self, default: context.defaultHardware, at: \.hardware),
                .int("max-threads", nick: "Maximum threads",
                     blurb: "Decoding threads of the software decoder (0 = one per core). Takes effect when the next decoding session starts.",
                     0...256, default: 0, at: \.maxThreads),
                .reported("active-backend", nick: "Active backend",
                          blurb: "The decoder in use: e.g. \"libavcodec (software)\"; empty before the first session starts",
                          .string(default: "")) { .string($0.activeBackend) },
            ])
    }

    func withSettings<Result>(_ body: (inout Settings) -> Result) -> Result { settings.withLock { body(&$0) } }

    private var hardware: HardwarePolicy { settings.withLock { $0.hardware } }

    var activeBackend: String { state.withLock { $0.activeBackend } }

    // MARK: Lifecycle

    /// hardware=require at NULL -> READY and READY -> PAUSED (vtdec.c's change_state): whether a
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
        guard transition == GST_STATE_CHANGE_NULL_TO_READY || transition == GST_STATE_CHANGE_READY_TO_PAUSED else { return true }
        return checkHardwarePolicy()
    }

    /// Starts or ends flushing of the decoder's pools and of the base class's output pool.
    private func setFlushing(_ flushing: Bool) {
        consumer.setFlushing(flushing)
        swiftvt_vtdec_set_output_pool_flushing(decoder, flushing ? 1 : 0)
    }

    /// FLUSH_START (vtdec.c's sink_event): wakes a decode waiting for a picture.
    func flushStart() {
        setFlushing(true)
    }

    private func checkHardwarePolicy() -> Bool {
        sessions.checkHardwarePolicy(hardware, work: .decoding, element: object)
    }

    func start() -> Bool {
        state.resetSession(keepingBackendName: false)
        input.withLock { $0 = H264SampleBuilder() }
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
        input.withLock { $0 = H264SampleBuilder() }
        delivered.discardAll()
        return true
    }

    func noteAllocation(downstreamSupportsVideoMeta: Bool, downstreamMinimumBuffers: Int, downstreamOffersPool: Bool) {
        state.withLock { state in
            state.downstreamSupportsVideoMeta = downstreamSupportsVideoMeta
            state.downstreamOffersPool = downstreamOffersPool
        }
        // Downstream keeps this many of the pictures it receives (a sink's last sample, an
        // encoder's lookahead): the pools must not wait for those.
        consumer.setHeldBufferCount(downstreamMinimumBuffers)
        log.debug(object, "downstream \(downstreamSupportsVideoMeta ? "takes" : "does not take") GstVideoMeta, keeps \(downstreamMinimumBuffers) buffers")
    }

    // MARK: Caps

    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool {
        guard let caps = swiftvt_codec_state_caps(input) else { return false }
        if let reason = refusedCaps.reasonPosted(for: caps) {
            // Posted once already: refuse again quietly.
            log.debug(object, "refusing the same caps again: \(reason)")
            return false
        }
        switch inputFormat(from: caps) {
        case .failure(let message):
            refusedCaps.refuse(caps, with: message, from: object)
            return false
        case .success(let (inputFormat, record, streamFormat, rate)):
            if let refusal = hardwareRefusal(of: record) {
                refusedCaps.refuse(caps, with: refusal, from: object)
                return false
            }
            accept(input, inputFormat: inputFormat, record: record, streamFormat: streamFormat, frameRate: rate)
            return true
        }
    }

    /// Under hardware=require, when codec_data already holds the SPS/PPS: the ERROR for a stream
    /// the device cannot decode (profile, chroma format, bit depth, interlacing, size), at the caps
    /// rather than at the first frame. Without codec_data the first SPS decides.
    private func hardwareRefusal(of record: AVCDecoderConfigurationRecord?) -> ElementMessage? {
        guard let record, hardware == .require,
              let description = try? FormatDescription(h264ParameterSets: record.sequenceParameterSets + record.pictureParameterSets),
              let reason = sessions.hardwareFactory.unavailableReason(for: description)
        else { return nil }
        let name = HardwareRequirement.factoryName(of: object)
        return .stream(GST_STREAM_ERROR_CODEC_NOT_FOUND,
                       "\(name): hardware=require, but the VA-API device cannot decode this stream: \(SessionWording.gstreamer(reason)). "
                           + "Use hardware=auto (or the vtdec element) to decode it with libavcodec.",
                       debug: reason)
    }

    /// How the caps' stream-format, codec_data and framerate describe the input, or the ERROR for
    /// caps that can never be decoded.
    private func inputFormat(
        from caps: UnsafeMutablePointer<GstCaps>
    ) -> Result<(InputFormat, AVCDecoderConfigurationRecord?, String, (Int32, Int32)?), ElementMessage> {
        let streamFormat = swiftvt_caps_get_string(caps, "stream-format").map { String(cString: $0) } ?? "byte-stream"
        var codecData: [UInt8]?
        if let buffer = swiftvt_caps_get_buffer(caps, "codec_data") {
            var map = GstMapInfo()
            if gst_buffer_map(buffer, &map, swiftvt_map_read()) != 0 {
                // Copy: codec_data is a few dozen bytes that must outlive the caps.
                codecData = Array(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
                gst_buffer_unmap(buffer, &map)
            }
        }
        var numerator: Int32 = 0
        var denominator: Int32 = 1
        let hasRate = swiftvt_caps_get_fraction(caps, "framerate", &numerator, &denominator) != 0 && numerator > 0

        var record: AVCDecoderConfigurationRecord?
        if let codecData {
            do throws(H264Error) {
                record = try AVCDecoderConfigurationRecord(parsing: codecData)
            } catch {
                let hint = codecData.contains(where: { $0 & 0x1F == 15 })
                    ? " It may describe an SVC/MVC stream (a subset SPS), which vtdec does not decode." : ""
                return .failure(.stream(GST_STREAM_ERROR_FORMAT,
                    "vtdec: the codec_data in the caps is not a valid avcC record (\(error)).\(hint) Check the demuxer or parser upstream, or let h264parse-to-avcc build codec_data from the stream's SPS/PPS.",
                    debug: "stream-format \(streamFormat), \(codecData.count) bytes"))
            }
        }
        let inputFormat: InputFormat
        switch streamFormat {
        case "avc":
            guard let record else {
                return .failure(.stream(GST_STREAM_ERROR_FORMAT,
                    "vtdec: stream-format=avc needs codec_data (the avcC record) in the caps, and there is none. Put h264parse or h264parse-to-avcc in front of vtdec."))
            }
            inputFormat = .avc(nalUnitHeaderLength: record.nalUnitHeaderLength)
        case "avc3":
            inputFormat = .avc3(nalUnitHeaderLength: record?.nalUnitHeaderLength ?? 4)
        default:
            inputFormat = .byteStream
        }
        return .success((inputFormat, record, streamFormat, hasRate ? (numerator, denominator) : nil))
    }

    private func accept(
        _ input: UnsafeMutablePointer<GstVideoCodecState>, inputFormat: InputFormat, record: AVCDecoderConfigurationRecord?,
        streamFormat: String, frameRate: (Int32, Int32)?
    ) {
        let reference = CodecStateReference(input)
        state.withLock { state in
            state.inputState = reference
            state.frameRate = frameRate
        }
        // New codec_data (a resolution change, new PPSs): the next frame checks whether the
        // running session can take it.
        self.input.withLock { _ = $0.setInput(inputFormat, configuration: record) }
        log.info(object, "input: stream-format \(streamFormat)\(record.map { ", codec_data with \($0.sequenceParameterSets.count) SPS and \($0.pictureParameterSets.count) PPS" } ?? "")")
        // The session follows on the first frame, once the parameter sets are known.
    }

    // MARK: Frames

    func handleFrame(_ frame: UnsafeMutablePointer<GstVideoCodecFrame>) -> GstFlowReturn {
        guard let input = swiftvt_codec_frame_input_buffer(frame) else {
            return gst_video_decoder_drop_frame(decoder, frame)
        }
        followDownstreamFormats()
        // Reverse playback: GstVideoDecoder decodes a GOP forwards and keeps its pictures until
        // the GOP is complete, then pushes them backwards; the pools must grow to a GOP at once.
        let reverse = decoder.pointee.input_segment.rate < 0
        if reverse != consumer.keepsPictures { consumer.setKeepsPictures(reverse) }
        let frameNumber = swiftvt_codec_frame_number(frame)
        let isSync = swiftvt_codec_frame_is_sync_point(frame) != 0
        let pts = swiftvt_codec_frame_pts(frame)
        let duration = swiftvt_codec_frame_duration(frame)
        guard let input = MappedBuffer(input) else {
            return gst_video_decoder_drop_frame(decoder, frame)
        }

        // The frame's NAL units as the session's samples carry them, and any parameter sets.
        let read = self.input.withLock { builder in Result { () throws(H264Error) in try builder.read(input.bytes) } }
        let unit: H264SampleBuilder.AccessUnit
        switch read {
        case .failure(let damage):
            let flow = countError(.stream(GST_STREAM_ERROR_DECODE, "vtdec: a damaged input frame (\(damage)) was dropped."))
            gst_video_decoder_drop_frame(decoder, frame)
            return flow
        case .success(let value):
            unit = value
        }
        report(unit.notices)

        // A session for the current parameter sets: keep, create or replace.
        switch ensureSession() {
        case .failure(let message):
            message.post(from: object, isError: true)
            gst_video_decoder_drop_frame(decoder, frame)
            return GST_FLOW_NOT_NEGOTIATED
        case .success(nil):
            // No SPS/PPS yet: nothing can be decoded before them.
            let warn = state.withLock { state in
                defer { state.waitingForParameterSetsWarned = true }
                return !state.waitingForParameterSetsWarned
            }
            if warn { log.warning(object, "dropping frames until the stream gives its SPS and PPS") }
            return gst_video_decoder_drop_frame(decoder, frame)
        case .success(let session?):
            let inBand = state.withLock { state in
                defer { state.pendingInBandParameterSets.removeAll() }
                return state.pendingInBandParameterSets
            }
            let timing = SampleTimingInfo(
                duration: duration == swiftvt_clock_time_none ? .invalid : MediaTime(gstreamerNanoseconds: UInt64(duration)),
                presentationTimeStamp: pts == swiftvt_clock_time_none ? .invalid : MediaTime(gstreamerNanoseconds: UInt64(pts)),
                decodeTimeStamp: .invalid)
            do throws(SampleBufferError) {
                let sampleBuffer = try H264SampleBuilder.sampleBuffer(
                    unit, original: input.blockBuffer(), inBandParameterSets: inBand,
                    formatDescription: session.formatDescription, timing: timing, isSync: isSync)
                do throws(VTError) {
                    try session.decode(sampleBuffer, flags: [.enableTemporalProcessing], frameReference: UInt64(frameNumber))
                    noteBackendChange(of: session)
                } catch {
                    if error.code == .flushing || consumer.isFlushing {
                        // A seek or a state change ended a wait for downstream: not an error.
                        return dropFlushed(frameNumber: frameNumber, frame: frame)
                    }
                    if session.isHardwareAccelerated && error.code == .decoderFailed {
                        // hardware=require (auto would have switched to software): the device
                        // cannot go on, and there is nothing to fall back to.
                        ElementMessage.stream(
                            GST_STREAM_ERROR_DECODE,
                            "vtdec: the VA-API decoder failed: \(error.message). hardware=require allows no software "
                                + "fallback; use hardware=auto to continue in software.",
                            debug: error.description
                        ).post(from: object, isError: true)
                        if let pending = gst_video_decoder_get_frame(decoder, Int32(bitPattern: frameNumber)) {
                            gst_video_decoder_drop_frame(decoder, pending)
                        }
                        gst_video_codec_frame_unref(frame)
                        return GST_FLOW_ERROR
                    }
                    log.warning(object, "decode of frame \(frameNumber) failed: \(error)")
                    let flow = countError(.stream(GST_STREAM_ERROR_DECODE, "vtdec: \(error.message)", debug: error.description))
                    if let pending = gst_video_decoder_get_frame(decoder, Int32(bitPattern: frameNumber)) {
                        gst_video_decoder_drop_frame(decoder, pending)
                    }
                    if flow != GST_FLOW_OK { return flow }
                }
            } catch {
                gst_video_decoder_drop_frame(decoder, frame)
                return countError(.stream(GST_STREAM_ERROR_DECODE, "vtdec: could not wrap the input frame (\(error))"))
            }
            // The base class keeps its own reference to the frame in its pending list.
            gst_video_codec_frame_unref(frame)
            return outputDelivered()
        }
    }

    /// A downstream that renegotiated while playing (a RECONFIGURE event: a capsfilter now asking
    /// for NV12) gets the formats it takes now from the next picture on: the decoders read the
    /// consumer's preferences for every picture, and a new format renegotiates in `finish`. The
    /// flag is set again for the base class, which renegotiates its allocation on it.
    private func followDownstreamFormats() {
        let pad = swiftvt_video_decoder_src_pad(decoder)
        guard gst_pad_check_reconfigure(pad) != 0 else { return }
        gst_pad_mark_reconfigure(pad)
        guard let description = state.withLock({ $0.session?.formatDescription }) else { return }
        let formats = preferredPixelFormats(for: description)
        if formats != consumer.pixelFormatPreferences {
            consumer.setPixelFormatPreferences(formats)
            log.info(object, "downstream renegotiated: output formats now \(formats)")
        }
    }

    /// Tells what the builder noticed about the input: a wrong label once as a WARNING (so the
    /// caps get fixed upstream), damage and ignored parameter sets in the log.
    private func report(_ notices: [H264SampleBuilder.Notice]) {
        for notice in notices {
            switch notice {
            case .lengthPrefixedUnderByteStreamLabel(let length):
                ElementMessage.stream(
                    GST_STREAM_ERROR_FORMAT,
                    "vtdec: the input is labelled stream-format=byte-stream but holds \(length)-byte length-prefixed NAL units (stream-format=avc), "
                        + "not start codes; decoding them as avc. Fix the caps upstream (stream-format=avc with codec_data).")
                    .post(from: object, isError: false)
            case .damagedLength(let damage, let intactBytes):
                log.warning(object, "damaged input frame (\(damage)): decoding its \(intactBytes) intact bytes")
            case .sequenceParameterSetChangeIgnored(let id):
                log.warning(object, "an SPS changing seq_parameter_set_id \(id) outside an IDR access unit was ignored (7.4.1.2.1; damaged input?)")
            }
        }
    }

    /// The running session when it can decode the current description; otherwise the old one is
    /// drained and a new one made. nil when there are no parameter sets yet.
    private func ensureSession() -> Result<DecompressionSession?, ElementMessage> {
        let current = state.withLock { $0.session }
        let description = input.withLock { $0.formatDescription }
        guard let description else { return .success(nil) }
        if let current {
            if current.formatDescription == description { return .success(current) }
            if current.canAccept(description) {
                // Same decoder configuration: the new parameter sets go in band before the next
                // frame, so the running decoder learns them without a reset.
                state.withLock { state in
                    state.pendingInBandParameterSets = description.parameterSets
                }
                log.debug(object, "the running session accepts the new parameter sets")
                return .success(current)
            }
            log.info(object, "the stream changed beyond what the session accepts: draining and starting a new session")
            _ = drainSession(current)
            current.invalidate()
        }
        let configuration = settings.withLock { $0 }
        let formats = preferredPixelFormats(for: description)
        let live = upstreamIsLive()
        // The new session is made with downstream's formats of now.
        consumer.setPixelFormatPreferences(nil)
        let handler: DecompressionOutputHandler = { [delivered] frame in
            delivered.append(frame)
        }
        do throws(VTError) {
            let session = try sessions.makeDecompressionSession(
                formatDescription: description, hardwarePolicy: configuration.hardware,
                threadCount: Int(configuration.maxThreads), lowDelay: live, pixelFormats: formats, consumer: consumer,
                outputHandler: handler)
            state.withLock { state in
                state.session = session
                state.activeBackend = session.activeBackendName
            }
            log.info(object, "decoding \(description.dimensions.width)x\(description.dimensions.height) with \(session.activeBackendName)"
                + (session.backendsPassedOver.isEmpty ? "" : " (passed over: \(session.backendsPassedOver))"))
            // Frame threads only in libavcodec without low delay; VA-API decodes a picture at a time.
            let frameThreads = live || session.isHardwareAccelerated
                ? 0 : LibavcodecDecoderFactory.effectiveThreadCount(requested: Int(configuration.maxThreads))
            reportLatency(for: description, frameThreads: frameThreads, live: live)
            return .success(session)
        } catch {
            state.withLock { $0.session = nil }
            let text: String
            if error.code == .hardwareUnavailable {
                text = "vtdec: hardware=require: \(SessionWording.gstreamer(error.message))"
            } else {
                text = "vtdec: cannot decode this stream: \(SessionWording.gstreamer(error.message))"
            }
            return .failure(.stream(error.code == .hardwareUnavailable ? GST_STREAM_ERROR_CODEC_NOT_FOUND : GST_STREAM_ERROR_DECODE,
                                    text, debug: error.description))
        }
    }

    /// Latency: the frames the decoder holds before a picture comes out, the stream's reorder
    /// depth (none without B-frames or where max_num_reorder_frames says 0) plus a frame per
    /// extra frame thread (none on live input, which is decoded with slice threads).
    private func reportLatency(for description: FormatDescription, frameThreads: Int, live: Bool) {
        guard let frames = H264SampleBuilder.decoderDelay(for: description, frameThreads: frameThreads) else { return }
        let rate: (numerator: Int32, denominator: Int32) = state.withLock { $0.frameRate } ?? (25, 1)
        let latency = MediaTime(value: Int64(rate.denominator) * Int64(frames), timescale: rate.numerator)
        gst_video_decoder_set_latency(decoder, GstClockTime(latency.gstreamerNanoseconds), GstClockTime(latency.gstreamerNanoseconds))
        log.debug(object, "latency \(frames) frames (\(frameThreads) frame threads\(live ? ", live input" : ""))")
    }

    /// Whether upstream is live (the LATENCY query), asked when a session starts: live input is
    /// decoded with slice threads only, so that no frame waits for frame threads (avdec_h264
    /// does the same).
    private func upstreamIsLive() -> Bool {
        guard let query = gst_query_new_latency() else { return false }
        defer { gst_mini_object_unref(UnsafeMutableRawPointer(query).assumingMemoryBound(to: GstMiniObject.self)) }
        var live: gboolean = 0
        guard gst_pad_peer_query(decoder.pointee.sinkpad, query) != 0 else { return false }
        gst_query_parse_latency(query, &live, nil, nil)
        return live != 0
    }

    /// The output formats, most preferred first: the decoder's native format when downstream
    /// takes it (or takes anything), else the formats downstream lists that SwiftVT can convert to.
    /// A VA-API device decodes into NV12 surfaces: where downstream takes NV12 as well as the
    /// native I420, NV12 is offered after it, so the hardware path reads pictures back without
    /// de-interleaving them (the libavcodec path keeps the first, its native format).
    private func preferredPixelFormats(for description: FormatDescription) -> [PixelFormat] {
        let native = Self.nativePixelFormat(for: description)
        let surfaceFormat: [PixelFormat] = native == .i420 ? [.nv12VideoRange] : []
        guard let names = swiftvt_pad_peer_video_formats(swiftvt_video_decoder_src_pad(decoder)) else { return [native] + surfaceFormat }
        defer { g_strfreev(names) }
        var accepted: [PixelFormat] = []
        var index = 0
        while let name = names[index] {
            if let format = VideoFormatMapping.pixelFormat(gstreamerName: String(cString: name)), !accepted.contains(format) {
                accepted.append(format)
            }
            index += 1
        }
        if accepted.isEmpty { return [native] + surfaceFormat }
        if accepted.contains(native) { return [native] + (accepted.contains(.nv12VideoRange) ? surfaceFormat : []) }
        return accepted
    }

    static func nativePixelFormat(for description: FormatDescription) -> PixelFormat {
        let tenBit = (description.extensions.bitDepth ?? 8) > 8
        switch description.extensions.chromaSubsampling {
        case .yuv422?: return tenBit ? .i422TenBit : .i422
        case .yuv444?: return tenBit ? .i444TenBit : .i444
        default: return tenBit ? .i420TenBit : .i420
        }
    }

    // MARK: Output

    func drain() -> GstFlowReturn {
        guard let session = state.withLock({ $0.session }) else { return GST_FLOW_OK }
        return drainSession(session)
    }

    private func drainSession(_ session: DecompressionSession) -> GstFlowReturn {
        do throws(VTError) {
            try session.finishDelayedFrames()
        } catch {
            log.warning(object, "draining failed: \(error)")
        }
        return outputDelivered()
    }

    func flush() -> Bool {
        state.withLock { $0.session }?.flush()
        delivered.discardAll()
        // FLUSH_STOP: the streaming thread has left handle_frame; decoding may wait again.
        setFlushing(false)
        return true
    }

    /// The frame whose decode a flush interrupted, dropped without an error.
    private func dropFlushed(frameNumber: UInt32, frame: UnsafeMutablePointer<GstVideoCodecFrame>) -> GstFlowReturn {
        delivered.discardAll()
        if let pending = gst_video_decoder_get_frame(decoder, Int32(bitPattern: frameNumber)) {
            gst_video_decoder_drop_frame(decoder, pending)
        }
        gst_video_codec_frame_unref(frame)
        return GST_FLOW_FLUSHING
    }

    /// Under hardware=auto a VA-API decoder that fails mid-stream hands over to software: tell
    /// the application (a warning) and update active-backend.
    private func noteBackendChange(of session: DecompressionSession) {
        let name = session.activeBackendName
        let changed = state.withLock { state -> Bool in
            guard state.activeBackend != name else { return false }
            state.activeBackend = name
            return true
        }
        guard changed else { return }
        ElementMessage.stream(
            GST_STREAM_ERROR_DECODE,
            "vtdec: the VA-API decoder failed (\(session.backendFailure ?? "no reason given")); hardware=auto, so decoding "
                + "goes on in software from the next IDR picture (now: \(name))"
        ).post(from: object, isError: false)
        log.warning(object, "now decoding with \(name)")
    }

    /// Finishes the frames the session delivered, in order.
    private func outputDelivered() -> GstFlowReturn {
        let frames = delivered.takeAll()
        if consumer.isFlushing {
            // Their pictures go back to the pools; the frames are flushed with the base class's.
            return GST_FLOW_FLUSHING
        }
        var result = GST_FLOW_OK
        for decoded in frames {
            guard let frame = gst_video_decoder_get_frame(decoder, Int32(truncatingIfNeeded: decoded.frameReference)) else {
                log.debug(object, "frame \(decoded.frameReference) is no longer pending")
                continue
            }
            guard let image = decoded.imageBuffer else {
                let message = decoded.status.map { "vtdec: a frame could not be decoded: \($0.message)" }
                    ?? "vtdec: the decoder dropped a frame"
                if decoded.status != nil {
                    let flow = countError(.stream(GST_STREAM_ERROR_DECODE, message, debug: decoded.status?.description))
                    if flow != GST_FLOW_OK { result = flow }
                }
                gst_video_decoder_drop_frame(decoder, frame)
                continue
            }
            if let status = decoded.status {
                // Decoded with errors concealed: counts toward max-errors; the base class
                // discards it when discard-corrupted-frames is set.
                let flow = countError(.stream(GST_STREAM_ERROR_DECODE, "vtdec: corrupt data in a frame: \(status.message)", debug: status.description))
                if flow != GST_FLOW_OK { result = flow }
                swiftvt_codec_frame_mark_corrupted(frame)
            }
            let flow = finish(frame, with: image)
            if flow != GST_FLOW_OK && result == GST_FLOW_OK { result = flow }
        }
        return result
    }

    private func finish(_ frame: UnsafeMutablePointer<GstVideoCodecFrame>, with image: PixelBuffer) -> GstFlowReturn {
        guard let format = VideoFormatMapping.gstreamerFormat(for: image.pixelFormat) else {
            gst_video_decoder_drop_frame(decoder, frame)
            return countError(.stream(GST_STREAM_ERROR_FORMAT, "vtdec: the decoder produced an unsupported pixel format \(image.pixelFormat)"))
        }
        let negotiation = state.withLock { state -> (needed: Bool, videoMeta: Bool) in
            let wanted = (format, image.width, image.height)
            let needed = state.negotiated.map { $0.format != wanted.0 || $0.width != wanted.1 || $0.height != wanted.2 } ?? true
            if needed { state.negotiated = wanted }
            return (needed, state.downstreamSupportsVideoMeta)
        }
        if negotiation.needed {
            let reference = state.withLock { $0.inputState }
            guard let output = gst_video_decoder_set_output_state(
                decoder, format, UInt32(image.width), UInt32(image.height), reference?.pointer) else {
                gst_video_decoder_drop_frame(decoder, frame)
                return GST_FLOW_NOT_NEGOTIATED
            }
            gst_video_codec_state_unref(output)
            guard gst_video_decoder_negotiate(decoder) != 0 else {
                state.withLock { $0.negotiated = nil }
                gst_video_decoder_drop_frame(decoder, frame)
                return GST_FLOW_NOT_NEGOTIATED
            }
            log.info(object, "output \(image.width)x\(image.height) \(image.pixelFormat)")
        }
        let (useVideoMeta, downstreamPool) = state.withLock { ($0.downstreamSupportsVideoMeta, $0.downstreamOffersPool) }
        if useVideoMeta, let buffer = VideoFormatMapping.wrap(image, format: format) {
            swiftvt_codec_frame_set_output_buffer(frame, buffer)
        } else if !downstreamPool, let copied = copyForDownstreamWithoutVideoMeta(image, format: format) {
            switch copied {
            case .copied(let buffer): swiftvt_codec_frame_set_output_buffer(frame, buffer)
            case .failed(let flow):
                gst_video_decoder_drop_frame(decoder, frame)
                return flow
            }
        } else {
            // Copy: downstream cannot take a GstVideoMeta, so it needs GStreamer's default
            // strides and plane offsets, which the decoder's pool buffers do not have; it offered
            // its own pool, which is downstream's to bound.
            let allocation = gst_video_decoder_allocate_output_frame(decoder, frame)
            guard allocation == GST_FLOW_OK else {
                gst_video_decoder_drop_frame(decoder, frame)
                return allocation
            }
            guard let output = swiftvt_codec_frame_output_buffer(frame),
                  let state = gst_video_decoder_get_output_state(decoder) else {
                gst_video_decoder_drop_frame(decoder, frame)
                return GST_FLOW_ERROR
            }
            defer { gst_video_codec_state_unref(state) }
            var videoFrame = GstVideoFrame()
            guard swiftvt_video_frame_map_write(&videoFrame, swiftvt_codec_state_info_mut(state), output) != 0 else {
                gst_video_decoder_drop_frame(decoder, frame)
                return GST_FLOW_ERROR
            }
            for (index, plane) in image.planes.enumerated() {
                guard let destination = swiftvt_video_frame_plane_data(&videoFrame, UInt32(index)) else { continue }
                let stride = Int(swiftvt_video_frame_plane_stride(&videoFrame, UInt32(index)))
                let rowBytes = min(stride, plane.bytesPerRow, VideoFormatMapping.rowBytes(of: image, plane: index))
                for row in 0..<plane.height {
                    (destination + row * stride).copyMemory(from: plane.baseAddress + row * plane.bytesPerRow, byteCount: rowBytes)
                }
            }
            gst_video_frame_unmap(&videoFrame)
        }
        return gst_video_decoder_finish_frame(decoder, frame)
    }

    /// Copies a picture for a downstream that takes no GstVideoMeta and offered no pool into a
    /// buffer of the element's own copy pool, laid out as GStreamer's default for the format
    /// (rows on 4 bytes, planes back to back: GstVideoInfo's strides and offsets, checked), and
    /// wraps it. The copy pool is bounded like the decoder's (back pressure on a slow consumer)
    /// and grows like it for a consumer that keeps pictures (an application holding its last K
    /// samples), where GStreamer's own pool would block for ever at its maximum.
    /// nil where the layout differs from the output state's (the base class's path then copies).
    private func copyForDownstreamWithoutVideoMeta(
        _ image: PixelBuffer, format: GstVideoFormat
    ) -> CopyOutcome? {
        let attributes = PixelBufferPool.Attributes(
            width: image.width, height: image.height, pixelFormat: image.pixelFormat, rowAlignment: 4,
            maximumBufferCount: Self.copyPoolSlack)
        let pool: PixelBufferPool? = copyPool.withLock { current in
            if let existing = current, existing.attributes == attributes { return existing }
            current?.invalidate()
            current = try? PixelBufferPool(attributes: attributes, consumer: consumer)
            return current
        }
        guard let pool else { return nil }
        let destination: PixelBuffer
        do {
            destination = try pool.makePixelBuffer()
        } catch {
            if case .flushing = error { return .failed(GST_FLOW_FLUSHING) }
            log.warning(object, "no picture for the copy: \(error)")
            return .failed(GST_FLOW_ERROR)
        }
        guard layoutMatchesOutputState(destination) else {
            log.debug(object, "the copy pool's layout is not GStreamer's default for this format: copying into the base class's pool")
            return nil
        }
        // Copy: downstream cannot take a GstVideoMeta, so it needs GStreamer's default strides and
        // plane offsets, which the decoder's pool buffers (rows aligned for SIMD) do not have.
        for (index, plane) in image.planes.enumerated() where index < destination.planes.count {
            let target = destination.planes[index]
            let rowBytes = min(target.bytesPerRow, plane.bytesPerRow, VideoFormatMapping.rowBytes(of: image, plane: index))
            for row in 0..<min(plane.height, target.height) {
                let destination = target.baseAddress + row * target.bytesPerRow
                destination.copyMemory(from: plane.baseAddress + row * plane.bytesPerRow, byteCount: rowBytes)
                // The row's padding (at most 3 bytes) is zeroed: a downstream without GstVideoMeta
                // writes whole rows (a file), which must not carry the pool's earlier contents.
                if target.bytesPerRow > rowBytes { (destination + rowBytes).initializeMemory(as: UInt8.self, repeating: 0, count: target.bytesPerRow - rowBytes) }
            }
        }
        guard let buffer = VideoFormatMapping.wrap(destination, format: format, coveringWholeRows: true) else { return nil }
        return .copied(buffer)
    }

    private enum CopyOutcome {
        case copied(UnsafeMutablePointer<GstBuffer>)
        case failed(GstFlowReturn)
    }

    /// Pictures the copy pool may have outside its own beyond what downstream announced: the one
    /// being copied into, the one being pushed, and a sink's last sample and the one it renders
    /// (basesink keeps the last sample without counting it in min_buffers).
    private static let copyPoolSlack = 4

    /// Whether a copy-pool picture has exactly the strides, plane offsets and size the output
    /// state's GstVideoInfo gives (what a downstream without GstVideoMeta assumes).
    private func layoutMatchesOutputState(_ picture: PixelBuffer) -> Bool {
        guard let state = gst_video_decoder_get_output_state(decoder) else { return false }
        defer { gst_video_codec_state_unref(state) }
        let info = swiftvt_codec_state_info_mut(state).pointee
        let planeCount = Int(info.finfo.pointee.n_planes)
        guard planeCount == picture.planes.count, let first = picture.planes.first else { return false }
        let base = UInt(bitPattern: first.baseAddress)
        var end = base
        let strides = withUnsafeBytes(of: info.stride) { Array($0.bindMemory(to: gint.self)) }
        let offsets = withUnsafeBytes(of: info.offset) { Array($0.bindMemory(to: gsize.self)) }
        for (index, plane) in picture.planes.enumerated() {
            let offset = UInt(bitPattern: plane.baseAddress) - base
            guard Int(strides[index]) == plane.bytesPerRow, UInt(offsets[index]) == offset else { return false }
            end = max(end, UInt(bitPattern: plane.baseAddress) + UInt(plane.bytesPerRow * plane.height))
        }
        return UInt(info.size) == end - base
    }

    /// Counts a decoding error toward `max-errors` (GST_VIDEO_DECODER_ERROR): GST_FLOW_OK while
    /// under the limit (a warning is logged), GST_FLOW_ERROR with an element error past it.
    private func countError(_ message: ElementMessage, file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line) -> GstFlowReturn {
        log.warning(object, message.text, file: file, function: function, line: line)
        return file.withCString { fileName in
            function.withCString { functionName in
                swiftvt_video_decoder_error(decoder, 1, message.text, message.debug, fileName, functionName, Int32(clamping: line))
            }
        }
    }

}

// MARK: C entry points (declared in SwiftVTShim.h)

private func vtdec(_ state: UnsafeMutableRawPointer?) -> VTDec? {
    ElementObject.borrow(state)
}

@_cdecl("swiftvt_vtdec_set_format")
func vtdecSetFormat(
    _ state: UnsafeMutableRawPointer?, _ decoder: UnsafeMutablePointer<GstVideoDecoder>?,
    _ input: UnsafeMutablePointer<GstVideoCodecState>?
) -> gboolean {
    guard let input, let element = vtdec(state) else { return 0 }
    return element.setFormat(input) ? 1 : 0
}

@_cdecl("swiftvt_vtdec_handle_frame")
func vtdecHandleFrame(
    _ state: UnsafeMutableRawPointer?, _ decoder: UnsafeMutablePointer<GstVideoDecoder>?,
    _ frame: UnsafeMutablePointer<GstVideoCodecFrame>?
) -> GstFlowReturn {
    guard let frame, let element = vtdec(state) else { return GST_FLOW_ERROR }
    return element.handleFrame(frame)
}

@_cdecl("swiftvt_vtdec_drain")
func vtdecDrain(_ state: UnsafeMutableRawPointer?, _ decoder: UnsafeMutablePointer<GstVideoDecoder>?) -> GstFlowReturn {
    vtdec(state)?.drain() ?? GST_FLOW_OK
}

@_cdecl("swiftvt_vtdec_flush")
func vtdecFlush(_ state: UnsafeMutableRawPointer?, _ decoder: UnsafeMutablePointer<GstVideoDecoder>?) -> gboolean {
    (vtdec(state)?.flush() ?? true) ? 1 : 0
}

@_cdecl("swiftvt_vtdec_note_allocation")
func vtdecNoteAllocation(_ state: UnsafeMutableRawPointer?, _ supportsVideoMeta: gboolean, _ minimumBuffers: guint, _ offersPool: gboolean) {
    vtdec(state)?.noteAllocation(
        downstreamSupportsVideoMeta: supportsVideoMeta != 0, downstreamMinimumBuffers: Int(minimumBuffers), downstreamOffersPool: offersPool != 0)
}

@_cdecl("swiftvt_vtdec_flush_start")
func vtdecFlushStart(_ state: UnsafeMutableRawPointer?) {
    vtdec(state)?.flushStart()
}
