/// Why a ``MultiPassStorage`` or ``FrameSilo`` could not do what was asked: an open struct like
/// ``CompressionError``, whose message names the file and the system's reason.
public struct MultiPassError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Compare with the static members; unknown codes print their raw value.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A file could not be created, read, written, synced or removed.
        public static let ioFailed = Code(rawValue: "ioFailed")
        /// The disk (or the file-size limit, `ulimit -f`) is full: `ENOSPC`, `EDQUOT` or `EFBIG`.
        public static let diskFull = Code(rawValue: "diskFull")
        /// A file does not hold what SwiftVT wrote: bad magic, version, checksum or bounds.
        public static let corrupt = Code(rawValue: "corrupt")
        /// An argument is wrong, e.g. a sample outside the time ranges of the current pass.
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// The object was closed.
        public static let closed = Code(rawValue: "closed")

        public var description: String { rawValue }
    }

    public var code: Code
    /// What went wrong, naming the file, and what to do about it, for a person.
    public var message: String
    /// The file concerned, when there is one.
    public var path: String?
    /// The `errno` of the failed system call, when there is one.
    public var systemError: Int32?

    public init(_ code: Code, _ message: String, path: String? = nil, systemError: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.systemError = systemError
    }

    public var description: String { "\(code): \(message)" }
}
