import MediaCore
import Synchronization

/// Runs the passes of a multi-pass encode over a ``CompressionSession``, a ``FrameSilo`` and a
/// ``MultiPassStorage``: the loop AVAssetExportSession runs around VideoToolbox's
/// `BeginPass`/`EndPass`/`GetTimeRangesForNextPass`, for a feeder that delivers frames and can
/// deliver time ranges again (a GStreamer sink seeking upstream, a tool reading a file).
///
/// The feeder gives every frame to ``frame(presentationTime:duration:image:)`` and says where
/// what it delivered ends with ``endOfStream(upstreamCanSeek:)``; the answer says what comes
/// next: deliver a time range again (``EndOfStreamAction/seek(_:)``), write the file from the
/// silo (``EndOfStreamAction/writeFile(_:)``, with what to tell the user), or a failure. What
/// happened on the way (progress, pass ends, plans) waits in ``takeEvents()``.
///
/// States (pass 1 encodes every frame; pass n >= 2 reads its ranges one after another):
///
///     pass 1 --EOS--> pass ends --+-- another pass wanted, upstream seeks --> pass n, range 0 (seek)
///                                 +-- no pass wanted / upstream cannot seek --> ended (write)
///     pass n, range i --EOS, all frames of range i, i+1 < count--> pass n, range i+1 (seek)
///     pass n, range i --EOS before range i got all its frames--> ended (write: cut short)
///     pass n, last range --EOS--> pass ends --+-- farther from the target --> ended (write: taken back)
///                                             +-- otherwise: as after pass 1
///     a failure at an EOS --> ended (failed)
///
/// The silo always holds a complete result to write: a pass cut short keeps only the ranges it
/// finished, and a pass that lands farther from the target than the result before it is taken
/// back whole.
///
/// Thread-safe (the counters are behind a mutex), but meant to be fed from one thread: frames and
/// ends of stream are events of one stream, in order. The caller writes the file, and closes the
/// silo and the storage (and invalidates the session) when its run ends.
public final class MultiPassDriver: Sendable {
    public let session: CompressionSession
    public let silo: FrameSilo
    public let storage: MultiPassStorage
    private let feed: FrameSiloFeed
    private let planning: Planning
    private let state: Mutex<State>

    /// Who decides what the passes after pass 1 encode.
    public enum Planning: Sendable {
        /// The session, after every pass, from what this driver encoded; the driver asks the
        /// feeder for the ranges it wants (vtmultipasssink: one stream, one host).
        case bySession
        /// The caller, from more than this driver sees: a farm plans over every chunk of a file
        /// (``MultiPassRateControl/plan(records:completedPasses:)`` over the records of all the
        /// chunks' storages) and gives each chunk's driver its part
        /// (``MultiPassRateControl/Plan/restricted(to:)``). The driver runs one pass and ends it
        /// (``Outcome/Ending/plannedByCaller``), keeping the storage and the silo for the next:
        /// pass 1 when `plan` is nil, otherwise the pass after `completedPasses` passes, which
        /// begins with ``currentRange``.
        case byCaller(plan: MultiPassRateControl.Plan?, completedPasses: Int)
    }

    /// The counters of the encode.
    private struct State {
        var pass = 1
        /// The ranges of the pass in progress (pass >= 2) and the one being read.
        var ranges: [MediaTimeRange] = []
        var rangeIndex = 0
        /// Asked once, when a second pass is first wanted: the answer does not change in a run.
        var upstreamCanSeek: Bool?
        var framesThisPass = 0
        /// Frames given to the encoder in the range being read (pass >= 2).
        var framesInRange = 0
        var expectedFramesThisPass: Int?
        /// Bits of the whole clip as coded before the pass in progress (pass >= 2): a pass that
        /// lands farther from the target is taken back.
        var codedBitsBeforePass: Int?
        var passTakenBack = false
        var lastProgressStep = -1
        /// The pass's start, reported with its first frame: a GStreamer application that sees
        /// progress start before PLAYING waits for it to finish before it sets the pipeline
        /// playing, and the pass could never finish.
        var pendingPassStart: MultiPassProgress?
        /// The file is to be written, or a failure ended the encode: nothing more is taken.
        var ended = false
        var events: [Event] = []

        /// The range being read; nil in pass 1, which takes every frame.
        var currentRange: MediaTimeRange? {
            pass >= 2 && ranges.indices.contains(rangeIndex) ? ranges[rangeIndex] : nil
        }

