import Glibc
import MediaCore

/// SwiftVT's multi-pass rate control: from the analysis of the frames coded so far, which time
/// ranges to encode again and at which quantizer each of their frames should be coded.
///
/// The model is x264's two-pass one (ratecontrol.c, "2-pass" in doc/ratecontrol.txt):
///
/// - a frame coded at quantizer scale `q` with `b` bits has complexity `c = b * q`, and would
///   cost about `b * (q / q')^a` bits at another scale `q'` (qscale = 0.85 * 2^((QP - 12) / 6),
///   the H.264 quantizer step doubling every 6 QP, 8.5.12.1). x264 takes `a = 1`; here `a`
///   starts there and is then measured from the frames coded twice (``modelExponent``), since
///   adaptive quantization and the macroblock tree make bits follow the frame QP less than
///   proportionally;
/// - the scale a frame *should* get is `k * blur(c)^(1 - qcomp)`: with qcomp = 0.6 complex
///   scenes get a coarser quantizer, but less than in proportion to their complexity (qcomp 1
///   would be constant quality, 0 constant bit rate); `blur` smooths complexity over neighbouring
///   frames so the quantizer does not jump from frame to frame; I pictures get the scale of
///   their neighbourhood divided by 1.4 (ipratio) and B pictures multiplied by 1.5 (pbratio),
///   because I pictures are referenced by everything after them and B pictures by nothing much;
/// - `k` is chosen so that the predicted total meets the target bits.
///
/// What x264 does by encoding everything twice, SwiftVT does by re-encoding only closed GOPs
/// (each starts with an IDR picture, so a re-encoded GOP splices in without touching its
/// neighbours) whose coded quantizers are furthest from that allocation: a GOP within
/// ``minimumDeviation`` QP of its allocation gains too little to pay for its encoding. The bits
/// of the GOPs kept are fixed, and `k` is solved over the re-encoded ones so the total still
/// meets the target. Only the plan after pass 1 chooses GOPs by their deviation: a GOP coded in
/// pass 2 or later was coded at its allocation (a plan made from its own re-encoded frames would
/// move it again by no more than the model's error), so later passes only correct the total
/// when it is not within ``tolerance`` of the target, with the GOPs furthest from the
/// allocation. The passes end there, or when ``maximumPasses`` have run.
public struct MultiPassRateControl: Sendable {
    /// Target bits per second of the whole stream.
    public var targetBitRate: Double
    /// Passes at most, the first included (>= 1).
    public var maximumPasses: Int
    /// Relative error of the total size that ends the passes (0.01 = 1 %).
    public var tolerance = 0.01
    /// x264's qcomp: 0 = constant bit rate, 1 = constant quantizer.
    public var quantizerCompression = 0.6
    /// I pictures get the quantizer scale of their neighbourhood divided by this (x264's ipratio).
    public var intraRatio = 1.4
    /// B pictures get the quantizer scale of their neighbourhood multiplied by this (x264's
    /// pbratio is 1.3; on the 720p test clip 1.5 gave 0.03 dB more than 1.3 and 1.1 0.07 dB
    /// less, since x264's macroblock tree already lowers the quantizer where B pictures are
    /// referenced).
    public var bidirectionalRatio = 1.5
    /// A GOP is re-encoded when its bits-weighted mean |allocated QP - coded QP| reaches this.
    public var minimumDeviation = 1.0
    /// Complexity is blurred with weights `blurDecay^distance` over this many frames each side
    /// (about x264's cplxblur of 20 frames; on the 720p test clip 0.5, 0.7 and 0.85 gave PSNR-Y
    /// within 0.05 dB of each other, 0.85 the best).
    public var blurRadius = 20
    public var blurDecay = 0.85
    /// The quantizers allowed (H.264 QP range for 8-bit video, 7.4.2.2).
    public var quantizerRange: ClosedRange<Double> = 10...51
    /// `a` of bits ∝ qscale^-a; see ``estimateModelExponent(_:)``.
    public var modelExponent = 1.0

    /// `codecType`: whose encoder codes the passes. HEVC (x265) takes no I and B ratios
    /// (``intraRatio`` and ``bidirectionalRatio`` 1): x265's cutree lowers the QP of the CUs
    /// later pictures refer to on top of a forced frame QP, so the frame-type ratios counted
    /// twice. On the 720p test clip at 1000 kbit/s (x265 preset medium) 1.4/1.5 gave PSNR-Y
    /// 40.33 dB, 1/1.5 40.73, 1/1 40.77 (x265's own two-pass: 40.64).
    public init(targetBitRate: Double, maximumPasses: Int, codecType: FourCharCode = .h264) {
        self.targetBitRate = targetBitRate
        self.maximumPasses = max(1, maximumPasses)
        if codecType == .hevc {
            intraRatio = 1
            bidirectionalRatio = 1
        }
    }

