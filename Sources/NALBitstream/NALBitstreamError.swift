/// The error type of a codec's bitstream layer, as the code shared by H.264 and H.265 needs it.
///
/// The bit reader, the length-prefix framing and the other pieces of this module are the same
/// for both codecs, but their errors must not be: a user reading a GStreamer error message needs
/// to know whether H.264 or H.265 data was broken, and each codec's parsers keep one typed error
/// (`throws(H264Error)`, `throws(H265Error)`) without converting at every call. So the shared code
/// is generic over the codec's error type and builds its errors through these three constructors,
/// which an error enum satisfies with cases of the same names (Swift lets an enum case witness a
/// static factory requirement).
public protocol NALBitstreamError: Error {
    /// The data ended before `what` (a syntax element, as the spec spells it) could be read.
    static func truncated(what: String) -> Self
    /// A syntax element holds a value the specification forbids.
    static func invalidValue(field: String, value: Int64) -> Self
    /// The framing around NAL units (start codes, length prefixes, a configuration record) is
    /// broken.
    static func malformedFraming(_ what: String) -> Self
}
