import CVA

extension VADisplayConnection {
    /// vaGetConfigAttributes for one (profile, entrypoint): each asked attribute's value keyed by
    /// the attribute type's raw value, absent where the driver says VA_ATTRIB_NOT_SUPPORTED. Encoders read their options here
    /// (rate-control modes, packed headers, reference limits, quality range).
    public func configAttributes(
        profile: VAProfile, entrypoint: VAEntrypoint, types: [VAConfigAttribType]
    ) throws(VAError) -> [UInt32: UInt32] {
        var attributes = types.map { VAConfigAttrib(type: $0, value: 0) }
        let count: Int32 = try vaArgument(attributes.count, "vaGetConfigAttributes", "an attribute count")
        try vaCall(
            "vaGetConfigAttributes",
            context: "reading the \(VACapabilities.name(of: profile)) \(VACapabilities.name(of: entrypoint)) attributes"
        ) {
            vaGetConfigAttributes(display, profile, entrypoint, &attributes, count)
        }
        var result: [UInt32: UInt32] = [:]
        for attribute in attributes where attribute.value != UInt32(VA_ATTRIB_NOT_SUPPORTED) {
            result[attribute.type.rawValue] = attribute.value
        }
        return result
    }

    /// Fills `surface` from system memory: `write` gets the mapped image (NV12 layout in
    /// `image.offsets`/`pitches`) and writes every plane.
    ///
    /// The surface's own memory is written when the driver can map it (vaDeriveImage); otherwise
    /// an image is written and copied in with vaPutImage (drivers with tiled surfaces), which is
    /// the driver's copy, not ours.
    public func writeSurface(
        _ surface: VASurfaceID, fourcc: UInt32, width: Int, height: Int,
        _ write: (UnsafeMutableRawBufferPointer, VAImage) -> Void
    ) throws(VAError) {
        var image = VAImage()
        // A refused derive gives no image: only one that succeeded is destroyed. (A zeroed
        // VAImage names image 0, a real image on drivers whose IDs start at 0, such as iHD:
        // destroying it would free another session's image.)
        image.image_id = cva_invalid_id()
        image.buf = cva_invalid_id()
        let derived = vaDeriveImage(display, surface, &image) == VA_STATUS_SUCCESS && image.image_id != cva_invalid_id()
        if derived, image.format.fourcc == fourcc {
            defer { release("vaDestroyImage") { vaDestroyImage(display, image.image_id) } }
            try withMapped(image) { write($0, image) }
            return
        } else if derived {
            // Derived, but in another layout than we write: use an image of our own instead.
            release("vaDestroyImage") { vaDestroyImage(display, image.image_id) }
        }
        let imageWidth: Int32 = try vaArgument(width, "vaCreateImage", "a width")
        let imageHeight: Int32 = try vaArgument(height, "vaCreateImage", "a height")
        var format =
            try imageFormats().first { $0.fourcc == fourcc }
            ?? {
                var described = VAImageFormat()
                described.fourcc = fourcc
                described.byte_order = UInt32(VA_LSB_FIRST)
                described.bits_per_pixel = 12
                return described
            }()
        image = VAImage()
        try vaCall("vaCreateImage", context: "creating a \(width)x\(height) image to upload a picture") {
            vaCreateImage(display, &format, imageWidth, imageHeight, &image)
        }
        defer { release("vaDestroyImage") { vaDestroyImage(display, image.image_id) } }
        try withMapped(image) { write($0, image) }
        let uploadWidth = UInt32(imageWidth)
        let uploadHeight = UInt32(imageHeight)
        try vaCall("vaPutImage", context: "uploading a \(width)x\(height) picture to surface \(surface)") {
            vaPutImage(
                display, surface, image.image_id, 0, 0, uploadWidth, uploadHeight, 0, 0, uploadWidth, uploadHeight)
        }
    }

    private func withMapped(_ image: VAImage, _ body: (UnsafeMutableRawBufferPointer) -> Void) throws(VAError) {
        var pointer: UnsafeMutableRawPointer?
        try vaCall("vaMapBuffer", context: "mapping an image to write a picture") {
            vaMapBuffer(display, image.buf, &pointer)
        }
        defer { release("vaUnmapBuffer") { vaUnmapBuffer(display, image.buf) } }
        guard let pointer else {
            throw VAError(
                call: "vaMapBuffer", status: VAStatus(VA_STATUS_ERROR_INVALID_BUFFER),
                context: "mapping an image to write a picture: the driver gave no memory")
        }
        body(UnsafeMutableRawBufferPointer(start: pointer, count: Int(image.data_size)))
    }
}
