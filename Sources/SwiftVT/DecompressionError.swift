/// Why a decompression session or its backend could not do what was asked: VideoToolbox's
/// `OSStatus` results, as an open struct so later backends can add codes without breaking
/// callers that switch over the known ones.
public struct DecompressionError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Compare with the static members; unknown codes print their raw value.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The compressed data is damaged (`kVTVideoDecoderBadDataErr`).
        public static let badData = Code(rawValue: "badData")
        /// The stream or the requested output cannot be handled (`kVTVideoDecoderUnsupportedDataFormatErr`).
        public static let unsupportedFormat = Code(rawValue: "unsupportedFormat")
        /// Hardware decoding was required and no hardware decoder can take the stream here.
        public static let hardwareUnavailable = Code(rawValue: "hardwareUnavailable")
        /// The decoder failed for a reason that is not the data's fault (`kVTVideoDecoderMalfunctionErr`).
        public static let decoderFailed = Code(rawValue: "decoderFailed")
        /// The session was invalidated (`kVTInvalidSessionErr`).
        public static let invalidSession = Code(rawValue: "invalidSession")
        /// Memory (or pooled picture buffers) ran out (`kVTAllocationFailedErr`).
        public static let allocationFailed = Code(rawValue: "allocationFailed")
        /// An argument is out of range (`kVTParameterErr`).
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// A call that waits for decoding was made from the output handler, which runs inside that
        /// decoding and would wait for itself.
        public static let reentrantCall = Code(rawValue: "reentrantCall")

        public var description: String { rawValue }
    }

    public var code: Code
    /// What was wrong and what to do about it, for a person.
    public var message: String
    /// The backend's own status, e.g. the AVERROR value or VAStatus.
    public var backendStatus: Int32?
    /// The backend call that failed, e.g. `avcodec_send_packet`.
    public var operation: String?

    public init(_ code: Code, _ message: String, backendStatus: Int32? = nil, operation: String? = nil) {
        self.code = code
        self.message = message
        self.backendStatus = backendStatus
        self.operation = operation
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
