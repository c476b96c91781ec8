import CGStreamer
import CSwiftVTShim
import H264
import MediaCore
import SoftwareCodecs
import SwiftVT
import Synchronization
import VAAPICodecs

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
        let read = self.input.withLock { builder in builder.read(input.bytes) }
        let unit: NALSampleAccessUnit
        switch read {
        case .failure(let damage):
            let flow = countError(.stream(GST_STREAM_ERROR_DECODE, "a damaged input frame (\(damage)) was dropped."))
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
        case .success(let current?):
            let (session, inBand) = (current.session, current.inBandParameterSets)
            let timing = SampleTimingInfo(
                duration: duration == swiftvt_clock_time_none
                    ? .invalid : MediaTime(gstreamerNanoseconds: UInt64(duration)),
                presentationTimeStamp: pts == swiftvt_clock_time_none
                    ? .invalid : MediaTime(gstreamerNanoseconds: UInt64(pts)),
                decodeTimeStamp: .invalid)
            do throws(SampleBufferError) {
                let sampleBuffer = try H264SampleBuilder.sampleBuffer(
                    unit, original: input.blockBuffer(), inBandParameterSets: inBand,
                    formatDescription: session.formatDescription, timing: timing, isSync: isSync)
                let description = session.formatDescription
                let inputBuffer = frame.inputBuffer
                if let converted = unit.convertedBytes {
                    converted.withUnsafeBytes {
                        notePictureHash(frameNumber: frameNumber, sample: $0, description: description)
                        noteCaptions(frameNumber: frameNumber, input: inputBuffer, sample: $0, description: description)
                    }
                } else {
                    notePictureHash(frameNumber: frameNumber, sample: input.bytes, description: description)
                    noteCaptions(
                        frameNumber: frameNumber, input: inputBuffer, sample: input.bytes, description: description)
                }
                do throws(VTError) {
                    try session.decode(
                        sampleBuffer, flags: [.enableTemporalProcessing], frameReference: UInt64(frameNumber))
                    if session.activeBackendName != current.activeBackend { noteBackendChange(of: session) }
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
                            "the hardware decoder \(session.activeBackendName) failed: \(GStreamerWording.message(error)). "
                                + "hardware=require allows no software "
                                + "fallback; use hardware=auto to continue in software.",
                            debug: error.description
                        ).post(from: object, isError: true)
                        frame.dropIfPending(by: decoder)
                        return GST_FLOW_ERROR
                    }
                    log.warning(object, "decode of frame \(frameNumber) failed: \(error)")
                    let flow = countError(
                        .stream(GST_STREAM_ERROR_DECODE, GStreamerWording.message(error), debug: error.description)
                    )
                    frame.dropIfPending(by: decoder)
                    if flow != GST_FLOW_OK { return flow }
                }
            } catch {
                _ = frame.drop(by: decoder)
                return countError(.stream(GST_STREAM_ERROR_DECODE, "could not wrap the input frame (\(error))"))
            }
            return nil
        }
    }

    /// Tells what the builder noticed about the input: a wrong label once as a WARNING (so the
    /// caps get fixed upstream), damage and ignored parameter sets in the log.
    private func report(_ notices: [NALSampleNotice]) {
        for notice in notices {
            switch notice {
            case .lengthPrefixedUnderByteStreamLabel(let length):
                ElementMessage.stream(
                    GST_STREAM_ERROR_FORMAT,
                    "the input is labelled stream-format=byte-stream but holds \(length)-byte length-prefixed NAL units (stream-format=avc or hvc1), "
                        + "not start codes; decoding them as such. Fix the caps upstream (stream-format=avc or hvc1 with codec_data)."
                )
                .post(from: object, isError: false)
            case .damagedLength(let damage, let intactBytes):
                log.warning(object, "damaged input frame (\(damage)): decoding its \(intactBytes) intact bytes")
            case .sequenceParameterSetChangeIgnored(let id):
                log.warning(
                    object,
                    "an SPS changing seq_parameter_set_id \(id) outside an IDR (H.264 7.4.1.2.1) or IRAP (H.265 7.4.2.4.2) access unit was ignored (damaged input?)"
                )
            }
        }
    }

    /// What one frame needs of the state, read under one lock.
    struct SessionForFrame {
        var session: DecompressionSession
        /// Parameter sets the session has not seen: sent in band before this frame.
        var inBandParameterSets: [[UInt8]] = []
        /// `active-backend` as it stands: the state is written again only when the session
        /// changed backend while decoding.
        var activeBackend: String
    }

    /// The running session when it can decode the current description; otherwise the old one is
    /// drained and a new one made. nil when there are no parameter sets yet.
    private func ensureSession() -> Result<SessionForFrame?, ElementMessage> {
        let (current, activeBackend) = state.withLock { ($0.session, $0.activeBackend) }
        let description = input.withLock { $0.formatDescription }
        guard let description else { return .success(nil) }
        if let current {
            if current.formatDescription == description {
                return .success(SessionForFrame(session: current, activeBackend: activeBackend))
            }
            if current.canAccept(description) {
                // Same decoder configuration: the new parameter sets go in band before this
                // frame, so the running decoder learns them without a reset.
                log.debug(object, "the running session accepts the new parameter sets")
                return .success(
                    SessionForFrame(
                        session: current, inBandParameterSets: description.parameterSets,
                        activeBackend: activeBackend))
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
                state.decoding = Decoding(session: session)
                state.activeBackend = session.activeBackendName
            }
            log.info(
                object,
                "decoding \(description.dimensions.width)x\(description.dimensions.height) with \(session.activeBackendName)"
                    + (session.backendsPassedOver.isEmpty ? "" : " (passed over: \(session.backendsPassedOver))"))
            // Frame threads only in libavcodec without low delay; VA-API decodes a picture at a time.
            let frameThreads =
                live || session.isHardwareAccelerated
                ? 0 : LibavcodecDecoderFactory.effectiveThreadCount(requested: Int(configuration.maxThreads))
            reportLatency(for: description, frameThreads: frameThreads, live: live)
            return .success(SessionForFrame(session: session, activeBackend: session.activeBackendName))
        } catch {
            state.withLock { $0.decoding = nil }
            // The hardware=require text says what failed and what to do itself.
            let text =
                error.code == .hardwareUnavailable
                ? GStreamerWording.message(error) : "cannot decode this stream: \(GStreamerWording.message(error))"
            return .failure(
                .stream(
                    error.code == .hardwareUnavailable ? GST_STREAM_ERROR_CODEC_NOT_FOUND : GST_STREAM_ERROR_DECODE,
                    text, debug: error.description))
        }
    }

    /// Latency: the frames the decoder holds before a picture comes out, the stream's reorder
    /// depth (none without B-frames or where max_num_reorder_frames says 0) plus a frame per
    /// extra frame thread (none on live input, which is decoded with slice threads).
    private func reportLatency(for description: FormatDescription, frameThreads: Int, live: Bool) {
        guard let frames = VTDecStreamInput.decoderDelay(for: description, frameThreads: frameThreads) else { return }
        // Without a rate in the caps, 25 frames/s (as GstVideoDecoder assumes for latency).
        let frameDuration =
            (state.withLock { $0.input?.frameRate } ?? FrameRate(25, 1)).frameDuration()
            ?? MediaTime(value: 1, timescale: 25)
        let latency = frameDuration.multiplied(by: frames)
        gst_video_decoder_set_latency(
            decoder, GstClockTime(latency.gstreamerNanoseconds), GstClockTime(latency.gstreamerNanoseconds))
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

    /// Under hardware=auto a hardware decoder (VA-API, NVDEC) that fails mid-stream hands over to
    /// software: tell the application (a warning) and update active-backend.
    private func noteBackendChange(of session: DecompressionSession) {
        let name = session.activeBackendName
        let previous = state.withLock { state -> String? in
            guard state.activeBackend != name else { return nil }
            defer { state.activeBackend = name }
            return state.activeBackend
        }
        guard let previous else { return }
        ElementMessage.stream(
            GST_STREAM_ERROR_DECODE,
            "the hardware decoder \(previous) failed (\(session.backendFailure ?? "no reason given")); hardware=auto, so decoding "
                + "goes on in software from the next IDR picture (now: \(name))"
        ).post(from: object, isError: false)
        log.warning(object, "now decoding with \(name)")
    }

    /// Counts a decoding error toward `max-errors` (GST_VIDEO_DECODER_ERROR): GST_FLOW_OK while
    /// under the limit (a warning is logged), GST_FLOW_ERROR with an element error past it.
    func countError(
        _ message: ElementMessage, file: StaticString = #fileID, function: StaticString = #function, line: UInt = #line
    ) -> GstFlowReturn {
        log.warning(object, message.text, file: file, function: function, line: line)
        return file.withCString { fileName in
            function.withCString { functionName in
                swiftvt_video_decoder_error(
                    decoder, 1, message.text, message.debug, fileName, functionName, Int32(clamping: line))
            }
        }
    }
}
