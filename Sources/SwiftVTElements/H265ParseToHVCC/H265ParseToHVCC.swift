import CGStreamer
import CSwiftVTShim
import H265
import MediaCore
import Synchronization

/// `h265parse-to-hvcc`: an H.265 Annex B byte stream in (any alignment), access units of
/// length-prefixed NAL units out, with the parameter sets in `codec_data` (the hvcC record,
/// ISO/IEC 14496-15 8.3.3); the H.265 counterpart of `h264parse-to-avcc`, whose behaviour it
/// keeps (timestamps, damaged input, resynchronizing after a seek).
///
/// A GstBaseParse subclass: the base class accumulates input, handles seeking, position and
/// duration queries; `handleFrame` finds one complete access unit at a time with the H265
/// module's `H265AccessUnitSplitter` (7.4.2.4.4) and rewrites it. All codec logic (access-unit
/// boundaries, POC, parameter sets, hvcC) is in the H265 module; this file maps it to buffers,
/// caps and messages.
///
/// Locks: only `state`. While it is held the element calls nothing that can reach another
/// element or the application: no pad query, push, caps, event, bus message or latency change
/// (a bus sync handler or a downstream query handler may call back into this element on the same
/// thread, and `Mutex` is not recursive). Under the lock it only allocates, maps and flags its own
/// output buffers and writes debug log lines. The downstream stream-format query runs before the
/// lock is taken, the frame rate and caps go to the base class after it is released.
final class H265ParseToHVCC: BaseParseSubclass, @unchecked Sendable {
    // `parse` is the GObject that owns this object (created in its instance_init, released in its
    // finalize), so it is valid for this object's whole life. All mutable state is in `state`.
    let parse: UnsafeMutablePointer<GstBaseParse>
    static let debugCategory = DebugCategory(named: "h265parse-to-hvcc", description: "SwiftVT H.265 Annex B to hvcC converter")
    private let log = H265ParseToHVCC.debugCategory
    private let state = Mutex(State())

    /// Warnings about damaged input are posted on the bus for the first few occurrences and
    /// logged after that, so a badly damaged stream cannot flood the application.
    private static let postedDamageWarnings = 5

    init(instance: UnsafeMutableRawPointer, context: ElementClassContext) {
        parse = instance.assumingMemoryBound(to: GstBaseParse.self)
    }

    static func interface(for context: ElementClassContext) -> ElementInterface<H265ParseToHVCC> {
        ElementInterface(
            longName: "H.265 Annex B to hvcC converter", classification: "Codec/Parser/Converter/Video",
            description: "Turns an H.265 byte stream (start codes, in-band VPS/SPS/PPS) into access units of "
                + "length-prefixed NAL units with the parameter sets in codec_data (hvcC), with "
                + "timestamps derived from the picture order count when upstream has none",
            padTemplates: [
                .sink("video/x-h265, stream-format = (string) byte-stream"),
                .source("video/x-h265, stream-format = (string) { hvc1, hev1 }, alignment = (string) au, parsed = (boolean) true"),
            ])
    }

