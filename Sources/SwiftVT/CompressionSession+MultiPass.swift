import MediaCore

// The multi-pass half of CompressionSession (VideoToolbox's MultiPassStorage, BeginPass, EndPass,
// GetTimeRangesForNextPass): the pass calls, the analysis recorded for each frame, and the state
// the session keeps across passes. The rate control itself is MultiPassRateControl.

extension CompressionSession {
    /// Makes this a multi-pass session (`kVTCompressionPropertyKey_MultiPassStorage`): the
    /// encoder records its analysis of every frame in `storage`, and after each pass
    /// (``beginPass()`` ... ``endPass()``) asks for the time ranges it wants to encode again
    /// (``timeRangesForNextPass()``), at most `maximumPasses` passes in all. The rate control is
    /// SwiftVT's own (``MultiPassRateControl``) and needs ``CompressionProperties/averageBitRate``.
    ///
    /// Call before the first frame. The caller keeps the frames (a ``FrameSilo`` is made for
    /// this): frames of a later pass replace those of its time ranges, each range a run of
    /// closed GOPs starting with an IDR picture.
    ///
    /// - Throws: ``VTError/Code/invalidProperty`` without a bit rate or with data rate
    ///   limits (a hard cap per window is not what multi-pass allocation does);
    ///   ``VTError/Code/invalidArgument`` after the first frame or for `maximumPasses` < 1.
    public func setMultiPassStorage(_ storage: MultiPassStorage?, maximumPasses: Int = 2) throws(VTError) {
        try monitor.withLock { (state) throws(VTError) in
            guard !state.invalidated else { throw Self.invalidSession }
            guard !state.propertiesLocked else {
                throw VTError(
                    .invalidArgument,
                    "the multi-pass storage must be set before prepareToEncodeFrames() and the first frame")
            }
            guard let storage else {
                state.multiPass = nil
                return
            }
            guard maximumPasses >= 1 else {
                throw VTError(.invalidArgument, "maximumPasses \(maximumPasses) is less than 1")
            }
            guard let bitRate = state.properties.averageBitRate else {
                throw .invalidProperty(
                    .averageBitRate,
                    "multi-pass encoding allocates a target bit rate over the whole clip; set averageBitRate")
            }
            guard state.properties.dataRateLimits.isEmpty else {
                throw .invalidProperty(
                    .dataRateLimits,
                    "cannot be combined with multi-pass encoding (its allocation is over the whole clip); remove them")
            }
            guard state.properties.hrdBuffer == nil else {
                throw .invalidProperty(
                    .hrdBuffer,
                    "cannot be combined with multi-pass encoding (its allocation is over the whole clip); remove it")
            }
            var rateControl = MultiPassRateControl(
                targetBitRate: Double(bitRate), maximumPasses: maximumPasses, codecType: codecType)
            // The QP bounds bound the quantizers later passes force, too.
            let allowed = state.properties.allowedFrameQPs
            let high = min(rateControl.quantizerRange.upperBound, Double(allowed.upperBound))
            let low = min(max(rateControl.quantizerRange.lowerBound, Double(allowed.lowerBound)), high)
            rateControl.quantizerRange = low...high
            state.multiPass = MultiPassState(storage: storage, rateControl: rateControl)
        }
    }

    /// The multi-pass storage set by ``setMultiPassStorage(_:maximumPasses:)``.
    public var multiPassStorage: MultiPassStorage? { monitor.withLock { $0.multiPass?.storage } }

    /// Starts a pass (`VTCompressionSessionBeginPass`). The first pass encodes everything; a
    /// later one only the frames of ``timeRangesForNextPass()``, in order, each range starting
    /// with an IDR picture and a fresh encoder.
    public func beginPass() throws(VTError) {
        try startPass("beginPass()") { (multiPass) throws(VTError) in
            if multiPass.completedPasses > 0, multiPass.plan?.wantsAnotherPass != true {
                throw VTError(.invalidArgument, "the encoder asked for no further pass (endPass() returned false)")
            }
        }
    }

    /// The checks and counters every pass start shares; `prepare` checks and sets what differs.
    private func startPass(_ call: String, _ prepare: (inout MultiPassState) throws(VTError) -> Void) throws(VTError) {
        try monitor.withLock { (state) throws(VTError) in
            guard !state.invalidated else { throw Self.invalidSession }
            guard var multiPass = state.multiPass else {
                throw VTError(
                    .invalidArgument, "\(call) needs a multi-pass storage (setMultiPassStorage(_:maximumPasses:))")
            }
            guard !multiPass.passInProgress else {
                throw VTError(.invalidArgument, "pass \(multiPass.currentPass) has not ended; call endPass() first")
            }
            try prepare(&multiPass)
            multiPass.passInProgress = true
            multiPass.currentRange = nil
            multiPass.framesThisPass = 0
            multiPass.actualBitsThisPass = 0
            multiPass.plannedBitsThisPass = 0
            state.multiPass = multiPass
        }
    }