    /// The decision after a pass.
    public struct Plan: Sendable {
        /// The ranges to encode in the next pass, sorted, not touching each other; empty when
        /// no further pass is wanted.
        public var timeRanges: [MediaTimeRange]
        /// The quantizer for each frame (by presentation time) of those ranges.
        public var quantizers: [MediaTime: Double]
        /// The bits each of those frames is predicted to take at its quantizer.
        public var predictedFrameBits: [MediaTime: Double]
        /// The presentation times of the frames whose record says IDR, within the ranges: the
        /// re-encoded GOPs keep their structure.
        public var keyFrames: Set<MediaTime>
        /// Frames in the ranges.
        public var frameCount: Int
        /// Bits of the frames coded so far, all of them.
        public var codedBits: Int
        /// The total the plan predicts once its ranges are re-encoded.
        public var predictedBits: Double
        /// What the target means for the frames analysed (target bit rate x their duration).
        public var targetBits: Double
        /// Seconds covered by the records.
        public var duration: Double
        /// Why the passes stop (nil while more are wanted).
        public var stopReason: String?
        /// Why the target lies outside what ``quantizerRange`` can code, when the passes stop for
        /// that: the file is as close as the encoder gets (a bit rate far below what every frame
        /// at the coarsest quantizer takes, or far above what the finest gives).
        public var targetOutOfReach: String?

        public var wantsAnotherPass: Bool { !timeRanges.isEmpty }
    }

    // MARK: Feedback within a pass

    /// The quantizer correction for the next frame of a pass, from the bits the frames output
    /// so far in this pass took (`actualBits`) against what the plan predicted for them
    /// (`plannedBits`): the bits-per-quantizer model is only an estimate, and a pass that drifts
    /// would need yet another pass. As x264's second-pass overflow compensation
    /// (ratecontrol.c), the bits spent beyond the plan are paid back over a buffer of two
    /// seconds of the target: the quantizer scale is multiplied by `1 + overflow / buffer`, kept
    /// within 0.5...2 (+6 QP doubles the scale, 8.5.12.1, so at most ±6 QP). A correction from
    /// the ratio of the totals instead (x264's other term) swung the quantizer by ±2 QP
    /// through the 720p clip, since the encoder's look-ahead and frame threads hold about 50
    /// frames between the quantizer's choice and the frame's bits, and cost 0.02 dB.
    public func feedbackCorrection(actualBits: Double, plannedBits: Double) -> Double {
        let buffer = 2 * targetBitRate
        let overflow = min(max(1 + (actualBits - plannedBits) / buffer, 0.5), 2)
        return 6 * log2(overflow)
    }

    // MARK: Quantizer scale

    /// H.264's quantizer step size relative to QP 12 (doubles every 6 QP, 8.5.12.1), as x264's qp2qscale.
    public static func scale(forQuantizer qp: Double) -> Double { 0.85 * pow(2, (qp - 12) / 6) }
    public static func quantizer(forScale scale: Double) -> Double { 12 + 6 * log2(scale / 0.85) }

    /// Complexity of a frame that took `bits` at `quantizer`: the bits it would take at scale 1.
    public static func complexity(bits: Int, quantizer: Double) -> Double {
        Double(bits) * scale(forQuantizer: quantizer)
    }

    /// The bits `record`'s frame is predicted to take at `quantizer`.
    public func predictedBits(_ record: FrameAnalysisRecord, at quantizer: Double) -> Double {
        Double(max(record.bits, 1)) * pow(2, (record.quantizer - quantizer) / 6 * modelExponent)
    }

    /// One frame coded twice: its bits and quantizer before and after.
    public struct Remeasurement: Sendable {
        public var before: (bits: Int, quantizer: Double)
        public var after: (bits: Int, quantizer: Double)

        public init(before: (bits: Int, quantizer: Double), after: (bits: Int, quantizer: Double)) {
            self.before = before
            self.after = after
        }
    }

