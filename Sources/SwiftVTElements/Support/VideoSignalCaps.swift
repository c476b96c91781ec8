import CGStreamer
import MediaCore
import SwiftVT

/// What raw video caps say about the signal beyond its size and format, as the session's
/// properties: the colorimetry (written to the VUI's video_signal_type, H.264 E.2.1 / H.265
/// E.3.1) and the HDR metadata fields (`mastering-display-info`, `content-light-level`,
/// GstVideoMasteringDisplayInfo and GstVideoContentLightLevel, written as the SEI messages of
/// H.265 D.3.28 / D.3.35 in their units, which GStreamer's are too).
enum VideoSignalCaps {
    /// Sets the colour description, range and HDR metadata of `properties` from the caps and
    /// their parsed video info. Like x264enc, the colorimetry GstVideoInfo settles on is written
    /// even when the caps name none (GStreamer's default for the size: BT.601 for SD, BT.709
    /// above); a component it leaves unknown stays unwritten (unspecified in the VUI).
    static func apply(
        caps: UnsafeMutablePointer<GstCaps>, info: GstVideoInfo, to properties: inout CompressionProperties
    ) {
        let colorimetry = info.colorimetry
        if colorimetry.primaries != GST_VIDEO_COLOR_PRIMARIES_UNKNOWN {
            properties.colorPrimaries = ColorPrimaries(
                rawValue: UInt8(clamping: gst_video_color_primaries_to_iso(colorimetry.primaries)))
        }
        if colorimetry.transfer != GST_VIDEO_TRANSFER_UNKNOWN {
            properties.transferFunction = TransferFunction(
                rawValue: UInt8(clamping: gst_video_transfer_function_to_iso(colorimetry.transfer)))
        }
        if colorimetry.matrix != GST_VIDEO_COLOR_MATRIX_UNKNOWN {
            properties.yCbCrMatrix = YCbCrMatrix(
                rawValue: UInt8(clamping: gst_video_color_matrix_to_iso(colorimetry.matrix)))
        }
        switch colorimetry.range {
        case GST_VIDEO_COLOR_RANGE_0_255: properties.fullRange = true
        case GST_VIDEO_COLOR_RANGE_16_235: properties.fullRange = false
        default: break
        }
        (properties.masteringDisplayColorVolume, properties.contentLightLevelInfo) = hdrMetadata(caps)
    }

    static func hdrMetadata(_ caps: UnsafeMutablePointer<GstCaps>) -> (
        MasteringDisplayColorVolume?, ContentLightLevelInfo?
    ) {
        var display: MasteringDisplayColorVolume?
        var mastering = GstVideoMasteringDisplayInfo()
        gst_video_mastering_display_info_init(&mastering)
        if gst_video_mastering_display_info_from_caps(&mastering, caps) != 0 {
            // GStreamer orders the primaries red, green, blue; the SEI green, blue, red.
            let (red, green, blue) = mastering.display_primaries
            display = MasteringDisplayColorVolume(
                green: Chromaticity(x: green.x, y: green.y), blue: Chromaticity(x: blue.x, y: blue.y),
                red: Chromaticity(x: red.x, y: red.y),
                whitePoint: Chromaticity(x: mastering.white_point.x, y: mastering.white_point.y),
                maxLuminance: mastering.max_display_mastering_luminance,
                minLuminance: mastering.min_display_mastering_luminance)
        }
        var light = GstVideoContentLightLevel()
        gst_video_content_light_level_init(&light)
        let level: ContentLightLevelInfo? =
            gst_video_content_light_level_from_caps(&light, caps) != 0
            ? ContentLightLevelInfo(
                maxContentLightLevel: light.max_content_light_level,
                maxPictureAverageLightLevel: light.max_frame_average_light_level) : nil
        return (display, level)
    }
}
