import MediaCore
import SwiftVT

/// `swiftvt-farm plan`: after a pass of every chunk, SwiftVT's multi-pass rate control over the
/// whole file (the code vtmultipasssink runs after its passes): from every chunk's analysis,
/// which ranges to encode again at which quantizers, cut into each chunk's part.
///
/// What a session keeps between its passes, the planner keeps in its state directory on the
/// client: the records as they stood at the last plan (frames coded again are measured against
/// them: the model's exponent, ``MultiPassRateControl/estimateModelExponent(_:)``), every such
/// measurement so far, and the bits of the file at the last plan (a pass that lands farther from
/// the target is taken back, ``MultiPassDriver/passLandsFarther(codedBits:than:fromTarget:)``).
struct PlanCommand {
    let chunks: [ChunkDirectory]
    let bitRate: Int
    let maximumPasses: Int
    let completedPasses: Int
    /// The codec the chunks were encoded in (the rate control's frame-type ratios differ).
    let codec: FarmCodec
    let stateDirectory: String
    let outputDirectory: String

    init(_ options: FarmOptions) throws(FarmFailure) {
        guard !options.positional.isEmpty else { throw .usage("plan takes the chunk directories, in time order") }
        chunks = options.positional.map(ChunkDirectory.init(path:))
        bitRate = try options.integer("bitrate", in: 1...2_000_000_000)
        maximumPasses = try options.integer("max-passes", in: 1...10)
        completedPasses = try options.integer("completed-passes", in: 1...10)
        codec = try FarmCodec(options.string("codec") ?? "h264")
        stateDirectory = try options.requiredString("state")
        outputDirectory = try options.requiredString("out")
    }

    func run() throws(FarmFailure) {
        let (records, spans) = try readChunks()
        try TextFile.makeDirectory(stateDirectory)
        try TextFile.makeDirectory(outputDirectory)
        let state = PlannerState(directory: stateDirectory)
        var rateControl = MultiPassRateControl(
            targetBitRate: Double(bitRate), maximumPasses: maximumPasses, codecType: codec.codecType)
        let previous = completedPasses >= 2 ? try state.readRecords() : [:]
        var remeasurements = completedPasses >= 2 ? try state.readRemeasurements() : []
        for record in records {
            guard let before = previous[record.presentationTimeStamp], record.pass > before.pass else { continue }
            remeasurements.append(
                MultiPassRateControl.Remeasurement(
                    before: (before.bits, before.quantizer), after: (record.bits, record.quantizer)))
        }
        rateControl.estimateModelExponent(remeasurements)
        let plan = rateControl.plan(records: records, completedPasses: completedPasses)
        let totals =
            "totals coded_bits=\(plan.codedBits) target_bits=\(Int(plan.targetBits.rounded())) "
            + "predicted_bits=\(Int(plan.predictedBits.rounded())) frames=\(plan.frameCount)"
        if completedPasses >= 2, let before = try state.readCodedBits(),
            MultiPassDriver.passLandsFarther(codedBits: plan.codedBits, than: before, fromTarget: plan.targetBits)
        {
            print(totals)
            print(
                "decision taken-back pass \(completedPasses) coded the file in \(plan.codedBits) bits, farther from the target of \(Int(plan.targetBits.rounded())) than the \(before) bits before it"
            )
            return
        }
        try state.write(records: records, remeasurements: remeasurements, codedBits: plan.codedBits)
        guard plan.wantsAnotherPass else {
            print(totals)
            print("decision finished \(plan.stopReason ?? "no further pass is wanted")")
            return
        }
        for (index, span) in spans.enumerated() {
            let part = plan.restricted(to: span)
            guard !part.timeRanges.isEmpty else { continue }
            let path = outputDirectory + "/chunk-\(index).plan"
            try ChunkPlanFile(completedPasses: completedPasses, plan: part).write(to: path)
            print("chunk \(index) \(part.frameCount) \(path)")
            for range in part.timeRanges {
                print("range \(index) \(Self.nanoseconds(range.start)) \(Self.nanoseconds(range.end))")
            }
        }
        print(totals)
        print("decision another-pass")
    }

    static func nanoseconds(_ time: MediaTime) -> Int64 { time.converted(to: 1_000_000_000).value }

