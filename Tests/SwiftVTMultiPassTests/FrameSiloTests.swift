import Glibc
import H264
import MediaCore
import SwiftVTTestSupport
import Testing

@testable import SwiftVT

@Suite("FrameSilo")
struct FrameSiloTests {
    /// 30 frames, three GOPs; the 640x360 description from frame 20 on (a resolution change).
    static func firstPass() throws -> [SampleBuffer] {
        let (high, main) = try Stream.descriptions()
        return try Stream.samples(frames: 0..<30, pass: 1) { $0 < 20 ? high : main }
    }

    @Test("pass 1: iteration gives back every sample as added (bytes, timing, attachments, description)")
    func firstPassRoundTrip() throws {
        let directory = try TemporaryDirectory()
        let silo = try FrameSilo(directory: directory.path)
        var input = try Self.firstPass()
        // A sample without description or attachments: "unknown" must stay unknown.
        input.append(
            try SampleBuffer(
                dataBuffer: BlockBuffer([1, 2, 3]), formatDescription: nil,
                timings: .uniform(SampleTimingInfo(presentationTimeStamp: MediaTime(value: 1001, timescale: 30000)))))
        for sample in input { try silo.add(sample) }
        #expect(silo.sampleCount == input.count)
        #expect(silo.totalBytes == input.reduce(0) { $0 + $1.totalSampleSize })
        #expect(silo.currentPass == 1)
        let output = try silo.snapshots()
        #expect(output == (try input.map(SampleSnapshot.init)))
        #expect(output.last?.attachments.dependsOnOthers == nil)
        #expect(output.last?.timing.decodeTimeStamp.isValid == false)
        #expect(Set(output.compactMap(\.format)).count == 2)
        #expect(fileSize(silo.dataPath) == silo.totalBytes)
        #expect(!fileExists(silo.indexPath))
        try silo.close()
    }

    @Test("two ranges replaced, added out of order: read-out interleaves them in the original decode order")
    func replaceTwoRanges() throws {
        let directory = try TemporaryDirectory()
        let silo = try FrameSilo(directory: directory.path)
        let (high, main) = try Stream.descriptions()
        let describe: (Int) -> FormatDescription? = { $0 < 20 ? high : main }
        for sample in try Self.firstPass() { try silo.add(sample) }

        try silo.setTimeRangesForNextPass([Stream.range(0, 10), Stream.range(20, 10)])
        #expect(silo.currentPass == 2)
        #expect(silo.sampleCount == 10)
        #expect(fileExists(silo.indexPath))
        let bytesBefore = fileSize(silo.dataPath)
        // The last GOP first: the place is the range's, not the order of adding.
        for sample in try Stream.samples(frames: 20..<30, pass: 2, description: describe) { try silo.add(sample) }
        for sample in try Stream.samples(frames: 0..<10, pass: 2, description: describe) { try silo.add(sample) }
        #expect(silo.sampleCount == 30)
        // Replaced bytes stay in the data file as garbage; the new ones are appended.
        #expect(fileSize(silo.dataPath) > bytesBefore)

        var expected = try Stream.samples(frames: 0..<10, pass: 2, description: describe)
        expected += try Stream.samples(frames: 10..<20, pass: 1, description: describe)
        expected += try Stream.samples(frames: 20..<30, pass: 2, description: describe)
        #expect(try silo.snapshots() == (try expected.map(SampleSnapshot.init)))
        #expect(silo.totalBytes == expected.reduce(0) { $0 + $1.totalSampleSize })

        // Pass 3 replaces the middle GOP; the others keep their pass-2 frames.
        try silo.setTimeRangesForNextPass([Stream.range(10, 10)])
        for sample in try Stream.samples(frames: 10..<20, pass: 3, description: describe) { try silo.add(sample) }
        expected.replaceSubrange(10..<20, with: try Stream.samples(frames: 10..<20, pass: 3, description: describe))
        let output = try silo.snapshots()
        #expect(output == (try expected.map(SampleSnapshot.init)))
        #expect(output.map { Int($0.timing.presentationTimeStamp.value) } == Stream.decodeOrder(frames: 30))
        try silo.close()
    }