        mutating func noteFrameEncoded() {
            if let start = pendingPassStart {
                events.append(.progress(start))
                pendingPassStart = nil
            }
            framesThisPass += 1
            framesInRange += 1
            guard let expected = expectedFramesThisPass, expected > 0 else { return }
            let percent = min(100, framesThisPass * 100 / expected)
            // One report per 10 %: visible in gst-launch-1.0 without flooding the bus.
            let step = percent / 10
            guard step > lastProgressStep else { return }
            lastProgressStep = step
            events.append(
                .progress(
                    MultiPassProgress(
                        pass: pass, stage: .advanced(percent: percent, frames: framesThisPass, expected: expected))))
        }
    }

    /// Makes `session` a multi-pass session recording into `storage` and begins pass 1 (or, with
    /// `planning` ``Planning/byCaller(plan:completedPasses:)`` and a plan, the pass it describes).
    ///
    /// - Parameters:
    ///   - session: a session whose output handler is `feed`'s ``FrameSiloFeed/outputHandler``,
    ///     with ``CompressionProperties/averageBitRate`` set, before its first frame.
    ///   - maximumPasses: passes in all, at least 1 (with a caller's plan, the caller counts).
    ///   - expectedFramesInFirstPass: frames the stream holds, when known: pass 1's percentages.
    ///   - planning: who plans the passes after pass 1.
    /// - Throws: what ``CompressionSession/setMultiPassStorage(_:maximumPasses:)``,
    ///   ``CompressionSession/beginPass()``, ``CompressionSession/beginPass(following:completedPasses:)``
    ///   and ``FrameSilo/setTimeRangesForNextPass(_:)`` throw.
    public init(
        session: CompressionSession, feed: FrameSiloFeed, storage: MultiPassStorage, maximumPasses: Int,
        expectedFramesInFirstPass: Int? = nil, planning: Planning = .bySession
    ) throws(VTError) {
        var initial = State()
        if case .byCaller(let plan?, let completedPasses) = planning {
            try session.setMultiPassStorage(storage, maximumPasses: completedPasses + 1)
            try session.beginPass(following: plan, completedPasses: completedPasses)
            try feed.silo.setTimeRangesForNextPass(plan.timeRanges)
            let seconds = plan.timeRanges.reduce(0.0) { $0 + $1.duration.seconds }
            initial.pass = completedPasses + 1
            initial.ranges = plan.timeRanges
            initial.expectedFramesThisPass = plan.frameCount
            initial.pendingPassStart = MultiPassProgress(
                pass: initial.pass,
                stage: .reencoding(frames: plan.frameCount, ranges: plan.timeRanges.count, seconds: seconds))
        } else {
            try session.setMultiPassStorage(storage, maximumPasses: maximumPasses)
            try session.beginPass()
            initial.expectedFramesThisPass = expectedFramesInFirstPass
            initial.pendingPassStart = MultiPassProgress(pass: 1, stage: .started(maximumPasses: maximumPasses))
        }
        self.session = session
        self.silo = feed.silo
        self.storage = storage
        self.feed = feed
        self.planning = planning
        state = Mutex(initial)
    }

    /// The pass in progress (the last one once the encode ended), from 1.
    public var pass: Int { state.withLock { $0.pass } }

    /// The range being read in pass 2 or later; nil in pass 1, which takes every frame.
    public var currentRange: MediaTimeRange? { state.withLock { $0.currentRange } }

    // MARK: Frames

    /// What became of a frame.
    public enum FrameResult: Sendable {
        case encoded
        /// Not in the range being read: an accurate seek may still deliver a frame just outside
        /// it. Not encoded, not counted.
        case skipped(outside: MediaTimeRange)
        /// The frame was not encoded, or its output could not be kept; the encode may go on only
        /// if the feeder can live without the frame (a GStreamer element stops).
        case failed(Failure)
    }

