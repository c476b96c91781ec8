import CFFmpeg
import MediaCore
import Synchronization

/// libavcodec's `get_buffer2`: decodes straight into ``PixelBuffer``s from a ``PixelBufferPool``,
/// so the picture the decoder writes is the picture the session outputs (no copy).
///
/// Each AVFrame gets one AVBufferRef covering all planes of one pooled PixelBuffer; the buffer's
/// free callback drops the PixelBuffer reference it holds, which returns the picture to the pool
/// once the decoder (DPB) and every consumer are done with it.
///
/// Called from libavcodec's frame threads as well as from the decoding thread, so the pool lives
/// behind a `Mutex` (PixelBufferPool itself is thread-safe; the mutex guards replacing it when the
/// picture size or format changes).
final class PooledFrameAllocator: Sendable {
    private struct Shape: Equatable {
        var width: Int
        var height: Int
        var pixelFormat: PixelFormat
        var rowAlignment: Int
    }

    private let pool = Mutex<(shape: Shape, pool: PixelBufferPool)?>(nil)
    /// The caller's row alignment; raised to what libavcodec's SIMD needs.
    private let minimumRowAlignment: Int

    init(rowAlignment: Int) {
        minimumRowAlignment = max(rowAlignment, 64)
    }

    /// Rows added below the aligned picture. libavcodec's own allocator pads every pool buffer
    /// with 16 + STRIDE_ALIGN - 1 bytes (at most 79) because SIMD code may read a little past
    /// the last row; pictures here are planes back to back, so the last plane needs that slack:
    /// four luma rows give at least two rows (>= 128 bytes at 64-byte alignment) on every plane.
    private static let extraRows = 4

    /// The callback body. Returns 0 or an AVERROR, as libavcodec expects.
    func allocate(context: UnsafeMutablePointer<AVCodecContext>, frame: UnsafeMutablePointer<AVFrame>, flags: Int32) -> Int32 {
        guard let pixelFormat = LibavPixelFormat.native(frame.pointee.format) else {
            // A format SwiftVT has no layout for (12-bit, say): let libavcodec allocate it; the
            // output step reports the format as unsupported.
            return avcodec_default_get_buffer2(context, frame, flags)
        }
        var width = frame.pointee.width
        var height = frame.pointee.height
        // Macroblock-aligned size plus the edge libavcodec wants, and its linesize alignment.
        let linesizeAlignment = Int(cffmpeg_align_dimensions(context, &width, &height))
        let rowAlignment = max(minimumRowAlignment, linesizeAlignment)
        guard width > 0, height > 0, rowAlignment <= 4096, rowAlignment & (rowAlignment - 1) == 0 else {
            return avcodec_default_get_buffer2(context, frame, flags)
        }
        let shape = Shape(
            width: Int(width), height: Int(height) + Self.extraRows, pixelFormat: pixelFormat, rowAlignment: rowAlignment)
        let buffer: PixelBuffer
        do {
            buffer = try currentPool(for: shape).makePixelBuffer()
        } catch {
            return cffmpeg_error_no_memory()
        }
        let planes = buffer.planes
        guard let first = planes.first, let last = planes.last else { return cffmpeg_error_no_memory() }
        let end = last.baseAddress + last.bytesPerRow * last.height
        let retained = Unmanaged.passRetained(buffer)
        guard
            let reference = av_buffer_create(
                first.baseAddress.assumingMemoryBound(to: UInt8.self), first.baseAddress.distance(to: end),
                { opaque, _ in
                    // libavcodec (or the last AVFrame referencing the picture) is done with it.
                    guard let opaque else { return }
                    Unmanaged<PixelBuffer>.fromOpaque(opaque).release()
                }, retained.toOpaque(), 0)
        else {
            retained.release()
            return cffmpeg_error_no_memory()
        }
        for (index, plane) in planes.enumerated() {
            cffmpeg_frame_set_plane(
                frame, Int32(index), plane.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(plane.bytesPerRow))
        }
        cffmpeg_frame_set_buffer(frame, reference)
        return 0
    }

    private func currentPool(for shape: Shape) throws(PixelBufferPoolError) -> PixelBufferPool {
        let result: Result<PixelBufferPool, PixelBufferPoolError> = pool.withLock { current in
            if let current, current.shape == shape { return .success(current.pool) }
            // New size or format (a new SPS): a new pool. Pictures of the old one stay valid,
            // they own their memory, and go away with their last reference.
            do throws(PixelBufferPoolError) {
                let made = try PixelBufferPool(attributes: .init(
                    width: shape.width, height: shape.height, pixelFormat: shape.pixelFormat,
                    rowAlignment: shape.rowAlignment))
                current = (shape, made)
                return .success(made)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Installs `self` as `context`'s allocator. The context must not outlive `self` (the
    /// decoder owns both and frees the context first).
    func install(in context: UnsafeMutablePointer<AVCodecContext>) {
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        cffmpeg_declare_thread_safe_callbacks(context)
        context.pointee.get_buffer2 = { context, frame, flags in
            guard let context, let frame, let opaque = context.pointee.opaque else {
                return cffmpeg_error_invalid_argument()
            }
            return Unmanaged<PooledFrameAllocator>.fromOpaque(opaque).takeUnretainedValue()
                .allocate(context: context, frame: frame, flags: flags)
        }
    }
}
