import Glibc
import MediaCore
import Synchronization

/// The compressed frames of a multi-pass encode, kept in files in decode order:
/// VideoToolbox's `VTFrameSilo`.
///
/// Pass 1 ``add(_:)``s every frame. ``setTimeRangesForNextPass(_:)`` then takes out every frame
/// presented in those ranges and remembers where, in decode order, they were; the next pass adds
/// frames for those ranges only, and they go where the old ones were, so that reading out
/// (``forEachSample(in:_:)``) gives the kept frames and the re-encoded ranges interleaved in the
/// original decode order. Ranges should start at an IDR picture and cover whole closed GOPs (the
/// encoder aligns them), so that the removed frames are one run in decode order; otherwise the
/// replacements go where the first removed frame was.
///
/// The frames a pass takes out are not forgotten until the next pass begins: a pass cut short
/// (the stream interrupted, a source that does not deliver a range again) gives back the frames
/// of the ranges it did not finish (``restoreFramesOfUnfinishedRanges()``), and a pass that came
/// out worse than the one before gives back all of them (``restoreFramesOfCurrentPass()``), so
/// the silo always holds a complete result. (VideoToolbox's silo has neither: its caller starts
/// the whole encode again.)
///
/// Files, in the directory given (hidden, named for the process and a random number):
/// - `.swiftvt-silo-<pid>-<random>.data`: the payloads, appended; a replaced frame's bytes stay
///   (rewriting the file would cost more than the space), which is also what lets a pass give
///   the frames it took out back.
/// - `.swiftvt-silo-<pid>-<random>.index`: the index, written at ``setTimeRangesForNextPass(_:)``
///   and at ``close()`` with `keepOnClose`, atomically (a `.tmp` file, `fsync`, `rename`). The
///   index in use lives in memory.
///
/// The data file is locked (`flock`) while the silo is open, so ``removeStaleFiles(in:)`` can
/// tell the files of a crashed process from those of a live one. ``close()`` (also run at deinit)
/// removes the files unless `keepOnClose`.
///
/// Thread-safe: the state is behind a `Mutex`; appends are written under it. Iteration reads a
/// snapshot of the index and calls its closure with no lock held.
public final class FrameSilo: Sendable {
    /// The payload file.
    public let dataPath: String
    /// The index file (exists after ``setTimeRangesForNextPass(_:)`` or a close with `keepOnClose`).
    public let indexPath: String
    /// The time range given at creation (``MediaTimeRange/invalid`` when not known).
    public let timeRange: MediaTimeRange
    private let state: Mutex<State>

    /// One stored sample.
    struct Entry: Equatable {
        var offset: Int
        var size: Int
        var presentationTimeStamp: MediaTime
        var decodeTimeStamp: MediaTime
        var duration: MediaTime
        /// ``SampleAttachments`` packed (see ``packAttachments(_:)``).
        var attachments: UInt8
        /// Index into the description table, -1 for none.
        var descriptionID: Int32
    }

    /// The read-out order: kept samples, and for each range of the current pass the place where
    /// its replacements go.
    enum Item: Equatable {
        case sample(Entry)
        case slot(Int)
    }

    struct State {
        /// Nil once closed.
        var dataFile: MultiPassFile?
        var keepOnClose: Bool
        /// The end of the last payload written: where the next one goes.
        var dataEnd: Int
        var items: [Item]
        /// The ranges of the current pass (none in pass 1), sorted.
        var ranges: [MediaTimeRange]
        /// The samples added in this pass for each range, in the order they came.
        var slotSamples: [[Entry]]
        /// The samples each range of this pass took out, in read-out order: they go back in
        /// when the range is not finished (see ``FrameSilo/restoreFramesOfUnfinishedRanges()``).
        var takenOutSamples: [[Entry]]
        var pass: Int
        /// Samples the ranges took out, i.e. those this pass should add back.
        var expectedInPass: Int
        var addedInPass: Int
        /// Sum of the durations added in pass 1 (exact: a plain sum of doubles would end at
        /// 0.9999...), and whether every one was known.
        var durationAddedInFirstPass: MediaTime
        var allDurationsKnown: Bool
        var sampleCount: Int
        var totalBytes: Int
        var descriptions: [FormatDescription]
        var descriptionIDs: [FormatDescription: Int32]
        /// The description of the previous sample and its id: consecutive samples almost always
        /// share one, and comparing with it spares hashing the parameter sets.
        var lastDescription: (FormatDescription, Int32)?

