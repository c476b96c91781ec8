import CGStreamer
import CSwiftVTShim
import MediaCore

/// PixelFormat <-> GstVideoFormat, and PixelBuffer -> GstBuffer without copying.
enum VideoFormatMapping {
    private static let table: [(PixelFormat, GstVideoFormat, String)] = [
        (.i420, GST_VIDEO_FORMAT_I420, "I420"),
        (.nv12VideoRange, GST_VIDEO_FORMAT_NV12, "NV12"),
        (.nv12FullRange, GST_VIDEO_FORMAT_NV12, "NV12"),
        (.i420TenBit, GST_VIDEO_FORMAT_I420_10LE, "I420_10LE"),
        (.p010VideoRange, GST_VIDEO_FORMAT_P010_10LE, "P010_10LE"),
        (.p010FullRange, GST_VIDEO_FORMAT_P010_10LE, "P010_10LE"),
        (.i422, GST_VIDEO_FORMAT_Y42B, "Y42B"),
        (.i422TenBit, GST_VIDEO_FORMAT_I422_10LE, "I422_10LE"),
        (.i444, GST_VIDEO_FORMAT_Y444, "Y444"),
        (.i444TenBit, GST_VIDEO_FORMAT_Y444_10LE, "Y444_10LE")
    ]

    static func gstreamerFormat(for format: PixelFormat) -> GstVideoFormat? {
        table.first { $0.0 == format }?.1
    }

    /// GStreamer's name of a format ("Y444_10LE" for 'I410'), for messages.
    static func gstreamerName(for format: PixelFormat) -> String? {
        table.first { $0.0 == format }?.2
    }

    /// The first PixelFormat for a GStreamer format (video range where both exist).
    static func pixelFormat(for format: GstVideoFormat) -> PixelFormat? {
        table.first { $0.1 == format }?.0
    }

    /// The picture format of raw-video caps: the table's, with NV12's range from the caps'
    /// colorimetry (full range when it says 0-255, video range otherwise); nil for a format the
    /// table has no picture format for.
    static func pixelFormat(of info: GstVideoInfo) -> PixelFormat? {
        let format = info.finfo?.pointee.format ?? GST_VIDEO_FORMAT_UNKNOWN
        if format == GST_VIDEO_FORMAT_NV12 {
            return info.colorimetry.range == GST_VIDEO_COLOR_RANGE_0_255 ? .nv12FullRange : .nv12VideoRange
        }
        return pixelFormat(for: format)
    }

    /// The first PixelFormat for a GStreamer format name (video range where both exist).
    static func pixelFormat(gstreamerName name: String) -> PixelFormat? {
        table.first { $0.2 == name }?.0
    }

    /// Bytes of picture data in one row of `plane` (no padding).
    static func rowBytes(of image: PixelBuffer, plane index: Int) -> Int {
        guard let layout = image.pixelFormat.planeLayout(at: index) else { return 0 }
        return image.planes[index].width * layout.bytesPerSample
    }

    /// A read-only buffer over the picture's own memory, planes described by a GstVideoMeta; the
    /// PixelBuffer (and so its pool slot or decoder frame) stays alive until GStreamer frees the
    /// buffer.
    ///
    /// With `coveringWholeRows`, the buffer spans every plane's last row to its stride (as a
    /// GstVideoInfo's size does): only for pictures whose allocation holds whole rows (a
    /// ``PixelBufferPool``'s).
    static func wrap(
        _ image: PixelBuffer, format: GstVideoFormat, coveringWholeRows: Bool = false
    ) -> OwnedBuffer? {
        guard !image.planes.isEmpty, image.planes.count <= 4 else { return nil }
        // The planes lie in one allocation: the span from the first plane byte to the last.
        var start = UInt(bitPattern: image.planes[0].baseAddress)
        var end = start
        for (index, plane) in image.planes.enumerated() {
            let base = UInt(bitPattern: plane.baseAddress)
            start = min(start, base)
            let lastRowBytes = coveringWholeRows ? plane.bytesPerRow : rowBytes(of: image, plane: index)
            let last = base + UInt(plane.bytesPerRow * max(0, plane.height - 1) + lastRowBytes)
            end = max(end, last)
        }
        guard let data = UnsafeMutableRawPointer(bitPattern: start) else { return nil }
        var offsets: [gsize] = [0, 0, 0, 0]
        var strides: [gint] = [0, 0, 0, 0]
        for (index, plane) in image.planes.enumerated() {
            offsets[index] = gsize(UInt(bitPattern: plane.baseAddress) - start)
            strides[index] = gint(clamping: plane.bytesPerRow)
        }
        let owner = Unmanaged.passRetained(image).toOpaque()
        let buffer = offsets.withUnsafeBufferPointer { offsetPointer in
            strides.withUnsafeBufferPointer { stridePointer in
                swiftvt_buffer_wrap_video(
                    data, gsize(end - start), format, guint(image.width), guint(image.height),
                    guint(image.planes.count),
                    offsetPointer.baseAddress, stridePointer.baseAddress, owner,
                    { owner in if let owner { Unmanaged<PixelBuffer>.fromOpaque(owner).release() } })
            }
        }
        return buffer.map(OwnedBuffer.init(adopting:))
    }
}
