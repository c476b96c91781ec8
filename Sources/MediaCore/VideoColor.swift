// Colour and geometry vocabulary shared by format descriptions and pixel buffers.
//
// The colour types are "open enums": structs whose raw value is the ITU-T H.273 code point, with
// static members for the known values. That way an H.264/HEVC VUI value maps to them directly
// (`ColorPrimaries(rawValue: vui.colourPrimaries)`), and a code point this library does not name
// (reserved today, assigned by a later H.273 edition) is carried through unchanged instead of
// being collapsed to "unknown" - a decoder must not rewrite what the stream said.

/// Chromaticity of the primaries and white point (H.273 `ColourPrimaries`, table 2).
public struct ColorPrimaries: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let bt709 = ColorPrimaries(rawValue: 1)
    public static let unspecified = ColorPrimaries(rawValue: 2)
    public static let bt470M = ColorPrimaries(rawValue: 4)
    /// BT.470 System B/G, BT.601 625-line (PAL).
    public static let bt470BG = ColorPrimaries(rawValue: 5)
    /// SMPTE 170M, BT.601 525-line (NTSC).
    public static let smpte170M = ColorPrimaries(rawValue: 6)
    public static let smpte240M = ColorPrimaries(rawValue: 7)
    /// Generic film (colour filters using Illuminant C).
    public static let genericFilm = ColorPrimaries(rawValue: 8)
    public static let bt2020 = ColorPrimaries(rawValue: 9)
    /// SMPTE ST 428-1 (CIE 1931 XYZ).
    public static let smpteST428 = ColorPrimaries(rawValue: 10)
    /// SMPTE RP 431-2 (DCI-P3).
    public static let dciP3 = ColorPrimaries(rawValue: 11)
    /// SMPTE EG 432-1 (Display P3, D65 white).
    public static let displayP3 = ColorPrimaries(rawValue: 12)
    /// EBU Tech 3213-E.
    public static let ebu3213 = ColorPrimaries(rawValue: 22)
}

/// Opto-electronic transfer characteristic (H.273 `TransferCharacteristics`, table 3).
public struct TransferFunction: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let bt709 = TransferFunction(rawValue: 1)
    public static let unspecified = TransferFunction(rawValue: 2)
    /// Assumed display gamma 2.2 (BT.470 System M).
    public static let gamma22 = TransferFunction(rawValue: 4)
    /// Assumed display gamma 2.8 (BT.470 System B/G).
    public static let gamma28 = TransferFunction(rawValue: 5)
    public static let smpte170M = TransferFunction(rawValue: 6)
    public static let smpte240M = TransferFunction(rawValue: 7)
    public static let linear = TransferFunction(rawValue: 8)
    public static let logarithmic100 = TransferFunction(rawValue: 9)
    public static let logarithmic316 = TransferFunction(rawValue: 10)
    /// IEC 61966-2-4 (xvYCC).
    // The standard's own number, as GStreamer's GST_VIDEO_TRANSFER_... and H.273 name it.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let iec61966_2_4 = TransferFunction(rawValue: 11)
    public static let bt1361 = TransferFunction(rawValue: 12)
    /// IEC 61966-2-1 (sRGB / sYCC).
    public static let sRGB = TransferFunction(rawValue: 13)
    public static let bt2020TenBit = TransferFunction(rawValue: 14)
    public static let bt2020TwelveBit = TransferFunction(rawValue: 15)
    /// SMPTE ST 2084 perceptual quantizer (HDR10).
    public static let smpteST2084PQ = TransferFunction(rawValue: 16)
    public static let smpteST428 = TransferFunction(rawValue: 17)
    /// ARIB STD-B67 hybrid log-gamma.
    public static let hybridLogGamma = TransferFunction(rawValue: 18)
}