    /// Encodes the frame at `presentationTime`, unless it lies outside the range being read.
    /// `image` is called only for a frame to encode (a skipped one need not be read).
    ///
    /// - Throws: what `image` throws (nothing is counted).
    public func frame<ImageFailure: Error>(
        presentationTime: MediaTime, duration: MediaTime, image: () throws(ImageFailure) -> PixelBuffer
    ) throws(ImageFailure) -> FrameResult {
        let (ended, pass, range) = state.withLock { ($0.ended, $0.pass, $0.currentRange) }
        if ended { return .failed(.ended(pass: pass)) }
        if let range, !range.contains(presentationTime) { return .skipped(outside: range) }
        let picture = try image()
        do throws(VTError) {
            try session.encode(picture, presentationTimeStamp: presentationTime, duration: duration)
        } catch {
            return .failed(.encoding(error, pass: pass))
        }
        if let failure = feed.failure { return .failed(.silo(failure)) }
        state.withLock { $0.noteFrameEncoded() }
        return .encoded
    }

    // MARK: End of stream

    /// What the feeder does after an end of stream.
    public enum EndOfStreamAction: Sendable {
        /// Deliver the frames of this range, then an end of stream (the next range of the pass,
        /// or the first of the next pass).
        case seek(MediaTimeRange)
        /// Write the file from the silo: every frame is there once, from the passes kept.
        case writeFile(Outcome)
        /// Nothing is to be written; the encode has ended.
        case failed(Failure)
    }

    /// The end of what the feeder delivered: of pass 1, of a range, or earlier than asked (an
    /// interrupt, a source that does not deliver a range again).
    ///
    /// - Parameter upstreamCanSeek: whether the feeder can deliver time ranges again; asked at
    ///   most once, when a further pass is first wanted. Without seeking the file is pass 1's.
    public func endOfStream(upstreamCanSeek: () -> Bool) -> EndOfStreamAction {
        let (ended, pass, rangeIndex, rangeCount, framesInRange) = state.withLock {
            ($0.ended, $0.pass, $0.rangeIndex, $0.ranges.count, $0.framesInRange)
        }
        if ended { return .failed(.ended(pass: pass)) }
        if pass >= 2 {
            // A seek asks for a range's frames and no more, so the end of stream that ends a
            // range comes after all of them; one that comes earlier cuts the pass short.
            let progress = silo.rangeProgress
            let takenOut = progress.indices.contains(rangeIndex) ? progress[rangeIndex].framesTakenOut : 0
            if framesInRange < takenOut { return finishCutPass() }
            if rangeIndex + 1 < rangeCount {
                return .seek(
                    state.withLock { state in
                        state.rangeIndex += 1
                        state.framesInRange = 0
                        return state.ranges[state.rangeIndex]
                    })
            }
        }
        return endPass(upstreamCanSeek: upstreamCanSeek)
    }

    /// The last range of the pass (or pass 1) was delivered: the session decides whether another
    /// pass pays, and the driver whether this one is kept.
    private func endPass(upstreamCanSeek: () -> Bool) -> EndOfStreamAction {
        let pass = state.withLock { $0.pass }
        let wantsAnother: Bool
        do throws(VTError) {
            wantsAnother = try session.endPass()
        } catch {
            return end(.failed(.endingPass(error, pass: pass)))
        }
        if let failure = feed.failure { return end(.failed(.silo(failure))) }
        let plan = session.multiPassStatistics?.lastPlan
        let codedBitsBefore = state.withLock { state in
            state.events.append(
                .progress(MultiPassProgress(pass: pass, stage: .complete(frames: state.framesThisPass))))
            state.events.append(.passEnded(pass: pass, plan: plan))
            return state.codedBitsBeforePass
        }
        if case .byCaller = planning {
            // The session's plan saw this chunk only: whether the pass is kept and what comes
            // next is the caller's, over the whole file. Ranges the encoder did not give all
            // their frames back still keep their earlier ones.
            if pass >= 2 {
                do throws(VTError) {
                    let restoration = try silo.restoreFramesOfUnfinishedRanges()
                    if restoration.rangesRestored > 0 {
                        state.withLock { $0.events.append(.rangesRestored(pass: pass, restoration)) }
                    }
                } catch {
                    return end(.failed(.silo(error)))
                }
            }
            return end(.writeFile(outcome(.plannedByCaller)))
        }
        if pass >= 2 {
            do throws(VTError) {
                if let plan, let codedBitsBefore,
                    Self.passLandsFarther(codedBits: plan.codedBits, than: codedBitsBefore, fromTarget: plan.targetBits)
                {
                    try silo.restoreFramesOfCurrentPass()
                    state.withLock { $0.passTakenBack = true }
                    return end(
                        .writeFile(
                            outcome(
                                .passTakenBack(
                                    TakenBackPass(
                                        pass: pass, codedBits: plan.codedBits, codedBitsKept: codedBitsBefore,
                                        seconds: plan.duration)))))
                }
                // The file must not miss frames: a range the encoder did not give all its frames
                // back keeps its earlier ones.
                let restoration = try silo.restoreFramesOfUnfinishedRanges()
                if restoration.rangesRestored > 0 {
                    state.withLock { $0.events.append(.rangesRestored(pass: pass, restoration)) }
                }
            } catch {
                return end(.failed(.silo(error)))
            }
        }
        guard wantsAnother else { return end(.writeFile(outcome(.finished(stopReason: plan?.stopReason)))) }
        let canSeek =
            state.withLock { $0.upstreamCanSeek }
            ?? {
                let answer = upstreamCanSeek()
                state.withLock { $0.upstreamCanSeek = answer }
                return answer
            }()
        guard canSeek else { return end(.writeFile(outcome(.upstreamCannotSeek))) }
        return startNextPass(plan: plan)
    }

