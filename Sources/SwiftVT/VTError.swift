/// Why a session, its backend, or the multi-pass storage and frame silo could not do what was
/// asked: VideoToolbox's `OSStatus` results (the `kVT…Err` constants each code names), as one open
/// struct, so a later backend can add codes without breaking callers that compare with the known
/// ones. The counterpart of VAPlumbing's `VAError` one layer up.
public struct VTError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Compare with the static members; unknown codes print their raw value.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }
    }

    public var code: Code
    /// What was wrong and what to do about it, for a person (naming the property or the file).
    public var message: String
    /// The backend's own status, e.g. x264's return value, the AVERROR value or VAStatus.
    public var backendStatus: Int32?
    /// The backend call that failed, e.g. `avcodec_send_packet`.
    public var operation: String?
    /// The compression property at fault, for ``Code/invalidProperty``.
    public var property: CompressionPropertyKey?
    /// The file concerned, for the multi-pass files.
    public var path: String?
    /// The `errno` of the failed system call, when there is one.
    public var systemError: Int32?

    public init(
        _ code: Code, _ message: String, backendStatus: Int32? = nil, operation: String? = nil,
        property: CompressionPropertyKey? = nil, path: String? = nil, systemError: Int32? = nil
    ) {
        self.code = code
        self.message = message
        self.backendStatus = backendStatus
        self.operation = operation
        self.property = property
        self.path = path
        self.systemError = systemError
    }

    /// An ``Code/invalidProperty`` error whose message starts with the property's name.
    public static func invalidProperty(_ key: CompressionPropertyKey, _ problem: String) -> VTError {
        VTError(.invalidProperty, "\(key.rawValue): \(problem)", property: key)
    }

    public var description: String {
        var text = "\(code): \(message)"
        if let operation {
            text += " (\(operation)"
            if let backendStatus { text += " returned \(backendStatus)" }
            text += ")"
        } else if let backendStatus {
            text += " (status \(backendStatus))"
        }
        return text
    }
}

// MARK: Any session call

extension VTError.Code {
    /// The session was invalidated (`kVTInvalidSessionErr`).
    public static let invalidSession = Self(rawValue: "invalidSession")
    /// An argument of a call is wrong, e.g. a picture of another size or a sample outside the
    /// time ranges of the current pass (`kVTParameterErr`).
    public static let invalidArgument = Self(rawValue: "invalidArgument")
    /// A call that waits for the backend was made from the output handler, which runs inside that
    /// work and would wait for itself.
    public static let reentrantCall = Self(rawValue: "reentrantCall")
    /// Memory (or pooled picture buffers) ran out (`kVTAllocationFailedErr`).
    public static let allocationFailed = Self(rawValue: "allocationFailed")
    /// The stream, the picture size or pixel format, or the requested output cannot be handled
    /// (`kVTVideoDecoderUnsupportedDataFormatErr`, `kVTPixelTransferNotSupportedErr`,
    /// `kVTCouldNotFindVideoEncoderErr`).
    public static let unsupportedFormat = Self(rawValue: "unsupportedFormat")
    /// Hardware was required (``HardwarePolicy/require``) and no hardware backend can take the
    /// stream here.
    public static let hardwareUnavailable = Self(rawValue: "hardwareUnavailable")
}

// MARK: Decoding

extension VTError.Code {
    /// The compressed data is damaged (`kVTVideoDecoderBadDataErr`).
    public static let badData = Self(rawValue: "badData")
    /// The decoder failed for a reason that is not the data's fault (`kVTVideoDecoderMalfunctionErr`).
    public static let decoderFailed = Self(rawValue: "decoderFailed")
    /// The decode stopped waiting for an output picture because the consumer is flushing
    /// (``DestinationImageBufferAttributes/consumer``): nothing is wrong with the stream or the
    /// decoder; flush the session before decoding on.
    public static let flushing = Self(rawValue: "flushing")
}

// MARK: Encoding

extension VTError.Code {
    /// A property value is out of range, contradicts another, or cannot change now
    /// (`kVTPropertyNotSupportedErr` / `kVTPropertyReadOnlyErr`); the message names the property.
    public static let invalidProperty = Self(rawValue: "invalidProperty")
    /// The encoder failed (`kVTVideoEncoderMalfunctionErr`).
    public static let encoderFailed = Self(rawValue: "encoderFailed")
    /// The multi-pass storage could not be written or read (`kVTMultiPassStorageInvalidErr`),
    /// e.g. the disk is full.
    public static let multiPassStorageFailed = Self(rawValue: "multiPassStorageFailed")
}

// MARK: Multi-pass files (MultiPassStorage, FrameSilo)

extension VTError.Code {
    /// A file could not be created, read, written, synced or removed.
    public static let ioFailed = Self(rawValue: "ioFailed")
    /// The disk (or the file-size limit, `ulimit -f`) is full: `ENOSPC`, `EDQUOT` or `EFBIG`.
    public static let diskFull = Self(rawValue: "diskFull")
    /// A file does not hold what SwiftVT wrote: bad magic, version, checksum or bounds.
    public static let corrupt = Self(rawValue: "corrupt")
    /// The object was closed.
    public static let closed = Self(rawValue: "closed")
}