        init(dataFile: MultiPassFile, keepOnClose: Bool) {
            self.dataFile = dataFile
            self.keepOnClose = keepOnClose
            dataEnd = 0
            items = []
            ranges = []
            slotSamples = []
            takenOutSamples = []
            pass = 1
            expectedInPass = 0
            addedInPass = 0
            durationAddedInFirstPass = .zero
            allDurationsKnown = true
            sampleCount = 0
            totalBytes = 0
            descriptions = []
            descriptionIDs = [:]
        }

        /// Every sample in read-out order.
        func orderedEntries() -> [Entry] {
            var result: [Entry] = []
            result.reserveCapacity(sampleCount)
            for item in items {
                switch item {
                case .sample(let entry): result.append(entry)
                case .slot(let range): result.append(contentsOf: slotSamples[range])
                }
            }
            return result
        }
    }

    /// Creates an empty silo whose files go in `directory`.
    ///
    /// - Parameters:
    ///   - timeRange: the presentation times the first pass will cover, if known; with frame
    ///     durations it gives ``progressOfCurrentPass`` in pass 1.
    ///   - keepOnClose: keep the files at ``close()`` (with the index written, for
    ///     ``init(reopeningIndexAt:keepOnClose:)``) instead of removing them.
    /// - Throws: ``VTError/Code/ioFailed`` or ``VTError/Code/diskFull`` naming the file.
    public init(directory: String, timeRange: MediaTimeRange = .invalid, keepOnClose: Bool = false) throws(VTError) {
        let (file, base) = try MultiPassFile.createLocked(
            in: directory, prefix: StaleFiles.siloPrefix, suffix: StaleFiles.siloDataSuffix)
        dataPath = file.path
        indexPath = base + StaleFiles.siloIndexSuffix
        self.timeRange = timeRange
        state = Mutex(State(dataFile: file, keepOnClose: keepOnClose))
    }

    /// Opens the silo whose index is at `indexPath` (its data file is beside it, `.data` for
    /// `.index`), as written by ``setTimeRangesForNextPass(_:)`` or a close with `keepOnClose`.
    ///
    /// Everything is validated: magic number, version, length, the CRC-32 over the index, every
    /// field, and that every sample's bytes lie within the data file.
    ///
    /// - Throws: ``VTError/Code/corrupt`` with what is wrong and where;
    ///   ``VTError/Code/ioFailed`` when a file cannot be opened or another process has the
    ///   silo open; ``VTError/Code/invalidArgument`` when the path does not end in `.index`.
    public init(reopeningIndexAt indexPath: String, keepOnClose: Bool = true) throws(VTError) {
        guard indexPath.hasSuffix(StaleFiles.siloIndexSuffix) else {
            throw VTError(.invalidArgument, "\(indexPath) is not a silo index (its name must end in .index)")
        }
        let dataPath = String(indexPath.dropLast(StaleFiles.siloIndexSuffix.count)) + StaleFiles.siloDataSuffix
        let dataFile = try MultiPassFile.open(dataPath, flags: O_RDWR)
        guard dataFile.tryLock() else {
            throw VTError(.ioFailed, "could not open \(dataPath): another process is using the silo", path: dataPath)
        }
        let bytes = try MultiPassFile.open(indexPath, flags: O_RDONLY).readAll()
        let (loaded, timeRange, kept) = try FrameSilo.parseIndex(
            bytes, path: indexPath, dataFile: dataFile, dataFileSize: try dataFile.size(), keepOnClose: keepOnClose)
        self.dataPath = dataPath
        self.indexPath = indexPath
        self.timeRange = timeRange
        if kept {
            // Open again: a crash from now on leaves stale files, not kept ones.
            try FrameSilo.writeIndex(FrameSilo.serializeIndex(loaded, timeRange: timeRange, kept: false), to: indexPath)
        }
        state = Mutex(loaded)
    }

    deinit { try? close() }

    // MARK: Adding

