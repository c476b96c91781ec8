/// Everything that can be wrong with an H.264 bitstream, said so that a user reading a GStreamer
/// error message knows what was wrong and where.
///
/// The bitstream layer never traps on input: every malformed field becomes one of these.
public enum H264Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// The data ended before `what` could be read completely.
    case truncated(what: String)
    /// A syntax element holds a value the specification forbids (`field` names the syntax
    /// element as the spec spells it, e.g. "log2_max_frame_num_minus4").
    case invalidValue(field: String, value: Int64)
    /// A syntax element refers to a parameter set that has not been seen (yet).
    case missingParameterSet(kind: String, id: Int)
    /// Valid H.264, but outside what SwiftVT handles (e.g. an SVC/MVC extension).
    case unsupported(String)
    /// The container framing (start codes, length prefixes, the avcC record) is broken.
    case malformedFraming(String)

    public var description: String {
        switch self {
        case .truncated(let what):
            return "H.264 data ends in the middle of \(what)"
        case .invalidValue(let field, let value):
            return "H.264 syntax element \(field) has the invalid value \(value)"
        case .missingParameterSet(let kind, let id):
            return "H.264 data refers to \(kind) id \(id), which has not been received"
        case .unsupported(let what):
            return "unsupported H.264 feature: \(what)"
        case .malformedFraming(let what):
            return "malformed H.264 framing: \(what)"
        }
    }
}

/// The shared bitstream code (NALBitstream: bit reader, length-prefix framing) reports H.264
/// problems through these cases.
extension H264Error: NALBitstreamError {}
