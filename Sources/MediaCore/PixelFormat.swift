/// A memory layout of uncompressed pictures, named by a four-character code.
///
/// Where CoreVideo defines a code the same code is used (`"420v"`, `"BGRA"`, ...), so values map
/// one-to-one to `kCVPixelFormatType_*`. CoreVideo has no planar 4:2:2/4:4:4 8-bit or 10-bit
/// little-endian formats, which libavcodec and GStreamer use all the time; for those the codes
/// of libyuv are used (`I422`, `I444`, `I010`, `I210`, `I410`).
///
/// An open set: any code can be wrapped, but only the formats listed here have a known layout
/// (``isSupported``); the geometry queries return nil for the others.
public struct PixelFormat: RawRepresentable, Hashable, Sendable {
    public let rawValue: FourCharCode
    public init(rawValue: FourCharCode) { self.rawValue = rawValue }

    /// NV12, video range: a Y plane, then one plane of interleaved Cb,Cr pairs at half width and
    /// half height (`kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange`).
    public static let nv12VideoRange = PixelFormat(rawValue: "420v")
    /// NV12, full range (`kCVPixelFormatType_420YpCbCr8BiPlanarFullRange`).
    public static let nv12FullRange = PixelFormat(rawValue: "420f")
    /// P010, video range: NV12 layout with 16-bit little-endian samples holding 10 significant
    /// bits in the *high* bits (`kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange`, VA-API P010).
    public static let p010VideoRange = PixelFormat(rawValue: "x420")
    /// P010, full range (`kCVPixelFormatType_420YpCbCr10BiPlanarFullRange`).
    public static let p010FullRange = PixelFormat(rawValue: "xf20")
    /// I420 / YUV 4:2:0 planar 8-bit: Y, Cb, Cr planes, chroma at half width and height
    /// (`kCVPixelFormatType_420YpCbCr8Planar`; GStreamer I420, FFmpeg yuv420p).
    public static let i420 = PixelFormat(rawValue: "y420")
    /// YUV 4:2:2 planar 8-bit: chroma at half width, full height (libyuv `I422`; GStreamer Y42B,
    /// FFmpeg yuv422p).
    public static let i422 = PixelFormat(rawValue: "I422")
    /// YUV 4:4:4 planar 8-bit (libyuv `I444`; GStreamer Y444, FFmpeg yuv444p).
    public static let i444 = PixelFormat(rawValue: "I444")
    /// YUV 4:2:0 planar, 16-bit little-endian samples holding 10 significant bits in the *low*
    /// bits (libyuv `I010`; GStreamer I420_10LE, FFmpeg yuv420p10le).
    public static let i420TenBit = PixelFormat(rawValue: "I010")
    /// YUV 4:2:2 planar 10-bit in 16-bit little-endian containers (libyuv `I210`; GStreamer
    /// I422_10LE, FFmpeg yuv422p10le).
    public static let i422TenBit = PixelFormat(rawValue: "I210")
    /// YUV 4:4:4 planar 10-bit in 16-bit little-endian containers (libyuv `I410`; GStreamer
    /// Y444_10LE, FFmpeg yuv444p10le).
    public static let i444TenBit = PixelFormat(rawValue: "I410")
    /// Packed 8-bit B, G, R, A (`kCVPixelFormatType_32BGRA`).
    public static let bgra = PixelFormat(rawValue: "BGRA")
    /// Packed 4:2:2 Y0 Cb Y1 Cr, as webcams deliver (`kCVPixelFormatType_422YpCbCr8_yuvs`,
    /// GStreamer YUY2). Width must be even: two pixels share one 4-byte group.
    public static let yuyv = PixelFormat(rawValue: "yuvs")
    /// Packed 4:2:2 Cb Y0 Cr Y1 (`kCVPixelFormatType_422YpCbCr8`, GStreamer UYVY). Even width.
    public static let uyvy = PixelFormat(rawValue: "2vuy")
    /// A single 8-bit luma plane, for monochrome video (`kCVPixelFormatType_OneComponent8`).
    public static let gray8 = PixelFormat(rawValue: "L008")

    /// Every format with a known layout.
    public static let allSupported: [PixelFormat] = [
        .nv12VideoRange, .nv12FullRange, .p010VideoRange, .p010FullRange, .i420, .i422, .i444,
        .i420TenBit, .i422TenBit, .i444TenBit, .bgra, .yuyv, .uyvy, .gray8
    ]

    /// How one plane is laid out relative to the picture size.
    ///
    /// A row of the plane holds `ceil(width / horizontalSubsampling)` *samples* of
    /// `bytesPerSample` bytes, and the plane has `ceil(height / verticalSubsampling)` rows. A
    /// "sample" is whatever repeats along a row: one Y value, an interleaved Cb,Cr pair (NV12's
    /// second plane), a BGRA pixel, or a Y0 Cb Y1 Cr group covering two pixels (YUYV).
    public struct PlaneLayout: Hashable, Sendable {
        public let bytesPerSample: Int
        public let horizontalSubsampling: Int
        public let verticalSubsampling: Int
    }

    /// The static description of a supported format. Held in `static let`s so geometry queries
    /// allocate nothing.
    struct Descriptor: Sendable {
        let planes: [PlaneLayout]
        let bitDepth: Int
        let chromaSubsampling: ChromaSubsampling?
        /// Width must be a multiple of this (2 for packed 4:2:2, 1 otherwise).
        let widthMultiple: Int
    }

    private static func plane(_ bytes: Int, _ horizontal: Int, _ vertical: Int) -> PlaneLayout {
        PlaneLayout(bytesPerSample: bytes, horizontalSubsampling: horizontal, verticalSubsampling: vertical)
    }