    /// Measures ``modelExponent`` from frames coded at two quantizers: the least-squares slope,
    /// weighted by bits, of log(bits ratio) against log(qscale ratio), through the origin.
    /// Frames whose quantizer moved less than half a step say nothing and are left out; the
    /// result is kept within 0.3...1.5 so a few odd frames cannot make the model absurd.
    public mutating func estimateModelExponent(_ samples: [Remeasurement]) {
        var xy = 0.0
        var xx = 0.0
        for sample in samples where sample.before.bits > 0 && sample.after.bits > 0 {
            let x = (sample.after.quantizer - sample.before.quantizer) / 6 // log2 of the qscale ratio
            guard abs(x) >= 0.5 / 6 else { continue }
            let y = -log2(Double(sample.after.bits) / Double(sample.before.bits))
            let weight = Double(sample.before.bits + sample.after.bits)
            xy += weight * x * y
            xx += weight * x * x
        }
        guard xx > 0 else { return }
        modelExponent = min(max(xy / xx, 0.3), 1.5)
    }

    // MARK: Planning

    /// A GOP: the records from one IDR picture up to the next, in presentation order.
    struct GroupOfPictures {
        var frames: Range<Int>
        var timeRange: MediaTimeRange
    }

    /// Plans the pass after pass `completedPasses` from `records` (the latest record of every
    /// frame, any order).
    public func plan(records unsorted: [FrameAnalysisRecord], completedPasses: Int) -> Plan {
        let records = unsorted.sorted { $0.presentationTimeStamp < $1.presentationTimeStamp }
        let groups = Self.groupsOfPictures(records)
        let duration = Self.duration(of: records)
        let targetBits = targetBitRate * duration
        let codedBits = records.reduce(0) { $0 + $1.bits }
        var plan = Plan(
            timeRanges: [], quantizers: [:], predictedFrameBits: [:], keyFrames: [], frameCount: 0,
            codedBits: codedBits,
            predictedBits: Double(codedBits), targetBits: targetBits, duration: duration, stopReason: nil)
        guard !records.isEmpty, targetBits > 0 else {
            plan.stopReason = "nothing was encoded"
            return plan
        }
        guard completedPasses < maximumPasses else {
            plan.stopReason = "the maximum of \(maximumPasses) passes was reached"
            // Out of reach all the same when every frame is already at the quantizer bound
            // the target would need to go beyond (one 720p frame at 1000 kbit/s takes more
            // than its 33 kbit at QP 51).
            let error = (Double(codedBits) - targetBits) / targetBits
            if error > tolerance, records.allSatisfy({ $0.quantizer >= quantizerRange.upperBound - 0.5 }) {
                plan.targetOutOfReach = "\(outOfReachBound(coarser: true)), and every frame is coded at it"
            } else if error < -tolerance, records.allSatisfy({ $0.quantizer <= quantizerRange.lowerBound + 0.5 }) {
                plan.targetOutOfReach = "\(outOfReachBound(coarser: false)), and every frame is coded at it"
            }
            return plan
        }
        let shape = allocationShape(records)
        // The ideal allocation over every frame, and how far each GOP is from it.
        let everything = Set(groups.indices)
        let ideal = allocate(records, shape: shape, reencoded: everything, groups: groups, targetBits: targetBits)
        var deviations: [(group: Int, deviation: Double)] = groups.indices.map { index in
            let frames = groups[index].frames
            var weighted = 0.0
            var weights = 0.0
            for i in frames {
                let weight = Double(max(records[i].bits, 1))
                weighted += weight * abs(ideal[i] - records[i].quantizer)
                weights += weight
            }
            return (index, weights > 0 ? weighted / weights : 0)
        }
        deviations.sort { $0.deviation > $1.deviation }
        var chosen =
            completedPasses == 1 ? Set(deviations.filter { $0.deviation >= minimumDeviation }.map(\.group)) : []
        let error = (Double(codedBits) - targetBits) / targetBits
        let withinTolerance = abs(error) <= tolerance
        if chosen.isEmpty && withinTolerance {
            plan.stopReason =
                completedPasses == 1
                ? "the size is within \(Self.percent(tolerance)) of the target and every GOP is within \(minimumDeviation) QP of its allocation"
                : "the size is within \(Self.percent(tolerance)) of the target"
            return plan
        }
        // Enough GOPs to move the total where it must go without pushing their quantizers more
        // than about 3 QP (a factor of 1.4 in bits) away from where they were coded.
        for candidate in deviations where !chosen.contains(candidate.group) {
            if feasible(records, groups: groups, chosen: chosen, targetBits: targetBits) { break }
            chosen.insert(candidate.group)
        }
        let quantizers = allocate(records, shape: shape, reencoded: chosen, groups: groups, targetBits: targetBits)
        var predicted = 0.0
        for (index, group) in groups.enumerated() {
            for i in group.frames {
                if chosen.contains(index) {
                    let record = records[i]
                    let bits = predictedBits(record, at: quantizers[i])
                    predicted += bits
                    plan.quantizers[record.presentationTimeStamp] = quantizers[i]
                    plan.predictedFrameBits[record.presentationTimeStamp] = bits
                    if record.frameType == .idr { plan.keyFrames.insert(record.presentationTimeStamp) }
                    plan.frameCount += 1
                } else {
                    predicted += Double(records[i].bits)
                }
            }
        }
        plan.predictedBits = predicted
        if !withinTolerance, abs(predicted - targetBits) >= abs(Double(codedBits) - targetBits) * (1 - tolerance) {
            // The allocation meets the quantizer range's end before the target: another pass is
            // predicted to come no closer than what is coded (x264's rate control likewise
            // stops at qpmax/qpmin). Re-encoding would only cost time, or quality.
            plan.quantizers = [:]
            plan.predictedFrameBits = [:]
            plan.keyFrames = []
            plan.frameCount = 0
            plan.predictedBits = Double(codedBits)
            let bound = outOfReachBound(coarser: Double(codedBits) > targetBits)
            plan.targetOutOfReach = "\(bound), and another pass is predicted to come no closer to it"
            plan.stopReason =
                "the target is out of reach: \(bound), and another pass is predicted to come no closer to it"
            return plan
        }
        plan.timeRanges = Self.mergedRanges(chosen.sorted().map { groups[$0].timeRange })
        return plan
    }

