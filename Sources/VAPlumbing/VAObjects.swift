import CVA

// The owners of VA objects. Each holds its VADisplayConnection strongly, so the display is
// terminated only after every object made on it is destroyed, and destroys its object in deinit
// (failures there go to the connection's log: a deinit cannot throw).

/// A VA config (vaCreateConfig): a profile, an entrypoint and attributes. Destroyed with it.
public struct VAConfig: ~Copyable {
    public let connection: VADisplayConnection
    public let id: VAConfigID
    public let profile: VAProfile
    public let entrypoint: VAEntrypoint

    /// - Parameter attributes: e.g. VAConfigAttribRTFormat = VA_RT_FORMAT_YUV420; attributes
    ///   left out take the driver's defaults (va.h).
    public init(
        connection: VADisplayConnection, profile: VAProfile, entrypoint: VAEntrypoint, attributes: [VAConfigAttrib]
    ) throws(VAError) {
        var attributes = attributes
        var id = VAConfigID(cva_invalid_id())
        let count: Int32 = try vaArgument(attributes.count, "vaCreateConfig", "an attribute count")
        try vaCall(
            "vaCreateConfig",
            context: "creating a \(VACapabilities.name(of: profile)) \(VACapabilities.name(of: entrypoint)) config"
        ) {
            vaCreateConfig(connection.display, profile, entrypoint, &attributes, count, &id)
        }
        self.connection = connection
        self.id = id
        self.profile = profile
        self.entrypoint = entrypoint
    }

    deinit {
        connection.release("vaDestroyConfig") { vaDestroyConfig(connection.display, id) }
    }
}

/// Surfaces made together (vaCreateSurfaces), destroyed together.
public struct VASurfaceSet: ~Copyable {
    public let connection: VADisplayConnection
    public let ids: [VASurfaceID]
    public let width: Int
    public let height: Int
    /// The VA_FOURCC_* the surfaces were made with.
    public let fourcc: UInt32

    /// - Parameters:
    ///   - rtFormat: VA_RT_FORMAT_* (VA_RT_FORMAT_YUV420 for 8-bit 4:2:0).
    ///   - fourcc: the pixel format (VA_FOURCC_*, e.g. VA_FOURCC_NV12), always passed as a
    ///     VASurfaceAttribPixelFormat attribute: without it a driver picks its own layout for the
    ///     RT format (va.h, vaCreateSurfaces), which an image read-back would then have to guess.
    ///   - attributes: more attributes (memory type, usage hints), after the pixel format.
    public init(
        connection: VADisplayConnection, rtFormat: UInt32, width: Int, height: Int, count: Int, fourcc: UInt32,
        attributes: [VASurfaceAttrib] = []
    ) throws(VAError) {
        var pixelFormat = VASurfaceAttrib()
        pixelFormat.type = VASurfaceAttribPixelFormat
        pixelFormat.flags = UInt32(VA_SURFACE_ATTRIB_SETTABLE)
        pixelFormat.value.type = VAGenericValueTypeInteger
        pixelFormat.value.value.i = Int32(bitPattern: fourcc)
        var allAttributes = [pixelFormat] + attributes
        let surfaceCount: UInt32 = try vaArgument(count, "vaCreateSurfaces", "a surface count")
        let surfaceWidth: UInt32 = try vaArgument(width, "vaCreateSurfaces", "a width")
        let surfaceHeight: UInt32 = try vaArgument(height, "vaCreateSurfaces", "a height")
        let attributeCount = UInt32(allAttributes.count)
        var ids = [VASurfaceID](repeating: cva_invalid_surface(), count: count)
        try vaCall("vaCreateSurfaces", context: "creating \(count) \(width)x\(height) surfaces") {
            vaCreateSurfaces(
                connection.display, rtFormat, surfaceWidth, surfaceHeight, &ids, surfaceCount, &allAttributes,
                attributeCount)
        }
        self.connection = connection
        self.ids = ids
        self.width = width
        self.height = height
        self.fourcc = fourcc
    }

    deinit {
        var ids = ids
        let count = Int32(ids.count) // was a UInt32 at creation
        connection.release("vaDestroySurfaces") { vaDestroySurfaces(connection.display, &ids, count) }
    }
}

/// A decoding or encoding context (vaCreateContext) on a config and its render targets.
///
/// A class rather than a `~Copyable` struct: it is held in optionals (made when the first
/// sequence header gives the size) and borrowed by every picture call, and Swift 6.x cannot
/// borrow the payload of a noncopyable optional stored property across those calls.
public final class VAContext {
    public let connection: VADisplayConnection
    public let id: VAContextID

