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
final class VTDec: VideoDecoderSubclass, PropertySettingsOwner, @unchecked Sendable {
    // `decoder` is the GObject that owns this object (created in instance_init, released in
    // finalize); mutable state is behind the mutexes.
    let decoder: UnsafeMutablePointer<GstVideoDecoder>
    static let debugCategory = DebugCategory(named: "vtdec", description: "SwiftVT H.264 decoder")
    let log = VTDec.debugCategory
    var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(decoder) }

    /// Property values, as set on the element (declared in ``interface(for:)``).
    struct Settings: Sendable {
        var hardware: HardwarePolicy
        var maxThreads: Int32 = 0
    }

    let settings: Mutex<Settings>

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

    let state = Mutex(State())
    /// The stream's parameter sets and the description they make; access units as samples.
    let input = Mutex(H264SampleBuilder())
    let sessions: SessionFactory<VAH264DecoderFactory>
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
        guard transition == GST_STATE_CHANGE_NULL_TO_READY || transition == GST_STATE_CHANGE_READY_TO_PAUSED else { return true }
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

// vtdec's input caps and what downstream takes: the caps event, the sink caps query, the
// allocation query, downstream's formats.
extension VTDec {
    // MARK: Input caps

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
        // Copy: codec_data is a few dozen bytes that must outlive the caps.
        let codecData = swiftvt_caps_get_buffer(caps, "codec_data").flatMap { buffer in
            MappedBytes.withReadableBytes(of: buffer) { Array($0) }
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

    /// The sink caps query: GstVideoDecoder's proxy of downstream's caps, without the fields that
    /// say nothing about the H.264 stream. A downstream that takes any size (fakesink, a src
    /// template of ranges) would otherwise add width/height/framerate *ranges*, and an upstream
    /// capsfilter such as `video/x-h264,stream-format=byte-stream,alignment=au` then fails with
    /// "Output caps are unfixed" where avdec_h264 decodes (its src template has no such ranges).
    /// Fixed values that downstream really demands are kept.
    func sinkCaps(filter: UnsafeMutablePointer<GstCaps>?) -> UnsafeMutablePointer<GstCaps>? {
        guard let proxied = gst_video_decoder_proxy_getcaps(decoder, nil, filter) else { return nil }
        if gst_caps_is_any(proxied) != 0 || gst_caps_is_empty(proxied) != 0 { return proxied }
        // gst_caps_make_writable (a macro): a copy when the caps are shared.
        guard let writable = gst_mini_object_make_writable(UnsafeMutableRawPointer(proxied).assumingMemoryBound(to: GstMiniObject.self))
        else { return nil }
        let caps = UnsafeMutableRawPointer(writable).assumingMemoryBound(to: GstCaps.self)
        for index in 0..<gst_caps_get_size(caps) {
            guard let structure = gst_caps_get_structure(caps, index) else { continue }
            for field in ["width", "height", "framerate", "pixel-aspect-ratio"] {
                if let value = gst_structure_get_value(structure, field), gst_value_is_fixed(value) == 0 {
                    gst_structure_remove_field(structure, field)
                }
            }
        }
        guard let simplified = gst_caps_simplify(caps) else { return nil }
        guard let filter else { return simplified }
        // Removing fields widened the caps: the answer must still lie within the query's filter.
        defer { gst_caps_unref(simplified) }
        return gst_caps_intersect_full(filter, simplified, GST_CAPS_INTERSECT_FIRST)
    }

    // MARK: Downstream

    /// Downstream's answer to the allocation query. Without GstVideoMeta, pictures are copied:
    /// into downstream's pool when it offers one, else into vtdec's own bounded copy pool
    /// (``copyForDownstreamWithoutVideoMeta(_:format:into:)``), which grows for a downstream that
    /// keeps pictures where a GstBufferPool at its maximum would block.
    func decideAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool {
        var downstreamMinimum: guint = 0
        var downstreamPool: UnsafeMutablePointer<GstBufferPool>?
        if gst_query_get_n_allocation_pools(query) > 0 {
            gst_query_parse_nth_allocation_pool(query, 0, &downstreamPool, nil, &downstreamMinimum, nil)
        }
        noteAllocation(
            downstreamSupportsVideoMeta: gst_query_find_allocation_meta(query, swiftvt_video_meta_api_type(), nil) != 0,
            downstreamMinimumBuffers: Int(downstreamMinimum), downstreamOffersPool: downstreamPool != nil)
        if let downstreamPool { gst_object_unref(downstreamPool) }
        return parent.decideAllocation(query)
    }


    private func noteAllocation(downstreamSupportsVideoMeta: Bool, downstreamMinimumBuffers: Int, downstreamOffersPool: Bool) {
        state.withLock { state in
            state.downstreamSupportsVideoMeta = downstreamSupportsVideoMeta
            state.downstreamOffersPool = downstreamOffersPool
        }
        // Downstream keeps this many of the pictures it receives (a sink's last sample, an
        // encoder's lookahead): the pools must not wait for those.
        consumer.setHeldBufferCount(downstreamMinimumBuffers)
        log.debug(object, "downstream \(downstreamSupportsVideoMeta ? "takes" : "does not take") GstVideoMeta, keeps \(downstreamMinimumBuffers) buffers")
    }

    /// A downstream that renegotiated while playing (a RECONFIGURE event: a capsfilter now asking
    /// for NV12) gets the formats it takes now from the next picture on: the decoders read the
    /// consumer's preferences for every picture, and a new format renegotiates in `finish`. The
    /// flag is set again for the base class, which renegotiates its allocation on it.
    func followDownstreamFormats() {
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

    /// The output formats, most preferred first: the decoder's native format when downstream
    /// takes it (or takes anything), else the formats downstream lists that SwiftVT can convert to.
    /// A VA-API device decodes into NV12 surfaces: where downstream takes NV12 as well as the
    /// native I420, NV12 is offered after it, so the hardware path reads pictures back without
    /// de-interleaving them (the libavcodec path keeps the first, its native format).
    func preferredPixelFormats(for description: FormatDescription) -> [PixelFormat] {
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
}

// vtdec's frames into the session: a session for the stream's parameter sets, each input frame
// as a sample, draining and flushing.
extension VTDec {
    func handleFrame(_ frame: consuming CodecFrame) -> GstFlowReturn {
        // `decode` gives the frame back on every way out: dropped, or kept pending by the base
        // class (its own reference) to be finished by number with what the session delivered.
        if let stopped = decode(frame) { return stopped }
        return outputDelivered()
    }

    /// Hands the frame to the session: nil when it took the frame (or its failure counted
    /// toward max-errors without reaching it), else the flow handle_frame returns.
    private func decode(_ frame: consuming CodecFrame) -> GstFlowReturn? {
        guard let input = frame.inputBuffer else {
            return frame.drop(by: decoder)
        }
        followDownstreamFormats()
        // Reverse playback: GstVideoDecoder decodes a GOP forwards and keeps its pictures until
        // the GOP is complete, then pushes them backwards; the pools must grow to a GOP at once.
        let reverse = decoder.pointee.input_segment.rate < 0
        if reverse != consumer.keepsPictures { consumer.setKeepsPictures(reverse) }
        let frameNumber = frame.systemFrameNumber
        let isSync = frame.isSyncPoint
        let pts = frame.presentationTimeStamp
        let duration = frame.duration
        guard let input = MappedBuffer(input) else {
            return frame.drop(by: decoder)
        }

        // The frame's NAL units as the session's samples carry them, and any parameter sets.
        let read = self.input.withLock { builder in Result { () throws(H264Error) in try builder.read(input.bytes) } }
        let unit: H264SampleBuilder.AccessUnit
        switch read {
        case .failure(let damage):
            let flow = countError(.stream(GST_STREAM_ERROR_DECODE, "vtdec: a damaged input frame (\(damage)) was dropped."))
            _ = frame.drop(by: decoder)
            return flow
        case .success(let value):
            unit = value
        }
        report(unit.notices)

        // A session for the current parameter sets: keep, create or replace.
        switch ensureSession() {
        case .failure(let message):
            message.post(from: object, isError: true)
            _ = frame.drop(by: decoder)
            return GST_FLOW_NOT_NEGOTIATED
        case .success(nil):
            // No SPS/PPS yet: nothing can be decoded before them.
            let warn = state.withLock { state in
                defer { state.waitingForParameterSetsWarned = true }
                return !state.waitingForParameterSetsWarned
            }
            if warn { log.warning(object, "dropping frames until the stream gives its SPS and PPS") }
            return frame.drop(by: decoder)
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
                        delivered.discardAll()
                        frame.dropIfPending(by: decoder)
                        return GST_FLOW_FLUSHING
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
                        frame.dropIfPending(by: decoder)
                        return GST_FLOW_ERROR
                    }
                    log.warning(object, "decode of frame \(frameNumber) failed: \(error)")
                    let flow = countError(.stream(GST_STREAM_ERROR_DECODE, "vtdec: \(error.message)", debug: error.description))
                    frame.dropIfPending(by: decoder)
                    if flow != GST_FLOW_OK { return flow }
                }
            } catch {
                _ = frame.drop(by: decoder)
                return countError(.stream(GST_STREAM_ERROR_DECODE, "vtdec: could not wrap the input frame (\(error))"))
            }
            return nil
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

    // MARK: Draining and flushing

    /// Before a caps change or a discontinuity: the session's delayed frames go out.
    func drain() -> GstFlowReturn {
        guard let session = state.withLock({ $0.session }) else { return GST_FLOW_OK }
        return drainSession(session)
    }

    /// EOS: as a drain.
    func finish() -> GstFlowReturn { drain() }

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



    /// Counts a decoding error toward `max-errors` (GST_VIDEO_DECODER_ERROR): GST_FLOW_OK while
    /// under the limit (a warning is logged), GST_FLOW_ERROR with an element error past it.
    func countError(_ message: ElementMessage, file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line) -> GstFlowReturn {
        log.warning(object, message.text, file: file, function: function, line: line)
        return file.withCString { fileName in
            function.withCString { functionName in
                swiftvt_video_decoder_error(decoder, 1, message.text, message.debug, fileName, functionName, Int32(clamping: line))
            }
        }
    }
}

// vtdec's pictures out: the frames the session delivered, finished in order with their
// pictures wrapped (GstVideoMeta) or copied for a downstream that takes none.
extension VTDec {
    /// Finishes the frames the session delivered, in order.
    func outputDelivered() -> GstFlowReturn {
        let frames = delivered.takeAll()
        if consumer.isFlushing {
            // Their pictures go back to the pools; the frames are flushed with the base class's.
            return GST_FLOW_FLUSHING
        }
        var result = GST_FLOW_OK
        for decoded in frames {
            guard let pending = gst_video_decoder_get_frame(decoder, Int32(truncatingIfNeeded: decoded.frameReference)) else {
                log.debug(object, "frame \(decoded.frameReference) is no longer pending")
                continue
            }
            let frame = CodecFrame(adopting: pending)
            guard let image = decoded.imageBuffer else {
                let message = decoded.status.map { "vtdec: a frame could not be decoded: \($0.message)" }
                    ?? "vtdec: the decoder dropped a frame"
                if decoded.status != nil {
                    let flow = countError(.stream(GST_STREAM_ERROR_DECODE, message, debug: decoded.status?.description))
                    if flow != GST_FLOW_OK { result = flow }
                }
                _ = frame.drop(by: decoder)
                continue
            }
            if let status = decoded.status {
                // Decoded with errors concealed: counts toward max-errors; the base class
                // discards it when discard-corrupted-frames is set.
                let flow = countError(.stream(GST_STREAM_ERROR_DECODE, "vtdec: corrupt data in a frame: \(status.message)", debug: status.description))
                if flow != GST_FLOW_OK { result = flow }
                frame.markCorrupted()
            }
            let flow = finish(frame, with: image)
            if flow != GST_FLOW_OK && result == GST_FLOW_OK { result = flow }
        }
        return result
    }

    /// Gives the frame its picture (wrapped or copied, after negotiating a new format) and
    /// finishes it; drops it when that fails.
    private func finish(_ frame: consuming CodecFrame, with image: PixelBuffer) -> GstFlowReturn {
        guard let format = VideoFormatMapping.gstreamerFormat(for: image.pixelFormat) else {
            _ = frame.drop(by: decoder)
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
                _ = frame.drop(by: decoder)
                return GST_FLOW_NOT_NEGOTIATED
            }
            gst_video_codec_state_unref(output)
            guard gst_video_decoder_negotiate(decoder) != 0 else {
                state.withLock { $0.negotiated = nil }
                _ = frame.drop(by: decoder)
                return GST_FLOW_NOT_NEGOTIATED
            }
            log.info(object, "output \(image.width)x\(image.height) \(image.pixelFormat)")
        }
        let (useVideoMeta, downstreamPool) = state.withLock { ($0.downstreamSupportsVideoMeta, $0.downstreamOffersPool) }
        if useVideoMeta, let buffer = VideoFormatMapping.wrap(image, format: format) {
            frame.setOutput(buffer)
            return frame.finish(by: decoder)
        }
        if !downstreamPool {
            switch copyForDownstreamWithoutVideoMeta(image, format: format, into: frame) {
            case .copied: return frame.finish(by: decoder)
            case .failed(let flow):
                _ = frame.drop(by: decoder)
                return flow
            case .notPossible: break
            }
        }
        // Copy: downstream cannot take a GstVideoMeta, so it needs GStreamer's default
        // strides and plane offsets, which the decoder's pool buffers do not have; it offered
        // its own pool (or the copy pool's layout is not the default), which is downstream's to bound.
        let allocation = gst_video_decoder_allocate_output_frame(decoder, frame.pointer)
        guard allocation == GST_FLOW_OK else {
            _ = frame.drop(by: decoder)
            return allocation
        }
        guard let output = frame.outputBuffer, let state = gst_video_decoder_get_output_state(decoder) else {
            _ = frame.drop(by: decoder)
            return GST_FLOW_ERROR
        }
        defer { gst_video_codec_state_unref(state) }
        let copied: Void? = MappedBytes.withWritableVideoFrame(of: output, info: swiftvt_codec_state_info(state)) { videoFrame in
            for (index, plane) in image.planes.enumerated() {
                guard let destination = swiftvt_video_frame_plane_data(&videoFrame, UInt32(index)) else { continue }
                let stride = Int(swiftvt_video_frame_plane_stride(&videoFrame, UInt32(index)))
                let rowBytes = min(stride, plane.bytesPerRow, VideoFormatMapping.rowBytes(of: image, plane: index))
                for row in 0..<plane.height {
                    (destination + row * stride).copyMemory(from: plane.baseAddress + row * plane.bytesPerRow, byteCount: rowBytes)
                }
            }
        }
        guard copied != nil else {
            _ = frame.drop(by: decoder)
            return GST_FLOW_ERROR
        }
        return frame.finish(by: decoder)
    }

    /// Copies a picture for a downstream that takes no GstVideoMeta and offered no pool into a
    /// buffer of the element's own copy pool, laid out as GStreamer's default for the format
    /// (rows on 4 bytes, planes back to back: GstVideoInfo's strides and offsets, checked), and
    /// wraps it. The copy pool is bounded like the decoder's (back pressure on a slow consumer)
    /// and grows like it for a consumer that keeps pictures (an application holding its last K
    /// samples), where GStreamer's own pool would block for ever at its maximum.
    /// `.notPossible` where the layout differs from the output state's (the base class's path
    /// then copies).
    private func copyForDownstreamWithoutVideoMeta(
        _ image: PixelBuffer, format: GstVideoFormat, into frame: borrowing CodecFrame
    ) -> CopyOutcome {
        let attributes = PixelBufferPool.Attributes(
            width: image.width, height: image.height, pixelFormat: image.pixelFormat, rowAlignment: 4,
            maximumBufferCount: Self.copyPoolSlack)
        let pool: PixelBufferPool? = copyPool.withLock { current in
            if let existing = current, existing.attributes == attributes { return existing }
            current?.invalidate()
            current = try? PixelBufferPool(attributes: attributes, consumer: consumer)
            return current
        }
        guard let pool else { return .notPossible }
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
            return .notPossible
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
        guard let buffer = VideoFormatMapping.wrap(destination, format: format, coveringWholeRows: true) else { return .notPossible }
        frame.setOutput(buffer)
        return .copied
    }

    private enum CopyOutcome {
        /// The frame's output buffer is set.
        case copied
        case failed(GstFlowReturn)
        case notPossible
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
        let info = swiftvt_codec_state_info(state).pointee
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
}