    /// Starts a pass that follows a plan made elsewhere: a farm's plan over every chunk of a
    /// file (``MultiPassRateControl/plan(records:completedPasses:)`` over the records of all
    /// their storages), for this session's chunk (``MultiPassRateControl/Plan/restricted(to:)``).
    /// The pass encodes only the frames of `plan`'s time ranges, at its quantizers, with the same
    /// in-pass feedback as a pass the session planned itself. The storage must hold this chunk's
    /// records of the passes before (``MultiPassStorage/init(reopening:keepOnClose:)``): the
    /// frames coded again are measured against them.
    ///
    /// - Parameters:
    ///   - plan: what to encode; a plan that wants no pass is refused.
    ///   - completedPasses: passes the file has had before this one (at least 1).
    /// - Throws: ``VTError/Code/invalidArgument`` outside a multi-pass session, during a pass,
    ///   for `completedPasses` < 1 or a plan without time ranges.
    public func beginPass(following plan: MultiPassRateControl.Plan, completedPasses: Int) throws(VTError) {
        try startPass("beginPass(following:completedPasses:)") { (multiPass) throws(VTError) in
            guard completedPasses >= 1 else {
                throw VTError(
                    .invalidArgument, "a planned pass follows at least pass 1 (completedPasses \(completedPasses))")
            }
            guard plan.wantsAnotherPass else {
                throw VTError(.invalidArgument, "the plan names no time range to encode")
            }
            multiPass.completedPasses = completedPasses
            // The earlier passes ran in other sessions: their frame counts are not known here.
            multiPass.framesPerPass =
                Array(multiPass.framesPerPass.prefix(completedPasses))
                + Array(repeating: 0, count: max(0, completedPasses - multiPass.framesPerPass.count))
            multiPass.plan = plan
        }
    }

    /// Ends the pass (`VTCompressionSessionEndPass`): outputs every frame still held, then
    /// decides whether another pass pays. Returns true when further passes are requested.
    ///
    /// - Throws: ``VTError/Code/multiPassStorageFailed`` when the analysis could not
    ///   be written (e.g. the disk is full); the backend's error.
    public func endPass() throws(VTError) -> Bool {
        try monitor.withLock { (state) throws(VTError) in
            guard !state.invalidated else { throw Self.invalidSession }
            guard state.multiPass?.passInProgress == true else {
                throw VTError(.invalidArgument, "endPass() without beginPass()")
            }
        }
        try drain("endPass()")
        return try monitor.withLock { (state) throws(VTError) -> Bool in
            guard var multiPass = state.multiPass else { throw Self.invalidSession }
            multiPass.passInProgress = false
            multiPass.completedPasses += 1
            multiPass.framesPerPass.append(multiPass.framesThisPass)
            if let failure = multiPass.storageFailure {
                state.multiPass = multiPass
                throw VTError(
                    .multiPassStorageFailed, "the multi-pass analysis could not be stored: \(failure)")
            }
            multiPass.rateControl.estimateModelExponent(multiPass.remeasurements)
            let plan = multiPass.rateControl.plan(
                records: multiPass.storage.records(), completedPasses: multiPass.completedPasses)
            multiPass.plan = plan
            state.multiPass = multiPass
            return plan.wantsAnotherPass
        }
    }

    /// The time ranges the next pass must encode (`VTCompressionSessionGetTimeRangesForNextPass`),
    /// sorted; empty when no further pass is wanted.
    public func timeRangesForNextPass() throws(VTError) -> [MediaTimeRange] {
        try monitor.withLock { (state) throws(VTError) in
            guard !state.invalidated else { throw Self.invalidSession }
            guard let multiPass = state.multiPass, multiPass.completedPasses > 0, !multiPass.passInProgress else {
                throw VTError(.invalidArgument, "timeRangesForNextPass() is only known after endPass()")
            }
            return multiPass.plan?.timeRanges ?? []
        }
    }

    /// How the passes went so far; nil for a single-pass session.
    public var multiPassStatistics: MultiPassStatistics? {
        monitor.withLock { state in
            guard let multiPass = state.multiPass else { return nil }
            return MultiPassStatistics(
                passesCompleted: multiPass.completedPasses, framesPerPass: multiPass.framesPerPass,
                lastPlan: multiPass.plan)
        }
    }

