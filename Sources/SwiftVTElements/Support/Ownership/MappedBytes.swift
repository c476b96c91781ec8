import CGStreamer
import CSwiftVTShim

/// A GstBuffer's memory for the length of a closure: mapped before it, unmapped after it on
/// every way out, so no element writes a map/unmap pair. (Mappings that must outlive a call,
/// because a session keeps the sample, are ``MappedBuffer`` and ``MappedVideoFrame``.)
enum MappedBytes {
    /// `body` with `buffer`'s bytes mapped for reading; nil when the buffer cannot be mapped.
    static func withReadableBytes<Result: ~Copyable, Failure: Error>(
        of buffer: UnsafeMutablePointer<GstBuffer>, _ body: (UnsafeRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result? {
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, swiftvt_map_read()) != 0 else { return nil }
        defer { gst_buffer_unmap(buffer, &map) }
        return try body(UnsafeRawBufferPointer(start: map.data, count: Int(map.size)))
    }

    /// `body` with `buffer`'s bytes mapped for writing; nil when the buffer cannot be mapped
    /// (it is not writable, or its memory cannot be written).
    static func withWritableBytes<Result: ~Copyable, Failure: Error>(
        of buffer: UnsafeMutablePointer<GstBuffer>, _ body: (UnsafeMutableRawBufferPointer) throws(Failure) -> Result
    ) throws(Failure) -> Result? {
        var map = GstMapInfo()
        guard gst_buffer_map(buffer, &map, swiftvt_map_write()) != 0 else { return nil }
        defer { gst_buffer_unmap(buffer, &map) }
        return try body(UnsafeMutableRawBufferPointer(start: map.data, count: Int(map.size)))
    }

    /// `body` with `buffer` mapped for writing as a video frame of `info` (planes and strides
    /// from `info`, or from the buffer's GstVideoMeta); nil when it cannot be mapped.
    static func withWritableVideoFrame<Result: ~Copyable>(
        of buffer: UnsafeMutablePointer<GstBuffer>, info: UnsafeMutablePointer<GstVideoInfo>,
        _ body: (inout GstVideoFrame) -> Result
    ) -> Result? {
        var frame = GstVideoFrame()
        guard swiftvt_video_frame_map_write(&frame, info, buffer) != 0 else { return nil }
        defer { gst_video_frame_unmap(&frame) }
        return body(&frame)
    }
}

/// One GstEvent reference, owned: an event vfunc receives one (transfer full) and either hands
/// it on, to the parent class or a pad, or drops it by letting the value go.
struct OwnedEvent: ~Copyable, @unchecked Sendable {
    // Owned, never shared (one reference, handed on once; reference counts are atomic).
    let pointer: UnsafeMutablePointer<GstEvent>

    init(adopting pointer: UnsafeMutablePointer<GstEvent>) {
        self.pointer = pointer
    }

    deinit {
        gst_event_unref(pointer)
    }

    var type: GstEventType { pointer.pointee.type }

    /// Hands the reference to a call that takes it (the parent class's event vfunc).
    consuming func take() -> UnsafeMutablePointer<GstEvent> {
        let pointer = self.pointer
        discard self
        return pointer
    }
}
