import Glibc
import MediaCore

/// A file that appears at its final path only when complete: written under a hidden temporary
/// name in the same directory (so the final rename is atomic, 2.2.2 of POSIX `rename`), locked
/// while its writer lives, renamed on ``commit()``, removed on ``discard()``. A process killed
/// while writing leaves only the temporary file, which ``removeStaleFiles(besides:)`` finds
/// (its lock is gone) and removes on the next run.
public final class PartialOutputFile: Sendable {
    public let finalPath: String
    public let temporaryPath: String
    private let file: MultiPassFile
    private let written = Monitor(0)

    static let prefix = ".swiftvt-out-"

    /// Creates the temporary file beside `finalPath` (with the same extension, for tools that
    /// look at it).
    ///
    /// - Throws: ``VTError`` naming the directory when it cannot be written.
    public init(finalPath: String) throws(VTError) {
        // The final rename cannot replace a directory (rename(2): EISDIR): say so now, not
        // after the whole encode.
        var status = stat()
        if stat(finalPath, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw VTError(.ioFailed, "\(finalPath) is a directory, not a file", path: finalPath, systemError: EISDIR)
        }
        let name = finalPath.split(separator: "/", omittingEmptySubsequences: false).last.map(String.init) ?? finalPath
        let suffix = name.lastIndex(of: ".").map { String(name[$0...]) } ?? ""
        let (file, base) = try MultiPassFile.createLocked(
            in: Self.directory(of: finalPath), prefix: Self.prefix, suffix: suffix)
        self.finalPath = finalPath
        self.temporaryPath = base + suffix
        self.file = file
    }

    deinit { discard() }

    /// The directory of `path` ("." for a bare name).
    public static func directory(of path: String) -> String { parentDirectory(of: path) }

    /// Appends `bytes` to the file.
    public func append(_ bytes: UnsafeRawBufferPointer) throws(VTError) {
        try written.withLock { (offset) throws(VTError) in
            try file.write(bytes, at: offset)
            offset += bytes.count
        }
    }

    /// Bytes appended so far.
    public var size: Int { written.withLock { $0 } }

    /// Flushes the file to the disk and renames it to ``finalPath``.
    public func commit() throws(VTError) {
        // The temporary file is private (0600) while incomplete; the result gets the
        // permissions a new file would (0666 less the umask, as filesink's). umask can only be
        // read by setting it: the second call restores it at once.
        let mask = umask(0o022)
        umask(mask)
        fchmod(file.descriptor, 0o666 & ~mask)
        try file.sync()
        guard rename(temporaryPath, finalPath) == 0 else {
            throw MultiPassFile.systemError(errno, "rename \(temporaryPath) to", finalPath)
        }
    }

    /// Removes the temporary file (nothing after ``commit()``). Idempotent.
    public func discard() {
        if fileExists(temporaryPath) { unlink(temporaryPath) }
    }

    /// Removes the temporary outputs that runs which died left in the directory of `finalPath`.
    @discardableResult
    public static func removeStaleFiles(besides finalPath: String) -> [String] {
        StaleFiles.remove(in: directory(of: finalPath))
    }
}