    private func outOfReachBound(coarser: Bool) -> String {
        coarser
            ? "it needs quantizers coarser than QP \(Int(quantizerRange.upperBound)), the coarsest H.264 has"
            : "it needs quantizers finer than QP \(Int(quantizerRange.lowerBound)), the finest multi-pass uses"
    }

    /// Whether re-encoding `chosen` can bring the total to the target with bits per re-encoded
    /// GOP changing by a factor within [0.7, 1.4].
    private func feasible(
        _ records: [FrameAnalysisRecord], groups: [GroupOfPictures], chosen: Set<Int>, targetBits: Double
    ) -> Bool {
        var kept = 0.0
        var variable = 0.0
        for (index, group) in groups.enumerated() {
            let bits = group.frames.reduce(0.0) { $0 + Double(records[$1].bits) }
            if chosen.contains(index) { variable += bits } else { kept += bits }
        }
        guard variable > 0 else { return abs(kept - targetBits) <= tolerance * targetBits }
        let ratio = (targetBits - kept) / variable
        return ratio >= 0.7 && ratio <= 1.4
    }

    /// Per frame, the part of its quantizer scale that does not depend on `k`:
    /// blur(c)^(1 - qcomp) times the frame type's ratio.
    private func allocationShape(_ records: [FrameAnalysisRecord]) -> [Double] {
        // Complexity on the P-picture scale: I and B pictures cost differently for the same
        // content, so each type is normalised by its mean before blurring (a clip without P
        // pictures uses its own types' means).
        var sums: [AnalysisFrameType: (Double, Int)] = [:]
        for record in records {
            let type = Self.normalisedType(record.frameType)
            let (sum, count) = sums[type] ?? (0, 0)
            sums[type] = (sum + max(record.complexity, 1), count + 1)
        }
        func mean(_ type: AnalysisFrameType) -> Double? {
            guard let (sum, count) = sums[type], count > 0 else { return nil }
            return sum / Double(count)
        }
        let reference = mean(.predicted) ?? mean(.intra) ?? mean(.bidirectional) ?? 1
        let normalised = records.map { record -> Double in
            let own = mean(Self.normalisedType(record.frameType)) ?? reference
            return max(record.complexity, 1) * reference / own
        }
        var shape: [Double] = []
        shape.reserveCapacity(records.count)
        for i in records.indices {
            var sum = 0.0
            var weights = 0.0
            let low = max(0, i - blurRadius)
            let high = min(records.count - 1, i + blurRadius)
            for j in low...high {
                let weight = pow(blurDecay, Double(abs(i - j)))
                sum += weight * normalised[j]
                weights += weight
            }
            let blurred = sum / weights
            var value = pow(blurred, 1 - quantizerCompression)
            switch Self.normalisedType(records[i].frameType) {
            case .intra: value /= intraRatio
            case .bidirectional: value *= bidirectionalRatio
            default: break
            }
            shape.append(value)
        }
        return shape
    }