    /// - Parameters:
    ///   - width, height: the coded picture size.
    ///   - flags: VA_PROGRESSIVE when the stream has only progressive frames (va.h).
    ///   - renderTargets: every surface pictures will be decoded into (drivers may refuse others
    ///     in vaBeginPicture); the surfaces must outlive the context.
    ///
    /// Keep `config` (and the ``VASurfaceSet``) alive as long as the context: va.h does not say
    /// whether a driver may still use them, and clients (FFmpeg, GStreamer) destroy the context
    /// first.
    public init(
        connection: VADisplayConnection, config: borrowing VAConfig, width: Int, height: Int,
        flags: Int32 = Int32(VA_PROGRESSIVE), renderTargets: [VASurfaceID]
    ) throws(VAError) {
        var targets = renderTargets
        var id = VAContextID(cva_invalid_id())
        let configID = config.id
        let contextWidth: Int32 = try vaArgument(width, "vaCreateContext", "a width")
        let contextHeight: Int32 = try vaArgument(height, "vaCreateContext", "a height")
        let count: Int32 = try vaArgument(targets.count, "vaCreateContext", "a render target count")
        try vaCall("vaCreateContext", context: "creating a \(width)x\(height) context") {
            vaCreateContext(connection.display, configID, contextWidth, contextHeight, flags, &targets, count, &id)
        }
        self.connection = connection
        self.id = id
    }

    deinit {
        connection.release("vaDestroyContext") { vaDestroyContext(connection.display, id) }
    }
}

/// A VA buffer (vaCreateBuffer): picture parameters, slice parameters and data, or an encoder's
/// coded buffer. Destroyed with it (after an unmap if still mapped).
///
/// A class: a picture's buffers are kept in an array until vaEndPicture has consumed them, and a
/// mapping is state that the map and unmap calls share. Not Sendable: one thread at a time, like
/// the context it belongs to.
public final class VABufferObject {
    public let connection: VADisplayConnection
    public let id: VABufferID
    public let type: VABufferType
    /// vaCreateBuffer's `size` (bytes per element) and `num_elements`.
    public let elementSize: Int
    public let elementCount: Int
    /// Maps not yet unmapped (vaMapBuffer calls nest in drivers).
    private var mapCount = 0

    /// A buffer holding a copy of `bytes` (vaCreateBuffer copies into driver memory), as
    /// `elementCount` elements of equal size: e.g. one VASliceParameterBufferH264 per slice.
    ///
    /// - Throws: VA_STATUS_ERROR_INVALID_PARAMETER (call "vaCreateBuffer") when `bytes` does not
    ///   divide into `elementCount` elements.
    public init(
        connection: VADisplayConnection, context: VAContext, type: VABufferType, bytes: UnsafeRawBufferPointer,
        elementCount: Int = 1
    ) throws(VAError) {
        guard elementCount > 0, bytes.count % elementCount == 0 else {
            throw VAError(
                call: "vaCreateBuffer", status: VAStatus(VA_STATUS_ERROR_INVALID_PARAMETER),
                context: "splitting \(bytes.count) bytes into \(elementCount) elements")
        }
        let elementSize = bytes.count / elementCount
        id = try Self.create(
            connection: connection, context: context, type: type, elementSize: elementSize,
            elementCount: elementCount, data: bytes.baseAddress)
        self.connection = connection
        self.type = type
        self.elementSize = elementSize
        self.elementCount = elementCount
    }

    /// A buffer the driver fills or the caller writes through ``withMappedBytes(_:)``: what an
    /// encoder's coded buffer (VAEncCodedBufferType, `elementSize` = the largest coded picture)
    /// is. va.h: a buffer to be mapped is created with NULL data.
    public init(
        connection: VADisplayConnection, context: VAContext, type: VABufferType, elementSize: Int,
        elementCount: Int = 1
    ) throws(VAError) {
        id = try Self.create(
            connection: connection, context: context, type: type, elementSize: elementSize,
            elementCount: elementCount, data: nil)
        self.connection = connection
        self.type = type
        self.elementSize = elementSize
        self.elementCount = elementCount
    }

    private static func create(
        connection: VADisplayConnection, context: VAContext, type: VABufferType, elementSize: Int, elementCount: Int,
        data: UnsafeRawPointer?
    ) throws(VAError) -> VABufferID {
        let size: UInt32 = try vaArgument(elementSize, "vaCreateBuffer", "an element size")
        let count: UInt32 = try vaArgument(elementCount, "vaCreateBuffer", "an element count")
        var id = VABufferID(cva_invalid_id())
        let contextID = context.id
        // vaCreateBuffer only reads `data` (va.h: "data: pointer to data to be copied"); the C
        // signature is not const.
        let source = UnsafeMutableRawPointer(mutating: data)
        try vaCall(
            "vaCreateBuffer",
            context: "creating a buffer of type \(type.rawValue), \(elementCount) x \(elementSize) bytes"
        ) {
            vaCreateBuffer(connection.display, contextID, type, size, count, source, &id)
        }
        return id
    }

