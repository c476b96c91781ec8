import Glibc
import MediaCore

// The file layer under MultiPassStorage and FrameSilo: descriptors that report errors with the
// path and errno text, temporary names, the lock that tells a live owner from a crashed one, and
// the little-endian encoding and CRC-32 of their on-disk formats.

/// An open file descriptor and the path it was opened at; closed when the last reference goes, so
/// a reader that still holds it (an iteration running while another thread closes the silo) never
/// sees the descriptor number reused for another file.
///
/// The descriptor is only used through `pread`/`pwrite`/`fsync`/`flock`/`fstat`, which take no
/// per-descriptor state that concurrent callers could disturb (no shared file offset), so the
/// class is `Sendable` with its two immutable fields.
final class MultiPassFile: Sendable {
    let descriptor: Int32
    let path: String

    private init(descriptor: Int32, path: String) {
        self.descriptor = descriptor
        self.path = path
    }

    deinit { Glibc.close(descriptor) }

    /// Opens `path` with `flags` (`O_CLOEXEC` is added: a forked child must not inherit the lock
    /// and keep it after this process died).
    static func open(_ path: String, flags: Int32, operation: String = "open") throws(VTError) -> MultiPassFile {
        let descriptor = retryingOnInterrupt { Glibc.open(path, flags | O_CLOEXEC, mode_t(0o600)) }
        guard descriptor >= 0 else { throw systemError(errno, operation, path) }
        return MultiPassFile(descriptor: descriptor, path: path)
    }

    /// Creates a file named `<directory>/<prefix><pid>-<random hex><suffix>` and returns it with
    /// `flock(LOCK_EX)` held, plus the name without `suffix` (the base companions are named from).
    ///
    /// The file is created under a `.new` name, locked, and only then renamed: ``StaleFiles``
    /// considers only the final names, so it can never take a file for stale in the instant
    /// between its creation and its locking.
    static func createLocked(
        in directory: String, prefix: String, suffix: String
    ) throws(VTError) -> (file: MultiPassFile, base: String) {
        let directory = try normalizedDirectory(directory)
        var attempts = 0
        while true {
            attempts += 1
            let base = "\(directory)/\(prefix)\(getpid())-\(randomHex())"
            let pending = base + StaleFiles.pendingSuffix
            let descriptor = retryingOnInterrupt {
                Glibc.open(pending, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(0o600))
            }
            if descriptor < 0 {
                let code = errno
                if code == EEXIST, attempts < 8 { continue }
                throw systemError(code, "create", base + suffix)
            }
            let file = MultiPassFile(descriptor: descriptor, path: base + suffix)
            guard file.tryLock() else {
                unlink(pending)
                throw VTError(
                    .ioFailed, "could not lock \(pending): \(String(cString: strerror(errno)))", path: pending,
                    systemError: errno)
            }
            guard rename(pending, base + suffix) == 0 else {
                let code = errno
                unlink(pending)
                throw systemError(code, "create", base + suffix)
            }
            return (file, base)
        }
    }

    /// Takes `flock(LOCK_EX | LOCK_NB)`: true when taken, false when another open file holds it
    /// (flock locks belong to the open file description, so this answers "no" even to another
    /// descriptor of this same process). The lock goes with the descriptor, at close or death.
    func tryLock() -> Bool {
        retryingOnInterrupt { flock(descriptor, LOCK_EX | LOCK_NB) } == 0
    }

