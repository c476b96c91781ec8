import CGStreamer
import CSwiftVTShim
import MediaCore
import NALBitstream
import Synchronization

/// The GstBaseParse side of SwiftVT's Annex B parsers (h264parse-to-avcc, h265parse-to-hvcc):
/// input alignment, offsets and resynchronizing after a seek, draining at the end of the stream,
/// downstream's stream-format, caps and frame rate after the lock, access units held for their
/// presentation position. What differs per codec (finding access units, where decoding may start,
/// caps, what goes into the output) is the element's ``AnnexBParserCodec``.
///
/// Locks: only `state`. While it is held nothing is called that can reach another element or
/// the application: no pad query, push, caps, event, bus message or latency change (a bus sync
/// handler or a downstream query handler may call back into the element on the same thread, and
/// `Mutex` is not recursive). Under the lock the core and the codec only allocate, map and flag
/// their own output buffers and write debug log lines. The downstream stream-format query runs
/// before the lock is taken, the frame rate and caps go to the base class after it is released.
final class AnnexBParserCore<Codec: AnnexBParserCodec>: @unchecked Sendable {
    // `parse` is the GObject that owns the element owning this object (created in its
    // instance_init, released in its finalize). All mutable state is in `state`.
    let parse: UnsafeMutablePointer<GstBaseParse>
    let log: ParserLog
    private let state = Mutex(AnnexBParserState<Codec>())

    init(parse: UnsafeMutablePointer<GstBaseParse>, category: DebugCategory) {
        self.parse = parse
        log = ParserLog(category: category, object: UnsafeMutableRawPointer(parse))
    }