    /// A buffer holding a copy of one `T` (a parameter structure).
    public static func holding<T>(
        _ value: inout T, connection: VADisplayConnection, context: VAContext, type: VABufferType
    ) throws(VAError) -> VABufferObject {
        try withUnsafeBytes(of: &value) { bytes in
            Result { () throws(VAError) -> VABufferObject in
                try VABufferObject(connection: connection, context: context, type: type, bytes: bytes)
            }
        }.get()
    }

    /// vaMapBuffer: the buffer's memory until ``unmap()``. For VAEncCodedBufferType this is the
    /// first VACodedBufferSegment (va.h), see ``withCodedSegments(_:)``.
    public func map() throws(VAError) -> UnsafeMutableRawPointer {
        var pointer: UnsafeMutableRawPointer?
        try vaCall("vaMapBuffer", context: "mapping a buffer of type \(type.rawValue)") {
            vaMapBuffer(connection.display, id, &pointer)
        }
        mapCount += 1
        guard let pointer else {
            try unmap()
            throw VAError(
                call: "vaMapBuffer", status: VAStatus(VA_STATUS_ERROR_INVALID_BUFFER),
                context: "mapping a buffer of type \(type.rawValue): the driver gave no memory")
        }
        return pointer
    }

    /// vaUnmapBuffer: ends the last ``map()``. Pointers from it are invalid after this.
    public func unmap() throws(VAError) {
        guard mapCount > 0 else { return }
        mapCount -= 1
        try vaCall("vaUnmapBuffer") { vaUnmapBuffer(connection.display, id) }
    }

    /// Maps the buffer as `elementSize * elementCount` bytes for `body`, then unmaps it. Not for
    /// coded buffers, whose mapping is a segment list (``withCodedSegments(_:)``).
    public func withMappedBytes<R>(_ body: (UnsafeMutableRawBufferPointer) -> R) throws(VAError) -> R {
        let pointer = try map()
        let result = body(UnsafeMutableRawBufferPointer(start: pointer, count: elementSize * elementCount))
        try unmap()
        return result
    }

    /// Maps a coded buffer (VAEncCodedBufferType) and gives `body` the data of each
    /// VACodedBufferSegment in order (va.h: a list ending at `next == NULL`; the data starts at
    /// `buf`, `bit_offset` is 0 for byte-aligned codecs), then unmaps it.
    ///
    /// - Throws: VA_STATUS_ERROR_INVALID_BUFFER (call "vaMapBuffer") for a list longer than
    ///   4096 segments, which only a broken driver makes (a loop).
    public func withCodedSegments<R>(_ body: ([UnsafeRawBufferPointer]) -> R) throws(VAError) -> R {
        try withCodedBufferSegments { segments in body(segments.map(\.bytes)) }
    }

    /// ``withCodedSegments(_:)`` with each segment's status word (VA_CODED_BUF_STATUS_*: slice
    /// overflow, bad bitstream, the frame's average QP...), which an encoder must check.
    public func withCodedBufferSegments<R>(_ body: ([VACodedSegment]) -> R) throws(VAError) -> R {
        var segments: [VACodedSegment] = []
        var next: UnsafeMutableRawPointer? = try map()
        while let current = next {
            guard segments.count < 4096 else {
                try unmap()
                throw VAError(
                    call: "vaMapBuffer", status: VAStatus(VA_STATUS_ERROR_INVALID_BUFFER),
                    context: "reading a coded buffer: its segment list does not end")
            }
            let segment = current.load(as: VACodedBufferSegment.self)
            segments.append(
                VACodedSegment(
                    bytes: UnsafeRawBufferPointer(
                        start: segment.buf, count: segment.buf == nil ? 0 : Int(segment.size)),
                    bitOffset: Int(segment.bit_offset), status: segment.status))
            next = segment.next
        }
        let result = body(segments)
        try unmap()
        return result
    }

    deinit {
        while mapCount > 0 {
            mapCount -= 1
            connection.release("vaUnmapBuffer") { vaUnmapBuffer(connection.display, id) }
        }
        connection.release("vaDestroyBuffer") { vaDestroyBuffer(connection.display, id) }
    }
}

