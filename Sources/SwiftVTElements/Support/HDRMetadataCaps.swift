import CGStreamer
import SwiftVT

/// The HDR metadata fields of raw video caps (`mastering-display-info`, `content-light-level`,
/// GstVideoMasteringDisplayInfo and GstVideoContentLightLevel) as the session's properties,
/// in the units of their SEI messages (H.265 D.3.28, D.3.35), which GStreamer's are too.
enum HDRMetadataCaps {
    static func read(_ caps: UnsafeMutablePointer<GstCaps>) -> (MasteringDisplayColorVolume?, ContentLightLevelInfo?) {
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
