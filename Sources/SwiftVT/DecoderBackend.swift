import MediaCore

/// Makes decoders of one kind: the backend cut of ``DecompressionSession``. A backend is a whole
/// decoder (libavcodec, or the VA-API accelerator behind SwiftVT's own H.264 state machine),
/// chosen by the session according to its ``HardwarePolicy``.
public protocol DecoderBackendFactory: Sendable {
    /// Shown to people: ``DecompressionSession/activeBackendName``, error messages.
    var name: String { get }
    var isHardware: Bool { get }
    /// A decoder for `format`. Only called when ``unavailableReason(for:)`` returned nil.
    ///
    /// - Throws: ``VTError`` saying why the decoder could not be made (e.g. an
    ///   output pixel format it cannot produce).
    func makeBackend(
        format: FormatDescription, specification: DecoderSpecification, attributes: DestinationImageBufferAttributes
    ) throws(VTError) -> any DecoderBackend
    /// nil when this backend can decode `format` here; otherwise why not, for a person
    /// (e.g. "no VA-API device with an H.264 High profile decoder").
    func unavailableReason(for format: FormatDescription) -> VTError.Reason?
}

/// One decoder instance. The session calls it from one thread at a time (never concurrently),
/// though not always from the same thread.
///
/// Ownership: the returned ``DecodedFrame``s carry their ``DecodedFrame/frameReference`` as given
/// to ``decode(_:frameReference:)``; their pictures are the caller's to keep.
public protocol DecoderBackend: AnyObject {
    /// Decodes the samples of `sample` (AVCC access units for H.264) and returns the frames that
    /// became ready, in output order. Damaged data is not thrown: it comes back as a frame with a
    /// ``DecodedFrame/status`` (and no image, or the concealed image). Throws only when the
    /// decoder itself cannot go on.
    func decode(_ sample: SampleBuffer, frameReference: UInt64) throws(VTError) -> [DecodedFrame]
    /// Outputs every frame still held (end of stream); the decoder stays usable afterwards.
    func drain() throws(VTError) -> [DecodedFrame]
    /// Drops every frame still held without output (seek); the decoder stays usable.
    func flush()
}
