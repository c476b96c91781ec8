import CGStreamer
import CSwiftVTShim
import H265
import MediaCore

/// The `video/x-h265` caps that describe an hvc1/hev1 stream, with the fields h265parse (1.22)
/// writes, under the same names and types and on the same conditions: everything downstream
/// (muxers, decoders, payloaders) reads from the caps, taken from the active SPS and the hvcC
/// record.
struct H265OutputCaps: Equatable, Sendable {
    enum StreamFormat: String, Sendable {
        /// Parameter sets only in `codec_data` (ISO/IEC 14496-15 8.4.1: array_completeness 1).
        case hvc1
        /// Parameter sets in band as well (`hev1`).
        case hev1
    }

    var streamFormat: StreamFormat
    var codecData: [UInt8]
    var width: Int
    var height: Int
    var frameRate: FrameRate?
    /// The VUI's frame rate (E.3.1 timing information), kept to tell when it disagrees with
    /// upstream's.
    var frameRateInVUI: FrameRate?
    /// Only when the VUI states a sample aspect ratio (h265parse leaves the field out otherwise).
    var pixelAspectRatio: PixelAspectRatio?
    var colorimetry: String?
    var chromaFormat: String
    var bitDepthLuma: Int
    var bitDepthChroma: Int
    var profile: String?
    var tier: String?
    var level: String?

    /// Caps for a stream whose active SPS is `sps`.
    ///
    /// - Parameters:
    ///   - picturesAreFields: the pictures are single fields (field_seq_flag, or a picture timing
    ///     SEI whose pic_struct says field, D.3.3): the frame is twice as high as a picture, as
    ///     h265parse writes it (it reads the pic_struct).
    ///   - upstreamFrameRate: the sink caps' framerate, which wins over the VUI's (E.3.1) as in
    ///     `h265parse` (``ParsedVideoCaps/frameRates(upstream:vui:)`` says why).
    init(
        sps: H265SequenceParameterSet, codecData: [UInt8], streamFormat: StreamFormat, picturesAreFields: Bool,
        upstreamFrameRate: FrameRate?
    ) {
        self.streamFormat = streamFormat
        self.codecData = codecData
        width = sps.displayWidth
        height = picturesAreFields ? 2 * sps.displayHeight : sps.displayHeight
        // vui_time_scale / vui_num_units_in_tick, pictures per second, as h265parse reads it: for
        // a field stream that is the field rate, and h265parse gives it as the framerate of the
        // double-height caps (decoders then output alternate fields at that rate).
        (frameRate, frameRateInVUI) = ParsedVideoCaps.frameRates(upstream: upstreamFrameRate, vui: sps.vui?.pictureRate)
        pixelAspectRatio = sps.vui?.sampleAspectRatio.map {
            PixelAspectRatio(horizontalSpacing: Int32(clamping: $0.width), verticalSpacing: Int32(clamping: $0.height))
        }
        // h265parse gives a colorimetry only with a colour description (E.3.1), unlike h264parse.
        if let vui = sps.vui, vui.videoSignalTypePresentFlag, vui.colourDescriptionPresentFlag {
            colorimetry = ParsedVideoCaps.colorimetry(
                fullRange: vui.videoFullRangeFlag,
                colourDescription: (vui.colourPrimaries, vui.transferCharacteristics, vui.matrixCoeffs))
        }
        bitDepthLuma = sps.bitDepthLuma
        bitDepthChroma = sps.bitDepthChroma
        switch sps.chromaFormatIdc {
        case 0:
            chromaFormat = "4:0:0"
            bitDepthChroma = 0 // monochrome has no chroma samples (as h265parse says)
        case 2: chromaFormat = "4:2:2"
        case 3: chromaFormat = "4:4:4"
        default: chromaFormat = "4:2:0"
        }
        profile = sps.profileTierLevel.gstreamerProfileName
        tier = sps.profileTierLevel.gstreamerTierName
        level = sps.profileTierLevel.gstreamerLevelName
    }

    /// New caps holding these fields; the caller owns the reference.
    func makeCaps() -> UnsafeMutablePointer<GstCaps>? {
        guard
            let caps = ParsedVideoCaps.makeCaps(
                "video/x-h265", streamFormat: streamFormat.rawValue, width: width, height: height, frameRate: frameRate,
                codecData: codecData)
        else { return nil }
        if let pixelAspectRatio {
            swiftvt_caps_set_fraction(
                caps, "pixel-aspect-ratio", pixelAspectRatio.horizontalSpacing,
                pixelAspectRatio.verticalSpacing)
        }
        if let colorimetry { swiftvt_caps_set_string(caps, "colorimetry", colorimetry) }
        // Field names and types as h265parse writes them (gsth265parse.c).
        ParsedVideoCaps.setSampleFormat(
            caps, chromaFormat: chromaFormat, bitDepthLuma: bitDepthLuma, bitDepthChroma: bitDepthChroma)
        if let profile { swiftvt_caps_set_string(caps, "profile", profile) }
        if let tier { swiftvt_caps_set_string(caps, "tier", tier) }
        if let level { swiftvt_caps_set_string(caps, "level", level) }
        return caps
    }
}
