import CGStreamer
import CSwiftVTShim
import H264

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
    var frameRate: (numerator: Int, denominator: Int)?
    var pixelAspectRatio: (width: Int, height: Int)
    var colorimetry: String?
    /// "frame" when the SPS allows frames only (frame_mbs_only_flag, 7.4.2.1.1), else "field".
    var codedPictureStructure: String
    var chromaFormat: String
    var bitDepthLuma: Int
    var bitDepthChroma: Int
    var profile: String?
    var level: String?

    static func == (lhs: H264OutputCaps, rhs: H264OutputCaps) -> Bool {
        lhs.streamFormat == rhs.streamFormat && lhs.codecData == rhs.codecData && lhs.width == rhs.width
            && lhs.height == rhs.height && lhs.frameRate?.numerator == rhs.frameRate?.numerator
            && lhs.frameRate?.denominator == rhs.frameRate?.denominator
            && lhs.pixelAspectRatio == rhs.pixelAspectRatio && lhs.colorimetry == rhs.colorimetry
            && lhs.codedPictureStructure == rhs.codedPictureStructure
            && lhs.chromaFormat == rhs.chromaFormat && lhs.bitDepthLuma == rhs.bitDepthLuma
            && lhs.bitDepthChroma == rhs.bitDepthChroma && lhs.profile == rhs.profile && lhs.level == rhs.level
    }

    /// The VUI's frame rate (E.2.1 timing information), when it has one; kept to tell when it
    /// disagrees with upstream's.
    var frameRateInVUI: (numerator: Int, denominator: Int)?

    /// Caps for a stream whose active SPS is `sps`.
    ///
    /// - Parameter upstreamFrameRate: the sink caps' framerate. It wins over the VUI's, as in
    ///   `h264parse`: VUI timing is often wrong in the wild (encoders that leave a default, and the
    ///   tick-per-field reading of num_units_in_tick, E.2.1, doubles or halves a rate that was meant
    ///   per frame), while a container's or source's rate describes the samples actually delivered.
    ///   The VUI's rate is the fallback when upstream has none (or 0/1, "variable").
    init(sps: SequenceParameterSet, codecData: [UInt8], streamFormat: StreamFormat,
         upstreamFrameRate: (numerator: Int, denominator: Int)?) {
        self.streamFormat = streamFormat
        self.codecData = codecData
        width = sps.displayWidth
        height = sps.displayHeight
        if let rate = sps.vui?.frameRate, rate.numerator > 0, rate.denominator > 0,
           let numerator = Int(exactly: rate.numerator), let denominator = Int(exactly: rate.denominator),
           numerator <= Int(Int32.max), denominator <= Int(Int32.max) {
            frameRateInVUI = Self.reduced(numerator, denominator)
        }
        if let upstream = upstreamFrameRate, upstream.numerator > 0, upstream.denominator > 0 {
            frameRate = Self.reduced(upstream.numerator, upstream.denominator)
        } else {
            frameRate = frameRateInVUI
        }
        if let sar = sps.vui?.sampleAspectRatio {
            pixelAspectRatio = (sar.width, sar.height)
        } else {
            pixelAspectRatio = (1, 1)
        }
        colorimetry = Self.colorimetry(of: sps)
        codedPictureStructure = sps.frameMbsOnlyFlag ? "frame" : "field"
        bitDepthLuma = sps.bitDepthLuma
        bitDepthChroma = sps.bitDepthChroma
        switch sps.chromaFormatIdc {
        case 0:
            chromaFormat = "4:0:0"
            bitDepthChroma = 0  // monochrome has no chroma samples (as h264parse says)
        case 2: chromaFormat = "4:2:2"
        case 3: chromaFormat = "4:4:4"
        default: chromaFormat = "4:2:0"
        }
        profile = sps.gstreamerProfileName
        level = sps.levelName
    }

    private static func reduced(_ numerator: Int, _ denominator: Int) -> (numerator: Int, denominator: Int) {
        var (a, b) = (numerator, denominator)
        while b != 0 { (a, b) = (b, a % b) }
        return a > 0 ? (numerator / a, denominator / a) : (numerator, denominator)
    }

    /// The colorimetry string GStreamer would give the VUI's video_signal_type (E.2.1): range
    /// from video_full_range_flag, and matrix, transfer and primaries from the colour
    /// description through GStreamer's ISO/IEC 23091-4 (H.273) tables.
    private static func colorimetry(of sps: SequenceParameterSet) -> String? {
        guard let vui = sps.vui, vui.videoSignalTypePresentFlag else { return nil }
        var colorimetry = GstVideoColorimetry()
        colorimetry.range = vui.videoFullRangeFlag ? GST_VIDEO_COLOR_RANGE_0_255 : GST_VIDEO_COLOR_RANGE_16_235
        if vui.colourDescriptionPresentFlag {
            colorimetry.matrix = gst_video_color_matrix_from_iso(UInt32(clamping: vui.matrixCoefficients))
            colorimetry.transfer = gst_video_transfer_function_from_iso(UInt32(clamping: vui.transferCharacteristics))
            colorimetry.primaries = gst_video_color_primaries_from_iso(UInt32(clamping: vui.colourPrimaries))
        } else {
            colorimetry.matrix = GST_VIDEO_COLOR_MATRIX_UNKNOWN
            colorimetry.transfer = GST_VIDEO_TRANSFER_UNKNOWN
            colorimetry.primaries = GST_VIDEO_COLOR_PRIMARIES_UNKNOWN
        }
        guard let text = gst_video_colorimetry_to_string(&colorimetry) else { return nil }
        defer { g_free(text) }
        return String(cString: text)
    }

    /// New caps holding these fields; the caller owns the reference.
    func makeCaps() -> UnsafeMutablePointer<GstCaps>? {
        guard let caps = gst_caps_new_empty_simple("video/x-h264") else { return nil }
        swiftvt_caps_set_string(caps, "stream-format", streamFormat.rawValue)
        swiftvt_caps_set_string(caps, "alignment", "au")
        swiftvt_caps_set_boolean(caps, "parsed", 1)
        swiftvt_caps_set_int(caps, "width", Int32(clamping: width))
        swiftvt_caps_set_int(caps, "height", Int32(clamping: height))
        if let frameRate {
            swiftvt_caps_set_fraction(caps, "framerate", Int32(clamping: frameRate.numerator), Int32(clamping: frameRate.denominator))
        } else {
            // 0/1: variable or unknown frame rate, as GStreamer spells it.
            swiftvt_caps_set_fraction(caps, "framerate", 0, 1)
        }
        swiftvt_caps_set_fraction(
            caps, "pixel-aspect-ratio", Int32(clamping: pixelAspectRatio.width), Int32(clamping: pixelAspectRatio.height))
        if let colorimetry { swiftvt_caps_set_string(caps, "colorimetry", colorimetry) }
        // Field names and types as h264parse writes them (gsth264parse.c), so a caps filter
        // written for h264parse's output matches ours: bit depths are unsigned.
        swiftvt_caps_set_string(caps, "coded-picture-structure", codedPictureStructure)
        swiftvt_caps_set_string(caps, "chroma-format", chromaFormat)
        swiftvt_caps_set_uint(caps, "bit-depth-luma", UInt32(clamping: bitDepthLuma))
        swiftvt_caps_set_uint(caps, "bit-depth-chroma", UInt32(clamping: bitDepthChroma))
        if let profile { swiftvt_caps_set_string(caps, "profile", profile) }
        if let level { swiftvt_caps_set_string(caps, "level", level) }
        codecData.withUnsafeBufferPointer { bytes in
            swiftvt_caps_set_bytes(caps, "codec_data", bytes.baseAddress, gsize(bytes.count))
        }
        return caps
    }
}