    private static func normalisedType(_ type: AnalysisFrameType) -> AnalysisFrameType {
        type == .idr ? .intra : type
    }

    /// Quantizers (QP) for every frame: those in `reencoded` GOPs allocated so that the total
    /// meets `targetBits`, the others as coded.
    private func allocate(
        _ records: [FrameAnalysisRecord], shape: [Double], reencoded: Set<Int>, groups: [GroupOfPictures],
        targetBits: Double
    ) -> [Double] {
        var quantizers = records.map(\.quantizer)
        var kept = 0.0
        var members: [Int] = []
        for (index, group) in groups.enumerated() {
            if reencoded.contains(index) {
                members.append(contentsOf: group.frames)
            } else {
                kept += group.frames.reduce(0.0) { $0 + Double(records[$1].bits) }
            }
        }
        guard !members.isEmpty else { return quantizers }
        let budget = max(targetBits - kept, targetBits * 0.01)
        let lowest = Self.scale(forQuantizer: quantizerRange.lowerBound)
        let highest = Self.scale(forQuantizer: quantizerRange.upperBound)
        func predicted(_ k: Double) -> Double {
            members.reduce(0.0) { sum, i in
                sum + predictedBits(records[i], at: Self.quantizer(forScale: min(max(k * shape[i], lowest), highest)))
            }
        }
        // Predicted bits fall as k grows; bisect log(k) (clamping makes it piecewise, so no
        // closed form).
        var low = -40.0
        var high = 40.0
        for _ in 0..<100 {
            let middle = (low + high) / 2
            if predicted(exp(middle)) > budget { low = middle } else { high = middle }
        }
        let k = exp((low + high) / 2)
        for i in members {
            quantizers[i] = Self.quantizer(forScale: min(max(k * shape[i], lowest), highest))
        }
        return quantizers
    }

    static func groupsOfPictures(_ records: [FrameAnalysisRecord]) -> [GroupOfPictures] {
        var groups: [GroupOfPictures] = []
        var start = 0
        let end = endTime(of: records)
        for i in records.indices where i > start && records[i].frameType == .idr {
            groups.append(
                GroupOfPictures(
                    frames: start..<i,
                    timeRange: MediaTimeRange(
                        start: records[start].presentationTimeStamp, end: records[i].presentationTimeStamp)))
            start = i
        }
        if start < records.count {
            groups.append(
                GroupOfPictures(
                    frames: start..<records.count,
                    timeRange: MediaTimeRange(start: records[start].presentationTimeStamp, end: end)))
        }
        return groups
    }

    /// The end of the last frame: its PTS plus its duration, or plus the mean frame spacing.
    static func endTime(of records: [FrameAnalysisRecord]) -> MediaTime {
        guard let last = records.last else { return .invalid }
        if last.duration.isNumeric, last.duration > .zero { return last.presentationTimeStamp + last.duration }
        guard let first = records.first, records.count > 1 else {
            return last.presentationTimeStamp + MediaTime(value: 1, timescale: 30)
        }
        let spacing = (last.presentationTimeStamp - first.presentationTimeStamp).seconds / Double(records.count - 1)
        return last.presentationTimeStamp + MediaTime(seconds: spacing, preferredTimescale: 90_000)
    }

    static func duration(of records: [FrameAnalysisRecord]) -> Double {
        guard let first = records.first else { return 0 }
        return (endTime(of: records) - first.presentationTimeStamp).seconds
    }

    /// Touching or overlapping ranges joined: one seek and one encoder run each.
    static func mergedRanges(_ ranges: [MediaTimeRange]) -> [MediaTimeRange] {
        var merged: [MediaTimeRange] = []
        for range in ranges.sorted(by: { $0.start < $1.start }) {
            if let last = merged.last, range.start <= last.end {
                merged[merged.count - 1] = MediaTimeRange(start: last.start, end: max(last.end, range.end))
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    static func percent(_ fraction: Double) -> String {
        let tenths = Int((fraction * 1000).rounded())
        return "\(tenths / 10).\(tenths % 10) %"
    }
}