    /// Adds one compressed frame: a data buffer with exactly one sample and a numeric
    /// presentation time, in decode order. The payload is written to the data file before this
    /// returns; timing, sample attachments and the format description go into the index.
    ///
    /// In pass 1 the frame goes at the end. In later passes its presentation time must lie in one
    /// of the ranges given to ``setTimeRangesForNextPass(_:)``, and it goes after the frames
    /// already added for that range. (Buffer-level attachments are not kept.)
    ///
    /// - Throws: ``VTError/Code/invalidArgument`` for another kind of buffer or a time
    ///   outside the ranges; ``VTError/Code/diskFull`` / ``VTError/Code/ioFailed``
    ///   when the write fails (the silo is unchanged and stays usable);
    ///   ``VTError/Code/closed`` after ``close()``.
    public func add(_ sample: SampleBuffer) throws(VTError) {
        guard let data = sample.dataBuffer else {
            throw VTError(.invalidArgument, "a frame silo stores compressed samples, not image buffers")
        }
        guard sample.sampleCount == 1 else {
            throw VTError(
                .invalidArgument, "a frame silo stores one sample per buffer; this buffer has \(sample.sampleCount)")
        }
        let timing: SampleTimingInfo
        let attachments: SampleAttachments
        do {
            timing = try sample.timingInfo(at: 0)
            attachments = try sample.attachments(forSampleAt: 0)
        } catch {
            throw VTError(.invalidArgument, "the sample cannot be read: \(error)")
        }
        guard timing.presentationTimeStamp.isNumeric else {
            throw VTError(
                .invalidArgument, "a frame silo needs a numeric presentation time, not \(timing.presentationTimeStamp)")
        }
        guard data.count <= Int(UInt32.max) else {
            throw VTError(
                .invalidArgument, "a sample of \(data.count) bytes is too large for a frame silo (4 GiB at most)")
        }
        try state.withLock { (state) throws(VTError) in
            guard let file = state.dataFile else { throw Self.closedError(dataPath) }
            var slot: Int?
            if state.pass > 1 {
                guard let index = Self.rangeIndex(containing: timing.presentationTimeStamp, in: state.ranges) else {
                    throw VTError(
                        .invalidArgument,
                        "presentation time \(timing.presentationTimeStamp) is outside the time ranges of pass \(state.pass) "
                            + "(\(state.ranges.map(\.description).joined(separator: ", ")))")
                }
                slot = index
            }
            let descriptionID = sample.formatDescription.map { Self.descriptionID(of: $0, in: &state) } ?? -1
            let offset = state.dataEnd
            var position = offset
            do throws(VTError) {
                // Straight from the buffer's memory blocks to the file: no intermediate copy.
                try data.forEachSegment { (segment) throws(VTError) in
                    try file.write(segment, at: position)
                    position += segment.count
                }
            } catch {
                file.truncateBestEffort(to: offset)
                throw error
            }
            let entry = Entry(
                offset: offset, size: data.count, presentationTimeStamp: timing.presentationTimeStamp,
                decodeTimeStamp: timing.decodeTimeStamp, duration: timing.duration,
                attachments: Self.packAttachments(attachments), descriptionID: descriptionID)
            state.dataEnd = position
            state.sampleCount += 1
            state.totalBytes += data.count
            state.addedInPass += 1
            if let slot {
                state.slotSamples[slot].append(entry)
            } else {
                state.items.append(.sample(entry))
                if timing.duration.isNumeric {
                    state.durationAddedInFirstPass += timing.duration
                } else {
                    state.allDurationsKnown = false
                }
            }
        }
    }

