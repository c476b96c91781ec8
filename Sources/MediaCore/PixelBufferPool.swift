import Synchronization

/// Why a ``PixelBufferPool`` could not be created or could not hand out a buffer.
public enum PixelBufferPoolError: Error, Hashable, Sendable {
    /// The attributes describe buffers that cannot exist.
    case invalidBufferAttributes(PixelBufferError)
    /// `minimumBufferCount` is negative or above `maximumBufferCount`, or the maximum is below 1.
    case invalidBufferCounts(minimum: Int, maximum: Int?)
    /// Every buffer the pool may own is in use; release one and retry (back-pressure).
    case maximumBufferCountReached(Int)
    /// Allocating a new buffer failed.
    case allocationFailed(PixelBufferError)
}

/// A recycler of identically shaped ``PixelBuffer``s: CoreVideo's `CVPixelBufferPool`.
///
/// Decoders produce a picture per frame; allocating (and page-faulting) several megabytes each
/// time would dominate the cost of cheap codecs, so buffers are reused.
///
/// Design: the pool keeps a strong reference to every buffer it has created. A buffer is free
/// again when the pool's reference is the *only* one left (`isKnownUniquelyReferenced`), i.e.
/// when every consumer has dropped it. ``makePixelBuffer()`` hands out such a buffer as it is.
/// Compared with the alternative - a wrapper object whose `deinit` gives the memory back - this
/// allocates nothing at all in steady state (no wrapper per frame), needs no callback from
/// consumer threads into the pool, and leaves consumers holding a plain `PixelBuffer`. The
/// price is a linear scan over the pool's buffers, which are few (a decoder's DPB plus a queue).
///
/// Consumers must hold buffers only through strong references: a `weak` or `unowned` reference
/// does not keep a buffer out of the pool and would end up pointing at a recycled picture.
///
/// Thread-safe: all state is behind a `Mutex`, and releases happen without touching the pool.
public final class PixelBufferPool: Sendable {
    /// What the pool's buffers look like and how many of them it may keep.
    public struct Attributes: Hashable, Sendable {
        public var width: Int
        public var height: Int
        public var pixelFormat: PixelFormat
        /// Every row starts on a multiple of this many bytes (a power of two up to 4096).
        public var rowAlignment: Int
        /// Buffers created up front, so the first frames do not pay for allocation.
        public var minimumBufferCount: Int
        /// Upper bound on buffers in existence; nil for unbounded. Reaching it makes
        /// ``PixelBufferPool/makePixelBuffer()`` throw instead of growing without limit when a
        /// consumer holds on to frames.
        public var maximumBufferCount: Int?
        /// Attachments every buffer starts with, restored each time a buffer is handed out again.
        public var attachments: PixelBufferAttachments

        public init(
            width: Int, height: Int, pixelFormat: PixelFormat, rowAlignment: Int = 64,
            minimumBufferCount: Int = 0, maximumBufferCount: Int? = nil,
            attachments: PixelBufferAttachments = PixelBufferAttachments()
        ) {
            self.width = width
            self.height = height
            self.pixelFormat = pixelFormat
            self.rowAlignment = rowAlignment
            self.minimumBufferCount = minimumBufferCount
            self.maximumBufferCount = maximumBufferCount
            self.attachments = attachments
        }
    }

    private struct State {
        /// Every buffer the pool owns, in use or free.
        var buffers: [PixelBuffer]
        var allocationCount: Int
    }

    public let attributes: Attributes
    private let layout: PixelBufferLayout
    private let state: Mutex<State>

