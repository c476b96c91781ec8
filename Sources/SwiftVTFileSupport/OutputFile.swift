import Glibc

/// A file written front to back with the C library, for the tools and examples around the plugin.
/// It is written under a temporary name (`<path>.partial`) and renamed to `path` by ``commit()``,
/// so an interrupted or failed run never leaves a half-written file where the result belongs; a
/// file that is not committed is removed when the object goes away.
public final class OutputFile {
    public let path: String
    private let partialPath: String
    private var handle: UnsafeMutablePointer<FILE>?
    private var failed = false

    /// nil when the file cannot be created (the reason is in `errno`).
    public init?(creating path: String) {
        self.path = path
        partialPath = path + ".partial"
        guard let handle = fopen(partialPath, "wb") else { return nil }
        self.handle = handle
    }

    deinit {
        if let handle {
            fclose(handle)
            unlink(partialPath)
        }
    }

    /// Appends `bytes`; false (and every later write and ``commit()`` false too) when the
    /// write failed, e.g. on a full disk.
    @discardableResult
    public func write(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let handle, !failed else { return false }
        if bytes.isEmpty { return true }
        failed = fwrite(bytes.baseAddress, 1, bytes.count, handle) != bytes.count
        return !failed
    }

    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { write($0) } }

    /// Flushes, closes and renames the file into place; false (the partial file removed) when
    /// anything written did not reach the disk.
    public func commit() -> Bool {
        guard let handle else { return false }
        self.handle = nil
        let closed = fclose(handle) == 0
        guard !failed, closed, rename(partialPath, path) == 0 else {
            unlink(partialPath)
            return false
        }
        return true
    }

    /// Removes what was written (a run that failed): nothing is left at `path` or beside it.
    /// Needed before `exit`, which runs no deinitializers.
    public func discard() {
        guard let handle else { return }
        self.handle = nil
        fclose(handle)
        unlink(partialPath)
    }

    /// The C library's description of the last error (`errno`), for messages.
    public static var lastErrorDescription: String { String(cString: strerror(errno)) }
}
