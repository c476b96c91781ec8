import CGStreamer
import CSwiftVTShim
import H264
import MediaCore

/// The `video/x-h264` caps that describe an AVCC stream: everything downstream (muxers,
/// decoders, payloaders) reads from the caps, taken from the active SPS and the avcC record.
struct H264OutputCaps: Equatable, Sendable {
    enum StreamFormat: String, Sendable {
        /// Parameter sets only in `codec_data`.
        case avc
        /// Parameter sets in band as well (ISO/IEC 14496-15 `avc3`).
        case avc3
    }

    var streamFormat: StreamFormat
    var codecData: [UInt8]
    var width: Int
    var height: Int
    var frameRate: FrameRate?
    var pixelAspectRatio: PixelAspectRatio
    var colorimetry: String?
    /// "frame" when the SPS allows frames only (frame_mbs_only_flag, 7.4.2.1.1), else "field".
    var codedPictureStructure: String
    var chromaFormat: String
    var bitDepthLuma: Int
    var bitDepthChroma: Int
    var profile: String?
    var level: String?

    /// The VUI's frame rate (E.2.1 timing information), when it has one; kept to tell when it
    /// disagrees with upstream's.
    var frameRateInVUI: FrameRate?

    /// Caps for a stream whose active SPS is `sps`.
    ///
    /// - Parameter upstreamFrameRate: the sink caps' framerate, which wins over the VUI's (E.2.1)
    ///   as in `h264parse` (``ParsedVideoCaps/frameRates(upstream:vui:)`` says why).
    init(
        sps: SequenceParameterSet, codecData: [UInt8], streamFormat: StreamFormat,
        upstreamFrameRate: FrameRate?
    ) {
        self.streamFormat = streamFormat
        self.codecData = codecData
        width = sps.displayWidth
        height = sps.displayHeight
        (frameRate, frameRateInVUI) = ParsedVideoCaps.frameRates(upstream: upstreamFrameRate, vui: sps.vui?.frameRate)
        pixelAspectRatio =
            sps.vui?.sampleAspectRatio.map {
                PixelAspectRatio(
                    horizontalSpacing: Int32(clamping: $0.width), verticalSpacing: Int32(clamping: $0.height))
            } ?? .square
        colorimetry = Self.colorimetry(of: sps)
        codedPictureStructure = sps.frameMbsOnlyFlag ? "frame" : "field"
        bitDepthLuma = sps.bitDepthLuma
        bitDepthChroma = sps.bitDepthChroma
        switch sps.chromaFormatIdc {
        case 0:
            chromaFormat = "4:0:0"
            bitDepthChroma = 0 // monochrome has no chroma samples (as h264parse says)
        case 2: chromaFormat = "4:2:2"
        case 3: chromaFormat = "4:4:4"
        default: chromaFormat = "4:2:0"
        }
        profile = sps.gstreamerProfileName
        level = sps.levelName
    }

    /// The colorimetry of the VUI's video_signal_type (E.2.1), when it has one.
    private static func colorimetry(of sps: SequenceParameterSet) -> String? {
        guard let vui = sps.vui, vui.videoSignalTypePresentFlag else { return nil }
        return ParsedVideoCaps.colorimetry(
            fullRange: vui.videoFullRangeFlag,
            colourDescription: vui.colourDescriptionPresentFlag
                ? (vui.colourPrimaries, vui.transferCharacteristics, vui.matrixCoefficients) : nil)
    }

    /// New caps holding these fields; the caller owns the reference.
    func makeCaps() -> UnsafeMutablePointer<GstCaps>? {
        guard
            let caps = ParsedVideoCaps.makeCaps(
                "video/x-h264", streamFormat: streamFormat.rawValue, width: width, height: height, frameRate: frameRate,
                codecData: codecData)
        else { return nil }
        swiftvt_caps_set_fraction(
            caps, "pixel-aspect-ratio", pixelAspectRatio.horizontalSpacing,
            pixelAspectRatio.verticalSpacing)
        if let colorimetry { swiftvt_caps_set_string(caps, "colorimetry", colorimetry) }
        // Field names and types as h264parse writes them (gsth264parse.c).
        swiftvt_caps_set_string(caps, "coded-picture-structure", codedPictureStructure)
        ParsedVideoCaps.setSampleFormat(
            caps, chromaFormat: chromaFormat, bitDepthLuma: bitDepthLuma, bitDepthChroma: bitDepthChroma)
        if let profile { swiftvt_caps_set_string(caps, "profile", profile) }
        if let level { swiftvt_caps_set_string(caps, "level", level) }
        return caps
    }
}