    private var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(parse) }

    // MARK: Base-class vfuncs

    func start() -> Bool {
        // The access units still held go back as the list is discarded, after the lock.
        _ = state.withLock { state in
            defer { state = AnnexBParserState() }
            return state.reorderQueue.discardAll(stopping: true)
        }
        // Timestamps are kept from upstream or derived here from the POC; the base class must
        // not interpolate its own (they would be wrong with B-frames).
        gst_base_parse_set_pts_interpolation(parse, 0)
        gst_base_parse_set_infer_ts(parse, 0)
        // A start code and a NAL unit header.
        gst_base_parse_set_min_frame_size(parse, 3 + Codec.nalUnitHeaderByteCount)
        return true
    }

    func stop() -> Bool {
        _ = state.withLock { state in
            defer { state = AnnexBParserState() }
            return state.reorderQueue.discardAll(stopping: true)
        }
        return true
    }

    func sinkEvent(_ event: consuming OwnedEvent, parent: BaseParseParent) -> Bool {
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
        let rate = FrameRate(inCaps: caps).flatMap { $0.isKnown ? $0 : nil }
        state.withLock { state in
            switch alignment {
            case "au": state.inputAlignment = .accessUnitBoundary
            case "nal": state.inputAlignment = .nalUnitBoundary
            default: state.inputAlignment = .streamContinues
            }
            state.upstreamFrameRate = rate
        }
        log.debug("sink caps: alignment \(alignment ?? "none"), framerate \(rate.map(\.description) ?? "none")")
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
            // Empty input is a clean EOS, as with GStreamer's parsers: only data without a
            // picture is an error.
            failure = state.accessUnitsOutput == 0 && state.bytesSeen > 0 ? Codec.noDecodablePictureError(state) : nil
            // Nothing left for the base class to drain: the held access units are final.
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
        let times = InputTimes(pts: swiftvt_buffer_pts(input), dts: swiftvt_buffer_dts(input))

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
                return process(data, draining: draining, frameOffset: frameOffset, times: times, state: &state)
            }
        }
        guard var outcome = read else {
            ElementMessage.stream(
                GST_STREAM_ERROR_FAILED, "Could not read the input buffer.",
                debug: "gst_buffer_map failed"
            ).post(from: object, isError: true)
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
                gst_base_parse_set_frame_rate(
                    parse, UInt32(clamping: rate.numerator), UInt32(clamping: rate.denominator), 0, 0)
            }
            if let caps = outcome.newCaps, gst_pad_set_caps(swiftvt_base_parse_src_pad(parse), caps.pointer) == 0 {
                log.warning("downstream refused the new caps")
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

    /// Pushes timestamped access units that were held for reordering. Called with the sink
    /// pad's stream lock held (from handle_frame or a serialized event), as
    /// gst_base_parse_push_frame requires. After a failed push the rest are not sent (they go
    /// back with the list).
    private func pushHeld(_ buffers: consuming OwnedBufferList) -> GstFlowReturn {
        var result = GST_FLOW_OK
        // OwnedBufferList's own consuming forEach (a ~Copyable list, not a Sequence a for-in could take).
        // swift-format-ignore: ReplaceForEachWithForLoop
        buffers.forEach { buffer, inputByteCount in
            guard result == GST_FLOW_OK, let frame = Self.parseFrame(holding: buffer) else { return }
            // The consumed size of the input, which finish_frame did not count (the frame was
            // finished as dropped while its access unit waited here): without it GstBaseParse's
            // byte count stays 0 and it refuses every seek that needs time converted to bytes.
            frame.pointee.size = gint(clamping: inputByteCount)
            result = gst_base_parse_push_frame(parse, frame)
            gst_base_parse_frame_free(frame)
        }
        return result
    }

    /// A frame for gst_base_parse_push_frame holding `buffer`: gst_base_parse_frame_new takes a
    /// reference of its own (transfer none), which push_frame hands downstream; `buffer`'s goes
    /// as this returns, so downstream holds the only one and may write the buffer in place.
    private static func parseFrame(holding buffer: consuming OwnedBuffer) -> UnsafeMutablePointer<GstBaseParseFrame>? {
        buffer.withBorrowedPointer { gst_base_parse_frame_new($0, GST_BASE_PARSE_FRAME_FLAG_NONE, 0) }
    }

    private func process(
        _ data: UnsafeRawBufferPointer, draining: Bool, frameOffset: UInt64, times: InputTimes,
        state: inout AnnexBParserState<Codec>
    ) -> AnnexBParserOutcome {
        var discarded = OwnedBufferList()
        if frameOffset != state.expectedOffset {
            // GstBaseParse seeks in pull mode by moving to another offset (no FLUSH reaches the
            // parser): the partial access unit, the POC history and the held pictures go, decoding
            // restarts at the next random access point, and derived timestamps from the time
            // GstBaseParse resumed at, as h264parse's DTS does.
            log.debug(
                "input moved from offset \(state.expectedOffset) to \(frameOffset) (DTS \(times.dts)): resynchronizing")
            state.splitter.reset()
            state.expectedOffset = frameOffset
            discarded = state.reorderQueue.discardAll(stopping: true)
            state.started = false
            state.resynchronizing = true
            state.codec = Codec.CodecState()
            // The first picture out after the jump gets the time GstBaseParse resumed at: an
            // index entry's (the PTS this element gave that key frame), or 0 back at the start
            // (its default without an entry before the target). From the start that puts the
            // first picture at 0, where the first run presented it after the reorder delay: a
            // seek lands on the picture h264parse and qtdemux (whose edit list maps the delay to
            // stream time 0) show at that time, frame 150 at 5 s at 30 fps.
            if times.dts != swiftvt_clock_time_none { state.timestamps.pendingTimeBase = times.dts }
        }

        let dataEnd = draining ? AnnexB.DataEnd.accessUnitBoundary : state.inputAlignment
        // Offsets come from upstream's buffers (GstBaseParse takes them at a DISCONT): any value.
        state.bytesSeen = max(state.bytesSeen, Int(clamping: frameOffset).addingSaturating(data.count))
        var outcome: AnnexBParserOutcome
        switch state.splitter.next(in: data, dataEnd: dataEnd) {
        case .skip(let count):
            log.debug("skipping \(count) bytes that belong to no NAL unit")
            state.expectedOffset = state.expectedOffset.addingSaturating(UInt64(count))
            state.bytesHeldByBaseClass = data.count - count
            outcome = AnnexBParserOutcome(action: .skip(count))
        case .needMoreData:
            state.bytesHeldByBaseClass = data.count
            outcome = AnnexBParserOutcome(action: .needMoreData)
        case .accessUnit(let unit):
            let byteCount = unit.byteCount
            state.expectedOffset = state.expectedOffset.addingSaturating(UInt64(byteCount))
            state.bytesHeldByBaseClass = data.count - byteCount
            outcome = Codec.accessUnit(unit, byteCount: byteCount, in: data, times: times, state: &state, log: log)
        }
        // At the end of the stream, once everything is consumed: a stream that never gave a
        // picture is an error, not an empty success. (GstBaseParse also drains before a
        // DISCONT buffer, e.g. the first NAL unit from a parser with alignment=nal: the stream
        // goes on after that.)
        outcome.discarded = discarded
        if draining && state.bytesHeldByBaseClass == 0 {
            if state.atEndOfStream && state.accessUnitsOutput == 0 && state.bytesSeen > 0 && outcome.error == nil {
                outcome.error = Codec.noDecodablePictureError(state)
            }
            // The last access unit: everything held is final.
            outcome.pushAfter.append(contentsOf: state.reorderQueue.drain(timestamps: &state.timestamps))
        }
        return outcome
    }

    /// The codec's default stream-format unless downstream prefers another it offers.
    private func negotiatedStreamFormat() -> Codec.StreamFormat {
        let fallback = Codec.defaultStreamFormat
        let preferred = swiftvt_pad_peer_preferred_string(
            swiftvt_base_parse_src_pad(parse), "stream-format", fallback.rawValue)
        let format = preferred.flatMap { Codec.StreamFormat(rawValue: String(cString: $0)) } ?? fallback
        log.info("output stream-format \(format.rawValue)")
        return format
    }
}

