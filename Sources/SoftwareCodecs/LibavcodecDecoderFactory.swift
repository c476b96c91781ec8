import CFFmpeg
import Glibc
import H264
import MediaCore
import SwiftVT

/// The software H.264 and H.265 decoder: libavcodec's `h264` and `hevc`, all the profiles they
/// support in 8 and 10 bits (4:2:0, 4:2:2 and 4:4:4), with frame and slice threads.
public struct LibavcodecDecoderFactory: DecoderBackendFactory {
    public init() {}

    /// The threads libavcodec runs for `requested` (0: automatic): the rule of
    /// ``DecoderSpecification/effectiveThreadCount``.
    public static func effectiveThreadCount(requested: Int) -> Int {
        DecoderSpecification(threadCount: requested).effectiveThreadCount
    }

    public var name: String { "libavcodec (software)" }
    public var isHardware: Bool { false }

    public func unavailableReason(for format: FormatDescription) -> VTError.Reason? {
        let codecs: Set<FourCharCode> = [.h264, .h264InBandParameterSets, .hevc, .hevcInBandParameterSets]
        guard codecs.contains(format.codecType) else {
            return .other("decodes H.264 and H.265 only, and this stream's codec is '\(format.codecType)'")
        }
        if let problem = cffmpeg_load() {
            return .other("libavcodec could not be loaded (\(String(cString: problem))): install FFmpeg's libavcodec")
        }
        guard let stream = LibavStream(format) else {
            return .other(
                "the format description has no avcC or hvcC record (make it with FormatDescription(h264ParameterSets:), "
                    + "FormatDescription(hevcParameterSets:) or from the container's record)")
        }
        guard avcodec_find_decoder(stream.codecID) != nil else {
            return .other("this libavcodec was built without its \(format.codecName) decoder")
        }
        if let depth = format.extensions.bitDepth, depth != 8 && depth != 10 {
            return .other(
                "\(depth)-bit \(format.codecName) decodes to a sample size SwiftVT has no pixel format for (8 and 10 bits only)"
            )
        }
        return nil
    }

    public func makeBackend(
        format: FormatDescription, specification: DecoderSpecification, attributes: DestinationImageBufferAttributes
    ) throws(VTError) -> any DecoderBackend {
        if let problem = cffmpeg_load() {
            throw VTError(
                .unsupportedFormat,
                "libavcodec could not be loaded (\(String(cString: problem))): install FFmpeg's libavcodec")
        }
        return try LibavcodecDecoder(format: format, specification: specification, attributes: attributes)
    }
}
