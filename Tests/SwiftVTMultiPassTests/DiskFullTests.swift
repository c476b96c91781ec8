import Glibc
import MediaCore
import SwiftVTTestSupport
import Testing

@testable import SwiftVT

@Suite("Full disks")
struct DiskFullTests {
    @Test(
        "file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored) in a child process: .diskFull with a clear message; what was added stays readable"
    )
    func fileSizeLimit() throws {
        let directory = try TemporaryDirectory()
        let logs = try TemporaryDirectory("logs")
        let exit = try ChildProcess.run(
            role: "file-size-limit", directory: directory.path, logPath: logs.path + "/child.log")
        #expect(exit.exitCode == 0, "\(exit)")
        // The role really ran (it is skipped when the environment does not ask for it).
        #expect(exit.log.contains(FileSizeLimitChild.doneMarker), "\(exit)")
        #expect(directory.names.isEmpty, "\(directory.names)")
    }

    @Test(
        "a full tmpfs (ENOSPC): .diskFull naming the directory; the silo is unchanged and usable; needs root to mount")
    func fullTmpfs() throws {
        let directory = try TemporaryDirectory("tmpfs")
        let path = directory.path
        let mounted = "size=128k,mode=0700".withCString { mount("tmpfs", path, "tmpfs", 0, $0) } == 0
        guard mounted else {
            print(
                "skipped: cannot mount a tmpfs on \(path) (\(String(cString: strerror(errno)))); the file-size-limit test covers full disks"
            )
            return
        }
        defer { umount2(path, Int32(MNT_DETACH)) }

        let silo = try FrameSilo(directory: directory.path)
        let samples = try Stream.samples(frames: 0..<200, pass: 1, description: { _ in nil })
        var failure: VTError?
        var added = 0
        for sample in samples {
            do {
                try silo.add(sample)
                added += 1
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure, "200 samples fit in 128 KiB?")
        #expect(error.code == .diskFull)
        #expect(error.systemError == ENOSPC)
        #expect(error.message.contains("could not write \(silo.dataPath): No space left on device"), "\(error)")
        #expect(
            error.message.contains("free space in \(directory.path) or set temp-location to a larger disk"), "\(error)")
        #expect(added > 10)
        #expect(silo.sampleCount == added)
        #expect(try silo.snapshots() == (try samples.prefix(added).map(SampleSnapshot.init)))

        // The index cannot be written either: nothing changes.
        let rangeError = multiPassError { try silo.setTimeRangesForNextPass([Stream.range(0, 10)]) }
        if let rangeError {
            #expect(rangeError.code == .diskFull, "\(rangeError)")
            #expect(silo.currentPass == 1)
            #expect(silo.sampleCount == added)
        }
        #expect(!directory.names.contains { $0.hasSuffix(".tmp") })

        // A storage on the full disk fails to be created or to write, with the same kind of error.
        let storageError = multiPassError {
            let storage = try MultiPassStorage(creatingIn: directory.path, timeRange: .invalid)
            for frame in 0..<2000 { try storage.write(MultiPassStorageTests.record(frame)) }
            try storage.close()
        }
        #expect(storageError?.code == .diskFull, "\(String(describing: storageError))")

        // Closing frees the space; a new silo works.
        try silo.close()
        #expect(directory.names.isEmpty, "\(directory.names)")
        let again = try FrameSilo(directory: directory.path)
        try again.add(samples[0])
        try again.close()
    }
}

/// The child's side of ``DiskFullTests/fileSizeLimit()``: a 64 KiB file-size limit for this
/// (child) process only.
enum FileSizeLimitChild {
    static let doneMarker = "FILE-SIZE-LIMIT-CHILD-DONE"
    static let limit = 64 * 1024

    static func run(directory: String) throws {
        // Without this the kernel kills the process (SIGXFSZ) instead of failing the write with EFBIG.
        signal(SIGXFSZ, SIG_IGN)
        var limits = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limits)
        limits.rlim_cur = rlim_t(limit)
        try #require(setrlimit(__rlimit_resource_t(RLIMIT_FSIZE.rawValue), &limits) == 0)

        let silo = try FrameSilo(directory: directory)
        let samples = try Stream.samples(frames: 0..<200, pass: 1, description: { _ in nil })
        var failure: VTError?
        var added = 0
        for sample in samples {
            do {
                try silo.add(sample)
                added += 1
            } catch {
                failure = error
                break
            }
        }
        let error = try #require(failure)
        #expect(error.code == .diskFull)
        #expect(error.systemError == EFBIG)
        #expect(error.message.contains("could not write \(silo.dataPath): File too large"), "\(error)")
        #expect(error.message.contains("ulimit -f"), "\(error)")
        #expect(silo.sampleCount == added)
        #expect(silo.totalBytes <= limit)
        // What was added before is intact and readable.
        #expect(try silo.snapshots() == (try samples.prefix(added).map(SampleSnapshot.init)))

        let storage = try MultiPassStorage(creatingIn: directory, timeRange: .invalid)
        var written = 0
        let storageError = multiPassError {
            for frame in 0..<2000 {
                try storage.write(MultiPassStorageTests.record(frame))
                written += 1
            }
        }
        #expect(storageError?.code == .diskFull)
        #expect(storage.recordCount == written)
        #expect(written == (limit - MultiPassStorage.headerSize) / MultiPassStorage.recordSize)
        try storage.close()
        try silo.close()
        print("\(doneMarker): \(error)")
    }
}
