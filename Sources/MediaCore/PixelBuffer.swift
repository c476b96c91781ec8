import Glibc
import Synchronization

/// Why a ``PixelBuffer`` could not be created.
public enum PixelBufferError: Error, Hashable, Sendable {
    /// The format's layout is unknown (see ``PixelFormat/isSupported``).
    case unsupportedPixelFormat(PixelFormat)
    /// Width and height must be in `1...PixelBuffer.maximumDimension`.
    case invalidDimensions(width: Int, height: Int)
    /// The format needs the width to be a multiple of `requiredWidthMultiple` (packed 4:2:2).
    case widthNotMultiple(width: Int, requiredWidthMultiple: Int)
    /// Row alignment must be a power of two in `1...4096`.
    case invalidRowAlignment(Int)
    /// The buffer size does not fit in `Int`.
    case sizeOverflow
    /// The system could not provide the memory.
    case allocationFailed(byteCount: Int)
    /// External memory was described with the wrong number of planes.
    case planeCountMismatch(expected: Int, actual: Int)
    /// An external plane's rows are shorter than the samples they must hold (negative strides,
    /// i.e. bottom-up images, are not supported either).
    case planeRowTooShort(plane: Int, bytesPerRow: Int, minimumBytesPerRow: Int)
}

/// Colour and geometry metadata that travels with a picture (CoreVideo's buffer attachments).
/// `nil` means "not stated".
public struct PixelBufferAttachments: Hashable, Sendable {
    public var colorPrimaries: ColorPrimaries?
    public var transferFunction: TransferFunction?
    public var yCbCrMatrix: YCbCrMatrix?
    public var fullRange: Bool?
    public var chromaLocation: ChromaLocation?
    public var cleanAperture: CleanAperture?
    public var pixelAspectRatio: PixelAspectRatio?

    public init(
        colorPrimaries: ColorPrimaries? = nil,
        transferFunction: TransferFunction? = nil,
        yCbCrMatrix: YCbCrMatrix? = nil,
        fullRange: Bool? = nil,
        chromaLocation: ChromaLocation? = nil,
        cleanAperture: CleanAperture? = nil,
        pixelAspectRatio: PixelAspectRatio? = nil
    ) {
        self.colorPrimaries = colorPrimaries
        self.transferFunction = transferFunction
        self.yCbCrMatrix = yCbCrMatrix
        self.fullRange = fullRange
        self.chromaLocation = chromaLocation
        self.cleanAperture = cleanAperture
        self.pixelAspectRatio = pixelAspectRatio
    }
}

/// An uncompressed picture in memory: CoreVideo's `CVPixelBuffer`.
///
/// A class because a picture is a large, identity-bearing resource: a decoder's output is
/// referenced by the frame queue, the display sink and a pool at the same time, and it must be
/// freed (or returned to its pool) exactly once.
///
/// The memory is either *owned* (allocated here, every row aligned to a power of two so SIMD
/// code and hardware uploaders can use aligned loads) or *external* (an `AVFrame`, a mapped VA
/// image, a `GstVideoFrame`), in which case the provider's release callback runs exactly once
/// when the buffer is deinitialized.
///
/// `@unchecked Sendable` invariant: geometry, format and plane pointers are immutable after
/// init; ``attachments`` is guarded by a `Mutex`; the pixel memory stays valid for the object's
/// lifetime and is released once, in `deinit`. The *contents* of the planes are not synchronized
/// by this type, exactly as with `CVPixelBuffer`: the producer writes a picture before handing it
/// on, and consumers only read it; anyone writing while others may read must coordinate.
public final class PixelBuffer: @unchecked Sendable {
    /// One plane: `height` rows of `width` samples, rows `bytesPerRow` apart.
    /// See ``PixelFormat/PlaneLayout`` for what a sample is.
    public struct Plane {
        public let baseAddress: UnsafeMutableRawPointer
        public let bytesPerRow: Int
        /// Samples per row (e.g. Cb,Cr pairs for NV12's second plane), as `CVPixelBufferGetWidthOfPlane`.
        public let width: Int
        public let height: Int
    }

    /// Memory supplied by someone else, one entry per plane.
    public struct ExternalPlane {
        public var baseAddress: UnsafeMutableRawPointer
        public var bytesPerRow: Int

        public init(baseAddress: UnsafeMutableRawPointer, bytesPerRow: Int) {
            self.baseAddress = baseAddress
            self.bytesPerRow = bytesPerRow
        }
    }

    /// Largest accepted width or height. Far above any video level (H.264 tops out at 8192x4320)
    /// but small enough that no size computation can overflow and an absurd header cannot ask
    /// for terabytes.
    public static let maximumDimension = 1 << 16

    public let width: Int
    public let height: Int
    public let pixelFormat: PixelFormat
    public let planes: [Plane]

    private enum Memory {
        case owned(UnsafeMutableRawPointer)
        case external(release: @Sendable () -> Void)
        /// A pool's allocation, lent for this buffer's lifetime and given back in `deinit`.
        case pooled(PooledPixelMemory, PixelBufferPool)
    }

