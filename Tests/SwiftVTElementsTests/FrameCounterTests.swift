import CGStreamer
import CSwiftVTShim
import Testing

/// `swiftvt-frame-counter`, the element of test builds only that docs/architecture.md adds as its
/// example of "an element is its folder": registered from its row of the table, it works as a
/// sink and reports through its one property.
@Suite("swiftvt-frame-counter (test builds only)", .serialized)
struct FrameCounterTests {
    @Test("counts the buffers it receives; frames reads the count")
    func countsBuffers() throws {
        try #require(GStreamerTesting.isReady)
        var parseError: UnsafeMutablePointer<GError>?
        let pipeline = try #require(
            gst_parse_launch(
                "videotestsrc num-buffers=7 ! video/x-raw,width=64,height=48 ! swiftvt-frame-counter name=counter",
                &parseError))
        if let parseError { g_error_free(parseError) }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
        let bus = try #require(gst_element_get_bus(pipeline))
        defer { gst_object_unref(bus) }
        let ended = GstMessageType(rawValue: GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue)
        let message = try #require(
            gst_bus_timed_pop_filtered(bus, GstClockTime(30 * swiftvt_second), ended), "no EOS within 30 s")
        defer { gst_message_unref(message) }
        #expect(message.pointee.type == GST_MESSAGE_EOS)

        let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
        let counter = try #require(gst_bin_get_by_name(bin, "counter"))
        defer { gst_object_unref(counter) }
        let object = UnsafeMutableRawPointer(counter).assumingMemoryBound(to: GObject.self)
        let spec = try #require(ElementInterfaceTests.ownProperties(of: counter)["frames"])
        var value = GValue()
        g_value_init(&value, spec.pointee.value_type)
        defer { g_value_unset(&value) }
        g_object_get_property(object, "frames", &value)
        #expect(g_value_get_uint64(&value) == 7)
    }
}
