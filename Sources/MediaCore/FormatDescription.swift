/// The kind of media a format describes (CoreMedia's `CMMediaType`, a four-character code).
/// An open set: unknown codes are preserved.
public struct MediaType: RawRepresentable, Hashable, Sendable {
    public let rawValue: FourCharCode
    public init(rawValue: FourCharCode) { self.rawValue = rawValue }

    public static let video = MediaType(rawValue: "vide")
    public static let audio = MediaType(rawValue: "soun")
    public static let text = MediaType(rawValue: "text")
    public static let closedCaption = MediaType(rawValue: "clcp")
    public static let subtitle = MediaType(rawValue: "sbtl")
    public static let timeCode = MediaType(rawValue: "tmcd")
    public static let metadata = MediaType(rawValue: "meta")
    /// Multiplexed audio and video (e.g. an MPEG-2 transport stream passed through whole).
    public static let muxed = MediaType(rawValue: "muxx")
}

/// Coded picture size in pixels (`CMVideoDimensions`). `Int32` to match CoreMedia and the C shim.
public struct VideoDimensions: Hashable, Sendable {
    public var width: Int32
    public var height: Int32

    public init(width: Int32, height: Int32) {
        self.width = width
        self.height = height
    }

    public static let zero = VideoDimensions(width: 0, height: 0)
}

/// The optional properties of a format, CoreMedia's format-description extensions.
///
/// Every field is optional: `nil` means "the stream did not say", which is different from an
/// explicit `.unspecified` code point, and consumers pick their own default.
public struct FormatDescriptionExtensions: Hashable, Sendable {
    public var pixelAspectRatio: PixelAspectRatio?
    public var cleanAperture: CleanAperture?
    public var colorPrimaries: ColorPrimaries?
    public var transferFunction: TransferFunction?
    public var yCbCrMatrix: YCbCrMatrix?
    /// True for full-range (0...255 for 8-bit) samples, false for video range (16...235/240).
    public var fullRange: Bool?
    /// Chroma siting for progressive frames and the top field of interlaced ones.
    public var chromaLocationTopField: ChromaLocation?
    public var chromaLocationBottomField: ChromaLocation?
    /// Chroma sampling of the coded pictures (part of ``FormatDescription/isCompatible(with:)``).
    public var chromaSubsampling: ChromaSubsampling?
    /// 1 for progressive frames, 2 for interlaced (two fields per frame).
    public var fieldCount: Int?
    /// Bits per sample of the coded luma (8, 10, 12); part of
    /// ``FormatDescription/isCompatible(with:)``.
    public var bitDepth: Int?
    /// Codec configuration boxes as they appear in an ISO-BMFF sample description, keyed by box
    /// type (e.g. ``FourCharCode/avcDecoderConfigurationAtom`` holding the avcC record), without
    /// the 8-byte box header. Small, so stored by value.
    public var sampleDescriptionAtoms: [FourCharCode: [UInt8]]

    public init(
        pixelAspectRatio: PixelAspectRatio? = nil,
        cleanAperture: CleanAperture? = nil,
        colorPrimaries: ColorPrimaries? = nil,
        transferFunction: TransferFunction? = nil,
        yCbCrMatrix: YCbCrMatrix? = nil,
        fullRange: Bool? = nil,
        chromaLocationTopField: ChromaLocation? = nil,
        chromaLocationBottomField: ChromaLocation? = nil,
        chromaSubsampling: ChromaSubsampling? = nil,
        fieldCount: Int? = nil,
        bitDepth: Int? = nil,
        sampleDescriptionAtoms: [FourCharCode: [UInt8]] = [:]
    ) {
        self.pixelAspectRatio = pixelAspectRatio
        self.cleanAperture = cleanAperture
        self.colorPrimaries = colorPrimaries
        self.transferFunction = transferFunction
        self.yCbCrMatrix = yCbCrMatrix
        self.fullRange = fullRange
        self.chromaLocationTopField = chromaLocationTopField
        self.chromaLocationBottomField = chromaLocationBottomField
        self.chromaSubsampling = chromaSubsampling
        self.fieldCount = fieldCount
        self.bitDepth = bitDepth
        self.sampleDescriptionAtoms = sampleDescriptionAtoms
    }
}

