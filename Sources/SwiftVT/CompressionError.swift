/// Why a compression session or its backend could not do what was asked: VideoToolbox's
/// `OSStatus` results for encoding, an open struct like ``DecompressionError``.
public struct CompressionError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Compare with the static members; unknown codes print their raw value.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A property value is out of range, contradicts another, or cannot change now
        /// (`kVTPropertyNotSupportedErr` / `kVTPropertyReadOnlyErr`); the message names the property.
        public static let invalidProperty = Code(rawValue: "invalidProperty")
        /// The picture size or pixel format cannot be encoded (`kVTPixelTransferNotSupportedErr`,
        /// `kVTCouldNotFindVideoEncoderErr`).
        public static let unsupportedFormat = Code(rawValue: "unsupportedFormat")
        /// Hardware encoding was required and no hardware encoder can take the stream here.
        public static let hardwareUnavailable = Code(rawValue: "hardwareUnavailable")
        /// The encoder failed (`kVTVideoEncoderMalfunctionErr`).
        public static let encoderFailed = Code(rawValue: "encoderFailed")
        /// The session was invalidated (`kVTInvalidSessionErr`).
        public static let invalidSession = Code(rawValue: "invalidSession")
        /// Memory ran out (`kVTAllocationFailedErr`).
        public static let allocationFailed = Code(rawValue: "allocationFailed")
        /// An argument of a call is wrong, e.g. a picture of another size (`kVTParameterErr`).
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// A call that encodes was made from the output handler, which runs inside encoding and
        /// would wait for itself.
        public static let reentrantCall = Code(rawValue: "reentrantCall")
        /// The multi-pass storage could not be written or read (`kVTMultiPassStorageInvalidErr`),
        /// e.g. the disk is full.
        public static let multiPassStorageFailed = Code(rawValue: "multiPassStorageFailed")

        public var description: String { rawValue }
    }

    public var code: Code
    /// What was wrong and what to do about it, for a person.
    public var message: String
    /// The backend's own status, e.g. x264's return value.
    public var backendStatus: Int32?
    /// The backend call that failed, e.g. `x264_encoder_encode`.
    public var operation: String?
    /// The property at fault, for ``Code/invalidProperty``.
    public var property: CompressionPropertyKey?

    public init(
        _ code: Code, _ message: String, backendStatus: Int32? = nil, operation: String? = nil,
        property: CompressionPropertyKey? = nil
    ) {
        self.code = code
        self.message = message
        self.backendStatus = backendStatus
        self.operation = operation
        self.property = property
    }

    /// An ``Code/invalidProperty`` error whose message starts with the property's name.
    public static func invalidProperty(_ key: CompressionPropertyKey, _ problem: String) -> CompressionError {
        CompressionError(.invalidProperty, "\(key.rawValue): \(problem)", property: key)
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