    @Test(
        "a pass cut short: the range it finished keeps its new frames, the unfinished one gets its earlier frames back")
    func restoreUnfinishedRanges() throws {
        let directory = try TemporaryDirectory()
        let (high, main) = try Stream.descriptions()
        let describe: (Int) -> FormatDescription? = { $0 < 20 ? high : main }
        let silo = try FrameSilo(directory: directory.path)
        let firstPass = try Self.firstPass()
        for sample in firstPass { try silo.add(sample) }
        try silo.setTimeRangesForNextPass([Stream.range(0, 10), Stream.range(20, 10)])
        // The first range whole, the second one only 4 of its 10 frames (the stream ended).
        for sample in try Stream.samples(frames: 0..<10, pass: 2, description: describe) { try silo.add(sample) }
        for sample in try Stream.samples(frames: 20..<30, pass: 2, description: describe).prefix(4) {
            try silo.add(sample)
        }
        #expect(silo.rangeProgress.map(\.isFinished) == [true, false])
        #expect(silo.rangeProgress.map(\.framesTakenOut) == [10, 10])
        #expect(silo.rangeProgress.map(\.framesAdded) == [10, 4])

        let restoration = try silo.restoreFramesOfUnfinishedRanges()
        #expect(
            restoration == FrameSilo.Restoration(rangesKept: 1, rangesRestored: 1, framesRestored: 10, framesDropped: 4)
        )
        var expected = try Stream.samples(frames: 0..<10, pass: 2, description: describe)
        expected += try Stream.samples(frames: 10..<30, pass: 1, description: describe)
        #expect(try silo.snapshots() == (try expected.map(SampleSnapshot.init)))
        #expect(silo.sampleCount == 30)
        #expect(silo.totalBytes == expected.reduce(0) { $0 + $1.totalSampleSize })
        #expect(silo.rangeProgress.isEmpty)
        // The pass takes no more frames.
        let late = try Stream.samples(frames: 20..<30, pass: 2, description: describe)[5]
        #expect(multiPassError { try silo.add(late) }?.code == .invalidArgument)
        try silo.close()
        #expect(directory.names.isEmpty)
    }

    @Test("a pass taken back: every range gets its earlier frames back, also after the index was reopened")
    func restoreWholePass() throws {
        let directory = try TemporaryDirectory()
        let (high, main) = try Stream.descriptions()
        let describe: (Int) -> FormatDescription? = { $0 < 20 ? high : main }
        let silo = try FrameSilo(directory: directory.path, keepOnClose: true)
        for sample in try Self.firstPass() { try silo.add(sample) }
        // Pass 2 replaces the middle GOP; pass 3 the first and last, and is then taken back:
        // the result is pass 2's, not pass 1's.
        try silo.setTimeRangesForNextPass([Stream.range(10, 10)])
        for sample in try Stream.samples(frames: 10..<20, pass: 2, description: describe) { try silo.add(sample) }
        try silo.setTimeRangesForNextPass([Stream.range(0, 10), Stream.range(20, 10)])
        for sample in try Stream.samples(frames: 0..<10, pass: 3, description: describe) { try silo.add(sample) }
        for sample in try Stream.samples(frames: 20..<30, pass: 3, description: describe) { try silo.add(sample) }
        #expect(silo.rangeProgress.map(\.isFinished) == [true, true])
        // The frames taken out survive a close and reopen (index version 2 keeps them).
        try silo.close()
        let reopened = try FrameSilo(reopeningIndexAt: silo.indexPath, keepOnClose: false)
        #expect(reopened.rangeProgress.map(\.framesTakenOut) == [10, 10])
        let restoration = try reopened.restoreFramesOfCurrentPass()
        #expect(
            restoration
                == FrameSilo.Restoration(rangesKept: 0, rangesRestored: 2, framesRestored: 20, framesDropped: 20))
        var expected = try Stream.samples(frames: 0..<10, pass: 1, description: describe)
        expected += try Stream.samples(frames: 10..<20, pass: 2, description: describe)
        expected += try Stream.samples(frames: 20..<30, pass: 1, description: describe)
        #expect(try reopened.snapshots() == (try expected.map(SampleSnapshot.init)))
        #expect(reopened.totalBytes == expected.reduce(0) { $0 + $1.totalSampleSize })
        try reopened.close()
        #expect(directory.names.isEmpty)
    }

    @Test("samples outside the ranges, overlapping, unsorted, empty or invalid ranges are rejected; nothing changes")
    func rejections() throws {
        let directory = try TemporaryDirectory()
        let silo = try FrameSilo(directory: directory.path)
        for sample in try Self.firstPass() { try silo.add(sample) }
        let overlapping = [Stream.range(0, 10), Stream.range(5, 10)]
        let unsorted = [Stream.range(20, 10), Stream.range(0, 10)]
        let empty = [Stream.range(0, 0)]
        let invalid = [MediaTimeRange(start: .invalid, duration: Stream.time(3))]
        let indefinite = [MediaTimeRange(start: .zero, duration: .indefinite)]
        for ranges in [overlapping, unsorted, empty, invalid, indefinite] {
            let error = multiPassError { try silo.setTimeRangesForNextPass(ranges) }
            #expect(error?.code == .invalidArgument, "\(ranges)")
        }
        #expect(silo.currentPass == 1)
        #expect(silo.sampleCount == 30)
        // Back-to-back ranges do not overlap (the end is exclusive).
        try silo.setTimeRangesForNextPass([Stream.range(0, 10), Stream.range(10, 10)])
        let outside = try Stream.sample(frame: 25, decodeIndex: 25, pass: 2, description: nil)
        let error = multiPassError { try silo.add(outside) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("outside the time ranges of pass 2") == true)
        #expect(silo.sampleCount == 10)
        // Buffers the silo cannot hold.
        let two = try SampleBuffer(
            dataBuffer: BlockBuffer([1, 2]), formatDescription: nil, sampleCount: 2,
            timings: .uniform(SampleTimingInfo(duration: Stream.time(1), presentationTimeStamp: .zero)),
            sizes: .uniform(1))
        let untimed = try SampleBuffer(dataBuffer: BlockBuffer([1]), formatDescription: nil)
        #expect(multiPassError { try silo.add(two) }?.code == .invalidArgument)
        #expect(multiPassError { try silo.add(untimed) }?.code == .invalidArgument)
        try silo.close()
    }

    @Test("iterating a sub-range gives the samples presented in it, in decode order")
    func subRange() throws {
        let directory = try TemporaryDirectory()
        let silo = try FrameSilo(directory: directory.path)
        let input = try Self.firstPass()
        for sample in input { try silo.add(sample) }
        let range = Stream.range(5, 10)
        let expected = try input.filter { range.contains($0.presentationTimeStamp) }.map(SampleSnapshot.init)
        #expect(expected.count == 10)
        #expect(try silo.snapshots(in: range) == expected)
        #expect(try silo.snapshots(in: Stream.range(100, 5)).isEmpty)
        #expect(multiPassError { _ = try silo.snapshots(in: .invalid) }?.code == .invalidArgument)
        try silo.close()
    }

    @Test("progress: pass 1 by duration over the time range, pass 2 by samples replaced, 0 -> 1")
    func progress() throws {
        let directory = try TemporaryDirectory()
        let input = try Self.firstPass()
        let unknown = try FrameSilo(directory: directory.path)
        try unknown.add(input[0])
        #expect(unknown.progressOfCurrentPass == 0) // no time range: unknown
        try unknown.close()

        let silo = try FrameSilo(directory: directory.path, timeRange: Stream.range(0, 30))
        #expect(silo.progressOfCurrentPass == 0)
        for sample in input.prefix(15) { try silo.add(sample) }
        #expect(abs(silo.progressOfCurrentPass - 0.5) < 1e-9)
        for sample in input.dropFirst(15) { try silo.add(sample) }
        #expect(silo.progressOfCurrentPass == 1)

        try silo.setTimeRangesForNextPass([Stream.range(0, 10), Stream.range(20, 10)])
        var seen = [silo.progressOfCurrentPass]
        for sample in try Stream.samples(frames: 0..<30, pass: 2, description: { _ in nil })
        where !Stream.range(10, 10).contains(sample.presentationTimeStamp) {
            try silo.add(sample)
            seen.append(silo.progressOfCurrentPass)
        }
        #expect(seen.first == 0)
        #expect(seen.last == 1)
        #expect(seen.count == 21)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0 < $1 })
        #expect(abs(seen[10] - 0.5) < 1e-9)
        try silo.setTimeRangesForNextPass([])
        #expect(silo.progressOfCurrentPass == 1) // nothing to replace
        try silo.close()
    }

    @Test("keepOnClose: the index is written; reopening restores the silo mid-pass and it goes on")
    func keepAndReopen() throws {
        let directory = try TemporaryDirectory()
        let (high, main) = try Stream.descriptions()
        let describe: (Int) -> FormatDescription? = { $0 < 20 ? high : main }
        let silo = try FrameSilo(directory: directory.path, timeRange: Stream.range(0, 30), keepOnClose: true)
        for sample in try Self.firstPass() { try silo.add(sample) }
        try silo.setTimeRangesForNextPass([Stream.range(0, 10), Stream.range(20, 10)])
        let replacements =
            try Stream.samples(frames: 20..<30, pass: 2, description: describe)
            + Stream.samples(frames: 0..<10, pass: 2, description: describe)
        for sample in replacements.prefix(13) { try silo.add(sample) }
        let before = try silo.snapshots()
        let progress = silo.progressOfCurrentPass
        try silo.close()
        try silo.close() // idempotent
        #expect(fileExists(silo.dataPath) && fileExists(silo.indexPath))
        #expect(FrameSilo.removeStaleFiles(in: directory.path).isEmpty) // kept, not stale

        let reopened = try FrameSilo(reopeningIndexAt: silo.indexPath, keepOnClose: false)
        #expect(reopened.timeRange == Stream.range(0, 30))
        #expect(reopened.currentPass == 2)
        #expect(reopened.sampleCount == before.count)
        #expect(reopened.totalBytes == before.reduce(0) { $0 + $1.bytes.count })
        #expect(reopened.progressOfCurrentPass == progress)
        #expect(try reopened.snapshots() == before)
        // A second opener is refused while this one holds the lock.
        #expect(multiPassError { _ = try FrameSilo(reopeningIndexAt: silo.indexPath) }?.code == .ioFailed)
        for sample in replacements.dropFirst(13) { try reopened.add(sample) }
        var expected = try Stream.samples(frames: 0..<10, pass: 2, description: describe)
        expected += try Stream.samples(frames: 10..<20, pass: 1, description: describe)
        expected += try Stream.samples(frames: 20..<30, pass: 2, description: describe)
        #expect(try reopened.snapshots() == (try expected.map(SampleSnapshot.init)))
        try reopened.close()
        #expect(directory.names.isEmpty)
    }

    /// A kept silo of 30 samples, closed; returns its index path.
    static func keptSilo(in directory: borrowing TemporaryDirectory) throws -> String {
        let silo = try FrameSilo(directory: directory.path, keepOnClose: true)
        for sample in try firstPass() { try silo.add(sample) }
        try silo.close()
        return silo.indexPath
    }

    @Test("corrupt index: a flipped byte, a truncation, a bad magic or version -> .corrupt naming the file")
    func corruptIndex() throws {
        let directory = try TemporaryDirectory()
        let indexPath = try Self.keptSilo(in: directory)
        #expect(try FrameSilo(reopeningIndexAt: indexPath).sampleCount == 30) // closes at deinit, kept
        let original = readFile(indexPath)
        #expect(original.count > FrameSilo.indexHeaderSize)

        var cases: [(String, [UInt8], String)] = []
        var flipped = original
        flipped[original.count / 2] ^= 0x40
        cases.append(("flipped byte", flipped, "checksum"))
        cases.append(("truncated", Array(original.dropLast(100)), "cut short"))
        cases.append(("empty", [], "not a frame silo index"))
        var magic = original
        magic[0] = UInt8(ascii: "X")
        cases.append(("magic", magic, "not a frame silo index"))
        var version = original
        version[8] = 9
        cases.append(("version", version, "version 9"))
        for (name, bytes, expected) in cases {
            writeFile(indexPath, bytes)
            let error = multiPassError { _ = try FrameSilo(reopeningIndexAt: indexPath) }
            #expect(error?.code == .corrupt, "\(name)")
            #expect(error?.message.contains(indexPath) == true, "\(name): \(String(describing: error))")
            #expect(error?.message.contains(expected) == true, "\(name): \(String(describing: error))")
        }
    }

    @Test("corrupt bounds: a checksummed index naming bytes beyond the data file -> .corrupt")
    func corruptBounds() throws {
        let directory = try TemporaryDirectory()
        let indexPath = try Self.keptSilo(in: directory)
        let dataPath = String(indexPath.dropLast(".index".count)) + ".data"
        let original = readFile(indexPath)

        // The data file cut short: the index covers more than it holds.
        let data = readFile(dataPath)
        writeFile(dataPath, Array(data.dropLast(10)))
        var error = multiPassError { _ = try FrameSilo(reopeningIndexAt: indexPath) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("holds \(data.count - 10)") == true, "\(String(describing: error))")
        writeFile(dataPath, data)

        // One record's offset moved past the end, with a valid checksum: the bounds check, not the
        // checksum, must catch it.
        var forged = original
        let recordsStart = forged.count - 4 - 30 * FrameSilo.indexRecordSize
        let third = recordsStart + 2 * FrameSilo.indexRecordSize
        withUnsafeBytes(of: UInt64(data.count).littleEndian) {
            forged.replaceSubrange(third + 8..<third + 16, with: $0)
        }
        let checksum = CRC32.checksum(forged, 0..<forged.count - 4)
        withUnsafeBytes(of: checksum.littleEndian) { forged.replaceSubrange(forged.count - 4..<forged.count, with: $0) }
        writeFile(indexPath, forged)
        error = multiPassError { _ = try FrameSilo(reopeningIndexAt: indexPath) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("record 3") == true, "\(String(describing: error))")
        #expect(error?.message.contains("beyond") == true, "\(String(describing: error))")
    }

    @Test("close removes the files and is idempotent; later calls throw .closed")
    func closeRemovesFiles() throws {
        let directory = try TemporaryDirectory()
        let silo = try FrameSilo(directory: directory.path)
        let input = try Self.firstPass()
        for sample in input { try silo.add(sample) }
        try silo.setTimeRangesForNextPass([Stream.range(0, 10)])
        #expect(directory.names.count == 2)
        try silo.close()
        try silo.close()
        #expect(directory.names.isEmpty)
        #expect(multiPassError { try silo.add(input[0]) }?.code == .closed)
        #expect(multiPassError { try silo.forEachSample { _ in } }?.code == .closed)
        #expect(multiPassError { try silo.setTimeRangesForNextPass([]) }?.code == .closed)

        // deinit closes too.
        do {
            let dropped = try FrameSilo(directory: directory.path)
            try dropped.add(input[0])
            withExtendedLifetime(dropped) { #expect(directory.names.count == 1) }
        }
        #expect(directory.names.isEmpty)
    }

    @Test("the iteration closure runs without the lock: it may add, query and close")
    func reentrantBody() throws {
        let directory = try TemporaryDirectory()
        let silo = try FrameSilo(directory: directory.path)
        let input = try Self.firstPass()
        for sample in input.prefix(10) { try silo.add(sample) }
        var visited = 0
        try silo.forEachSample { _ in
            visited += 1
            try silo.add(input[9 + visited]) // not seen by this iteration
            _ = silo.sampleCount
            if visited == 10 { try silo.close() } // the snapshot keeps the data readable
        }
        #expect(visited == 10)
        #expect(silo.sampleCount == 20)
        #expect(directory.names.isEmpty)
    }
}
