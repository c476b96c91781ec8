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
///
/// The pool is bounded (``maximumBufferCount`` plus what the consumer holds): at the bound the
/// frame thread asking for a picture waits until downstream gives one back, which holds up
/// `avcodec_send_packet` and so the element's streaming thread - back pressure instead of a
/// pool that grows to whatever a downstream queue holds. A wait ended by the consumer flushing
/// fails the allocation; ``takeFlushingInterruption()`` tells the decoder it was that.
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
    private let maximum = Atomic<Int>(0)
    private let consumer: PixelBufferConsumer?
    private let interruptedByFlushing = Atomic<Bool>(false)

    init(rowAlignment: Int, consumer: PixelBufferConsumer?) {
        minimumRowAlignment = max(rowAlignment, 64)
        self.consumer = consumer
    }

    /// Pictures the decoder itself may hold (LibavcodecDecoder.pictureBudget), before the
    /// consumer's held count is added; 0 for no bound. Applies to pools made after it is set.
    var maximumBufferCount: Int {
        get { maximum.load(ordering: .relaxed) }
        set { maximum.store(newValue, ordering: .relaxed) }
    }

    /// Whether an allocation failed because the consumer was flushing since the last call.
    func takeFlushingInterruption() -> Bool {
        interruptedByFlushing.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Frees the pool's idle pictures (a seek: the decoder just let go of its DPB).
    func trimIdle() {
        pool.withLock { $0 }?.pool.flush()
    }

    /// Rows added below the aligned picture. libavcodec's own allocator pads every pool buffer
    /// with 16 + STRIDE_ALIGN - 1 bytes (at most 79) because SIMD code may read a little past
    /// the last row; pictures here are planes back to back, so the last plane needs that slack:
    /// four luma rows give at least two rows (>= 128 bytes at 64-byte alignment) on every plane.
    private static let extraRows = 4

    /// The callback body. Returns 0 or an AVERROR, as libavcodec expects.
    func allocate(context: UnsafeMutablePointer<AVCodecContext>, frame: UnsafeMutablePointer<AVFrame>, flags: Int32)
        -> Int32
    {
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
            width: Int(width), height: Int(height) + Self.extraRows, pixelFormat: pixelFormat,
            rowAlignment: rowAlignment)
        let buffer: PixelBuffer
        do {
            // May wait for downstream to give a picture back (see the type's description).
            buffer = try currentPool(for: shape).makePixelBuffer()
        } catch {
            if error == .flushing { interruptedByFlushing.store(true, ordering: .releasing) }
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
        let result: Result<(PixelBufferPool, retired: PixelBufferPool?), PixelBufferPoolError> = pool.withLock {
            current in
            if let current, current.shape == shape { return .success((current.pool, nil)) }
            // New size or format (a new SPS): a new pool. Pictures of the old one stay valid
            // until their last reference goes; the old pool frees its idle memory now and the
            // rest as it comes back.
            do throws(PixelBufferPoolError) {
                let made = try PixelBufferPool(
                    attributes: .init(
                        width: shape.width, height: shape.height, pixelFormat: shape.pixelFormat,
                        rowAlignment: shape.rowAlignment,
                        maximumBufferCount: maximumBufferCount > 0 ? maximumBufferCount : nil),
                    consumer: consumer)
                let retired = current?.pool
                current = (shape, made)
                return .success((made, retired))
            } catch {
                return .failure(error)
            }
        }
        let (current, retired) = try result.get()
        retired?.invalidate()
        return current
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
