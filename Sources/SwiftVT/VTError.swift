import MediaCore

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
    /// What was wrong, as a value: a layer above (the GStreamer elements) words it in its own
    /// terms instead of rewriting ``message``.
    public var reason: Reason
    /// The other backends tried before this one failed to start, when there were several.
    public var backendsTried: [BackendRefusal] = []
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

    /// What was wrong and what to do about it, for a person (naming the property or the file),
    /// in the Swift API's terms.
    public var message: String {
        let text = reason.description
        guard !backendsTried.isEmpty else { return text }
        return text + " (tried: \(BackendRefusal.list(backendsTried)))"
    }

    /// An error with nothing in its text for another layer to translate.
    public init(
        _ code: Code, _ message: String, backendStatus: Int32? = nil, operation: String? = nil,
        property: CompressionPropertyKey? = nil, path: String? = nil, systemError: Int32? = nil
    ) {
        self.init(
            code, reason: .other(message), backendStatus: backendStatus, operation: operation, property: property,
            path: path, systemError: systemError)
    }

    public init(
        _ code: Code, reason: Reason, backendStatus: Int32? = nil, operation: String? = nil,
        property: CompressionPropertyKey? = nil, path: String? = nil, systemError: Int32? = nil
    ) {
        self.code = code
        self.reason = reason
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

    /// An ``Code/invalidProperty`` error whose reason names the property itself.
    public static func invalidProperty(_ key: CompressionPropertyKey, reason: Reason) -> VTError {
        VTError(.invalidProperty, reason: reason, property: key)
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

// MARK: Reasons

extension VTError {
    /// The work a session was asked for, for the reasons that name it.
    public enum Work: Sendable, Equatable {
        case decoding, encoding
    }

    /// What was wrong. Cases carry the values a message names (pixel formats, the policy, the
    /// backends tried), so each layer words them in its own terms: ``description`` speaks the
    /// Swift API (`hardwarePolicy .require`, ``PixelFormat`` codes).
    public enum Reason: Sendable, CustomStringConvertible {
        /// A text with nothing in it that another layer words differently.
        case other(String)
        /// ``HardwarePolicy/require`` and no hardware backend could take the work.
        case hardwareRequired(Work, tried: [BackendRefusal])
        /// No backend could take the work.
        case noBackend(Work, tried: [BackendRefusal])
        /// A 4:2:0 or 4:2:2 picture with an odd `dimension` ("width" or "height").
        case oddDimension(dimension: String, value: Int, pixelFormat: PixelFormat)
        /// A picture whose size or format is not the session's.
        case pictureMismatch(
            width: Int, height: Int, pixelFormat: PixelFormat, sessionWidth: Int, sessionHeight: Int,
            sessionPixelFormat: PixelFormat)
        /// CABAC asked for in a profile without it (A.2.1).
        case entropyModeNotAllowed(profile: H264ProfileLevel.Profile)
        /// An encoder does not take pictures of `pixelFormat`; `encodes` says which it takes.
        case inputPixelFormatNotEncoded(PixelFormat, encodes: String)
        /// libavcodec cannot produce any of `requested` from a stream that decodes to `decodesTo`.
        case outputPixelFormatsUnavailable(requested: [PixelFormat], decodesTo: PixelFormat)
        /// A backend ("the VA path") that outputs only `offered` was asked for none of them.
        case outputPixelFormatsNotOffered(backend: String, requested: [PixelFormat], offered: [PixelFormat])
        /// The stream's decoded format changed to one none of the requested formats can hold.
        case decodedFormatChanged(to: PixelFormat)
        /// Output pictures of `pixelFormat` could not be allocated; `detail` says why, when known.
        case outputPicturesUnavailable(PixelFormat, detail: String?)

        public var description: String {
            switch self {
            case .other(let text):
                return text
            case .hardwareRequired(.decoding, let tried):
                return "hardware decoding is required, but no hardware decoder can take this stream. Tried: "
                    + "\(BackendRefusal.list(tried)). Allow software decoding (hardwarePolicy .auto) to decode it anyway."
            case .hardwareRequired(.encoding, let tried):
                return "hardware encoding is required (hardwarePolicy .require) but no hardware encoder can take "
                    + "these pictures. Tried: \(BackendRefusal.list(tried)). Use hardwarePolicy .auto to fall back to "
                    + "software encoding."
            case .noBackend(.decoding, let tried):
                return "no decoder can take this stream. Tried: \(BackendRefusal.list(tried))"
            case .noBackend(.encoding, let tried):
                return "no encoder can take these pictures. Tried: \(BackendRefusal.list(tried))"
            case .oddDimension(let dimension, let value, let format):
                return "\(dimension) \(value) is odd, and \(Self.chroma(format)) pictures (\(format.rawValue)) need an "
                    + "even \(dimension); crop or pad by one pixel"
            case .pictureMismatch(
                let width, let height, let format, let sessionWidth, let sessionHeight, let sessionFormat):
                return "the picture is \(width)x\(height) '\(format.rawValue)' but the session encodes "
                    + "\(sessionWidth)x\(sessionHeight) '\(sessionFormat.rawValue)'; create a session for the new size or "
                    + "format"
            case .entropyModeNotAllowed(let profile):
                return "entropyMode: CABAC is not allowed in the \(profile.rawValue) profile; use .cavlc or nil"
            case .inputPixelFormatNotEncoded(let format, let encodes):
                return "\(encodes), not '\(format.rawValue)'"
            case .outputPixelFormatsUnavailable(let requested, let native):
                return "none of the requested pixel formats \(requested) can be produced: this stream decodes to "
                    + "\(native), and the libavcodec backend outputs that format or converts 4:2:0 to NV12 (8-bit) or "
                    + "P010 (10-bit); add one of those to pixelFormats"
            case .outputPixelFormatsNotOffered(let backend, let requested, let offered):
                return "\(backend) outputs \(offered.map(\.description).joined(separator: " or ")), and none of "
                    + "\(requested) was asked for"
            case .decodedFormatChanged(let format):
                return "the stream changed to \(format), which none of the requested pixel formats can hold"
            case .outputPicturesUnavailable(let format, let detail):
                return "cannot make \(format) pictures" + (detail.map { ": \($0)" } ?? "")
            }
        }

        /// "4:2:2" or "4:2:0", the subsamplings with an even-size rule.
        public static func chroma(_ format: PixelFormat) -> String {
            format.chromaSubsampling == .yuv422 ? "4:2:2" : "4:2:0"
        }
    }

    /// One backend the hardware policy passed over, and why.
    public struct BackendRefusal: Sendable, CustomStringConvertible {
        public indirect enum Why: Sendable {
            /// The policy excludes the backend: hardware under ``HardwarePolicy/disable``,
            /// software under ``HardwarePolicy/require``.
            case excludedByHardwarePolicy(HardwarePolicy)
            /// The backend is not part of this build (`backend` names what is missing).
            case notInThisBuild
            /// The backend's factory said it cannot take the work.
            case unavailable(Reason)
            /// The backend was available but failed to start.
            case failed(VTError)
        }

        /// The backend's name, e.g. "libavcodec (software)".
        public var backend: String
        public var why: Why

        public init(backend: String, why: Why) {
            self.backend = backend
            self.why = why
        }

        public var description: String {
            switch why {
            case .excludedByHardwarePolicy(let policy):
                let kind = policy == .disable ? "hardware" : "software"
                return "\(backend): \(kind), excluded by hardwarePolicy .\(policy.rawValue)"
            case .notInThisBuild:
                return "no \(backend): SwiftVT's VA-API backend is not available in this build"
            case .unavailable(let reason):
                return "\(backend): \(reason)"
            case .failed(let error):
                return "\(backend): \(error.message)"
            }
        }

        /// The refusals joined for a message; "no backends were given" when there are none.
        public static func list(_ refusals: [BackendRefusal]) -> String {
            refusals.isEmpty ? "no backends were given" : refusals.map(\.description).joined(separator: "; ")
        }
    }
}
