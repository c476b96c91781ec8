import Glibc
import MediaCore
import SwiftVT
import SwiftVTTestSupport
import Testing

@Suite("Stale temporary files")
struct StaleFileTests {
    @Test("a process killed with SIGKILL leaves files; removeStaleFiles removes them and keeps the live ones")
    func crashedProcess() throws {
        let directory = try TemporaryDirectory()
        let logs = try TemporaryDirectory("logs")
        // Live objects of this process in the same directory.
        let liveSilo = try FrameSilo(directory: directory.path)
        try liveSilo.add(try Stream.sample(frame: 0, decodeIndex: 0, pass: 1, description: nil))
        try liveSilo.setTimeRangesForNextPass([]) // it has an index file too
        let liveStorage = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid)
        let live = directory.names

        let exit = try ChildProcess.run(role: "crash", directory: directory.path, logPath: logs.path + "/child.log")
        #expect(exit.signal == SIGKILL, "\(exit)")
        let left = directory.names.filter { !live.contains($0) }
        #expect(left.count == 3, "\(left)") // the child's .data, .index and .db
        #expect(left.allSatisfy { $0.contains("-\(getpid())-") == false })

        let removed = FrameSilo.removeStaleFiles(in: directory.path)
        #expect(removed.sorted() == left.map { directory.path + "/" + $0 }.sorted())
        #expect(directory.names == live)
        #expect(FrameSilo.removeStaleFiles(in: directory.path).isEmpty)
        #expect(liveSilo.sampleCount == 1)
        #expect(try liveSilo.snapshots().count == 1)
        try liveStorage.write(MultiPassStorageTests.record(1))
        try liveSilo.close()
        try liveStorage.close()
        #expect(directory.names.isEmpty)
    }

    @Test("the lock decides, not the process id: files of this very process are stale once their descriptor is gone")
    func lockNotPid() throws {
        let directory = try TemporaryDirectory()
        // Files named like this process's, nobody holding their lock: what a crash of a process
        // whose id was later reused looks like.
        let base = directory.path + "/.swiftvt-silo-\(getpid())-00000000deadbeef"
        writeFile(base + ".data", [1, 2, 3])
        writeFile(base + ".index", [4, 5, 6])
        writeFile(directory.path + "/.swiftvt-mps-\(getpid())-00000000deadbeef.db", [7])
        // An index without its data file (a crash between two unlinks).
        writeFile(directory.path + "/.swiftvt-silo-1-0000000000000001.index", [8])
        // Not ours: left alone.
        writeFile(directory.path + "/other.data", [9])
        writeFile(directory.path + "/.swiftvt-silo-notes.txt", [9])
        // A file being created (.new) is left alone while young, removed once old.
        let young = directory.path + "/.swiftvt-silo-1-0000000000000002.new"
        let old = directory.path + "/.swiftvt-mps-1-0000000000000003.new"
        writeFile(young, [])
        writeFile(old, [])
        var times = [timespec(tv_sec: time(nil) - 3600, tv_nsec: 0), timespec(tv_sec: time(nil) - 3600, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, old, &times, 0) == 0)

        let removed = Set(
            FrameSilo.removeStaleFiles(in: directory.path).map { String($0.dropFirst(directory.path.count + 1)) })
        #expect(
            removed == [
                ".swiftvt-silo-\(getpid())-00000000deadbeef.data", ".swiftvt-silo-\(getpid())-00000000deadbeef.index",
                ".swiftvt-mps-\(getpid())-00000000deadbeef.db", ".swiftvt-silo-1-0000000000000001.index",
                ".swiftvt-mps-1-0000000000000003.new"
            ])
        #expect(directory.names == [".swiftvt-silo-1-0000000000000002.new", ".swiftvt-silo-notes.txt", "other.data"])
        #expect(FrameSilo.removeStaleFiles(in: directory.path + "/missing").isEmpty)
    }

    @Test("files closed with keepOnClose are not stale")
    func keptFiles() throws {
        let directory = try TemporaryDirectory()
        let silo = try FrameSilo(directory: directory.path, keepOnClose: true)
        try silo.add(try Stream.sample(frame: 0, decodeIndex: 0, pass: 1, description: nil))
        try silo.close()
        let storage = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid, keepOnClose: true)
        try storage.close()
        #expect(directory.names.count == 3)
        #expect(MultiPassStorage.removeStaleFiles(in: directory.path).isEmpty)
        #expect(directory.names.count == 3)
    }
}
