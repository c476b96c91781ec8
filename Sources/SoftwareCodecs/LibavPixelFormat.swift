import CFFmpeg
import MediaCore

/// libavcodec's pixel formats and SwiftVT's, for the formats the H.264 decoder produces.
enum LibavPixelFormat {
    /// The SwiftVT format with the same memory layout as `format` (planes, sample size), or nil.
    ///
    /// The `J` formats are libavcodec's deprecated way of saying "full range": same layout, the
    /// range goes into the attachments. GBR is H.264's 4:4:4 RGB coding (matrix_coefficients 0):
    /// the planes are G, B, R in Y, Cb, Cr order, described by the identity matrix attachment.
    static func native(_ format: Int32) -> PixelFormat? {
        switch format {
        case AV_PIX_FMT_YUV420P.rawValue, AV_PIX_FMT_YUVJ420P.rawValue: return .i420
        case AV_PIX_FMT_YUV422P.rawValue, AV_PIX_FMT_YUVJ422P.rawValue: return .i422
        case AV_PIX_FMT_YUV444P.rawValue, AV_PIX_FMT_YUVJ444P.rawValue, AV_PIX_FMT_GBRP.rawValue: return .i444
        case AV_PIX_FMT_YUV420P10LE.rawValue: return .i420TenBit
        case AV_PIX_FMT_YUV422P10LE.rawValue: return .i422TenBit
        case AV_PIX_FMT_YUV444P10LE.rawValue, AV_PIX_FMT_GBRP10LE.rawValue: return .i444TenBit
        case AV_PIX_FMT_GRAY8.rawValue: return .gray8
        default: return nil
        }
    }

    static func isRGB(_ format: Int32) -> Bool {
        format == AV_PIX_FMT_GBRP.rawValue || format == AV_PIX_FMT_GBRP10LE.rawValue
    }

    static func isFullRangeFormat(_ format: Int32) -> Bool {
        format == AV_PIX_FMT_YUVJ420P.rawValue || format == AV_PIX_FMT_YUVJ422P.rawValue
            || format == AV_PIX_FMT_YUVJ444P.rawValue
    }

    /// libavcodec's name for `format` (e.g. `yuv420p12le`), for error messages.
    static func name(_ format: Int32) -> String {
        guard let name = av_get_pix_fmt_name(AVPixelFormat(rawValue: format)) else { return "pixel format \(format)" }
        return String(cString: name)
    }

    /// The format the H.264 decoder will produce for a stream with this chroma structure and bit
    /// depth (before any frame is decoded; frames are checked again as they come).
    static func expectedNative(chroma: ChromaSubsampling?, bitDepth: Int?) -> PixelFormat? {
        let tenBit: Bool
        switch bitDepth ?? 8 {
        case 8: tenBit = false
        case 10: tenBit = true
        default: return nil
        }
        switch chroma ?? .yuv420 {
        // libavcodec outputs 4:0:0 as 4:2:0 with neutral chroma unless asked for gray.
        case .yuv420, .monochrome: return tenBit ? .i420TenBit : .i420
        case .yuv422: return tenBit ? .i422TenBit : .i422
        case .yuv444: return tenBit ? .i444TenBit : .i444
        }
    }
}
