import Glibc
import MediaCore

/// Whether a session may, must or must not use a hardware decoder (VideoToolbox's
/// `EnableHardwareAcceleratedVideoDecoder` / `RequireHardwareAcceleratedVideoDecoder`).
public enum HardwarePolicy: String, Sendable, CaseIterable {
    /// The first hardware backend that can take the stream, otherwise software.
    case auto
    /// Hardware only; session creation fails with ``VTError/Code/hardwareUnavailable``
    /// when no hardware backend can take the stream.
    case require
    /// Software only; hardware is never touched.
    case disable
}

/// How the decoder is chosen and configured (VideoToolbox's decoder specification).
public struct DecoderSpecification: Sendable {
    public var hardwarePolicy: HardwarePolicy
    /// Decoder threads; 0: automatic (``effectiveThreadCount``).
    public var threadCount: Int
    /// Each picture out as soon as the stream's reorder depth allows (live input): no frame
    /// threads, which hold a picture per extra thread (VideoToolbox's RealTime hint).
    public var lowDelay: Bool

    public init(hardwarePolicy: HardwarePolicy = .auto, threadCount: Int = 0, lowDelay: Bool = false) {
        self.hardwarePolicy = hardwarePolicy
        self.threadCount = threadCount
        self.lowDelay = lowDelay
    }

    /// The threads a decoder runs: `threadCount`, or when it is 0 (automatic) one per core plus
    /// one, at most 16 (libavcodec's own rule for frame threads, so that the session's frames in
    /// flight and the decoder's threads follow one count).
    public var effectiveThreadCount: Int {
        guard threadCount <= 0 else { return threadCount }
        return min(max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) + 1, 16)
    }
}

/// What the output pictures must look like (VideoToolbox's destination image buffer attributes).
public struct DestinationImageBufferAttributes: Sendable {
    /// Acceptable formats in order of preference; empty means the decoder's native format
    /// (I420 for 8-bit 4:2:0 H.264), which costs no conversion.
    public var pixelFormats: [PixelFormat]
    /// Row alignment in bytes of the pictures a backend allocates (a power of two up to 4096).
    public var rowAlignment: Int
    /// Who receives the pictures, opting in to back pressure: the backend's pools are bounded
    /// by what the decoder itself needs plus ``PixelBufferConsumer/heldBufferCount``, wait at
    /// that bound for the consumer to give a picture back, and stop waiting - the decode then
    /// fails with ``VTError/Code/flushing`` - while the consumer flushes. nil (the default): no
    /// bound, the caller may keep any number of pictures and the pools grow to match.
    public var consumer: PixelBufferConsumer?

    public init(pixelFormats: [PixelFormat] = [], rowAlignment: Int = 64, consumer: PixelBufferConsumer? = nil) {
        self.pixelFormats = pixelFormats
        self.rowAlignment = rowAlignment
        self.consumer = consumer
    }
}

/// Per-call options of ``DecompressionSession/decode(_:flags:frameReference:)``
/// (`VTDecodeFrameFlags`).
public struct DecodeFrameFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Decode on the session's worker thread; `decode` returns once the sample is queued (and
    /// blocks while ``DecompressionSession/maximumFramesInFlight`` samples are waiting).
    public static let enableAsynchronousDecompression = DecodeFrameFlags(rawValue: 1 << 0)
    /// Output in presentation order. The libavcodec backend always outputs in presentation
    /// order, so this flag changes nothing there.
    public static let enableTemporalProcessing = DecodeFrameFlags(rawValue: 1 << 1)
    /// Decode the frame (others may reference it) but do not output its picture: the handler
    /// receives it with ``DecodeInfoFlags/frameDropped`` and no image.
    public static let doNotOutputFrame = DecodeFrameFlags(rawValue: 1 << 2)
}

/// What happened to a frame (`VTDecodeInfoFlags`).
public struct DecodeInfoFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The frame was (or is being) decoded on the session's worker thread.
    public static let asynchronous = DecodeInfoFlags(rawValue: 1 << 0)
    /// No picture is output for this frame (``DecodeFrameFlags/doNotOutputFrame``).
    public static let frameDropped = DecodeInfoFlags(rawValue: 1 << 1)
    /// The image buffer is not shared with the decoder (e.g. a converted copy) and may be written.
    public static let imageBufferModifiable = DecodeInfoFlags(rawValue: 1 << 2)
}

/// One output of a session: a decoded picture, or the report that a frame failed or was dropped
/// (the arguments of VideoToolbox's output callback).
public struct DecodedFrame: Sendable {
    /// nil on success. A picture that was decoded with concealed errors has both a status and an
    /// ``imageBuffer``.
    public var status: VTError?
    public var infoFlags: DecodeInfoFlags
    public var imageBuffer: PixelBuffer?
    public var presentationTimeStamp: MediaTime
    public var duration: MediaTime
    /// The value passed to ``DecompressionSession/decode(_:flags:frameReference:)`` with the
    /// sample this picture came from (`sourceFrameRefCon`).
    public var frameReference: UInt64

    public init(
        status: VTError? = nil, infoFlags: DecodeInfoFlags = [], imageBuffer: PixelBuffer? = nil,
        presentationTimeStamp: MediaTime = .invalid, duration: MediaTime = .invalid, frameReference: UInt64 = 0
    ) {
        self.status = status
        self.infoFlags = infoFlags
        self.imageBuffer = imageBuffer
        self.presentationTimeStamp = presentationTimeStamp
        self.duration = duration
        self.frameReference = frameReference
    }
}

/// Receives every output of a session, in output order: on the thread that called `decode` for
/// synchronous decoding, on the session's worker thread for asynchronous decoding. It may call
/// back into the session (``DecompressionSession/canAccept(_:)``, ``DecompressionSession/flush()``,
/// ``DecompressionSession/invalidate()``); calls that wait for decoding throw
/// ``VTError/Code/reentrantCall`` from there.
public typealias DecompressionOutputHandler = @Sendable (DecodedFrame) -> Void