    private var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(parse) }

    /// Everything created in `start` and dropped in `stop`.
    struct State: ~Copyable, Sendable {
        var splitter = H265AccessUnitSplitter()
        /// How the input is cut, from the sink caps' `alignment`.
        var inputAlignment = H265AccessUnitSplitter.DataEnd.streamContinues
        var upstreamFrameRate: ParsedVideoCaps.Rate?
        var streamFormat: H265OutputCaps.StreamFormat?
        var currentCaps: H265OutputCaps?
        /// An IRAP picture has been output; until then access units are dropped.
        var started = false
        var accessUnitsSkippedBeforeStart = 0
        /// Resynchronizing after GstBaseParse moved to another offset (a seek): pictures before
        /// the next IRAP picture are dropped without the warning given at the start.
        var resynchronizing = false
        /// NoRaslOutputFlag of the last IRAP picture (8.1.3): its RASL pictures refer to pictures
        /// before it that were never decoded here, so they are dropped (decoders skip them too).
        var lastIRAPStartedSequence = false
        var accessUnitsOutput = 0
        var damagedNALUnits = 0
        var layerNALUnitsSkipped = 0
        var warnedAboutLayers = false
        /// Access units waiting for their presentation position, when timestamps are derived.
        var reorderQueue = HeldAccessUnits()
        /// Upstream gives timestamps: output is not held back.
        var upstreamTimestamps: Bool?
        /// The frame grid and the seek offset of derived timestamps.
        var timestamps = DerivedTimestamps()
        /// Byte offset in the input stream where the next frame must begin; another offset means
        /// the base class moved (seek, scan) and the splitter starts over.
        var expectedOffset: UInt64 = 0
        /// Bytes handed to `handleFrame` last time and not consumed by it.
        var bytesHeldByBaseClass = 0
        var bytesSeen = 0
        /// The base class drains for EOS (or at the end of pulled data), not only for a DISCONT
        /// buffer: only then does "nothing output" mean the stream had no picture.
        var atEndOfStream = false
    }

    // MARK: Base-class vfuncs

    func start() -> Bool {
        // The access units still held go back as the list is discarded, after the lock.
        _ = state.withLock { state in
            defer { state = State() }
            return state.reorderQueue.discardAll(stopping: true)
        }
        // Timestamps are kept from upstream or derived here from the POC; the base class must
        // not interpolate its own (they would be wrong with B-frames).
        gst_base_parse_set_pts_interpolation(parse, 0)
        gst_base_parse_set_infer_ts(parse, 0)
        // A start code and a NAL unit header (7.3.1.2: two bytes).
        gst_base_parse_set_min_frame_size(parse, 5)
        return true
    }

    func stop() -> Bool {
        _ = state.withLock { state in
            defer { state = State() }
            return state.reorderQueue.discardAll(stopping: true)
        }
        return true
    }

    func sinkEvent(_ event: consuming OwnedEvent) -> Bool {
        switch event.type {
        case GST_EVENT_FLUSH_STOP: flush()
        // Before the base class drains and forwards it.
        case GST_EVENT_EOS: willDrainAtEndOfStream()
        default: break
        }
        return parent.sinkEvent(event)
    }

    func setSinkCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool {
        let alignment = swiftvt_caps_get_string(caps, "alignment").map { String(cString: $0) }
        var numerator: Int32 = 0
        var denominator: Int32 = 0
        let hasRate = swiftvt_caps_get_fraction(caps, "framerate", &numerator, &denominator) != 0
            && numerator > 0 && denominator > 0
        state.withLock { state in
            switch alignment {
            case "au": state.inputAlignment = .accessUnitBoundary
            case "nal": state.inputAlignment = .nalUnitBoundary
            default: state.inputAlignment = .streamContinues
            }
            state.upstreamFrameRate = hasRate ? (Int(numerator), Int(denominator)) : nil
        }
        log.debug(object, "sink caps: alignment \(alignment ?? "none"), framerate \(hasRate ? "\(numerator)/\(denominator)" : "none")")
        return true
    }

    /// FLUSH_STOP: the base class has dropped its data; the partial access unit and the POC
    /// history go too (parameter sets are kept, as after a seek the stream resumes with them).
    private func flush() {
        _ = state.withLock { state in
            state.splitter.reset()
            state.bytesHeldByBaseClass = 0
            state.atEndOfStream = false
            return state.reorderQueue.discardAll(stopping: false)
        }
    }

    /// Called for EOS before the base class drains: when nothing at all could be output and
    /// no data is left to drain, the stream never held a decodable picture.
    private func willDrainAtEndOfStream() {
        var failure: ElementMessage?
        let held = state.withLock { state -> OwnedBufferList in
            state.atEndOfStream = true
            guard state.bytesHeldByBaseClass == 0 else { return OwnedBufferList() }
            // Empty input is a clean EOS, as with h265parse: only data without a picture is an error.
            failure = state.accessUnitsOutput == 0 && state.bytesSeen > 0 ? Self.noDecodablePictureError(state) : nil
            return state.reorderQueue.drain(timestamps: &state.timestamps)
        }
        failure?.post(from: object, isError: true)
        _ = pushHeld(held)
    }

    func handleFrame(
        _ frame: UnsafeMutablePointer<GstBaseParseFrame>, skipSize: UnsafeMutablePointer<Int32>
    ) -> GstFlowReturn {
        guard let input = frame.pointee.buffer else { return GST_FLOW_ERROR }
        let draining = swiftvt_base_parse_is_draining(parse) != 0
        // Pulling from upstream, the base class drains only at the end of the data (no EOS
        // event reaches willDrainAtEndOfStream then); pushed to, it also drains before a
        // DISCONT buffer.
        let drainingAtEnd = draining && swiftvt_base_parse_is_pulling(parse) != 0
        let frameOffset = UInt64(frame.pointee.offset)
        let inputPTS = swiftvt_buffer_pts(input)
        let inputDTS = swiftvt_buffer_dts(input)

        // The input is mapped only while it is read: the output holds its own copy of what it
        // needs, and finishing the frame releases the input.
        let read = MappedBytes.withReadableBytes(of: input) { data in
            // Downstream's stream-format preference is asked once, before the first caps, and
            // outside the lock: the caps query may come back into this element.
            let decidedStreamFormat = state.withLock { $0.streamFormat }
            let streamFormat = decidedStreamFormat ?? negotiatedStreamFormat()
            return state.withLock { state in
                if drainingAtEnd { state.atEndOfStream = true }
                if state.streamFormat == nil { state.streamFormat = streamFormat }
                return process(data, draining: draining, frameOffset: frameOffset, inputPTS: inputPTS, inputDTS: inputDTS, state: &state)
            }
        }
        guard var outcome = read else {
            ElementMessage.stream(GST_STREAM_ERROR_FAILED, "Could not read the input buffer.",
                                  debug: "gst_buffer_map failed").post(from: object, isError: true)
            return GST_FLOW_ERROR
        }

        // Out of the lock: messages, caps, and handing the frame back to the base class. What is
        // not sent (after an error or refused caps) goes back with `outcome`.
        for message in outcome.warnings { message.post(from: object, isError: false) }
        if let error = outcome.error {
            error.post(from: object, isError: true)
            return GST_FLOW_ERROR
        }
        switch outcome.action {
        case .skip(let count):
            skipSize.pointee = Int32(clamping: count)
            return pushHeld(outcome.pushAfter)
        case .needMoreData:
            return pushHeld(outcome.pushAfter)
        case .consume(let byteCount):
            // Order matters: access units held under the old caps go out before the new caps.
            let before = pushHeld(outcome.pushBeforeCaps)
            if let rate = outcome.newFrameRate {
                // Outside the lock: it changes the latency, which posts a bus message.
                gst_base_parse_set_frame_rate(parse, UInt32(clamping: rate.numerator), UInt32(clamping: rate.denominator), 0, 0)
            }
            if let caps = outcome.newCaps, gst_pad_set_caps(swiftvt_base_parse_src_pad(parse), caps.pointer) == 0 {
                log.warning(object, "downstream refused the new caps")
                return GST_FLOW_NOT_NEGOTIATED
            }
            if let buffer = outcome.buffer.take() {
                frame.pointee.out_buffer = buffer.take()
            } else {
                frame.pointee.flags |= GST_BASE_PARSE_FRAME_FLAG_DROP.rawValue
            }
            let finished = gst_base_parse_finish_frame(parse, frame, Int32(clamping: byteCount))
            let after = pushHeld(outcome.pushAfter)
            for result in [before, finished, after] where result != GST_FLOW_OK { return result }
            return GST_FLOW_OK
        }
    }

    // MARK: Access units

    private enum Action {
        case skip(Int)
        case needMoreData
        /// Consume `byteCount` input bytes; what to send is in the outcome.
        case consume(byteCount: Int)
    }

    /// What one call of handle_frame sends, in this order: held access units that belong to the
    /// old caps, the new caps, this frame's access unit (`buffer`, or nothing when it is held or
    /// dropped), access units that became final (also after a skip at the end of the stream).
    /// Every reference is owned: what is not sent goes back when the outcome goes.
    private struct Outcome: ~Copyable, Sendable {
        var action: Action
        var warnings: [ElementMessage] = []
        var error: ElementMessage?
        var pushBeforeCaps = OwnedBufferList()
        var newCaps: CapsReference?
        /// The frame rate of `newCaps`, for the base class's duration and latency.
        var newFrameRate: ParsedVideoCaps.Rate?
        var buffer: OwnedBuffer?
        var pushAfter = OwnedBufferList()
        /// Held access units a seek made obsolete: released (not pushed) after the lock.
        var discarded = OwnedBufferList()
    }

    private func process(
        _ data: UnsafeRawBufferPointer, draining: Bool, frameOffset: UInt64,
        inputPTS: GstClockTime, inputDTS: GstClockTime, state: inout State
    ) -> Outcome {
        var discarded = OwnedBufferList()
        if frameOffset != state.expectedOffset {
            // GstBaseParse seeks in pull mode by moving to another offset (no FLUSH reaches the
            // parser): the partial access unit, the POC history and the held pictures go,
            // decoding restarts at the next IRAP picture (8.1.3: handled as the start of a coded
            // video sequence), and derived timestamps from the time GstBaseParse resumed at.
            log.debug(object, "input moved from offset \(state.expectedOffset) to \(frameOffset) (DTS \(inputDTS)): resynchronizing")
            state.splitter.reset()
            state.expectedOffset = frameOffset
            discarded = state.reorderQueue.discardAll(stopping: true)
            state.started = false
            state.resynchronizing = true
            if inputDTS != swiftvt_clock_time_none { state.timestamps.pendingTimeBase = inputDTS }
        }

        let dataEnd = draining ? H265AccessUnitSplitter.DataEnd.accessUnitBoundary : state.inputAlignment
        // Offsets come from upstream's buffers (GstBaseParse takes them at a DISCONT): any value.
        state.bytesSeen = max(state.bytesSeen, Int(clamping: frameOffset).addingSaturating(data.count))
        var outcome: Outcome
        switch state.splitter.next(in: data, dataEnd: dataEnd) {
        case .skip(let count):
            log.debug(object, "skipping \(count) bytes that belong to no NAL unit")
            state.expectedOffset = state.expectedOffset.addingSaturating(UInt64(count))
            state.bytesHeldByBaseClass = data.count - count
            outcome = Outcome(action: .skip(count))
        case .needMoreData:
            state.bytesHeldByBaseClass = data.count
            outcome = Outcome(action: .needMoreData)
        case .accessUnit(let unit):
            state.expectedOffset = state.expectedOffset.addingSaturating(UInt64(unit.byteCount))
            state.bytesHeldByBaseClass = data.count - unit.byteCount
            outcome = accessUnit(unit, in: data, inputPTS: inputPTS, inputDTS: inputDTS, state: &state)
        }
        // At the end of the stream, once everything is consumed: a stream that never gave a
        // picture is an error, not an empty success.
        outcome.discarded = discarded
        if draining && state.bytesHeldByBaseClass == 0 {
            if state.atEndOfStream && state.accessUnitsOutput == 0 && state.bytesSeen > 0 && outcome.error == nil {
                outcome.error = Self.noDecodablePictureError(state)
            }
            // The last access unit: everything held is final.
            outcome.pushAfter.append(contentsOf: state.reorderQueue.drain(timestamps: &state.timestamps))
        }
        return outcome
    }

    private static func noDecodablePictureError(_ state: borrowing State) -> ElementMessage {
        // Only layers, and nothing damaged: a scalable or multiview stream without its base
        // layer (bit errors can make NAL headers with any layer id, and are reported as damage).
        if state.layerNALUnitsSkipped > 0 && state.damagedNALUnits == 0 && state.accessUnitsSkippedBeforeStart == 0 {
            return .stream(
                GST_STREAM_ERROR_CODEC_NOT_FOUND,
                "The H.265 stream holds no base-layer picture: it only carries NAL units of other layers (nuh_layer_id > 0: scalable, multiview or 3D extensions), which h265parse-to-hvcc cannot convert. Use a decoder for those extensions for this stream.",
                debug: "\(state.layerNALUnitsSkipped) NAL units with nuh_layer_id > 0 passed over, \(state.bytesSeen) bytes read")
        }
        return .stream(
            GST_STREAM_ERROR_DECODE,
            "No decodable H.265 access unit found: the input has no VPS, SPS, PPS and IRAP (IDR, CRA or BLA) picture. Check that it is an H.265 Annex B byte stream.",
            debug: "\(state.bytesSeen) bytes read, \(state.accessUnitsSkippedBeforeStart) access units skipped, \(state.damagedNALUnits) damaged NAL units dropped, \(state.layerNALUnitsSkipped) NAL units with nuh_layer_id > 0 passed over")
    }

    private func accessUnit(
        _ unit: H265AccessUnitSplitter.AccessUnit, in data: UnsafeRawBufferPointer,
        inputPTS: GstClockTime, inputDTS: GstClockTime, state: inout State
    ) -> Outcome {
        var warnings = notices(about: unit, state: &state)
        guard let picture = unit.picture else {
            log.trace(object, "access unit without a picture (\(unit.nalUnits.count) NAL units): dropped")
            return Outcome(action: .consume(byteCount: unit.byteCount), warnings: warnings)
        }
        if picture.isIRAP { state.lastIRAPStartedSequence = picture.noRaslOutputFlag }
        if !state.started {
            guard picture.isRandomAccessPoint else {
                if !state.resynchronizing { state.accessUnitsSkippedBeforeStart += 1 }
                return Outcome(action: .consume(byteCount: unit.byteCount), warnings: warnings)
            }
            state.started = true
            if !state.resynchronizing && state.accessUnitsSkippedBeforeStart > 0 {
                warnings.append(.stream(
                    GST_STREAM_ERROR_DECODE,
                    "Skipped \(state.accessUnitsSkippedBeforeStart) H.265 access units before the first IRAP (IDR, CRA or BLA) picture: they cannot be decoded."))
            }
        }
        // 8.1.3: the RASL pictures of an IRAP picture that starts a coded video sequence refer
        // to pictures before it, which were never decoded: they are not output by a decoder.
        if picture.nalUnitType.isRASL && state.lastIRAPStartedSequence {
            log.debug(object, "dropping a RASL picture of the IRAP picture decoding starts at (POC \(picture.pictureOrderCount))")
            return Outcome(action: .consume(byteCount: unit.byteCount), warnings: warnings)
        }
        let parameterSets = state.splitter.parameterSets
        guard let sps = parameterSets.sequenceParameterSet(id: picture.seqParameterSetID) else {
            // The slices parsed, so their SPS existed; a later SPS with that id failed to parse.
            return Outcome(action: .consume(byteCount: unit.byteCount), warnings: warnings)
        }
        let streamFormat = state.streamFormat ?? .hvc1
        let picturesAreFields = (sps.vui?.fieldSeqFlag ?? false) || (picture.pictureTiming?.isField ?? false)

        // Caps: new ones whenever a parameter set is new or changed, before the first access
        // unit that may use it.
        var newCaps: CapsReference?
        var newFrameRate: ParsedVideoCaps.Rate?
        if state.currentCaps == nil || unit.parameterSetsChanged {
            let codecData: [UInt8]
            do {
                codecData = try Self.codecData(parameterSets, activeSPS: picture.seqParameterSetID, streamFormat: streamFormat)
            } catch {
                return Outcome(
                    action: .consume(byteCount: unit.byteCount), warnings: warnings,
                    error: .stream(
                        GST_STREAM_ERROR_FORMAT,
                        "h265parse-to-hvcc cannot describe this H.265 stream in an hvcC record (codec_data): \(error). Decode it from the byte stream instead (h265parse ! vtdec, or vtdec directly).",
                        debug: "\(parameterSets.videoParameterSetIDs.count) VPS, \(parameterSets.sequenceParameterSetIDs.count) SPS, \(parameterSets.pictureParameterSetIDs.count) PPS"))
            }
            let caps = H265OutputCaps(sps: sps, codecData: codecData, streamFormat: streamFormat,
                                      picturesAreFields: picturesAreFields, upstreamFrameRate: state.upstreamFrameRate)
            if caps != state.currentCaps {
                state.currentCaps = caps
                newCaps = caps.makeCaps().map(CapsReference.init(adopting:))
                log.info(object, "new caps: \(caps.width)x\(caps.height), \(parameterSets.videoParameterSetIDs.count) VPS, \(parameterSets.sequenceParameterSetIDs.count) SPS, \(parameterSets.pictureParameterSetIDs.count) PPS")
                newFrameRate = caps.frameRate
                if let vui = caps.frameRateInVUI, let chosen = caps.frameRate,
                   vui.numerator * chosen.denominator != chosen.numerator * vui.denominator {
                    log.info(object, "upstream's framerate \(chosen.numerator)/\(chosen.denominator) is used; the SPS VUI says \(vui.numerator)/\(vui.denominator) (as h265parse, upstream's caps win)")
                }
            }
        }

        // The output: length-prefixed NAL units. In hvc1, the parameter sets are all in
        // codec_data (8.4.1: array_completeness 1) and left out of the samples.
        let kept = unit.nalUnits.filter { nal in
            guard streamFormat == .hvc1 else { return true }
            return nal.type != .videoParameterSet && nal.type != .sequenceParameterSet && nal.type != .pictureParameterSet
        }
        guard let buffer = OwnedBuffer(lengthPrefixing: kept.map(\.range), of: data) else {
            return Outcome(action: .consume(byteCount: unit.byteCount), warnings: warnings,
                           error: .stream(GST_STREAM_ERROR_FAILED, "Out of memory for an access unit of \(unit.byteCount) bytes."))
        }

        let fieldScale = picturesAreFields ? 2 : 1
        let frameRate = state.currentCaps?.frameRate ?? state.upstreamFrameRate ?? (25, 1)
        state.timestamps.frameDuration = MediaTime(
            value: Int64(frameRate.denominator), timescale: Int32(clamping: frameRate.numerator * fieldScale))
        buffer.duration = GstClockTime(state.timestamps.frameDuration.gstreamerNanoseconds)
        // IRAP pictures are the random access points (8.1.3, ISO/IEC 14496-15 8.4.3: sync samples).
        buffer.setDeltaUnit(!picture.isIRAP)
        state.accessUnitsOutput += 1

        // Timestamps: upstream's when it has them; otherwise from the frame rate and the output
        // order, which needs the pictures that follow (see PresentationOrderQueue).
        if state.upstreamTimestamps == nil { state.upstreamTimestamps = inputPTS != swiftvt_clock_time_none }
        var outcome = Outcome(action: .consume(byteCount: unit.byteCount), warnings: warnings, newCaps: newCaps, newFrameRate: newFrameRate)
        if state.upstreamTimestamps == true {
            buffer.presentationTimeStamp = inputPTS
            buffer.decodeTimeStamp = inputDTS
            outcome.buffer = consume buffer
            return outcome
        }
        if newCaps != nil {
            outcome.pushBeforeCaps = state.reorderQueue.drain(timestamps: &state.timestamps)
        }
        if !state.reorderQueue.isHolding {
            // The window bounds how many pictures may follow a picture in decoding order and
            // precede it in output order. The DPB size does not: non-reference pictures pass
            // through it while an earlier picture waits (a B-pyramid's P picture waits for all
            // its B pictures). SpsMaxLatencyPictures does (C.5.2.2: a picture is output once
            // that many pictures follow it) when the SPS states it (7-9); otherwise only the GOP
            // structure bounds it, and 16, MaxDpbSize's ceiling (A.4.2) and x265's longest run
            // of B pictures, covers what encoders write. At most sps_max_num_reorder_pics
            // pictures precede one in decoding order and follow it in output order (7.4.3.2.1):
            // the presentation delay.
            let latencyBound = sps.subLayerOrdering.last?.maxLatencyPictures
            let window = max(sps.maxDecPicBufferingMinus1 + 1, latencyBound ?? 16)
            state.reorderQueue.start(reorderWindow: window, presentationDelay: sps.outputReorderDepth)
            log.debug(object, "deriving timestamps from the POC with a reorder window of \(window) pictures")
        }
        log.debug(object, "picture: \(picture.nalUnitType), POC \(picture.pictureOrderCount) (CVS \(picture.codedVideoSequenceIndex))")
        outcome.pushAfter = state.reorderQueue.place(
            buffer, inputByteCount: unit.byteCount, epoch: picture.codedVideoSequenceIndex,
            pictureOrderCount: Int64(picture.pictureOrderCount), timestamps: &state.timestamps)
        return outcome
    }

    /// Warnings about the access unit's damaged NAL units and NAL units of other layers.
    private func notices(about unit: H265AccessUnitSplitter.AccessUnit, state: inout State) -> [ElementMessage] {
        var warnings: [ElementMessage] = []
        for problem in unit.problems {
            state.damagedNALUnits += 1
            let type = problem.nalUnitType.map { "\($0)" } ?? "unreadable header"
            let text = "Dropped a damaged H.265 NAL unit (\(type)): \(problem.error)."
            log.warning(object, text)
            if state.damagedNALUnits <= Self.postedDamageWarnings {
                warnings.append(.stream(GST_STREAM_ERROR_DECODE, text,
                                        debug: state.damagedNALUnits == Self.postedDamageWarnings
                                            ? "further damaged NAL units are only logged" : nil))
            }
        }
        if unit.skippedLayerNALUnitCount > 0 {
            state.layerNALUnitsSkipped += unit.skippedLayerNALUnitCount
            if !state.warnedAboutLayers {
                state.warnedAboutLayers = true
                warnings.append(.stream(
                    GST_STREAM_ERROR_DECODE,
                    "Passing over NAL units with nuh_layer_id > 0 (scalable, multiview or 3D extension layers): only the H.265 base layer is delivered."))
            }
        }
        return warnings
    }

    /// hvcC with every VPS, SPS and PPS received, in id order, the active SPS first (the record
    /// takes its profile, level, chroma format and bit depths from its first SPS, 8.3.3.1).
    private static func codecData(
        _ store: H265ParameterSetStore, activeSPS: Int, streamFormat: H265OutputCaps.StreamFormat
    ) throws(H265Error) -> [UInt8] {
        let videoParameterSets = store.videoParameterSetIDs.compactMap { store.rawVideoParameterSet(id: $0) }
        let spsIDs = [activeSPS] + store.sequenceParameterSetIDs.filter { $0 != activeSPS }
        let sequenceParameterSets = spsIDs.compactMap { store.rawSequenceParameterSet(id: $0) }
        let pictureParameterSets = store.pictureParameterSetIDs.compactMap { store.rawPictureParameterSet(id: $0) }
        return try HEVCDecoderConfigurationRecord(
            videoParameterSets: videoParameterSets, sequenceParameterSets: sequenceParameterSets,
            pictureParameterSets: pictureParameterSets, nalUnitHeaderLength: 4,
            arrayCompleteness: streamFormat == .hvc1).serialized()
    }

    /// hvc1 unless downstream prefers hev1.
    private func negotiatedStreamFormat() -> H265OutputCaps.StreamFormat {
        let preferred = swiftvt_pad_peer_preferred_string(swiftvt_base_parse_src_pad(parse), "stream-format", "hvc1")
        let format = preferred.flatMap { H265OutputCaps.StreamFormat(rawValue: String(cString: $0)) } ?? .hvc1
        log.info(object, "output stream-format \(format.rawValue)")
        return format
    }
}