    /// Creates the pool and its `minimumBufferCount` buffers.
    ///
    /// - Throws: ``PixelBufferPoolError/invalidBufferAttributes(_:)``,
    ///   ``PixelBufferPoolError/invalidBufferCounts(minimum:maximum:)`` or
    ///   ``PixelBufferPoolError/allocationFailed(_:)``.
    public init(attributes: Attributes) throws(PixelBufferPoolError) {
        let minimum = attributes.minimumBufferCount
        let maximum = attributes.maximumBufferCount
        guard minimum >= 0, maximum.map({ $0 >= max(minimum, 1) }) ?? true else {
            throw .invalidBufferCounts(minimum: minimum, maximum: maximum)
        }
        let layout: PixelBufferLayout
        do {
            layout = try PixelBufferLayout(
                width: attributes.width, height: attributes.height, pixelFormat: attributes.pixelFormat,
                rowAlignment: attributes.rowAlignment)
        } catch {
            throw .invalidBufferAttributes(error)
        }
        var buffers: [PixelBuffer] = []
        // Room for the expected population, so the array does not reallocate while buffers are
        // added during warm-up.
        buffers.reserveCapacity(max(minimum, maximum ?? 16))
        for _ in 0..<minimum {
            do {
                buffers.append(try PixelBuffer(layout: layout, attachments: attributes.attachments))
            } catch {
                throw .allocationFailed(error)
            }
        }
        self.attributes = attributes
        self.layout = layout
        self.state = Mutex(State(buffers: buffers, allocationCount: minimum))
    }

    /// A buffer nobody else references, recycled if one is free, otherwise newly allocated.
    /// Its attachments are reset to ``Attributes/attachments``; its pixels are whatever the
    /// previous user left.
    ///
    /// - Throws: ``PixelBufferPoolError/maximumBufferCountReached(_:)`` when all allowed buffers
    ///   are in use, ``PixelBufferPoolError/allocationFailed(_:)`` if memory runs out.
    public func makePixelBuffer() throws(PixelBufferPoolError) -> PixelBuffer {
        let result: Result<PixelBuffer, PixelBufferPoolError> = state.withLock { state in
            for index in state.buffers.indices where isKnownUniquelyReferenced(&state.buffers[index]) {
                // The consumer that dropped the last other reference did so without taking our
                // lock; its release decrement has release ordering, and this acquire fence after
                // observing it makes all of that thread's writes to the buffer visible here
                // before the buffer is handed to someone else.
                atomicMemoryFence(ordering: .acquiring)
                let buffer = state.buffers[index]
                buffer.setAttachments(attributes.attachments)
                return .success(buffer)
            }
            if let maximum = attributes.maximumBufferCount, state.buffers.count >= maximum {
                return .failure(.maximumBufferCountReached(maximum))
            }
            do throws(PixelBufferError) {
                let buffer = try PixelBuffer(layout: layout, attachments: attributes.attachments)
                state.buffers.append(buffer)
                state.allocationCount += 1
                return .success(buffer)
            } catch {
                return .failure(.allocationFailed(error))
            }
        }
        return try result.get()
    }

    /// How many buffers the pool has ever allocated. Constant in steady state: that is the
    /// point of the pool, and what tests and benchmarks check.
    public var allocationCount: Int {
        state.withLock { $0.allocationCount }
    }

    /// How many buffers the pool currently owns, in use or free.
    public var bufferCount: Int {
        state.withLock { $0.buffers.count }
    }

    /// How many of the pool's buffers are currently referenced outside the pool.
    public var buffersInUseCount: Int {
        state.withLock { state in
            var inUse = 0
            for index in state.buffers.indices where !isKnownUniquelyReferenced(&state.buffers[index]) {
                inUse += 1
            }
            return inUse
        }
    }

    /// Frees every buffer that is not in use (e.g. after a resolution change or when memory is
    /// tight). Buffers in use stay owned by the pool and are recycled normally once released.
    /// Later requests allocate again as needed, regardless of the minimum count.
    public func flush() {
        state.withLock { state in
            var index = state.buffers.count - 1
            while index >= 0 {
                if isKnownUniquelyReferenced(&state.buffers[index]) {
                    state.buffers.remove(at: index)
                }
                index -= 1
            }
        }
    }
}