/// An Annex B parser element: a GstBaseParse subclass whose vfuncs are its core's.
protocol AnnexBParserElement: BaseParseSubclass {
    associatedtype Codec: AnnexBParserCodec
    var core: AnnexBParserCore<Codec> { get }
}

extension AnnexBParserElement {
    func start() -> Bool { core.start() }
    func stop() -> Bool { core.stop() }
    func sinkEvent(_ event: consuming OwnedEvent) -> Bool { core.sinkEvent(event, parent: parent) }
    func setSinkCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool { core.setSinkCaps(caps) }

    func handleFrame(
        _ frame: UnsafeMutablePointer<GstBaseParseFrame>, skipSize: UnsafeMutablePointer<Int32>
    ) -> GstFlowReturn {
        core.handleFrame(frame, skipSize: skipSize)
    }
}

/// What an Annex B parser element does that depends on its codec.
protocol AnnexBParserCodec {
    associatedtype Splitter: AnnexBAccessUnitSplitter
    associatedtype Caps: ParsedStreamCaps
    associatedtype StreamFormat: RawRepresentable, Sendable where StreamFormat.RawValue == String
    /// What the codec keeps beside the shared state (H.264: the POC of the recovery point decoding
    /// resumed at), made anew at the start and after a seek.
    associatedtype CodecState: ParserCodecState

    /// Bytes of a NAL unit header (H.264 7.3.1: 1, H.265 7.3.1.2: 2).
    static var nalUnitHeaderByteCount: UInt32 { get }
    /// The stream-format given unless downstream prefers another.
    static var defaultStreamFormat: StreamFormat { get }
    /// One complete access unit (`byteCount` bytes at the start of `data`): what to output.
    static func accessUnit(
        _ unit: Splitter.AccessUnit, byteCount: Int, in data: UnsafeRawBufferPointer, times: InputTimes,
        state: inout AnnexBParserState<Self>, log: ParserLog
    ) -> AnnexBParserOutcome
    /// The ERROR for a stream that ended without a picture that could be output.
    static func noDecodablePictureError(_ state: borrowing AnnexBParserState<Self>) -> ElementMessage
}

/// A codec's own state in a parser: a new one at the start and after a seek.
protocol ParserCodecState: Sendable {
    init()
}

/// A codec's access-unit splitter (H264's AccessUnitSplitter, H265AccessUnitSplitter), seen by
/// the core.
protocol AnnexBAccessUnitSplitter: Sendable {
    associatedtype AccessUnit: SplitAccessUnit
    init()
    /// Forgets the partial access unit and the POC history; parameter sets are kept.
    mutating func reset()
    /// The next complete access unit in `data`, which starts at the first byte not consumed.
    mutating func next(in data: UnsafeRawBufferPointer, dataEnd: AnnexB.DataEnd) -> AnnexB.SplitResult<AccessUnit>
}

/// An access unit a splitter found.
protocol SplitAccessUnit {
    /// Bytes from the start of the data that belong to it (start codes included): the amount to
    /// consume.
    var byteCount: Int { get }
}

/// The caps of a parser's output, as the core needs them.
protocol ParsedStreamCaps: Equatable, Sendable {
    var width: Int { get }
    var height: Int { get }
    var frameRate: FrameRate? { get }
    /// The VUI's rate, to tell when upstream's differs.
    var frameRateInVUI: FrameRate? { get }
    /// New caps holding these fields; the caller owns the reference.
    func makeCaps() -> UnsafeMutablePointer<GstCaps>?
}

/// The input buffer's timestamps.
struct InputTimes: Sendable {
    var pts: GstClockTime
    var dts: GstClockTime
}

