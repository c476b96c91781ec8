import CGStreamer
import CSwiftVTShim
import MediaCore

// Video frames and codec states as the elements hold them: references that GStreamer owns,
// kept alive by Swift objects for as long as a session may read them.

/// A reference to a GstVideoCodecState, released when the last copy goes.
final class CodecStateReference: @unchecked Sendable {
    // Owns one reference to an immutable (after set_format) codec state.
    let pointer: UnsafeMutablePointer<GstVideoCodecState>
    init(_ pointer: UnsafeMutablePointer<GstVideoCodecState>) { self.pointer = gst_video_codec_state_ref(pointer) }
    deinit { gst_video_codec_state_unref(pointer) }
}

/// A GstVideoInfo with a stable address (handed to gst_video_frame_map).
final class VideoInfoBox: @unchecked Sendable {
    // Written once in setCaps before the box is shared; read-only afterwards.
    var info = GstVideoInfo()
}

/// An input GstBuffer mapped as a video frame, kept mapped until the PixelBuffer that wraps its
/// planes is released: the encoder reads the planes in place.
final class MappedVideoFrame: @unchecked Sendable {
    // Mapped once in init, unmapped once in deinit; nothing else touches it.
    private var frame = GstVideoFrame()
    private var mapped = false

    private init() {}

    deinit {
        if mapped { gst_video_frame_unmap(&frame) }
    }

    static func pixelBuffer(
        _ buffer: UnsafeMutablePointer<GstBuffer>, info: UnsafeMutablePointer<GstVideoInfo>, format: PixelFormat
    ) -> PixelBuffer? {
        let mapping = MappedVideoFrame()
        guard swiftvt_video_frame_map_read(&mapping.frame, info, buffer) != 0 else { return nil }
        mapping.mapped = true
        var planes: [PixelBuffer.ExternalPlane] = []
        for index in 0..<format.planeCount {
            guard let data = swiftvt_video_frame_plane_data(&mapping.frame, UInt32(index)) else { return nil }
            planes.append(
                PixelBuffer.ExternalPlane(
                    baseAddress: data, bytesPerRow: Int(swiftvt_video_frame_plane_stride(&mapping.frame, UInt32(index)))
                ))
        }
        return try? PixelBuffer(
            width: Int(swiftvt_video_info_width(info)), height: Int(swiftvt_video_info_height(info)),
            pixelFormat: format, externalPlanes: planes, release: { _ = mapping })
    }
}

/// An input GstBuffer mapped for reading, kept mapped (and referenced) until the last
/// BlockBuffer wrapping it is gone: the session may hold a sample after `handle_frame` returns.
final class MappedBuffer: @unchecked Sendable {
    // Immutable after init; unmapped and released exactly once, in deinit.
    private let buffer: UnsafeMutablePointer<GstBuffer>
    private var map = GstMapInfo()
    let bytes: UnsafeRawBufferPointer

    init?(_ buffer: UnsafeMutablePointer<GstBuffer>) {
        self.buffer = buffer
        guard gst_buffer_map(buffer, &map, swiftvt_map_read()) != 0 else { return nil }
        bytes = UnsafeRawBufferPointer(start: map.data, count: Int(map.size))
        gst_buffer_ref(buffer)
    }

    deinit {
        gst_buffer_unmap(buffer, &map)
        gst_buffer_unref(buffer)
    }

    /// A zero-copy BlockBuffer over the mapped bytes that keeps this mapping alive.
    func blockBuffer() -> BlockBuffer {
        BlockBuffer(externalMemory: bytes) { [self] in _ = self }
    }
}