    /// Writes all of `bytes` at `offset`, looping over short writes.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(VTError) {
        guard let base = bytes.baseAddress else { return }
        var written = 0
        while written < bytes.count {
            let result = pwrite(descriptor, base + written, bytes.count - written, off_t(offset + written))
            if result < 0 {
                if errno == EINTR { continue }
                throw Self.systemError(errno, "write", path)
            }
            // pwrite never returns 0 for a non-empty request on a regular file; guard anyway so a
            // broken file system cannot make this loop forever.
            guard result > 0 else { throw VTError(.ioFailed, "could not write \(path): no progress", path: path) }
            written += result
        }
    }

    func write(_ bytes: [UInt8], at offset: Int) throws(VTError) {
        try bytes.withRawBytes { (buffer) throws(VTError) in try write(buffer, at: offset) }
    }

    /// Reads up to `buffer.count` bytes at `offset`, looping over short reads; returns how many
    /// were read (fewer only at the end of the file).
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(VTError) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        var done = 0
        while done < buffer.count {
            let result = pread(descriptor, base + done, buffer.count - done, off_t(offset + done))
            if result < 0 {
                if errno == EINTR { continue }
                throw Self.systemError(errno, "read", path)
            }
            if result == 0 { break }
            done += result
        }
        return done
    }

    /// The whole file.
    func readAll() throws(VTError) -> [UInt8] {
        let count = try size()
        var bytes = [UInt8](repeating: 0, count: count)
        let read = try bytes.withMutableRawBytes { (buffer) throws(VTError) in try self.read(into: buffer, at: 0) }
        if read < count { bytes.removeLast(count - read) }
        return bytes
    }

    func size() throws(VTError) -> Int {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw Self.systemError(errno, "read the size of", path) }
        return Int(status.st_size)
    }

    /// `fsync`: the data is on the disk when it returns. Write errors the kernel deferred (a full
    /// disk under delayed allocation, an NFS server) are reported here.
    func sync() throws(VTError) {
        guard retryingOnInterrupt({ fsync(descriptor) }) == 0 else { throw Self.systemError(errno, "write", path) }
    }

    /// Cuts the file back to `size` after a failed append (best effort: it only frees the space
    /// the failed write took; the bytes past the recorded end are ignored either way).
    func truncateBestEffort(to size: Int) {
        _ = retryingOnInterrupt { ftruncate(descriptor, off_t(size)) }
    }

    /// The error for a failed system call: ``VTError/Code/diskFull`` for a full disk or
    /// file-size limit, with what to do about it; ``VTError/Code/ioFailed`` otherwise.
    static func systemError(_ code: Int32, _ operation: String, _ path: String) -> VTError {
        let reason = String(cString: strerror(code))
        let directory = parentDirectory(of: path)
        switch code {
        case ENOSPC, EDQUOT:
            return VTError(
                .diskFull,
                "could not \(operation) \(path): \(reason); free space in \(directory) or set temp-location to a larger disk",
                path: path, systemError: code)
        case EFBIG:
            return VTError(
                .diskFull,
                "could not \(operation) \(path): \(reason) (the file-size limit, ulimit -f, or the largest file the "
                    + "file system holds was reached); raise the limit or set temp-location to another disk",
                path: path, systemError: code)
        default:
            return VTError(.ioFailed, "could not \(operation) \(path): \(reason)", path: path, systemError: code)
        }
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` keeping the closure's typed error (the standard library's is `rethrows`,
    /// which erases it to `any Error`).
    func withRawBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { bytes in Result { () throws(E) -> R in try body(bytes) } }
        return try result.get()
    }

    mutating func withMutableRawBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E)
        -> R
    {
        let result: Result<R, E> = withUnsafeMutableBytes { bytes in Result { () throws(E) -> R in try body(bytes) } }
        return try result.get()
    }
}

/// Calls `body` again while it fails with `EINTR`.
func retryingOnInterrupt<T: FixedWidthInteger>(_ body: () -> T) -> T {
    while true {
        let result = body()
        if result == -1, errno == EINTR { continue }
        return result
    }
}

/// `directory` without trailing slashes; "." for an empty string.
func normalizedDirectory(_ directory: String) throws(VTError) -> String {
    guard !directory.utf8.contains(0) else {
        throw VTError(.invalidArgument, "directory path contains a NUL byte")
    }
    var result = directory
    while result.count > 1, result.hasSuffix("/") { result.removeLast() }
    return result.isEmpty ? "." : result
}

/// The directory part of `path` ("." when there is none).
func parentDirectory(of path: String) -> String {
    guard let slash = path.lastIndex(of: "/") else { return "." }
    return slash == path.startIndex ? "/" : String(path[..<slash])
}

/// 16 random hex digits (getrandom through the standard library's generator).
func randomHex() -> String {
    var generator = SystemRandomNumberGenerator()
    let value = generator.next()
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

/// Whether `path` names an existing file (or anything else).
func fileExists(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0
}

// MARK: - Stale files

/// Finds the files of silos and storages whose process died and removes them.
///
/// Every live silo and storage holds `flock(LOCK_EX)` on its main file (the silo's `.data`, the
/// storage's `.db`) for as long as it is open. The kernel drops the lock when the process dies,
/// however it died, so "the lock can be taken" means "no live owner" whatever became of the
/// process id (which may have been reused). Files closed on purpose with `keepOnClose` carry a
/// "kept" flag in their header and are left alone.
enum StaleFiles {
    static let siloPrefix = ".swiftvt-silo-"
    static let storagePrefix = ".swiftvt-mps-"
    static let outputPrefix = PartialOutputFile.prefix
    static let siloDataSuffix = ".data"
    static let siloIndexSuffix = ".index"
    static let temporarySuffix = ".tmp"
    static let storageSuffix = ".db"
    static let pendingSuffix = ".new"
    /// A `.new` file that can be locked is removed only after this long: it exists for an instant
    /// before its creator locks it.
    static let pendingGraceSeconds = 60

    static func remove(in directory: String) -> [String] {
        guard let directory = try? normalizedDirectory(directory), let names = listDirectory(directory) else {
            return []
        }
        var removed: [String] = []
        for name in names
        where name.hasPrefix(siloPrefix) || name.hasPrefix(storagePrefix) || name.hasPrefix(outputPrefix) {
            let path = "\(directory)/\(name)"
            if name.hasPrefix(siloPrefix), name.hasSuffix(siloDataSuffix) {
                let base = String(path.dropLast(siloDataSuffix.count))
                removeIfStale(
                    path, companions: [base + siloIndexSuffix + temporarySuffix, base + siloIndexSuffix],
                    isKept: { _ in FrameSilo.indexIsKept(at: base + siloIndexSuffix) }, into: &removed)
            } else if name.hasPrefix(storagePrefix), name.hasSuffix(storageSuffix) {
                removeIfStale(path, companions: [], isKept: MultiPassStorage.isKept, into: &removed)
            } else if name.hasPrefix(siloPrefix),
                name.hasSuffix(siloIndexSuffix) || name.hasSuffix(siloIndexSuffix + temporarySuffix)
            {
                // An index whose data file is gone (a crash between the two unlinks) is useless.
                let base =
                    name.hasSuffix(temporarySuffix)
                    ? String(path.dropLast((siloIndexSuffix + temporarySuffix).count))
                    : String(path.dropLast(siloIndexSuffix.count))
                if !fileExists(base + siloDataSuffix), unlink(path) == 0 { removed.append(path) }
            } else if name.hasPrefix(outputPrefix), !name.hasSuffix(pendingSuffix) {
                // A PartialOutputFile whose writer died before renaming it.
                removeIfStale(path, companions: [], isKept: { _ in false }, into: &removed)
            } else if name.hasSuffix(pendingSuffix) {
                var status = stat()
                guard lstat(path, &status) == 0, time(nil) - status.st_mtim.tv_sec > pendingGraceSeconds else {
                    continue
                }
                removeIfStale(path, companions: [], isKept: { _ in false }, into: &removed)
            }
        }
        return removed
    }

    /// Locks `path`; when nobody else holds it and `isKept` says no, removes the companions then
    /// `path` (in that order, so a crash in between leaves only an orphan companion, which the
    /// next sweep removes).
    private static func removeIfStale(
        _ path: String, companions: [String], isKept: (MultiPassFile) -> Bool, into removed: inout [String]
    ) {
        // Read-write: on NFS, flock is emulated with POSIX locks, whose exclusive form needs it.
        guard let file = try? MultiPassFile.open(path, flags: O_RDWR | O_NOFOLLOW), file.tryLock(), !isKept(file) else {
            return
        }
        for companion in companions where unlink(companion) == 0 { removed.append(companion) }
        if unlink(path) == 0 { removed.append(path) }
    }

    private static func listDirectory(_ directory: String) -> [String]? {
        guard let stream = opendir(directory) else { return nil }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            names.append(name)
        }
        return names
    }
}

// MARK: - Encoding

/// CRC-32 (IEEE 802.3, as zlib's `crc32`), the checksum of the index and of every storage record.
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        table.withUnsafeBufferPointer { table in
            for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
        return crc ^ 0xFFFF_FFFF
    }

    static func checksum(_ bytes: [UInt8], _ range: Range<Int>) -> UInt32 {
        bytes.withUnsafeBytes { checksum(UnsafeRawBufferPointer(rebasing: $0[range])) }
    }
}

/// Little-endian serialization into a growing array.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func append(_ value: Double) { append(value.bitPattern) }

    /// 16 bytes: value, timescale, flags. The flags keep the special values (invalid, infinities,
    /// indefinite) apart.
    mutating func append(_ time: MediaTime) {
        append(time.value)
        append(time.timescale)
        append(time.flags.rawValue)
    }

    mutating func append(_ range: MediaTimeRange) {
        append(range.start)
        append(range.duration)
    }

    /// A 32-bit length then the bytes.
    mutating func appendBlob(_ blob: [UInt8]) {
        append(UInt32(truncatingIfNeeded: blob.count))
        bytes.append(contentsOf: blob)
    }

    mutating func appendZeros(_ count: Int) { bytes.append(contentsOf: repeatElement(0, count: count)) }

    /// The CRC-32 of the bytes from `start` on, appended.
    mutating func appendChecksum(from start: Int = 0) { append(CRC32.checksum(bytes, start..<bytes.count)) }
}

/// Little-endian deserialization with bounds checks: reading past the end throws
/// ``VTError/Code/corrupt`` naming `context` (the file) and the offset.
struct ByteReader {
    let bytes: [UInt8]
    var offset: Int
    let context: String

    init(_ bytes: [UInt8], offset: Int = 0, context: String) {
        self.bytes = bytes
        self.offset = offset
        self.context = context
    }

    var remaining: Int { bytes.count - offset }

    mutating func read<T: FixedWidthInteger>(_: T.Type = T.self) throws(VTError) -> T {
        let size = MemoryLayout<T>.size
        guard offset >= 0, size <= bytes.count - offset else {
            throw VTError(
                .corrupt,
                "\(context) is corrupt: truncated (needed \(size) bytes at offset \(offset) of \(bytes.count))")
        }
        let value = bytes.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: T.self) }
        offset += size
        return T(littleEndian: value)
    }

    mutating func readDouble() throws(VTError) -> Double { Double(bitPattern: try read(UInt64.self)) }

    mutating func readTime(_ what: String) throws(VTError) -> MediaTime {
        let start = offset
        let value = try read(Int64.self)
        let timescale = try read(Int32.self)
        let flags = try read(UInt32.self)
        guard let time = decodeTime(value: value, timescale: timescale, flags: flags) else {
            throw VTError(
                .corrupt,
                "\(context) is corrupt: \(what) at offset \(start) is not a time (\(value)/\(timescale), flags \(flags))"
            )
        }
        return time
    }

    mutating func readRange(_ what: String) throws(VTError) -> MediaTimeRange {
        MediaTimeRange(start: try readTime("\(what) start"), duration: try readTime("\(what) duration"))
    }

    mutating func readBlob(_ what: String, limit: Int = 1 << 24) throws(VTError) -> [UInt8] {
        let count = Int(try read(UInt32.self))
        guard count <= limit, count <= remaining else {
            throw VTError(
                .corrupt, "\(context) is corrupt: \(what) of \(count) bytes at offset \(offset) runs past the end")
        }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    mutating func skip(_ count: Int) throws(VTError) {
        guard count <= remaining else {
            throw VTError(.corrupt, "\(context) is corrupt: truncated at offset \(offset)")
        }
        offset += count
    }

    /// The stored fields back into a time; nil for combinations ``ByteWriter/append(_:)-(MediaTime)``
    /// never writes. ``MediaTime/Flags/hasBeenRounded`` is not restored (MediaCore offers no public
    /// way to set it; it takes no part in comparisons).
    private func decodeTime(value: Int64, timescale: Int32, flags raw: UInt32) -> MediaTime? {
        let flags = MediaTime.Flags(rawValue: raw)
        guard raw & ~UInt32(0x1F) == 0 else { return nil }
        guard flags.contains(.valid) else { return value == 0 && timescale == 0 ? .invalid : nil }
        if flags.contains(.indefinite) { return .indefinite }
        if flags.contains(.positiveInfinity) { return .positiveInfinity }
        if flags.contains(.negativeInfinity) { return .negativeInfinity }
        return timescale > 0 ? MediaTime(value: value, timescale: timescale) : nil
    }
}