/// Debug log lines about one element.
struct ParserLog: @unchecked Sendable {
    // The element's GObject, valid while the element lives (the core's owner holds it).
    let category: DebugCategory
    let object: UnsafeMutableRawPointer

    func warning(
        _ message: @autoclosure () -> String, file: StaticString = #fileID, function: StaticString = #function,
        line: UInt = #line
    ) {
        category.warning(object, message(), file: file, function: function, line: line)
    }
    func info(
        _ message: @autoclosure () -> String, file: StaticString = #fileID, function: StaticString = #function,
        line: UInt = #line
    ) {
        category.info(object, message(), file: file, function: function, line: line)
    }
    func debug(
        _ message: @autoclosure () -> String, file: StaticString = #fileID, function: StaticString = #function,
        line: UInt = #line
    ) {
        category.debug(object, message(), file: file, function: function, line: line)
    }
    func trace(
        _ message: @autoclosure () -> String, file: StaticString = #fileID, function: StaticString = #function,
        line: UInt = #line
    ) {
        category.trace(object, message(), file: file, function: function, line: line)
    }
}

/// What one call of handle_frame sends, in this order: held access units that belong to the
/// old caps, the new caps, this frame's access unit (`buffer`, or nothing when it is held or
/// dropped), access units that became final (also after a skip at the end of the stream).
/// Every reference is owned: what is not sent goes back when the outcome goes.
struct AnnexBParserOutcome: ~Copyable, Sendable {
    enum Action: Sendable {
        case skip(Int)
        case needMoreData
        /// Consume `byteCount` input bytes; what to send is in the outcome.
        case consume(byteCount: Int)
    }

    var action: Action
    var warnings: [ElementMessage] = []
    var error: ElementMessage?
    var pushBeforeCaps = OwnedBufferList()
    var newCaps: CapsReference?
    /// The frame rate of `newCaps`, for the base class's duration and latency.
    var newFrameRate: FrameRate?
    var buffer: OwnedBuffer?
    var pushAfter = OwnedBufferList()
    /// Held access units a seek made obsolete: released (not pushed) after the lock.
    var discarded = OwnedBufferList()

    /// Consume the access unit's bytes and output nothing (besides `warnings`, `error`).
    static func drop(byteCount: Int, warnings: [ElementMessage], error: ElementMessage? = nil) -> AnnexBParserOutcome {
        AnnexBParserOutcome(action: .consume(byteCount: byteCount), warnings: warnings, error: error)
    }
}

/// Everything created in `start` and dropped in `stop`.
struct AnnexBParserState<Codec: AnnexBParserCodec>: ~Copyable, Sendable {
    var splitter = Codec.Splitter()
    var codec = Codec.CodecState()
    /// How the input is cut, from the sink caps' `alignment`.
    var inputAlignment = AnnexB.DataEnd.streamContinues
    var upstreamFrameRate: FrameRate?
    var streamFormat: Codec.StreamFormat?
    var currentCaps: Codec.Caps?
    /// `currentCaps != nil`, read for every access unit without copying the caps (the
    /// Equatable `!=` of optionals copies both sides into a pair).
    var hasCaps: Bool {
        if case .some = currentCaps { return true }
        return false
    }
    /// `currentCaps`' frame rate, read for every access unit without copying the caps.
    var currentFrameRate: FrameRate?
    /// A random access point has been output; until then access units are dropped.
    var started = false
    var accessUnitsSkippedBeforeStart = 0
    /// Resynchronizing after GstBaseParse moved to another offset (a seek): pictures before
    /// the next random access point are dropped without the warning given at the start.
    var resynchronizing = false
    var accessUnitsOutput = 0
    var damagedNALUnits = 0
    /// NAL units of extensions the base layer ignores (H.264 SVC/MVC, H.265 nuh_layer_id > 0).
    var extensionNALUnitsSkipped = 0
    var warnedAboutExtensions = false
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
    /// buffer, after which the stream goes on: only then does "nothing output" mean the
    /// stream had no picture.
    var atEndOfStream = false

    init() {}
}

/// Warnings posted on the bus for the first few damaged NAL units; later ones are only logged,
/// so a badly damaged stream cannot flood the application.
private let postedDamageWarnings = 5

extension AnnexBParserState {
    /// Counts a damaged NAL unit (logged by the caller); the WARNING to post, for the first few.
    mutating func damageWarning(_ text: String) -> ElementMessage? {
        damagedNALUnits += 1
        guard damagedNALUnits <= postedDamageWarnings else { return nil }
        return .stream(
            GST_STREAM_ERROR_DECODE, text,
            debug: damagedNALUnits == postedDamageWarnings ? "further damaged NAL units are only logged" : nil)
    }