    /// Writes the analysis of `frames` (one record each, replacing the frame's earlier one).
    func record(_ frames: [EncodedFrame], pass: Int?) {
        guard let pass, !frames.isEmpty, let storage = monitor.withLock({ $0.multiPass?.storage }) else { return }
        var failure: VTError?
        var count = 0
        var actual = 0.0
        var planned = 0.0
        var remeasured: [MultiPassRateControl.Remeasurement] = []
        let plan = monitor.withLock { $0.multiPass.flatMap { $0.completedPasses > 0 ? $0.plan : nil } }
        for frame in frames {
            guard let sample = frame.sampleBuffer, let analysis = frame.analysis else { continue }
            let bits = sample.totalSampleSize * 8
            let record = FrameAnalysisRecord(
                presentationTimeStamp: sample.presentationTimeStamp, decodeTimeStamp: sample.decodeTimeStamp,
                duration: sample.duration, frameType: analysis.frameType, quantizer: analysis.quantizer, bits: bits,
                complexity: MultiPassRateControl.complexity(bits: bits, quantizer: analysis.quantizer), pass: pass)
            if let predicted = plan?.predictedFrameBits[record.presentationTimeStamp] {
                actual += Double(bits)
                planned += predicted
                if let before = storage.record(at: record.presentationTimeStamp) {
                    remeasured.append(
                        MultiPassRateControl.Remeasurement(
                            before: (before.bits, before.quantizer), after: (bits, record.quantizer)))
                }
            }
            do throws(VTError) {
                try storage.write(record)
                count += 1
            } catch {
                failure = failure ?? error
            }
        }
        monitor.withLock { state in
            state.multiPass?.framesThisPass += count
            state.multiPass?.actualBitsThisPass += actual
            state.multiPass?.plannedBitsThisPass += planned
            state.multiPass?.remeasurements += remeasured
            if let failure, state.multiPass?.storageFailure == nil { state.multiPass?.storageFailure = failure }
        }
    }
}

/// How a multi-pass session's passes went.
public struct MultiPassStatistics: Sendable {
    public var passesCompleted: Int
    /// Frames encoded in each pass (the first: all of them).
    public var framesPerPass: [Int]
    /// The decision after the last completed pass (its coded bits, target, duration, stop reason).
    public var lastPlan: MultiPassRateControl.Plan?

    /// Frames encoded again after the first pass.
    public var framesReencoded: Int { framesPerPass.dropFirst().reduce(0, +) }
}

/// A multi-pass session's progress through its passes.
struct MultiPassState {
    var storage: MultiPassStorage
    var rateControl: MultiPassRateControl
    var completedPasses = 0
    var passInProgress = false
    /// The plan made at the end of the last pass (the ranges and quantizers of the current one).
    var plan: MultiPassRateControl.Plan?
    /// The index in `plan.timeRanges` of the last frame encoded in this pass.
    var currentRange: Int?
    var framesThisPass = 0
    /// Bits of the frames output so far in this pass, and what the plan predicted for them.
    var actualBitsThisPass = 0.0
    var plannedBitsThisPass = 0.0
    /// Every frame coded again: its bits and quantizer before and after (the model's evidence).
    var remeasurements: [MultiPassRateControl.Remeasurement] = []
    var framesPerPass: [Int] = []
    var storageFailure: VTError?

    init(storage: MultiPassStorage, rateControl: MultiPassRateControl) {
        self.storage = storage
        self.rateControl = rateControl
    }

    /// 1-based number of the pass in progress (or the next one).
    var currentPass: Int { completedPasses + 1 }

    struct FrameDecision {
        var quantizer: Double?
        var keyFrame: Bool
        var startsRange: Bool
    }

    /// The decisions for a frame at `pts` of the pass in progress.
    mutating func decide(presentationTimeStamp pts: MediaTime) throws(VTError) -> FrameDecision {
        guard passInProgress else {
            throw VTError(.invalidArgument, "a multi-pass session encodes frames between beginPass() and endPass()")
        }
        guard completedPasses > 0, let plan else {
            return FrameDecision(quantizer: nil, keyFrame: false, startsRange: false)
        }
        guard let range = plan.timeRanges.firstIndex(where: { $0.contains(pts) }) else {
            throw VTError(
                .invalidArgument,
                "the frame at \(pts.seconds) s is outside the time ranges of pass \(currentPass) (timeRangesForNextPass())"
            )
        }
        let startsRange = range != currentRange
        currentRange = range
        let correction = rateControl.feedbackCorrection(
            actualBits: actualBitsThisPass, plannedBits: plannedBitsThisPass)
        let quantizer = (plan.quantizers[pts] ?? nearestQuantizer(to: pts, in: plan)).map {
            min(max($0 + correction, rateControl.quantizerRange.lowerBound), rateControl.quantizerRange.upperBound)
        }
        return FrameDecision(
            quantizer: quantizer, keyFrame: startsRange || plan.keyFrames.contains(pts), startsRange: startsRange)
    }

    /// A frame the analysis does not know (the source gave other time stamps this pass): the
    /// quantizer of the nearest frame it knows.
    private func nearestQuantizer(to pts: MediaTime, in plan: MultiPassRateControl.Plan) -> Double? {
        plan.quantizers.min { abs(($0.key - pts).seconds) < abs(($1.key - pts).seconds) }?.value
    }
}