    /// Starts the next pass: the frames presented in `ranges` are taken out, to be replaced by
    /// the frames the next pass adds. The index is written to disk (atomically) before this
    /// returns. An empty list starts a pass that replaces nothing.
    ///
    /// - Throws: ``VTError/Code/invalidArgument`` when a range is invalid, empty or not
    ///   numeric, or the ranges are not sorted and disjoint (nothing changes);
    ///   ``VTError/Code/diskFull`` / ``VTError/Code/ioFailed`` when the index cannot
    ///   be written (nothing changes); ``VTError/Code/closed`` after ``close()``.
    public func setTimeRangesForNextPass(_ ranges: [MediaTimeRange]) throws(VTError) {
        for (index, range) in ranges.enumerated() {
            guard range.isValid, range.start.isNumeric, range.duration.isNumeric, range.duration > .zero else {
                throw VTError(.invalidArgument, "time range \(index) \(range) is not a non-empty numeric range")
            }
            if index > 0, ranges[index - 1].end > range.start {
                throw VTError(
                    .invalidArgument,
                    "time ranges must be sorted and must not overlap: \(ranges[index - 1]) is followed by \(range)")
            }
        }
        try state.withLock { (state) throws(VTError) in
            guard let file = state.dataFile else { throw Self.closedError(dataPath) }
            var next = state
            next.items = []
            next.items.reserveCapacity(state.sampleCount + ranges.count)
            var placed = [Bool](repeating: false, count: ranges.count)
            var removedCount = 0
            var removedBytes = 0
            next.takenOutSamples = Array(repeating: [], count: ranges.count)
            for entry in state.orderedEntries() {
                guard let range = Self.rangeIndex(containing: entry.presentationTimeStamp, in: ranges) else {
                    next.items.append(.sample(entry))
                    continue
                }
                if !placed[range] {
                    next.items.append(.slot(range))
                    placed[range] = true
                }
                next.takenOutSamples[range].append(entry)
                removedCount += 1
                removedBytes += entry.size
            }
            // A range that held no frame: its replacements go before the first kept frame
            // presented after its start (or at the end).
            for range in ranges.indices where !placed[range] {
                let position =
                    next.items.firstIndex {
                        if case .sample(let entry) = $0 { return entry.presentationTimeStamp >= ranges[range].start }
                        return false
                    } ?? next.items.endIndex
                next.items.insert(.slot(range), at: position)
            }
            next.ranges = ranges
            next.slotSamples = Array(repeating: [], count: ranges.count)
            next.pass += 1
            next.expectedInPass = removedCount
            next.addedInPass = 0
            next.sampleCount -= removedCount
            next.totalBytes -= removedBytes
            // The index must never name bytes that are not on the disk yet.
            try file.sync()
            try Self.writeIndex(Self.serializeIndex(next, timeRange: timeRange, kept: false), to: indexPath)
            state = next
        }
    }

    // MARK: Giving frames back

    /// What a restore did: the ranges of the pass whose new frames stay, and those that got their
    /// earlier frames back.
    public struct Restoration: Sendable, Equatable {
        public var rangesKept: Int
        public var rangesRestored: Int
        /// Frames the restored ranges got back (the earlier pass's).
        public var framesRestored: Int
        /// Frames of the current pass dropped with them (a range's partial replacement).
        public var framesDropped: Int
    }

    /// How far each range of the current pass is: frames it took out, and frames added for it.
    public struct RangeProgress: Sendable, Equatable {
        public var range: MediaTimeRange
        public var framesTakenOut: Int
        public var framesAdded: Int
        /// Every frame taken out has its replacement: the same presentation times, once each.
        public var isFinished: Bool
    }

    /// The ranges of the current pass (none in pass 1 or after a restore) and how far each is.
    public var rangeProgress: [RangeProgress] {
        state.withLock { state in
            state.ranges.indices.map { index in
                RangeProgress(
                    range: state.ranges[index], framesTakenOut: state.takenOutSamples[index].count,
                    framesAdded: state.slotSamples[index].count, isFinished: Self.isFinished(index, in: state))
            }
        }
    }

    /// Ends the current pass where it stands: each range whose replacements are all there keeps
    /// them; every other range gets back the frames it took out (its partial replacement is
    /// dropped), so the silo again holds every frame once. For a pass cut short. The pass takes no
    /// more frames afterwards. The index is written (atomically) before this returns.
    ///
    /// - Throws: ``VTError/Code/diskFull`` / ``VTError/Code/ioFailed`` when the
    ///   index cannot be written (nothing changes); ``VTError/Code/closed`` after ``close()``.
    @discardableResult
    public func restoreFramesOfUnfinishedRanges() throws(VTError) -> Restoration {
        try restore { index, state in !Self.isFinished(index, in: state) }
    }

