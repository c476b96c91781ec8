import CVA

/// A VA config (vaCreateConfig): a profile, an entrypoint and attributes. Destroyed with it.
public struct VAConfig: ~Copyable {
    public let connection: VADisplayConnection
    public let id: VAConfigID
    public let profile: VAProfile
    public let entrypoint: VAEntrypoint

    public init(
        connection: VADisplayConnection, profile: VAProfile, entrypoint: VAEntrypoint, attributes: [VAConfigAttrib]
    ) throws(VAError) {
        var attributes = attributes
        var id = VAConfigID(cva_invalid_id())
        try vaCall("vaCreateConfig", context: "creating a \(VACapabilities.name(of: profile)) \(VACapabilities.name(of: entrypoint)) config") {
            vaCreateConfig(connection.display, profile, entrypoint, &attributes, Int32(attributes.count), &id)
        }
        self.connection = connection
        self.id = id
        self.profile = profile
        self.entrypoint = entrypoint
    }

    deinit { vaDestroyConfig(connection.display, id) }
}

/// Surfaces made together (vaCreateSurfaces), destroyed together.
public struct VASurfaceSet: ~Copyable {
    public let connection: VADisplayConnection
    public let ids: [VASurfaceID]
    public let width: Int
    public let height: Int

    /// - Parameter fourcc: the pixel format (VA_FOURCC_*), passed as a VASurfaceAttribPixelFormat
    ///   attribute: drivers choose another layout without it.
    public init(
        connection: VADisplayConnection, rtFormat: UInt32, width: Int, height: Int, count: Int, fourcc: UInt32
    ) throws(VAError) {
        var attribute = VASurfaceAttrib()
        attribute.type = VASurfaceAttribPixelFormat
        attribute.flags = UInt32(VA_SURFACE_ATTRIB_SETTABLE)
        attribute.value.type = VAGenericValueTypeInteger
        attribute.value.value.i = Int32(bitPattern: fourcc)
        var ids = [VASurfaceID](repeating: cva_invalid_surface(), count: count)
        try vaCall("vaCreateSurfaces", context: "creating \(count) \(width)x\(height) surfaces") {
            vaCreateSurfaces(
                connection.display, rtFormat, UInt32(width), UInt32(height), &ids, UInt32(count), &attribute, 1)
        }
        self.connection = connection
        self.ids = ids
        self.width = width
        self.height = height
    }

    deinit {
        var ids = ids
        vaDestroySurfaces(connection.display, &ids, Int32(ids.count))
    }
}

/// A decoding or encoding context (vaCreateContext). A class rather than a `~Copyable` struct:
/// it is held in optionals and shared by calls that Swift 6.x cannot borrow a noncopyable
/// optional for.
public final class VAContext {
    public let connection: VADisplayConnection
    public let id: VAContextID

    public init(
        connection: VADisplayConnection, config: borrowing VAConfig, width: Int, height: Int, flags: Int32,
        renderTargets: [VASurfaceID]
    ) throws(VAError) {
        var targets = renderTargets
        var id = VAContextID(cva_invalid_id())
        try vaCall("vaCreateContext", context: "creating a \(width)x\(height) context") {
            vaCreateContext(connection.display, config.id, Int32(width), Int32(height), flags, &targets, Int32(targets.count), &id)
        }
        self.connection = connection
        self.id = id
    }

    deinit { vaDestroyContext(connection.display, id) }
}

/// A VA buffer (vaCreateBuffer). A class: a picture's buffers are kept in an array until
/// vaEndPicture has consumed them.
public final class VABufferObject {
    public let connection: VADisplayConnection
    public let id: VABufferID

    /// A buffer holding a copy of `bytes` (vaCreateBuffer copies into driver memory).
    public init(connection: VADisplayConnection, context: VAContext, type: VABufferType, bytes: UnsafeRawBufferPointer) throws(VAError) {
        var id = VABufferID(cva_invalid_id())
        try vaCall("vaCreateBuffer", context: "creating a \(bytes.count)-byte buffer of type \(type.rawValue)") {
            vaCreateBuffer(connection.display, context.id, type, UInt32(bytes.count), 1, UnsafeMutableRawPointer(mutating: bytes.baseAddress), &id)
        }
        self.connection = connection
        self.id = id
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

    deinit { vaDestroyBuffer(connection.display, id) }
}

/// A VA image mapped for reading: from vaDeriveImage (the surface's own memory) or vaCreateImage +
/// vaGetImage (a copy made by the driver). Unmapped and destroyed with it.
public struct VAMappedImage: ~Copyable {
    public let connection: VADisplayConnection
    public let image: VAImage
    public let data: UnsafeRawBufferPointer

    /// vaDeriveImage: the surface's memory itself, no copy (fails on drivers that cannot).
    public init(deriving surface: VASurfaceID, connection: VADisplayConnection) throws(VAError) {
        var image = VAImage()
        try vaCall("vaDeriveImage") { vaDeriveImage(connection.display, surface, &image) }
        data = try Self.map(image, connection: connection)
        self.connection = connection
        self.image = image
    }

    /// vaCreateImage + vaGetImage: a copy of the surface made by the driver.
    public init(copying surface: VASurfaceID, connection: VADisplayConnection, fourcc: UInt32, width: Int, height: Int) throws(VAError) {
        var format = VAImageFormat()
        format.fourcc = fourcc
        format.byte_order = UInt32(VA_LSB_FIRST)
        format.bits_per_pixel = 12
        var image = VAImage()
        try vaCall("vaCreateImage") { vaCreateImage(connection.display, &format, Int32(width), Int32(height), &image) }
        do throws(VAError) {
            try vaCall("vaGetImage") {
                vaGetImage(connection.display, surface, 0, 0, UInt32(width), UInt32(height), image.image_id)
            }
        } catch {
            vaDestroyImage(connection.display, image.image_id)
            throw error
        }
        data = try Self.map(image, connection: connection)
        self.connection = connection
        self.image = image
    }

    /// Maps the image's buffer; on failure the image is destroyed.
    private static func map(_ image: VAImage, connection: VADisplayConnection) throws(VAError) -> UnsafeRawBufferPointer {
        var pointer: UnsafeMutableRawPointer?
        do throws(VAError) {
            try vaCall("vaMapBuffer", context: "mapping an image") { vaMapBuffer(connection.display, image.buf, &pointer) }
        } catch {
            vaDestroyImage(connection.display, image.image_id)
            throw error
        }
        return UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : Int(image.data_size))
    }

    deinit {
        vaUnmapBuffer(connection.display, image.buf)
        vaDestroyImage(connection.display, image.image_id)
    }
}