    /// Counts extension NAL units passed over; `warning` the first time.
    mutating func extensionWarning(count: Int, _ warning: @autoclosure () -> String) -> ElementMessage? {
        guard count > 0 else { return nil }
        extensionNALUnitsSkipped += count
        guard !warnedAboutExtensions else { return nil }
        warnedAboutExtensions = true
        return .stream(GST_STREAM_ERROR_DECODE, warning())
    }

    /// Whether decoding may (still) go on at this access unit: until the first random access
    /// point everything is skipped (and counted, for one warning when it comes, unless this is a
    /// resynchronization after a seek).
    mutating func admit(isRandomAccessPoint: Bool, skippedWarning: (Int) -> String, warnings: inout [ElementMessage])
        -> Bool
    {
        if started { return true }
        guard isRandomAccessPoint else {
            if !resynchronizing { accessUnitsSkippedBeforeStart += 1 }
            return false
        }
        started = true
        if !resynchronizing && accessUnitsSkippedBeforeStart > 0 {
            warnings.append(.stream(GST_STREAM_ERROR_DECODE, skippedWarning(accessUnitsSkippedBeforeStart)))
        }
        return true
    }

    /// Takes `caps` when they differ from the current ones: the new caps and their frame rate,
    /// to be set after the lock.
    mutating func adopt(_ caps: Codec.Caps, parameterSets: String, log: ParserLog) -> (
        caps: CapsReference?, frameRate: FrameRate?
    ) {
        guard caps != currentCaps else { return (nil, nil) }
        currentCaps = caps
        currentFrameRate = caps.frameRate
        log.info("new caps: \(caps.width)x\(caps.height), \(parameterSets)")
        if let vui = caps.frameRateInVUI, let chosen = caps.frameRate,
            vui.numerator * chosen.denominator != chosen.numerator * vui.denominator
        {
            log.info(
                "upstream's framerate \(chosen.numerator)/\(chosen.denominator) is used; the SPS VUI says \(vui.numerator)/\(vui.denominator) (upstream's caps win, as in GStreamer's parsers)"
            )
        }
        return (caps.makeCaps().map(CapsReference.init(adopting:)), caps.frameRate)
    }

    /// The frame rate durations and derived timestamps are on: the caps', else upstream's, else
    /// 25 fps.
    var outputFrameRate: FrameRate { currentFrameRate ?? upstreamFrameRate ?? FrameRate(25, 1) }

    /// Where a picture lies among the others in output order (for derived timestamps).
    struct Placement {
        /// Counts the stretches within which output order is POC order.
        var epoch: Int
        var pictureOrderCount: Int64
        /// How many later pictures may precede it in output, and the presentation delay
        /// (``PresentationOrderQueue``), used when holding starts.
        var reorderWindow: Int
        var presentationDelay: Int?
    }

    /// Finishes `outcome` with the access unit `buffer` (duration and flags set): with upstream's
    /// timestamps when it has them (decided at the first access unit), else held until its
    /// presentation position is known, positions on the grid of `gridStep`. Held access units go
    /// before new caps.
    mutating func deliver(
        _ buffer: consuming OwnedBuffer, byteCount: Int, times: InputTimes, gridStep: MediaTime, placement: Placement,
        outcome: consuming AnnexBParserOutcome, log: ParserLog
    ) -> AnnexBParserOutcome {
        accessUnitsOutput += 1
        timestamps.frameDuration = gridStep
        if upstreamTimestamps == nil { upstreamTimestamps = times.pts != swiftvt_clock_time_none }
        if upstreamTimestamps == true {
            buffer.presentationTimeStamp = times.pts
            buffer.decodeTimeStamp = times.dts
            outcome.buffer = consume buffer
            return outcome
        }
        if outcome.newCaps != nil {
            outcome.pushBeforeCaps = reorderQueue.drain(timestamps: &timestamps)
        }
        if !reorderQueue.isHolding {
            reorderQueue.start(reorderWindow: placement.reorderWindow, presentationDelay: placement.presentationDelay)
            log.debug("deriving timestamps from the POC with a reorder window of \(placement.reorderWindow) pictures")
        }
        outcome.pushAfter = reorderQueue.place(
            buffer, inputByteCount: byteCount, epoch: placement.epoch, pictureOrderCount: placement.pictureOrderCount,
            timestamps: &timestamps)
        return outcome
    }
}