    /// Takes the whole current pass back: every range gets back the frames it took out, as if the
    /// pass had not run. For a pass that landed farther from the target than the one before.
    /// Otherwise as ``restoreFramesOfUnfinishedRanges()``.
    @discardableResult
    public func restoreFramesOfCurrentPass() throws(VTError) -> Restoration {
        try restore { _, _ in true }
    }

    private func restore(_ shouldRestore: (Int, State) -> Bool) throws(VTError) -> Restoration {
        try state.withLock { (state) throws(VTError) -> Restoration in
            guard let file = state.dataFile else { throw Self.closedError(dataPath) }
            var result = Restoration(rangesKept: 0, rangesRestored: 0, framesRestored: 0, framesDropped: 0)
            var next = state
            next.items = []
            next.items.reserveCapacity(state.sampleCount + state.ranges.count)
            for item in state.items {
                switch item {
                case .sample:
                    next.items.append(item)
                case .slot(let range):
                    if shouldRestore(range, state) {
                        result.rangesRestored += 1
                        result.framesRestored += state.takenOutSamples[range].count
                        result.framesDropped += state.slotSamples[range].count
                        next.items += state.takenOutSamples[range].map(Item.sample)
                        next.sampleCount += state.takenOutSamples[range].count - state.slotSamples[range].count
                        next.totalBytes +=
                            state.takenOutSamples[range].reduce(0) { $0 + $1.size }
                            - state.slotSamples[range].reduce(0) { $0 + $1.size }
                    } else {
                        result.rangesKept += 1
                        next.items += state.slotSamples[range].map(Item.sample)
                    }
                }
            }
            next.ranges = []
            next.slotSamples = []
            next.takenOutSamples = []
            // The restored frames' bytes were synced when their pass began; the kept ones'
            // must be on the disk before the index names them.
            try file.sync()
            try Self.writeIndex(Self.serializeIndex(next, timeRange: timeRange, kept: false), to: indexPath)
            state = next
            return result
        }
    }

    /// Whether range `index` of the current pass has a replacement for every frame it took out.
    private static func isFinished(_ index: Int, in state: State) -> Bool {
        let added = state.slotSamples[index]
        let takenOut = state.takenOutSamples[index]
        guard added.count == takenOut.count else { return false }
        return Set(added.map(\.presentationTimeStamp)) == Set(takenOut.map(\.presentationTimeStamp))
    }

    // MARK: Reading

    /// Calls `body` with every sample presented in `range` (all of them for nil), in decode order
    /// (kept frames and replaced ranges interleaved as they were), each read back from the data
    /// file with its timing, sample attachments and format description. No lock is held while
    /// `body` runs; samples added meanwhile are not seen.
    ///
    /// - Throws: what `body` throws (iteration stops); ``VTError`` when a payload cannot be
    ///   read (``VTError/Code/corrupt`` when the data file is shorter than the index says),
    ///   for an invalid `range`, or after ``close()``.
    public func forEachSample(in range: MediaTimeRange? = nil, _ body: (SampleBuffer) throws -> Void) throws {
        if let range, !range.isValid {
            throw VTError(.invalidArgument, "time range \(range) is invalid")
        }
        // A snapshot of the index in read-out order (entries only, no payload), taken under the
        // lock so that body runs without it; the file object keeps the descriptor open even if
        // close() runs meanwhile.
        let (file, entries, descriptions) = try state.withLock { (state) throws(VTError) in
            guard let file = state.dataFile else { throw Self.closedError(dataPath) }
            return (file, state.orderedEntries(), state.descriptions)
        }
        for entry in entries where range.map({ $0.contains(entry.presentationTimeStamp) }) ?? true {
            // The one copy of the payload, from the file into memory the sample owns: the bytes
            // exist only on disk (they were written out when added).
            var read = 0
            let bytes = try [UInt8](unsafeUninitializedCapacity: entry.size) { (buffer, count) throws(VTError) in
                read = try file.read(into: UnsafeMutableRawBufferPointer(buffer), at: entry.offset)
                count = read
            }
            guard read == entry.size else {
                throw VTError(
                    .corrupt,
                    "\(file.path) is corrupt: it ends before the sample presented at \(entry.presentationTimeStamp) "
                        + "(bytes \(entry.offset)..<\(entry.offset + entry.size))", path: file.path)
            }
            let description = entry.descriptionID >= 0 ? descriptions[Int(entry.descriptionID)] : nil
            let sample = try SampleBuffer(
                dataBuffer: BlockBuffer(bytes), formatDescription: description, sampleCount: 1,
                timings: .uniform(
                    SampleTimingInfo(
                        duration: entry.duration, presentationTimeStamp: entry.presentationTimeStamp,
                        decodeTimeStamp: entry.decodeTimeStamp)),
                sizes: .uniform(entry.size), sampleAttachments: [Self.unpackAttachments(entry.attachments)])
            try body(sample)
        }
    }