    /// Every chunk's latest records, and the span of presentation times each chunk owns (from
    /// its first frame to the next chunk's first frame; the last one has no end).
    private func readChunks() throws(FarmFailure) -> ([FrameAnalysisRecord], [MediaTimeRange]) {
        var all: [FrameAnalysisRecord] = []
        var starts: [MediaTime] = []
        for (index, chunk) in chunks.enumerated() {
            let manifest = try chunk.readManifest()
            let records: [FrameAnalysisRecord]
            do throws(VTError) {
                let storage = try MultiPassStorage(
                    reopening: chunk.path + "/" + manifest.storageName, keepOnClose: true)
                records = storage.records()
                try storage.close()
            } catch {
                throw .vt(error, "cannot read the analysis of chunk \(index) in \(chunk.path)")
            }
            guard let first = records.first else {
                throw .failed("chunk \(index) in \(chunk.path) has no analysed frames")
            }
            if let previous = all.last, first.presentationTimeStamp <= previous.presentationTimeStamp {
                throw .failed(
                    "chunk \(index) starts at \(first.presentationTimeStamp.seconds) s, before chunk \(index - 1) ends (\(previous.presentationTimeStamp.seconds) s): give the chunk directories in time order"
                )
            }
            starts.append(first.presentationTimeStamp)
            all += records
        }
        let endOfAll = MediaTime(value: Int64.max / 4, timescale: 1_000_000_000)
        let spans = starts.indices.map { index in
            MediaTimeRange(start: starts[index], end: index + 1 < starts.count ? starts[index + 1] : endOfAll)
        }
        return (all, spans)
    }
}

/// The planner's memory between passes, in a directory of the client's (text files, each
/// written whole under a temporary name).
struct PlannerState {
    let directory: String
    var recordsPath: String { directory + "/records.txt" }
    var remeasurementsPath: String { directory + "/remeasurements.txt" }
    var codedBitsPath: String { directory + "/coded-bits.txt" }

    /// The records at the last plan, by presentation time.
    func readRecords() throws(FarmFailure) -> [MediaTime: FrameAnalysisRecord] {
        guard TextFile.exists(recordsPath) else { return [:] }
        var records: [MediaTime: FrameAnalysisRecord] = [:]
        for line in try TextFile.read(recordsPath).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 5, let value = Int64(fields[0]), let timescale = Int32(fields[1]), timescale > 0,
                let bits = Int(fields[2]), let quantizer = Double(fields[3]), let pass = Int(fields[4])
            else {
                throw .failed(
                    "\(recordsPath) is damaged (\"\(line)\"); start the job again with an empty state directory")
            }
            let time = MediaTime(value: value, timescale: timescale)
            records[time] = FrameAnalysisRecord(
                presentationTimeStamp: time, decodeTimeStamp: .invalid, duration: .invalid, frameType: .predicted,
                quantizer: quantizer, bits: bits, complexity: 0, pass: pass)
        }
        return records
    }

    func readRemeasurements() throws(FarmFailure) -> [MultiPassRateControl.Remeasurement] {
        guard TextFile.exists(remeasurementsPath) else { return [] }
        var samples: [MultiPassRateControl.Remeasurement] = []
        for line in try TextFile.read(remeasurementsPath).split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count == 4, let bitsBefore = Int(fields[0]), let quantizerBefore = Double(fields[1]),
                let bitsAfter = Int(fields[2]), let quantizerAfter = Double(fields[3])
            else {
                throw .failed(
                    "\(remeasurementsPath) is damaged (\"\(line)\"); start the job again with an empty state directory")
            }
            samples.append(
                MultiPassRateControl.Remeasurement(
                    before: (bitsBefore, quantizerBefore), after: (bitsAfter, quantizerAfter)))
        }
        return samples
    }

    func readCodedBits() throws(FarmFailure) -> Int? {
        guard TextFile.exists(codedBitsPath) else { return nil }
        let text = try TextFile.read(codedBitsPath).split(separator: "\n").first.map(String.init) ?? ""
        guard let bits = Int(text) else { throw .failed("\(codedBitsPath) is damaged") }
        return bits
    }

    func write(records: [FrameAnalysisRecord], remeasurements: [MultiPassRateControl.Remeasurement], codedBits: Int)
        throws(FarmFailure)
    {
        try TextFile.write(
            records.map {
                "\($0.presentationTimeStamp.value) \($0.presentationTimeStamp.timescale) \($0.bits) \($0.quantizer) \($0.pass)"
            }
            .joined(separator: "\n") + "\n",
            to: recordsPath)
        try TextFile.write(
            remeasurements.map { "\($0.before.bits) \($0.before.quantizer) \($0.after.bits) \($0.after.quantizer)" }
                .joined(separator: "\n") + "\n",
            to: remeasurementsPath)
        try TextFile.write("\(codedBits)\n", to: codedBitsPath)
    }
}