    /// Whether a pass that coded the file in `codedBits` is farther from `targetBits` than the
    /// result before it (`codedBitsBefore`): then that result is kept. More passes must never give
    /// a worse file: the bits-per-quantizer model can mislead (on a clip of a frame or two, say).
    public static func passLandsFarther(codedBits: Int, than codedBitsBefore: Int, fromTarget targetBits: Double)
        -> Bool
    {
        targetBits > 0 && abs(Double(codedBits) - targetBits) > abs(Double(codedBitsBefore) - targetBits)
    }

    private func startNextPass(plan: MultiPassRateControl.Plan?) -> EndOfStreamAction {
        let ranges: [MediaTimeRange]
        do {
            ranges = try session.timeRangesForNextPass()
            // A plan that wants a pass names its ranges; without any there is nothing to seek to.
            guard !ranges.isEmpty else { return end(.writeFile(outcome(.finished(stopReason: plan?.stopReason)))) }
            try silo.setTimeRangesForNextPass(ranges)
            try session.beginPass()
        } catch {
            return end(.failed(.startingNextPass(error)))
        }
        let first = ranges[0]
        let seconds = ranges.reduce(0.0) { $0 + $1.duration.seconds }
        state.withLock { state in
            state.pass += 1
            state.ranges = ranges
            state.rangeIndex = 0
            state.framesThisPass = 0
            state.framesInRange = 0
            state.codedBitsBeforePass = plan?.codedBits
            state.expectedFramesThisPass = plan?.frameCount
            state.lastProgressStep = -1
            state.pendingPassStart = MultiPassProgress(
                pass: state.pass,
                stage: .reencoding(frames: plan?.frameCount ?? 0, ranges: ranges.count, seconds: seconds))
            state.events.append(.passStarting(pass: state.pass, ranges: ranges, plan: plan))
        }
        return .seek(first)
    }

    /// The stream ended before the range being read got all its frames: the frames the encoder
    /// still holds are output, the ranges finished keep their new frames, the others get their
    /// earlier ones back.
    private func finishCutPass() -> EndOfStreamAction {
        let pass = state.withLock { $0.pass }
        do throws(VTError) {
            try session.completeFrames()
        } catch {
            // The frames it held are lost; their ranges are unfinished and get their earlier
            // frames back below.
            state.withLock { $0.events.append(.heldFramesLost(pass: pass, error)) }
        }
        if let failure = feed.failure { return end(.failed(.silo(failure))) }
        let restoration: FrameSilo.Restoration
        do throws(VTError) {
            restoration = try silo.restoreFramesOfUnfinishedRanges()
        } catch {
            return end(.failed(.silo(error)))
        }
        let cut = state.withLock { state in
            let cut = CutShortPass(
                pass: pass, framesReceived: state.framesThisPass, framesExpected: state.expectedFramesThisPass ?? 0,
                restoration: restoration)
            state.events.append(
                .progress(
                    MultiPassProgress(
                        pass: pass, stage: .cutShort(frames: cut.framesReceived, expected: cut.framesExpected))))
            return cut
        }
        return end(.writeFile(outcome(.passCutShort(cut))))
    }

    private func end(_ action: EndOfStreamAction) -> EndOfStreamAction {
        state.withLock { state in
            state.ended = true
            state.pendingPassStart = nil
        }
        return action
    }

