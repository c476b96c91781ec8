import Glibc
import MediaCore
import SwiftVTTestSupport
import Testing

@testable import SwiftVT

@Suite("MultiPassStorage")
struct MultiPassStorageTests {
    static func record(_ frame: Int, pass: Int = 1) -> FrameAnalysisRecord {
        let types: [AnalysisFrameType] = [.idr, .predicted, .bidirectional, .bidirectional, .intra]
        return FrameAnalysisRecord(
            presentationTimeStamp: Stream.time(frame), decodeTimeStamp: Stream.time(frame - 1),
            duration: Stream.time(1),
            frameType: types[frame % types.count], quantizer: 20.25 + Double(frame) / 8 + Double(pass),
            bits: 8 * (1000 + frame * 37) / pass, complexity: Double(frame) * 1234.5678 + 0.1, pass: pass)
    }

    @Test("write, read, replace, reopen: the values come back equal")
    func roundTrip() throws {
        let directory = try TemporaryDirectory()
        let range = Stream.range(0, 20)
        let storage = try MultiPassStorage(creatingIn: directory.path, timeRange: range, keepOnClose: true)
        #expect(storage.timeRange == range)
        #expect(storage.path.hasPrefix(directory.path + "/.swiftvt-mps-\(getpid())-"))
        // B-frame order: presentation times arrive out of order.
        for frame in Stream.decodeOrder(frames: 20) { try storage.write(Self.record(frame)) }
        #expect(storage.recordCount == 20)
        for frame in [3, 7, 12] { try storage.write(Self.record(frame, pass: 2)) }
        #expect(storage.recordCount == 20)
        // Another timescale, same instant: the same frame.
        var other = Self.record(5, pass: 3)
        other.presentationTimeStamp = MediaTime(value: 5_000, timescale: 30_000)
        try storage.write(other)

        var expected = (0..<20).map { Self.record($0) }
        for frame in [3, 7, 12] { expected[frame] = Self.record(frame, pass: 2) }
        expected[5] = other
        #expect(storage.records() == expected)
        #expect(storage.record(at: Stream.time(7)) == Self.record(7, pass: 2))
        #expect(storage.record(at: Stream.time(25)) == nil)
        #expect(storage.records(in: Stream.range(4, 4)) == Array(expected[4..<8]))
        #expect(storage.records(in: Stream.range(40, 4)).isEmpty)
        try storage.close()
        #expect(fileSize(storage.path) == MultiPassStorage.headerSize + 24 * MultiPassStorage.recordSize)
        #expect(MultiPassStorage.removeStaleFiles(in: directory.path).isEmpty) // kept, not stale

        let reopened = try MultiPassStorage(reopening: storage.path, keepOnClose: false)
        #expect(reopened.timeRange == range)
        #expect(reopened.recordCount == 20)
        #expect(reopened.records() == expected)
        // Locked while open.
        #expect(multiPassError { _ = try MultiPassStorage(reopening: storage.path) }?.code == .ioFailed)
        try reopened.write(Self.record(20, pass: 2))
        #expect(reopened.recordCount == 21)
        try reopened.close()
        #expect(!fileExists(storage.path))
    }

    @Test("keepOnClose false removes the file at close; later calls throw .closed")
    func closeRemoves() throws {
        let directory = try TemporaryDirectory()
        let storage = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid)
        try storage.write(Self.record(0))
        #expect(fileExists(storage.path))
        try storage.close()
        #expect(!fileExists(storage.path))
        #expect(directory.names.isEmpty)
        #expect(multiPassError { try storage.close() }?.code == .closed)
        #expect(multiPassError { try storage.write(Self.record(1)) }?.code == .closed)
        #expect(storage.records() == [Self.record(0)]) // still readable
        do {
            let dropped = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid)
            withExtendedLifetime(dropped) { #expect(directory.names.count == 1) }
        }
        #expect(directory.names.isEmpty) // deinit closes
    }

    @Test("invalid records are refused: a presentation time that is not a number, pass 0")
    func invalidRecords() throws {
        let directory = try TemporaryDirectory()
        let storage = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid)
        var untimed = Self.record(0)
        untimed.presentationTimeStamp = .invalid
        var passZero = Self.record(0)
        passZero.pass = 0
        #expect(multiPassError { try storage.write(untimed) }?.code == .invalidArgument)
        #expect(multiPassError { try storage.write(passZero) }?.code == .invalidArgument)
        #expect(storage.recordCount == 0)
        try storage.close()
    }

    @Test("corrupt files: a bad record names the path and the record number; a cut or foreign file is refused")
    func corrupt() throws {
        let directory = try TemporaryDirectory()
        let storage = try MultiPassStorage(
            creatingIn: directory.path, timeRange: Stream.range(0, 10), keepOnClose: true)
        for frame in 0..<10 { try storage.write(Self.record(frame)) }
        try storage.close()
        let original = readFile(storage.path)

        var flipped = original
        flipped[MultiPassStorage.headerSize + 2 * MultiPassStorage.recordSize + 60] ^= 0x01
        writeFile(storage.path, flipped)
        var error = multiPassError { _ = try MultiPassStorage(reopening: storage.path) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains(storage.path) == true)
        #expect(error?.message.contains("record 3") == true, "\(String(describing: error))")

        writeFile(storage.path, Array(original.dropLast(30)))
        error = multiPassError { _ = try MultiPassStorage(reopening: storage.path) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("ends inside record 10") == true, "\(String(describing: error))")

        var header = original
        header[30] ^= 0x10
        writeFile(storage.path, header)
        error = multiPassError { _ = try MultiPassStorage(reopening: storage.path) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("header") == true, "\(String(describing: error))")

        writeFile(
            storage.path, Array("not a storage at all, but long enough to hold a header of sixty-four bytes".utf8))
        error = multiPassError { _ = try MultiPassStorage(reopening: storage.path) }
        #expect(error?.code == .corrupt)
        #expect(error?.message.contains("not a multi-pass storage") == true)

        error = multiPassError { _ = try MultiPassStorage(reopening: directory.path + "/missing.db") }
        #expect(error?.code == .ioFailed)
        #expect(error?.message.contains("No such file or directory") == true)
    }

    @Test("concurrent writers: every record lands once, the file reopens clean")
    func concurrentWriters() async throws {
        let directory = try TemporaryDirectory()
        let storage = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid, keepOnClose: true)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<4 {
                group.addTask {
                    for frame in stride(from: writer, to: 400, by: 4) { try? storage.write(Self.record(frame)) }
                }
            }
        }
        #expect(storage.recordCount == 400)
        try storage.close()
        let reopened = try MultiPassStorage(reopening: storage.path, keepOnClose: false)
        #expect(reopened.records() == (0..<400).map { Self.record($0) })
        try reopened.close()
    }
}
