/// What H.264 and H.265 format descriptions share: the clean aperture of a cropped coded picture
/// and the video usability information (H.264 E.2.1, H.265 E.3.1: the same syntax elements, with
/// the code points of ITU-T H.273), turned into CoreMedia's extensions one way for both codecs.
extension CleanAperture {
    /// The clean aperture of a crop rectangle inside a coded picture (H.264's frame cropping,
    /// H.265's conformance window), in luma samples.
    ///
    /// CoreMedia measures the offsets from the centre of the coded picture to the centre of the
    /// aperture, in pixels; a crop of an odd number of pixels moves the centre by half a pixel, and
    /// the fractions keep that exact.
    public init(cropping x: Int, _ y: Int, width: Int, height: Int, codedWidth: Int, codedHeight: Int) {
        self.init(
            width: Rational(Int32(clamping: width)), height: Rational(Int32(clamping: height)),
            horizontalOffset: Self.halves(2 &* x &+ width &- codedWidth),
            verticalOffset: Self.halves(2 &* y &+ height &- codedHeight))
    }

    /// `count / 2` as an exact fraction in lowest terms.
    private static func halves(_ count: Int) -> Rational {
        count % 2 == 0 ? Rational(Int32(clamping: count / 2)) : Rational(Int32(clamping: count), 2)
    }
}

extension FormatDescriptionExtensions {
    /// Takes over what a VUI says about showing the pictures: the pixel aspect ratio (Table E-1),
    /// full range and colour description when video_signal_type_present_flag (and
    /// colour_description_present_flag) say they were sent, and the chroma sample locations.
    /// Fields the VUI did not send stay nil ("the stream did not say").
    public mutating func applyVideoUsability(
        sampleAspectRatio: (width: Int, height: Int)?, videoSignalTypePresent: Bool, videoFullRange: Bool,
        colourDescriptionPresent: Bool, colourPrimaries: Int, transferCharacteristics: Int, matrixCoefficients: Int,
        chromaSampleLocations: (topField: Int, bottomField: Int)?
    ) {
        if let sar = sampleAspectRatio {
            pixelAspectRatio = PixelAspectRatio(
                horizontalSpacing: Int32(clamping: sar.width), verticalSpacing: Int32(clamping: sar.height))
        }
        if videoSignalTypePresent {
            fullRange = videoFullRange
            if colourDescriptionPresent {
                colorPrimaries = ColorPrimaries(rawValue: UInt8(truncatingIfNeeded: colourPrimaries))
                transferFunction = TransferFunction(rawValue: UInt8(truncatingIfNeeded: transferCharacteristics))
                yCbCrMatrix = YCbCrMatrix(rawValue: UInt8(truncatingIfNeeded: matrixCoefficients))
            }
        }
        if let locations = chromaSampleLocations {
            chromaLocationTopField = ChromaLocation(rawValue: UInt8(truncatingIfNeeded: locations.topField))
            chromaLocationBottomField = ChromaLocation(rawValue: UInt8(truncatingIfNeeded: locations.bottomField))
        }
    }
}