    private let memory: Memory
    private let attachmentStorage: Mutex<PixelBufferAttachments>

    /// Allocates a picture with every row starting on a `rowAlignment`-byte boundary (planes are
    /// laid out back to back in one allocation). The contents are unspecified until written, as
    /// with `CVPixelBufferCreate`: decoders overwrite every sample, so clearing would be wasted.
    ///
    /// - Throws: ``PixelBufferError`` for unsupported formats, impossible geometry or allocation
    ///   failure.
    public convenience init(
        width: Int, height: Int, pixelFormat: PixelFormat, rowAlignment: Int = 64,
        attachments: PixelBufferAttachments = PixelBufferAttachments()
    ) throws(PixelBufferError) {
        let layout = try PixelBufferLayout(
            width: width, height: height, pixelFormat: pixelFormat, rowAlignment: rowAlignment)
        try self.init(layout: layout, attachments: attachments)
    }

    /// Allocates a picture for a precomputed layout (the pool computes it once).
    init(layout: PixelBufferLayout, attachments: PixelBufferAttachments) throws(PixelBufferError) {
        var allocation: UnsafeMutableRawPointer?
        // posix_memalign reports failure instead of trapping like Swift's allocator, so a huge
        // but valid size becomes a typed error. Its alignment must also be a multiple of the
        // pointer size.
        let alignment = max(layout.rowAlignment, MemoryLayout<UnsafeRawPointer>.size)
        guard posix_memalign(&allocation, alignment, max(layout.byteCount, 1)) == 0, let base = allocation else {
            throw .allocationFailed(byteCount: layout.byteCount)
        }
        width = layout.width
        height = layout.height
        pixelFormat = layout.pixelFormat
        planes = layout.planes.map {
            Plane(baseAddress: base + $0.offset, bytesPerRow: $0.bytesPerRow, width: $0.width, height: $0.height)
        }
        memory = .owned(base)
        attachmentStorage = Mutex(attachments)
    }

    /// A buffer over `memory`, which `pool` lent and gets back when this buffer goes away.
    init(lending memory: PooledPixelMemory, from pool: PixelBufferPool, attachments: PixelBufferAttachments) {
        width = memory.layout.width
        height = memory.layout.height
        pixelFormat = memory.layout.pixelFormat
        planes = memory.planes
        self.memory = .pooled(memory, pool)
        attachmentStorage = Mutex(attachments)
    }

    /// Wraps memory owned by someone else without copying it.
    ///
    /// `release` runs exactly once, when the last reference to the buffer goes away. If this
    /// initializer throws, `release` is not called and the caller still owns the memory.
    ///
    /// - Throws: ``PixelBufferError`` when the geometry is impossible, the plane count does not
    ///   match the format or a row is too short for its samples.
    public init(
        width: Int, height: Int, pixelFormat: PixelFormat, externalPlanes: [ExternalPlane],
        attachments: PixelBufferAttachments = PixelBufferAttachments(),
        release: @escaping @Sendable () -> Void
    ) throws(PixelBufferError) {
        let layout = try PixelBufferLayout(width: width, height: height, pixelFormat: pixelFormat, rowAlignment: 1)
        guard externalPlanes.count == layout.planes.count else {
            throw .planeCountMismatch(expected: layout.planes.count, actual: externalPlanes.count)
        }
        var planes: [Plane] = []
        planes.reserveCapacity(externalPlanes.count)
        for (index, (external, geometry)) in zip(externalPlanes, layout.planes).enumerated() {
            // geometry.bytesPerRow is the unpadded row size here (alignment 1).
            guard external.bytesPerRow >= geometry.bytesPerRow else {
                throw .planeRowTooShort(
                    plane: index, bytesPerRow: external.bytesPerRow, minimumBytesPerRow: geometry.bytesPerRow)
            }
            planes.append(
                Plane(
                    baseAddress: external.baseAddress, bytesPerRow: external.bytesPerRow,
                    width: geometry.width, height: geometry.height))
        }
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.planes = planes
        memory = .external(release: release)
        attachmentStorage = Mutex(attachments)
    }

    deinit {
        switch memory {
        case .owned(let base): free(base)
        case .external(let release): release()
        case .pooled(let memory, let pool): pool.giveBack(memory)
        }
    }

    public var planeCount: Int { planes.count }

    /// Whether the pixel memory was allocated by MediaCore (false for wrapped external memory).
    public var ownsMemory: Bool {
        switch memory {
        case .owned, .pooled: return true
        case .external: return false
        }
    }

    /// A snapshot of the attachments.
    public var attachments: PixelBufferAttachments {
        attachmentStorage.withLock { $0 }
    }

    /// Replaces all attachments.
    public func setAttachments(_ attachments: PixelBufferAttachments) {
        attachmentStorage.withLock { $0 = attachments }
    }

