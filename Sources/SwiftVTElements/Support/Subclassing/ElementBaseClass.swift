import CGStreamer
import CSwiftVTShim

/// The GStreamer base class an element derives from, with the Swift type that implements it:
/// the pairing is checked by the compiler (vtdec must be a ``VideoDecoderSubclass`` to be
/// registered as a GstVideoDecoder).
enum ElementBaseClass: Sendable {
    case videoDecoder(any VideoDecoderSubclass.Type)
    case videoEncoder(any VideoEncoderSubclass.Type)
    case baseParse(any BaseParseSubclass.Type)
    case baseSink(any BaseSinkSubclass.Type)

    var gType: GType {
        switch self {
        case .videoDecoder: gst_video_decoder_get_type()
        case .videoEncoder: gst_video_encoder_get_type()
        case .baseParse: gst_base_parse_get_type()
        case .baseSink: gst_base_sink_get_type()
        }
    }

    var elementType: any SwiftElement.Type {
        switch self {
        case .videoDecoder(let type): type
        case .videoEncoder(let type): type
        case .baseParse(let type): type
        case .baseSink(let type): type
        }
    }

    /// Wires the base class's vfuncs (in the class being initialised) to the Swift object.
    func wireVirtualMethods(_ klass: UnsafeMutableRawPointer) {
        switch self {
        case .videoDecoder: VideoDecoderVirtualMethods.wire(klass)
        case .videoEncoder: VideoEncoderVirtualMethods.wire(klass)
        case .baseParse: BaseParseVirtualMethods.wire(klass)
        case .baseSink: BaseSinkVirtualMethods.wire(klass)
        }
    }
}
