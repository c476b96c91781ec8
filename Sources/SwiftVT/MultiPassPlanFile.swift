import MediaCore

// A multi-pass plan made in one process and followed in another: a farm plans once over every
// chunk of a file and each worker encodes its chunk's part
// (CompressionSession.beginPass(following:completedPasses:)).

extension MultiPassRateControl.Plan {
    /// The part of the plan inside `range` (a chunk of the file): its time ranges cut to it, and
    /// the quantizers, predicted bits and key frames of its frames. Ranges that join across a
    /// chunk boundary were merged by the planner; cut there they stay whole GOPs, since every
    /// chunk starts with an IDR picture. The totals (coded, predicted and target bits, duration)
    /// stay the whole file's.
    public func restricted(to range: MediaTimeRange) -> Self {
        var part = self
        part.timeRanges = timeRanges.compactMap { timeRange in
            let cut = timeRange.intersection(range)
            return cut.isValid && !cut.isEmpty ? cut : nil
        }
        part.quantizers = quantizers.filter { range.contains($0.key) }
        part.predictedFrameBits = predictedFrameBits.filter { range.contains($0.key) }
        part.keyFrames = keyFrames.filter { range.contains($0) }
        part.frameCount = part.quantizers.count
        return part
    }

    /// The plan as text, one item per line (`MultiPassRateControl.Plan(planFile:)` reads it
    /// back exactly: times as rationals, numbers in Swift's round-trip notation):
    ///
    ///     swiftvt-plan 1
    ///     totals <coded bits> <predicted bits> <target bits> <duration s> <frame count>
    ///     range <start value> <start timescale> <end value> <end timescale>
    ///     frame <pts value> <pts timescale> <quantizer> <predicted bits> <0|1 key frame>
    public var planFile: String {
        var lines = [
            "\(Self.planFileMagic)",
            "totals \(codedBits) \(predictedBits) \(targetBits) \(duration) \(frameCount)"
        ]
        for range in timeRanges {
            lines.append(
                "range \(range.start.value) \(range.start.timescale) \(range.end.value) \(range.end.timescale)")
        }
        for (time, quantizer) in quantizers.sorted(by: { $0.key < $1.key }) {
            let predicted = predictedFrameBits[time] ?? 0
            lines.append(
                "frame \(time.value) \(time.timescale) \(quantizer) \(predicted) \(keyFrames.contains(time) ? 1 : 0)")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static let planFileMagic = "swiftvt-plan 1"

    /// Reads ``planFile``'s text.
    ///
    /// - Throws: ``VTError/Code/corrupt`` naming the line that cannot be read.
    public init(planFile text: String) throws(VTError) {
        self.init(
            timeRanges: [], quantizers: [:], predictedFrameBits: [:], keyFrames: [], frameCount: 0, codedBits: 0,
            predictedBits: 0, targetBits: 0, duration: 0, stopReason: nil)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.first.map(String.init) == Self.planFileMagic else {
            throw VTError(.corrupt, "not a SwiftVT plan file (its first line is not \"\(Self.planFileMagic)\")")
        }
        for (number, line) in lines.enumerated().dropFirst() {
            let fields = line.split(separator: " ").map(String.init)
            func bad() -> VTError { VTError(.corrupt, "plan file line \(number + 1) cannot be read: \"\(line)\"") }
            func time(_ value: String, _ timescale: String) throws(VTError) -> MediaTime {
                guard let value = Int64(value), let timescale = Int32(timescale), timescale > 0 else { throw bad() }
                return MediaTime(value: value, timescale: timescale)
            }
            switch fields.first {
            case "totals":
                guard fields.count == 6, let coded = Int(fields[1]), let predicted = Double(fields[2]),
                    let target = Double(fields[3]), let seconds = Double(fields[4]), let frames = Int(fields[5])
                else { throw bad() }
                (codedBits, predictedBits, targetBits, duration, frameCount) = (
                    coded, predicted, target, seconds, frames
                )
            case "range":
                guard fields.count == 5 else { throw bad() }
                let range = MediaTimeRange(start: try time(fields[1], fields[2]), end: try time(fields[3], fields[4]))
                guard range.isValid, !range.isEmpty, timeRanges.last.map({ $0.end <= range.start }) ?? true else {
                    throw bad()
                }
                timeRanges.append(range)
            case "frame":
                guard fields.count == 6, let quantizer = Double(fields[3]), let predicted = Double(fields[4]),
                    quantizer.isFinite, predicted.isFinite, fields[5] == "0" || fields[5] == "1"
                else { throw bad() }
                let pts = try time(fields[1], fields[2])
                quantizers[pts] = quantizer
                predictedFrameBits[pts] = predicted
                if fields[5] == "1" { keyFrames.insert(pts) }
            default:
                throw bad()
            }
        }
        guard frameCount == quantizers.count else {
            throw VTError(.corrupt, "the plan file says \(frameCount) frames but lists \(quantizers.count)")
        }
    }
}
