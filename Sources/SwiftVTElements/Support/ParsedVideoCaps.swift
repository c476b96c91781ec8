import CGStreamer
import CSwiftVTShim
import MediaCore

/// What the caps of SwiftVT's parsers (h264parse-to-avcc, h265parse-to-hvcc) compute the same
/// way for both codecs: the frame rate, upstream's first, and the colorimetry string of the VUI's
/// video signal type (H.264 E.2.1, H.265 E.3.1: the same syntax and ISO/IEC 23091-4 code points).
enum ParsedVideoCaps {

    /// The frame rate for the caps, and the VUI's (reduced, when it has a usable one).
    ///
    /// Upstream's (the sink caps' framerate) wins over the VUI's, as in `h264parse` and
    /// `h265parse`: VUI timing is often wrong in the wild (encoders that leave a default, and the
    /// tick-per-field reading of num_units_in_tick doubles or halves a rate that was meant per
    /// frame), while a container's or source's rate describes the samples actually delivered. The
    /// VUI's rate is the fallback when upstream has none (or 0/1, "variable").
    static func frameRates(upstream: FrameRate?, vui: FrameRate?) -> (chosen: FrameRate?, vui: FrameRate?) {
        var inVUI: FrameRate?
        // A caps fraction holds 32-bit terms; a VUI rate beyond them is not used.
        if let rate = vui, rate.isKnown, rate.numerator <= Int(Int32.max), rate.denominator <= Int(Int32.max) {
            inVUI = rate.reduced
        }
        if let upstream, upstream.isKnown {
            return (upstream.reduced, inVUI)
        }
        return (inVUI, inVUI)
    }

    /// The colorimetry string GStreamer would give a video_signal_type: range from
    /// video_full_range_flag, and matrix, transfer and primaries from the colour description
    /// through GStreamer's ISO/IEC 23091-4 (H.273) tables, unknown without one.
    static func colorimetry(
        fullRange: Bool, colourDescription: (primaries: Int, transfer: Int, matrix: Int)?
    ) -> String? {
        var colorimetry = GstVideoColorimetry()
        colorimetry.range = fullRange ? GST_VIDEO_COLOR_RANGE_0_255 : GST_VIDEO_COLOR_RANGE_16_235
        if let description = colourDescription {
            colorimetry.matrix = gst_video_color_matrix_from_iso(UInt32(clamping: description.matrix))
            colorimetry.transfer = gst_video_transfer_function_from_iso(UInt32(clamping: description.transfer))
            colorimetry.primaries = gst_video_color_primaries_from_iso(UInt32(clamping: description.primaries))
        } else {
            colorimetry.matrix = GST_VIDEO_COLOR_MATRIX_UNKNOWN
            colorimetry.transfer = GST_VIDEO_TRANSFER_UNKNOWN
            colorimetry.primaries = GST_VIDEO_COLOR_PRIMARIES_UNKNOWN
        }
        guard let text = gst_video_colorimetry_to_string(&colorimetry) else { return nil }
        defer { g_free(text) }
        return String(cString: text)
    }

    /// Caps `mediaType` with the fields both parsers write the same way, with the names and
    /// types h264parse and h265parse give them (a caps filter written for their output matches
    /// ours): stream-format, alignment au, parsed, width, height, framerate (0/1, GStreamer's
    /// "variable or unknown", without one), codec_data. The caller adds the rest and owns the
    /// reference.
    static func makeCaps(
        _ mediaType: String, streamFormat: String, width: Int, height: Int, frameRate: FrameRate?, codecData: [UInt8]
    ) -> UnsafeMutablePointer<GstCaps>? {
        guard let caps = gst_caps_new_empty_simple(mediaType) else { return nil }
        swiftvt_caps_set_string(caps, "stream-format", streamFormat)
        swiftvt_caps_set_string(caps, "alignment", "au")
        swiftvt_caps_set_boolean(caps, "parsed", 1)
        swiftvt_caps_set_int(caps, "width", Int32(clamping: width))
        swiftvt_caps_set_int(caps, "height", Int32(clamping: height))
        (frameRate ?? .unknown).setField(of: caps)
        codecData.withUnsafeBufferPointer { bytes in
            swiftvt_caps_set_bytes(caps, "codec_data", bytes.baseAddress, gsize(bytes.count))
        }
        return caps
    }

    /// Sets chroma-format and the bit depths (unsigned, as both GStreamer parsers write them).
    static func setSampleFormat(
        _ caps: UnsafeMutablePointer<GstCaps>, chromaFormat: String, bitDepthLuma: Int, bitDepthChroma: Int
    ) {
        swiftvt_caps_set_string(caps, "chroma-format", chromaFormat)
        swiftvt_caps_set_uint(caps, "bit-depth-luma", UInt32(clamping: bitDepthLuma))
        swiftvt_caps_set_uint(caps, "bit-depth-chroma", UInt32(clamping: bitDepthChroma))
    }
}
