import Testing

@testable import SwiftVTElements

/// Messages on the bus use GStreamer's names: element properties for the session's
/// `hardwarePolicy`/`pixelFormats`, caps format names for four-character pixel format codes.
@Suite("session wording")
struct SessionWordingTests {
    @Test("Swift API names become property and caps names; other words are left alone")
    func translation() {
        #expect(
            SessionWording.gstreamer("libavcodec (software): software, excluded by hardwarePolicy .require")
                == "libavcodec (software): software, excluded by hardware=require")
        #expect(
            SessionWording.gstreamer("Allow software decoding (hardwarePolicy .auto) to decode it anyway.")
                == "Allow software decoding (hardware=auto) to decode it anyway.")
        #expect(
            SessionWording.gstreamer("none of the requested pixel formats [I420] ...; add one of those to pixelFormats")
                == "none of the requested pixel formats [I420] ...; let downstream accept one of those (video/x-raw caps)"
        )
        #expect(
            SessionWording.gstreamer("this stream decodes to I410, not I444 or 'y420'")
                == "this stream decodes to Y444_10LE, not Y444 or I420")
        #expect(
            SessionWording.gstreamer("cannot encode 320x192 y420 (bitrate)") == "cannot encode 320x192 I420 (bitrate)")
        // Codes inside longer words (file names, identifiers) are not formats.
        #expect(SessionWording.gstreamer("clip_I410x.264 and y4200") == "clip_I410x.264 and y4200")
    }
}