    /// Samples in the silo now (removed ones not counted).
    public var sampleCount: Int { state.withLock { $0.sampleCount } }

    /// The 1-based number of the current pass.
    public var currentPass: Int { state.withLock { $0.pass } }

    /// How far the current pass is, 0...1. Pass 1: the duration added over the duration of the
    /// time range given at creation (0 when that range or a frame duration is unknown). Later
    /// passes: frames added over frames the ranges took out (1 when they took out none).
    public var progressOfCurrentPass: Double {
        state.withLock { state in
            if state.pass == 1 {
                let total = timeRange.duration.seconds
                guard timeRange.isValid, timeRange.duration.isNumeric, total > 0, state.allDurationsKnown,
                    state.durationAddedInFirstPass.isNumeric
                else { return 0 }
                return min(1, state.durationAddedInFirstPass.seconds / total)
            }
            guard state.expectedInPass > 0 else { return 1 }
            return min(1, Double(state.addedInPass) / Double(state.expectedInPass))
        }
    }

    /// Payload bytes of the samples in the silo now (the data file also holds replaced ones).
    public var totalBytes: Int { state.withLock { $0.totalBytes } }

    // MARK: Closing

    /// Closes the silo and removes its files; with `keepOnClose`, syncs the data and writes the
    /// index instead. Calling it again does nothing.
    ///
    /// - Throws: the error of the sync, index write or removal (the silo is closed anyway).
    public func close() throws(VTError) {
        try state.withLock { (state) throws(VTError) in
            guard let file = state.dataFile else { return }
            // Dropping the last reference closes the descriptor, which releases the lock.
            state.dataFile = nil
            if state.keepOnClose {
                try file.sync()
                try Self.writeIndex(Self.serializeIndex(state, timeRange: timeRange, kept: true), to: indexPath)
                return
            }
            var failure: VTError?
            for path in [indexPath + StaleFiles.temporarySuffix, indexPath, dataPath] where unlink(path) != 0 {
                if errno != ENOENT, failure == nil { failure = MultiPassFile.systemError(errno, "remove", path) }
            }
            if let failure { throw failure }
        }
    }

    /// Removes the silo and storage files in `directory` left by processes that died (killed,
    /// crashed) without closing them, and returns their paths. Files of live silos and storages,
    /// in this process or another, are recognised by their lock and kept, as are files closed
    /// with `keepOnClose`.
    @discardableResult
    public static func removeStaleFiles(in directory: String) -> [String] { StaleFiles.remove(in: directory) }

    // MARK: Helpers

    private static func closedError(_ path: String) -> VTError {
        VTError(.closed, "the frame silo \(path) is closed", path: path)
    }

    /// The index of the range containing `time` in sorted, disjoint `ranges`.
    static func rangeIndex(containing time: MediaTime, in ranges: [MediaTimeRange]) -> Int? {
        // The last range starting at or before `time`.
        var low = 0
        var high = ranges.count
        while low < high {
            let middle = (low + high) / 2
            if ranges[middle].start <= time { low = middle + 1 } else { high = middle }
        }
        guard low > 0, ranges[low - 1].contains(time) else { return nil }
        return low - 1
    }

    private static func descriptionID(of description: FormatDescription, in state: inout State) -> Int32 {
        if let (last, id) = state.lastDescription, last == description { return id }
        let id: Int32
        if let known = state.descriptionIDs[description] {
            id = known
        } else {
            id = Int32(state.descriptions.count)
            state.descriptions.append(description)
            state.descriptionIDs[description] = id
        }
        state.lastDescription = (description, id)
        return id
    }
}