/// One VACodedBufferSegment while its buffer is mapped.
public struct VACodedSegment {
    /// The segment's bytes (valid only inside ``VABufferObject/withCodedBufferSegments(_:)``).
    public var bytes: UnsafeRawBufferPointer
    /// Bits to skip in the first byte (0 for H.264, whose NAL units are byte aligned).
    public var bitOffset: Int
    /// VA_CODED_BUF_STATUS_* bits.
    public var status: UInt32

    /// va.h: the picture did not fit and was cut (VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK).
    public var overflowed: Bool { status & UInt32(VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK) != 0 }
    /// va.h: the driver says the bitstream is corrupt (VA_CODED_BUF_STATUS_BAD_BITSTREAM).
    public var badBitstream: Bool { status & UInt32(VA_CODED_BUF_STATUS_BAD_BITSTREAM) != 0 }
}

/// A VA image mapped for reading: from vaDeriveImage (the surface's own memory) or vaCreateImage +
/// vaGetImage (a copy made by the driver). Unmapped and destroyed with it.
///
/// `image` gives the layout: `format.fourcc`, `width`/`height`, `num_planes`, `pitches` and
/// `offsets` (bytes into `data`) per plane.
public struct VAMappedImage: ~Copyable {
    public let connection: VADisplayConnection
    public let image: VAImage
    /// The image's buffer, `image.data_size` bytes, mapped until this goes away.
    public let data: UnsafeRawBufferPointer

    /// vaDeriveImage: the surface's memory itself, no copy (fails on drivers that cannot, e.g.
    /// tiled or compressed surfaces: then use ``init(copying:connection:fourcc:width:height:)``).
    /// Call ``VADisplayConnection/syncSurface(_:)`` first.
    public init(deriving surface: VASurfaceID, connection: VADisplayConnection) throws(VAError) {
        var image = VAImage()
        try vaCall("vaDeriveImage", context: "reading surface \(surface) back") {
            vaDeriveImage(connection.display, surface, &image)
        }
        data = try Self.map(image, connection: connection)
        self.connection = connection
        self.image = image
    }

    /// vaCreateImage + vaGetImage: a copy of the top-left `width` x `height` of the surface,
    /// converted by the driver to `fourcc` (VA_FOURCC_NV12). The format is the driver's own
    /// description of `fourcc` (vaQueryImageFormats) when it lists it.
    public init(
        copying surface: VASurfaceID, connection: VADisplayConnection, fourcc: UInt32, width: Int, height: Int
    ) throws(VAError) {
        let imageWidth: Int32 = try vaArgument(width, "vaCreateImage", "a width")
        let imageHeight: Int32 = try vaArgument(height, "vaCreateImage", "a height")
        var format: VAImageFormat
        if let listed = try connection.imageFormats().first(where: { $0.fourcc == fourcc }) {
            format = listed
        } else {
            // Not listed: vaCreateImage will most likely refuse it, with the driver's status.
            format = VAImageFormat()
            format.fourcc = fourcc
            format.byte_order = UInt32(VA_LSB_FIRST)
            format.bits_per_pixel = 12
        }
        var image = VAImage()
        try vaCall("vaCreateImage", context: "creating a \(width)x\(height) image to read surface \(surface) back") {
            vaCreateImage(connection.display, &format, imageWidth, imageHeight, &image)
        }
        do throws(VAError) {
            try vaCall("vaGetImage", context: "copying surface \(surface) into an image") {
                vaGetImage(connection.display, surface, 0, 0, UInt32(imageWidth), UInt32(imageHeight), image.image_id)
            }
        } catch {
            connection.release("vaDestroyImage") { vaDestroyImage(connection.display, image.image_id) }
            throw error
        }
        data = try Self.map(image, connection: connection)
        self.connection = connection
        self.image = image
    }

    /// Maps the image's buffer; on failure the image is destroyed.
    private static func map(_ image: VAImage, connection: VADisplayConnection) throws(VAError) -> UnsafeRawBufferPointer
    {
        var pointer: UnsafeMutableRawPointer?
        do throws(VAError) {
            try vaCall("vaMapBuffer", context: "mapping an image") {
                vaMapBuffer(connection.display, image.buf, &pointer)
            }
        } catch {
            connection.release("vaDestroyImage") { vaDestroyImage(connection.display, image.image_id) }
            throw error
        }
        return UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : Int(image.data_size))
    }

    deinit {
        connection.release("vaUnmapBuffer") { vaUnmapBuffer(connection.display, image.buf) }
        connection.release("vaDestroyImage") { vaDestroyImage(connection.display, image.image_id) }
    }
}