    /// Read-modify-write of the attachments as one atomic step (so concurrent updates of
    /// different fields do not lose each other).
    public func updateAttachments(_ update: (inout PixelBufferAttachments) -> Void) {
        attachmentStorage.withLock { update(&$0) }
    }
}

/// One allocation of a ``PixelBufferPool``: the pixel memory and its planes, kept across the
/// buffers that borrow it in turn, freed when the pool drops it.
///
/// `@unchecked Sendable` invariant: every property is immutable; the memory is freed once, in
/// `deinit`, when neither the pool nor a buffer references the object.
final class PooledPixelMemory: @unchecked Sendable {
    let layout: PixelBufferLayout
    let base: UnsafeMutableRawPointer
    let planes: [PixelBuffer.Plane]

    init(layout: PixelBufferLayout) throws(PixelBufferError) {
        var allocation: UnsafeMutableRawPointer?
        // As PixelBuffer's own allocation: a typed error instead of a trap for a huge size.
        let alignment = max(layout.rowAlignment, MemoryLayout<UnsafeRawPointer>.size)
        guard posix_memalign(&allocation, alignment, max(layout.byteCount, 1)) == 0, let base = allocation else {
            throw .allocationFailed(byteCount: layout.byteCount)
        }
        self.layout = layout
        self.base = base
        planes = layout.planes.map {
            PixelBuffer.Plane(
                baseAddress: base + $0.offset, bytesPerRow: $0.bytesPerRow, width: $0.width, height: $0.height)
        }
    }

    deinit { free(base) }
}

/// The geometry of an owned pixel buffer: where each plane starts and how long its rows are.
/// Computed with overflow checks before any memory is requested.
struct PixelBufferLayout: Sendable {
    struct PlaneGeometry: Sendable {
        let offset: Int
        let bytesPerRow: Int
        let width: Int
        let height: Int
    }

    let width: Int
    let height: Int
    let pixelFormat: PixelFormat
    let rowAlignment: Int
    let planes: [PlaneGeometry]
    let byteCount: Int

    init(width: Int, height: Int, pixelFormat: PixelFormat, rowAlignment: Int) throws(PixelBufferError) {
        guard let descriptor = pixelFormat.descriptor else { throw .unsupportedPixelFormat(pixelFormat) }
        guard (1...PixelBuffer.maximumDimension).contains(width), (1...PixelBuffer.maximumDimension).contains(height)
        else { throw .invalidDimensions(width: width, height: height) }
        guard width % descriptor.widthMultiple == 0 else {
            throw .widthNotMultiple(width: width, requiredWidthMultiple: descriptor.widthMultiple)
        }
        guard rowAlignment > 0, rowAlignment <= 4096, rowAlignment & (rowAlignment - 1) == 0 else {
            throw .invalidRowAlignment(rowAlignment)
        }
        var planes: [PlaneGeometry] = []
        planes.reserveCapacity(descriptor.planes.count)
        var offset = 0
        for plane in descriptor.planes {
            let planeWidth = PixelFormat.divideRoundingUp(width, plane.horizontalSubsampling)
            let planeHeight = PixelFormat.divideRoundingUp(height, plane.verticalSubsampling)
            let (rowBytes, rowOverflow) = planeWidth.multipliedReportingOverflow(by: plane.bytesPerSample)
            let (paddedRow, padOverflow) = rowBytes.addingReportingOverflow(rowAlignment - 1)
            guard !rowOverflow, !padOverflow else { throw .sizeOverflow }
            let bytesPerRow = paddedRow & ~(rowAlignment - 1)
            let (planeBytes, planeOverflow) = bytesPerRow.multipliedReportingOverflow(by: planeHeight)
            guard !planeOverflow else { throw .sizeOverflow }
            planes.append(
                PlaneGeometry(offset: offset, bytesPerRow: bytesPerRow, width: planeWidth, height: planeHeight))
            // Every plane size is a multiple of rowAlignment, so every plane start stays aligned.
            let (next, offsetOverflow) = offset.addingReportingOverflow(planeBytes)
            guard !offsetOverflow else { throw .sizeOverflow }
            offset = next
        }
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.rowAlignment = rowAlignment
        self.planes = planes
        self.byteCount = offset
    }
}

extension PixelBufferAttachments {
    /// What a hardware decoder's pictures of a stream described by `format` carry: the VUI's
    /// colour description, chroma siting and pixel aspect ratio, and full range where the output
    /// format says so and the VUI does not.
    public init(decoding format: FormatDescription, pixelFormat: PixelFormat) {
        self.init(
            colorPrimaries: format.extensions.colorPrimaries, transferFunction: format.extensions.transferFunction,
            yCbCrMatrix: format.extensions.yCbCrMatrix,
            fullRange: format.extensions.fullRange ?? (pixelFormat == .nv12FullRange ? true : nil),
            chromaLocation: format.extensions.chromaLocationTopField,
            pixelAspectRatio: format.extensions.pixelAspectRatio)
    }
}
