import MediaCore
import NALBitstream

/// What an encoder is made for: fixed for the session's life except the rate-control properties.
public struct EncoderConfiguration: Sendable {
    public var width: Int
    public var height: Int
    public var pixelFormat: PixelFormat
    public var properties: CompressionProperties
    /// Encoder threads; 0 = the backend chooses.
    public var threadCount: Int
    /// Under ``HardwarePolicy/require`` a hardware backend fails where it would otherwise adapt
    /// a property it cannot honour (and say so with an ``EncoderNotice``).
    public var hardwarePolicy: HardwarePolicy

    public init(
        width: Int, height: Int, pixelFormat: PixelFormat, properties: CompressionProperties, threadCount: Int,
        hardwarePolicy: HardwarePolicy = .auto
    ) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.properties = properties
        self.threadCount = threadCount
        self.hardwarePolicy = hardwarePolicy
    }
}

/// The frame type the session's GOP logic asks for (the shared part of the encoder: IDR placement
/// for the key-frame interval limits, forced key frames and all-intra coding).
public enum EncoderFrameType: Sendable, Hashable {
    /// The backend chooses (P or B, or I/IDR at a scene cut or at its own interval limit).
    case automatic
    /// An IDR picture, here, whatever the backend would have chosen.
    case idr
}

/// One picture to encode, with the decisions the session made for it.
public struct EncoderFrameRequest {
    /// Only borrowed for the duration of ``EncoderBackend/encode(_:)``.
    public var image: PixelBuffer
    public var presentationTimeStamp: MediaTime
    public var duration: MediaTime
    public var frameType: EncoderFrameType
    public var frameReference: UInt64
    /// The frame's quantizer (H.264 QP, 0...51, may be fractional) when the session's multi-pass
    /// rate control decided it; nil = the backend's own rate control decides. x264 spreads the
    /// fraction over the macroblocks (QP is an integer per macroblock, 7.4.5 mb_qp_delta), so the
    /// frame's average is the fractional value; x265 rounds it (forceqp is whole).
    public var quantizer: Double?
    /// Caption data to write with this picture (A/53 user data SEI, in the access unit of the
    /// picture, so in decoding order with it); nil for none.
    public var closedCaptions: ClosedCaptionData?

    public init(
        image: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime, frameType: EncoderFrameType,
        frameReference: UInt64, quantizer: Double? = nil, closedCaptions: ClosedCaptionData? = nil
    ) {
        self.image = image
        self.presentationTimeStamp = presentationTimeStamp
        self.duration = duration
        self.frameType = frameType
        self.frameReference = frameReference
        self.quantizer = quantizer
        self.closedCaptions = closedCaptions
    }
}

/// Something a session's user should hear about: a property the backend could not honour and
/// what it does instead, or a change of backend (a hardware encoder failed and software took over).
public struct EncoderNotice: Sendable, Equatable, CustomStringConvertible {
    /// The property concerned; nil for a change of backend.
    public var property: CompressionPropertyKey?
    public var message: String

    public init(property: CompressionPropertyKey?, message: String) {
        self.property = property
        self.message = message
    }

    public var description: String { property.map { "\($0.rawValue): \(message)" } ?? message }
}

/// What an encoder that failed hands over so that another one can go on with the same frames.
public struct EncoderTakeover {
    /// Frames it finished before the failure that may still be output: whole groups of pictures
    /// up to the last anchor, so the next encoder's IDR picture follows them in display order.
    public var encodedBeforeFailure: [EncodedFrame]
    /// Frames it had accepted but not output, in display order, with pictures it owns (read back
    /// from the device): the next encoder encodes them first.
    public var unencodedFrames: [EncoderFrameRequest]
    /// Whether the request whose ``EncoderBackend/encode(_:)`` failed is among them (it is not
    /// when the failure came before the encoder took it).
    public var includesFailingRequest: Bool
    /// Frame references of frames accepted but lost (their pictures could not be read back).
    public var lostFrames: [UInt64]