    private static let biPlanar420Eight = Descriptor(
        planes: [plane(1, 1, 1), plane(2, 2, 2)], bitDepth: 8, chromaSubsampling: .yuv420, widthMultiple: 1)
    private static let biPlanar420Ten = Descriptor(
        planes: [plane(2, 1, 1), plane(4, 2, 2)], bitDepth: 10, chromaSubsampling: .yuv420, widthMultiple: 1)
    private static let planar420Eight = Descriptor(
        planes: [plane(1, 1, 1), plane(1, 2, 2), plane(1, 2, 2)], bitDepth: 8, chromaSubsampling: .yuv420,
        widthMultiple: 1)
    private static let planar422Eight = Descriptor(
        planes: [plane(1, 1, 1), plane(1, 2, 1), plane(1, 2, 1)], bitDepth: 8, chromaSubsampling: .yuv422,
        widthMultiple: 1)
    private static let planar444Eight = Descriptor(
        planes: [plane(1, 1, 1), plane(1, 1, 1), plane(1, 1, 1)], bitDepth: 8, chromaSubsampling: .yuv444,
        widthMultiple: 1)
    private static let planar420Ten = Descriptor(
        planes: [plane(2, 1, 1), plane(2, 2, 2), plane(2, 2, 2)], bitDepth: 10, chromaSubsampling: .yuv420,
        widthMultiple: 1)
    private static let planar422Ten = Descriptor(
        planes: [plane(2, 1, 1), plane(2, 2, 1), plane(2, 2, 1)], bitDepth: 10, chromaSubsampling: .yuv422,
        widthMultiple: 1)
    private static let planar444Ten = Descriptor(
        planes: [plane(2, 1, 1), plane(2, 1, 1), plane(2, 1, 1)], bitDepth: 10, chromaSubsampling: .yuv444,
        widthMultiple: 1)
    private static let packedBGRA = Descriptor(
        planes: [plane(4, 1, 1)], bitDepth: 8, chromaSubsampling: nil, widthMultiple: 1)
    private static let packed422 = Descriptor(
        planes: [plane(4, 2, 1)], bitDepth: 8, chromaSubsampling: .yuv422, widthMultiple: 2)
    private static let monochromeEight = Descriptor(
        planes: [plane(1, 1, 1)], bitDepth: 8, chromaSubsampling: .monochrome, widthMultiple: 1)

    var descriptor: Descriptor? {
        switch self {
        case .nv12VideoRange, .nv12FullRange: return Self.biPlanar420Eight
        case .p010VideoRange, .p010FullRange: return Self.biPlanar420Ten
        case .i420: return Self.planar420Eight
        case .i422: return Self.planar422Eight
        case .i444: return Self.planar444Eight
        case .i420TenBit: return Self.planar420Ten
        case .i422TenBit: return Self.planar422Ten
        case .i444TenBit: return Self.planar444Ten
        case .bgra: return Self.packedBGRA
        case .yuyv, .uyvy: return Self.packed422
        case .gray8: return Self.monochromeEight
        default: return nil
        }
    }

    /// Whether this library knows the layout of the format.
    public var isSupported: Bool { descriptor != nil }

    /// Number of planes (1 for packed formats, 2 for NV12/P010, 3 for planar YUV); 0 if unsupported.
    public var planeCount: Int { descriptor?.planes.count ?? 0 }

    /// Whether the picture is split over several planes (true for bi-planar formats too, as
    /// `CVPixelBufferIsPlanar`).
    public var isPlanar: Bool { planeCount > 1 }

    /// Significant bits per sample (8 or 10); 0 if unsupported.
    public var bitDepth: Int { descriptor?.bitDepth ?? 0 }

    /// Chroma structure, nil for RGB and unsupported formats.
    public var chromaSubsampling: ChromaSubsampling? { descriptor?.chromaSubsampling }

    /// Widths must be a multiple of this (2 for the packed 4:2:2 formats); 0 if unsupported.
    public var requiredWidthMultiple: Int { descriptor?.widthMultiple ?? 0 }

    /// Whether samples use the full range; nil when the format code does not say (the planar
    /// formats carry range in the buffer's attachments instead).
    public var isFullRange: Bool? {
        switch self {
        case .nv12FullRange, .p010FullRange, .bgra: return true
        case .nv12VideoRange, .p010VideoRange: return false
        default: return nil
        }
    }

    /// The layout of `plane`, nil if the format is unsupported or has no such plane.
    public func planeLayout(at plane: Int) -> PlaneLayout? {
        guard let planes = descriptor?.planes, planes.indices.contains(plane) else { return nil }
        return planes[plane]
    }

    /// Samples per row of `plane` for a picture `width` pixels wide (chroma rounds up, so odd
    /// widths keep their last column); nil for an unknown plane or a negative width.
    public func planeWidth(for plane: Int, width: Int) -> Int? {
        guard width >= 0, let layout = planeLayout(at: plane) else { return nil }
        return Self.divideRoundingUp(width, layout.horizontalSubsampling)
    }

    /// Rows of `plane` for a picture `height` pixels high (chroma rounds up); nil for an unknown
    /// plane or a negative height.
    public func planeHeight(for plane: Int, height: Int) -> Int? {
        guard height >= 0, let layout = planeLayout(at: plane) else { return nil }
        return Self.divideRoundingUp(height, layout.verticalSubsampling)
    }

    /// `ceil(value / divisor)` for non-negative values without the overflow of `value + divisor - 1`.
    static func divideRoundingUp(_ value: Int, _ divisor: Int) -> Int {
        value / divisor + (value % divisor == 0 ? 0 : 1)
    }
}

extension PixelFormat: CustomStringConvertible {
    public var description: String { rawValue.description }
}