/// Why a ``FormatDescription`` could not be made or queried.
public enum FormatDescriptionError: Error, Hashable, Sendable {
    /// NAL unit length fields are 1, 2 or 4 bytes (0 when the format has none).
    case invalidNALUnitHeaderLength(Int)
    /// Width and height must not be negative (zero is allowed: "not known yet").
    case negativeDimensions(VideoDimensions)
    /// ``FormatDescription/parameterSet(at:)`` was asked for an index that does not exist.
    case parameterSetIndexOutOfRange(index: Int, count: Int)
}

/// What a stream of samples contains: CoreMedia's `CMFormatDescription` / `CMVideoFormatDescription`.
///
/// An immutable value: it is shared by every sample of a stream and compared whenever a new one
/// arrives (to decide whether a decoder must be reconfigured), so it is `Hashable` and cheap to
/// copy. Two descriptions are equal when every field is equal.
public struct FormatDescription: Hashable, Sendable {
    public let mediaType: MediaType
    /// The codec (``FourCharCode/h264``, ``FourCharCode/h264InBandParameterSets``, ...) or, for
    /// uncompressed video, the pixel format code (see `PixelFormat`).
    public let codecType: FourCharCode
    /// Coded size; ``VideoDimensions/zero`` for non-video media.
    public let dimensions: VideoDimensions
    public let extensions: FormatDescriptionExtensions
    /// The codec parameter sets in order, without start codes or length prefixes: for H.264 the
    /// SPS NAL units then the PPS NAL units. They are a few dozen bytes each, so they are plain
    /// arrays copied with the description rather than views into the stream.
    public let parameterSets: [[UInt8]]
    /// Size in bytes of the length field that precedes each NAL unit in the samples (1, 2 or 4),
    /// or 0 when samples are not length-prefixed NAL units.
    public let nalUnitHeaderLength: Int

    /// - Throws: ``FormatDescriptionError/invalidNALUnitHeaderLength(_:)`` unless the length is
    ///   0, 1, 2 or 4; ``FormatDescriptionError/negativeDimensions(_:)`` for a negative size.
    public init(
        mediaType: MediaType = .video,
        codecType: FourCharCode,
        dimensions: VideoDimensions = .zero,
        extensions: FormatDescriptionExtensions = FormatDescriptionExtensions(),
        parameterSets: [[UInt8]] = [],
        nalUnitHeaderLength: Int = 0
    ) throws(FormatDescriptionError) {
        guard [0, 1, 2, 4].contains(nalUnitHeaderLength) else {
            throw .invalidNALUnitHeaderLength(nalUnitHeaderLength)
        }
        guard dimensions.width >= 0, dimensions.height >= 0 else {
            throw .negativeDimensions(dimensions)
        }
        self.mediaType = mediaType
        self.codecType = codecType
        self.dimensions = dimensions
        self.extensions = extensions
        self.parameterSets = parameterSets
        self.nalUnitHeaderLength = nalUnitHeaderLength
    }

    /// The parameter set at `index` together with the total number of parameter sets and the NAL
    /// unit header length: the counterpart of `CMVideoFormatDescriptionGetH264ParameterSetAtIndex`,
    /// shaped so code ported from VideoToolbox reads the same.
    ///
    /// - Throws: ``FormatDescriptionError/parameterSetIndexOutOfRange(index:count:)``.
    public func parameterSet(
        at index: Int
    ) throws(FormatDescriptionError) -> (parameterSet: [UInt8], count: Int, nalUnitHeaderLength: Int) {
        guard parameterSets.indices.contains(index) else {
            throw .parameterSetIndexOutOfRange(index: index, count: parameterSets.count)
        }
        return (parameterSets[index], parameterSets.count, nalUnitHeaderLength)
    }

    /// Whether a session configured for `self` can accept samples described by `other`, judged
    /// on the codec-independent properties only: same media type, codec type, dimensions, bit
    /// depth and chroma subsampling.
    ///
    /// Parameter sets, colour and the other extensions are deliberately *not* compared here:
    /// whether a new SPS/PPS can be taken without a reset is codec knowledge, so the H264 module
    /// layers its own stricter check (profile, level, reference frame count, ...) on top of this.
    /// A session should call that check, not this one alone.
    public func isCompatible(with other: FormatDescription) -> Bool {
        mediaType == other.mediaType
            && codecType == other.codecType
            && dimensions == other.dimensions
            && extensions.bitDepth == other.extensions.bitDepth
            && extensions.chromaSubsampling == other.extensions.chromaSubsampling
    }
}