    // MARK: The file

    /// Why the file is written now, with the figures the user is told.
    public struct Outcome: Sendable {
        public enum Ending: Sendable {
            /// The session wanted no further pass (on target, the maximum reached, or the target
            /// out of reach).
            case finished(stopReason: String?)
            /// Further passes were wanted, but the feeder cannot deliver ranges again: the file
            /// is pass 1's.
            case upstreamCannotSeek
            /// The last pass landed farther from the target than the result before it, which the
            /// file keeps; no further pass runs.
            case passTakenBack(TakenBackPass)
            /// The stream ended before the pass got all its frames.
            case passCutShort(CutShortPass)
            /// The pass the caller planned (``Planning/byCaller(plan:completedPasses:)``) ran:
            /// the caller decides what comes next.
            case plannedByCaller
        }

        public var ending: Ending
        /// Passes completed and kept (a pass taken back, or cut short, is not counted).
        public var passes: Int
        /// Frames encoded again after pass 1 by those passes.
        public var framesReencoded: Int
        /// Why the target bit rate lies out of the encoder's reach, when the passes stopped for
        /// that and the file is the last pass's: the user should ask for a reachable rate.
        public var targetOutOfReach: String?
    }

    /// A pass that landed farther from the target than the result before it.
    public struct TakenBackPass: Sendable, Equatable {
        public var pass: Int
        /// Bits of the whole clip as this pass coded it.
        public var codedBits: Int
        /// Bits of the result kept (the one before the pass).
        public var codedBitsKept: Int
        /// Seconds of video they cover.
        public var seconds: Double
    }

    /// A pass the stream ended early.
    public struct CutShortPass: Sendable, Equatable {
        public var pass: Int
        /// Frames encoded in the pass, and the frames its ranges held.
        public var framesReceived: Int
        public var framesExpected: Int
        /// The ranges that kept the pass's frames and those that got their earlier frames back.
        public var restoration: FrameSilo.Restoration
    }

    private func outcome(_ ending: Outcome.Ending) -> Outcome {
        let statistics = session.multiPassStatistics
        let takenBack = state.withLock { $0.passTakenBack }
        // A pass taken back is not in the file, so not counted.
        return Outcome(
            ending: ending,
            passes: (statistics?.passesCompleted ?? 1) - (takenBack ? 1 : 0),
            framesReencoded: (statistics?.framesReencoded ?? 0) - (takenBack ? statistics?.framesPerPass.last ?? 0 : 0),
            targetOutOfReach: takenBack ? nil : statistics?.lastPlan?.targetOutOfReach)
    }

    // MARK: Failures and events

    public enum Failure: Error, Sendable {
        /// The session could not encode a frame.
        case encoding(VTError, pass: Int)
        /// Ending the pass failed: the encoder's last frames, or the analysis
        /// (``VTError/Code/multiPassStorageFailed``, e.g. a full disk).
        case endingPass(VTError, pass: Int)
        /// The next pass could not begin: its ranges, the silo's index, or the session.
        case startingNextPass(any Error)
        /// The frame silo could not keep a frame, or its index could not be written.
        case silo(VTError)
        /// A frame or an end of stream came after the encode ended (the file was to be written,
        /// or a failure ended it).
        case ended(pass: Int)
    }

    /// What happened since the last ``takeEvents()``, in order.
    public enum Event: Sendable {
        case progress(MultiPassProgress)
        /// A pass ended; `plan` is the rate control's decision after it (the bits coded, the
        /// target, the ranges wanted next).
        case passEnded(pass: Int, plan: MultiPassRateControl.Plan?)
        /// A pass was kept, but some of its ranges did not get all their frames from the encoder:
        /// they keep their earlier frames.
        case rangesRestored(pass: Int, FrameSilo.Restoration)
        /// The pass begins with a seek to the first of `ranges`, coded at `plan`'s quantizers.
        case passStarting(pass: Int, ranges: [MediaTimeRange], plan: MultiPassRateControl.Plan?)
        /// A pass cut short: the encoder failed to output the frames it held.
        case heldFramesLost(pass: Int, VTError)
    }

    /// The events since the last call.
    public func takeEvents() -> [Event] {
        state.withLock { state in
            defer { state.events = [] }
            return state.events
        }
    }
}