/// How Y'CbCr is derived from R'G'B' (H.273 `MatrixCoefficients`, table 4).
public struct YCbCrMatrix: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// No matrix: the planes are G, B, R (used for 4:4:4 RGB coding).
    public static let identity = YCbCrMatrix(rawValue: 0)
    public static let bt709 = YCbCrMatrix(rawValue: 1)
    public static let unspecified = YCbCrMatrix(rawValue: 2)
    public static let fcc = YCbCrMatrix(rawValue: 4)
    /// BT.470 System B/G, identical to BT.601 625-line.
    public static let bt470BG = YCbCrMatrix(rawValue: 5)
    /// SMPTE 170M, identical to BT.601 525-line.
    public static let smpte170M = YCbCrMatrix(rawValue: 6)
    public static let smpte240M = YCbCrMatrix(rawValue: 7)
    public static let yCgCo = YCbCrMatrix(rawValue: 8)
    public static let bt2020NonConstantLuminance = YCbCrMatrix(rawValue: 9)
    public static let bt2020ConstantLuminance = YCbCrMatrix(rawValue: 10)
    public static let smpteST2085 = YCbCrMatrix(rawValue: 11)
    public static let chromaticityDerivedNonConstantLuminance = YCbCrMatrix(rawValue: 12)
    public static let chromaticityDerivedConstantLuminance = YCbCrMatrix(rawValue: 13)
    public static let ictcp = YCbCrMatrix(rawValue: 14)
}

/// Where chroma samples sit relative to luma (H.273 / H.264 `chroma_sample_loc_type`, 0...5).
/// Values above 5 are reserved but preserved.
public struct ChromaLocation: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Co-sited horizontally with the left luma sample, vertically between rows (MPEG-2, H.264 default).
    public static let left = ChromaLocation(rawValue: 0)
    /// Centred between luma samples both ways (MPEG-1, JPEG).
    public static let center = ChromaLocation(rawValue: 1)
    /// Co-sited with the top-left luma sample (BT.2020 / HDR).
    public static let topLeft = ChromaLocation(rawValue: 2)
    public static let top = ChromaLocation(rawValue: 3)
    public static let bottomLeft = ChromaLocation(rawValue: 4)
    public static let bottom = ChromaLocation(rawValue: 5)
}

/// Chroma sampling structure; the raw value is H.264/HEVC `chroma_format_idc`.
public enum ChromaSubsampling: UInt8, Hashable, Sendable, CaseIterable {
    case monochrome = 0
    /// Half horizontal and half vertical chroma resolution.
    case yuv420 = 1
    /// Half horizontal chroma resolution.
    case yuv422 = 2
    /// Full chroma resolution.
    case yuv444 = 3
}

/// An exact fraction, used where CoreMedia stores numerator/denominator pairs
/// (clean aperture sizes and offsets).
///
/// Equality is structural (`1/2` and `2/4` differ), matching how CoreMedia compares these
/// extension values; use ``isNumericallyEqual(to:)`` for value equality.
public struct Rational: Hashable, Sendable {
    public var numerator: Int32
    public var denominator: Int32

    public init(_ numerator: Int32, _ denominator: Int32 = 1) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// Cross-multiplied comparison, exact in 64 bits. Fractions with a zero denominator are only
    /// equal to themselves structurally.
    public func isNumericallyEqual(to other: Rational) -> Bool {
        guard denominator != 0, other.denominator != 0 else { return self == other }
        return Int64(numerator) * Int64(other.denominator) == Int64(other.numerator) * Int64(denominator)
    }
}

/// The shape of one pixel: `horizontalSpacing : verticalSpacing` (H.264 `sar_width:sar_height`).
/// 1:1 is square; anamorphic DVD PAL widescreen is 64:45.
public struct PixelAspectRatio: Hashable, Sendable {
    public var horizontalSpacing: Int32
    public var verticalSpacing: Int32

    public init(horizontalSpacing: Int32, verticalSpacing: Int32) {
        self.horizontalSpacing = horizontalSpacing
        self.verticalSpacing = verticalSpacing
    }

    public static let square = PixelAspectRatio(horizontalSpacing: 1, verticalSpacing: 1)
}

/// The displayable part of the coded picture (CoreMedia's clean aperture, i.e. cropping).
///
/// As in QuickTime, the offsets locate the *centre* of the clean aperture relative to the centre
/// of the coded picture (positive = right/down), which is why they are rationals: a crop of an
/// odd number of pixels moves the centre by half a pixel. An H.264 1920x1088 stream with
/// `frame_crop_bottom_offset` 4 has width 1920/1, height 1080/1, offsets 0/1 and -4/1.
public struct CleanAperture: Hashable, Sendable {
    public var width: Rational
    public var height: Rational
    public var horizontalOffset: Rational
    public var verticalOffset: Rational

    public init(width: Rational, height: Rational, horizontalOffset: Rational, verticalOffset: Rational) {
        self.width = width
        self.height = height
        self.horizontalOffset = horizontalOffset
        self.verticalOffset = verticalOffset
    }
}