    public init(
        encodedBeforeFailure: [EncodedFrame], unencodedFrames: [EncoderFrameRequest], includesFailingRequest: Bool,
        lostFrames: [UInt64] = []
    ) {
        self.encodedBeforeFailure = encodedBeforeFailure
        self.unencodedFrames = unencodedFrames
        self.includesFailingRequest = includesFailingRequest
        self.lostFrames = lostFrames
    }
}

/// Makes encoders of one kind: the backend cut of ``CompressionSession``, chosen by the session
/// according to its ``HardwarePolicy``.
public protocol EncoderBackendFactory: Sendable {
    /// Shown to people: ``CompressionSession/activeBackendName``, error messages.
    var name: String { get }
    var isHardware: Bool { get }
    /// The codec it writes: ``FourCharCode/h264`` (`avc1`) or ``FourCharCode/hevc`` (`hvc1`). A
    /// session only considers the backends of its own codec.
    var codecType: FourCharCode { get }
    /// nil when this backend can encode such pictures with such properties here; otherwise why
    /// not (a value each layer words in its own terms).
    func unavailableReason(width: Int, height: Int, pixelFormat: PixelFormat, properties: CompressionProperties)
        -> VTError.Reason?
    /// An encoder for `configuration` (already validated by the session). Only called when
    /// ``unavailableReason(width:height:pixelFormat:properties:)`` returned nil. The encoder need
    /// not start its library yet: ``EncoderBackend/prepare(properties:frameRate:)`` does.
    func makeBackend(configuration: EncoderConfiguration) throws(VTError) -> any EncoderBackend
    /// Each property this backend honours, with its range and how it is mapped.
    var supportedProperties: [CompressionPropertyKey: String] { get }
}

/// One encoder instance. The session calls it from one thread at a time, never concurrently.
///
/// Output: ``EncodedFrame``s in decode order, carrying the ``EncoderFrameRequest/frameReference``
/// of their picture; their sample buffers are the caller's to keep.
public protocol EncoderBackend: AnyObject {
    /// Starts the encoder (opens the library's encoder) with `properties` (validated, possibly
    /// changed since ``EncoderBackendFactory/makeBackend(configuration:)``). Called before the
    /// first frame, and again after ``flush()`` before the next one;
    /// `frameRate` is the session's best knowledge (``CompressionProperties/expectedFrameRate``
    /// or the first frame's duration).
    func prepare(properties: CompressionProperties, frameRate: Double) throws(VTError)
    /// Encodes one picture and returns the frames that became ready (possibly none: the encoder
    /// holds frames for reordering and look-ahead). Throws only when the encoder cannot go on.
    func encode(_ request: EncoderFrameRequest) throws(VTError) -> [EncodedFrame]
    /// Outputs every frame still held (end of stream). The encoder may close its library encoder
    /// here; the session calls ``prepare(properties:frameRate:)`` again before the next frame.
    func flush() throws(VTError) -> [EncodedFrame]
    /// Applies new rate-control values (bit rate, data rate limits, quality) from the next frame.
    /// Only called after ``prepare(properties:frameRate:)``, with properties the session validated and
    /// whose rate-control mode (bit rate, quality, VBV on or off) is unchanged. Returns frames
    /// that became ready meanwhile (a backend that must restart its encoder outputs the held ones).
    func reconfigureRateControl(_ properties: CompressionProperties) throws(VTError) -> [EncodedFrame]
    /// The SPS/PPS description, once known (after ``prepare(properties:frameRate:)``).
    var formatDescription: FormatDescription? { get }
    /// Frames held before the first output at most (reordering + look-ahead + threads).
    var frameDelay: Int { get }
    /// Notices since the last call (properties adapted, backend changes); the session hands
    /// them to its user.
    func takeNotices() -> [EncoderNotice]
    /// After ``encode(_:)`` or ``flush()`` threw: what another encoder needs to go on (nil when
    /// this backend cannot tell; the frames it held are then lost).
    func takeOverAfterFailure() -> EncoderTakeover?
}

extension EncoderBackendFactory {
    /// H.264, the codec of every backend written before HEVC encoding.
    public var codecType: FourCharCode { .h264 }
}

extension EncoderBackend {
    public func takeNotices() -> [EncoderNotice] { [] }
    public func takeOverAfterFailure() -> EncoderTakeover? { nil }
}