/// How far a multi-pass encode is, in the words a user reads (GStreamer progress messages).
public struct MultiPassProgress: Sendable, Equatable, CustomStringConvertible {
    public enum Stage: Sendable, Equatable {
        /// Pass 1 encodes every frame.
        case started(maximumPasses: Int)
        /// A later pass re-encodes `frames` frames in `ranges` ranges lasting `seconds`.
        case reencoding(frames: Int, ranges: Int, seconds: Double)
        case advanced(percent: Int, frames: Int, expected: Int)
        case complete(frames: Int)
        case cutShort(frames: Int, expected: Int)
    }

    public var pass: Int
    public var stage: Stage

    public init(pass: Int, stage: Stage) {
        self.pass = pass
        self.stage = stage
    }

    /// How much of the pass is done, 0 to 100: 0 when it starts, the frames coded of those
    /// expected while it runs, 100 once complete; a pass cut short stays at the share it reached.
    /// GStreamer's progress messages carry it in their `percent` field.
    public var percent: Int {
        switch stage {
        case .started, .reencoding: 0
        case .advanced(let percent, _, _): percent
        case .complete: 100
        case .cutShort(let frames, let expected): expected > 0 ? min(100, max(0, frames) * 100 / expected) : 0
        }
    }

    public var description: String {
        switch stage {
        case .started(let maximumPasses): "pass \(pass) of up to \(maximumPasses): encoding every frame"
        case .reencoding(let frames, let ranges, let seconds):
            "pass \(pass): re-encoding \(frames) frames in \(ranges) range(s), \(seconds.decimalText(digits: 2)) s"
        case .advanced(let percent, let frames, let expected):
            "pass \(pass): \(percent) % done (\(frames) of \(expected) frames)"
        case .complete(let frames): "pass \(pass) complete (\(frames) frames)"
        case .cutShort(let frames, let expected): "pass \(pass) cut short after \(frames) of \(expected) frames"
        }
    }
}

/// Hands a multi-pass session's encoded frames to its ``FrameSilo``. The session's output handler
/// cannot throw, so the first failure to keep a frame (a full disk) waits here for
/// ``MultiPassDriver`` to report after the call that caused it.
public final class FrameSiloFeed: Sendable {
    public let silo: FrameSilo
    private let firstFailure = Mutex<VTError?>(nil)

    public init(silo: FrameSilo) { self.silo = silo }

    /// The output handler to create the session with.
    public var outputHandler: CompressionOutputHandler {
        { [self] frame in
            guard let sample = frame.sampleBuffer else { return }
            do throws(VTError) {
                try silo.add(sample)
            } catch {
                firstFailure.withLock { if $0 == nil { $0 = error } }
            }
        }
    }

    /// The first frame the silo could not keep, if any.
    public var failure: VTError? { firstFailure.withLock { $0 } }
}

/// The GOPs of a multi-pass encode, wherever it runs (vtmultipasssink on one host, a farm's
/// chunks on several): GOPs are the unit of re-encoding.
public enum MultiPassGOP {
    /// The shortest GOP multi-pass accepts: re-encoded ranges start each with a fresh encoder,
    /// whose first IDR picture has idr_pic_id 0, and with GOPs of at least 4 frames the encoder
    /// places no IDR picture right after another, so a spliced IDR never repeats its
    /// neighbour's idr_pic_id (7.4.3).
    public static let minimumLength = 4
    /// Seconds between IDR pictures at most when no interval is asked for: x264enc's automatic
    /// key-int-max (its SEI says keyint=300 at 30 frames/s), plus IDR pictures at scene cuts.
    /// With x264's own 250 frames the 300-frame clip carried a second IDR picture, 4 % of its
    /// bits, that x264enc does not pay.
    public static let automaticDuration = 10.0

    /// Sets the key-frame interval of `properties`: `frames` when not 0, otherwise
    /// ``automaticDuration`` (in frames too, at `frameRate`, when known).
    public static func applyKeyFrameInterval(
        _ frames: Int, frameRate: Double?, to properties: inout CompressionProperties
    ) {
        if frames > 0 {
            properties.maxKeyFrameInterval = frames
            return
        }
        properties.maxKeyFrameIntervalDuration = automaticDuration
        if let frameRate, frameRate > 0 {
            properties.maxKeyFrameInterval = max(
                Int(clampingTowardZero: (frameRate * automaticDuration).rounded()), minimumLength)
        }
    }
}
