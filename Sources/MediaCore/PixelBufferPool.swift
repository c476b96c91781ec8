import Synchronization

/// Why a ``PixelBufferPool`` could not be created or could not hand out a buffer.
public enum PixelBufferPoolError: Error, Hashable, Sendable {
    /// The attributes describe buffers that cannot exist.
    case invalidBufferAttributes(PixelBufferError)
    /// `minimumBufferCount` is negative or above `maximumBufferCount`, or the maximum is below 1.
    case invalidBufferCounts(minimum: Int, maximum: Int?)
    /// Every buffer the pool may own is in use and the caller asked not to wait
    /// (``PixelBufferPool/makePixelBuffer(waitIfExhausted:)``); the associated value is the
    /// maximum in force.
    case maximumBufferCountReached(Int)
    /// The pool's ``PixelBufferConsumer`` is flushing (a seek, a state change): no buffer is
    /// handed out, and a caller waiting for one stops waiting.
    case flushing
    /// Allocating a new buffer failed.
    case allocationFailed(PixelBufferError)
}

/// A recycler of identically shaped ``PixelBuffer``s: CoreVideo's `CVPixelBufferPool`, with the
/// blocking of GStreamer's `GstBufferPool` when it has a maximum.
///
/// Decoders produce a picture per frame; allocating (and page-faulting) several megabytes each
/// time would dominate the cost of cheap codecs, so the pixel memory is reused.
///
/// Design: the pool owns allocations; ``makePixelBuffer(waitIfExhausted:)`` lends a free one
/// (or makes a new one) to a fresh ``PixelBuffer``, whose `deinit` gives it back - on whichever
/// thread drops the last reference, typically a GStreamer sink unreffing the buffer that wraps
/// the picture. Giving back wakes a caller waiting at the maximum, so a decoder whose pictures
/// sit in a slow consumer's queue waits for that consumer (back pressure) instead of allocating
/// more: without a maximum, the consumer's queue would set the pool's size for the whole session.
/// The cost is one small object per buffer handed out (the `PixelBuffer`, whose planes array is
/// shared with the allocation); the pixel memory itself is allocated only while the pool grows.
/// A buffer keeps its pool alive, as with CoreVideo.
///
/// Waits end when a buffer comes back, when the maximum rises
/// (``PixelBufferConsumer/setHeldBufferCount(_:)``) or when the consumer starts flushing
/// (``PixelBufferConsumer/setFlushing(_:)``), which is how a seek or a state change gets a
/// decoder out of a wait for buffers that a flushed consumer may never give back.
///
/// A bound must not become a deadlock: a consumer that *keeps* pictures until it gets more (an
/// application holding the last K samples, GstVideoDecoder's reverse playback queueing a whole
/// GOP) gives nothing back while the pool waits for it. Such a consumer is told from a slow one
/// by time: a slow consumer gives a buffer back within a few of its usual intervals, a keeping
/// one never does. A wait that sees no buffer come back for ``starvationTimeout(for:)`` (at least
/// ``minimumStarvationTimeoutNanoseconds``, four times the longest interval between give-backs
/// lately) tells the consumer, which doubles the bound when it permits growth
/// (``PixelBufferConsumer/noteStarvation(atBound:)``); a consumer known to keep pictures
/// (``PixelBufferConsumer/setKeepsPictures(_:)``) grows it without waiting.
///
/// Idle allocations are freed by ``flush()``, and on their own when the high-water mark falls:
/// at the end of every window of ``trimWindow`` buffers handed out, allocations beyond the most
/// that were in use at once during the window (and beyond `minimumBufferCount`) are freed.
///
/// Thread-safe: all state is behind one ``Monitor``.
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
        /// Upper bound on buffers in existence (plus the consumer's
        /// ``PixelBufferConsumer/heldBufferCount``); nil for unbounded. At the bound,
        /// ``PixelBufferPool/makePixelBuffer(waitIfExhausted:)`` waits for a buffer to come back.
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

    /// Buffers handed out per trimming window (see the type's description): long enough that a
    /// consumer's ordinary jitter does not free and reallocate pictures, short enough (a few
    /// seconds of video) that memory a burst needed comes back soon after.
    public static let trimWindow = 64

    /// The shortest wait at the bound after which a consumer that gave nothing back is taken
    /// to keep pictures (see the type's description): well above the frame interval of any
    /// real-time consumer, short enough that an application holding frames starts at once.
    public static let minimumStarvationTimeoutNanoseconds: UInt64 = 250_000_000
    /// The longest such wait: an interval measured across a pause (minutes without a frame)
    /// must not make an application that holds frames wait as long.
    public static let maximumStarvationTimeoutNanoseconds: UInt64 = 5_000_000_000

    private struct State {
        /// Allocations nobody borrows, most recently returned last (handed out first: warm in cache).
        var free: [PooledPixelMemory]
        /// Allocations lent to buffers that still exist.
        var inUse = 0
        var allocationCount: Int
        /// Most allocations in use at once since the window started, and buffers handed out in it.
        var windowPeak = 0
        var windowHandouts = 0
        var isInvalidated = false
        /// When a buffer was last given back (monotonic ns), and the longest interval between
        /// two give-backs in this window and the one before: how slow the consumer is.
        var lastGiveBack: UInt64 = 0
        var windowLongestGiveBackInterval: UInt64 = 0
        var previousWindowLongestGiveBackInterval: UInt64 = 0
        var total: Int { free.count + inUse }
    }

    public let attributes: Attributes
    /// Who takes the pool's buffers, if someone said: their held count and flushing state.
    public let consumer: PixelBufferConsumer?
    private let layout: PixelBufferLayout
    private let monitor: Monitor<State>

    /// Creates the pool and its `minimumBufferCount` buffers.
    ///
    /// - Parameter consumer: shared by the pools whose buffers go to one consumer; its held count
    ///   raises the maximum, and its flushing state stops waits.
    /// - Throws: ``PixelBufferPoolError/invalidBufferAttributes(_:)``,
    ///   ``PixelBufferPoolError/invalidBufferCounts(minimum:maximum:)`` or
    ///   ``PixelBufferPoolError/allocationFailed(_:)``.
    public init(attributes: Attributes, consumer: PixelBufferConsumer? = nil) throws(PixelBufferPoolError) {
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
        var free: [PooledPixelMemory] = []
        free.reserveCapacity(max(minimum, maximum ?? 16))
        for _ in 0..<minimum {
            do {
                free.append(try PooledPixelMemory(layout: layout))
            } catch {
                throw .allocationFailed(error)
            }
        }
        self.attributes = attributes
        self.consumer = consumer
        self.layout = layout
        self.monitor = Monitor(State(free: free, allocationCount: minimum))
        consumer?.register(self)
    }

    /// The bound in force: the attributes' maximum plus what the consumer holds; nil for none.
    public var effectiveMaximumBufferCount: Int? {
        attributes.maximumBufferCount.map { $0 + (consumer?.heldBufferCount ?? 0) }
    }

    /// A buffer nobody else references: recycled memory if some is free, newly allocated below
    /// the maximum, otherwise - with `waitIfExhausted` - the next one given back.
    /// Its attachments are ``Attributes/attachments``; its pixels are whatever the previous user left.
    ///
    /// Blocks at the maximum until a buffer is given back (by any thread), the maximum rises, or
    /// the consumer flushes; so a caller must not hold, while calling this, anything the threads
    /// releasing buffers need.
    ///
    /// - Throws: ``PixelBufferPoolError/flushing`` while the consumer is flushing (also for a
    ///   caller that was waiting); ``PixelBufferPoolError/maximumBufferCountReached(_:)`` at the
    ///   maximum when `waitIfExhausted` is false; ``PixelBufferPoolError/allocationFailed(_:)``
    ///   if memory runs out.
    public func makePixelBuffer(waitIfExhausted: Bool = true) throws(PixelBufferPoolError) -> PixelBuffer {
        let consumer = consumer
        let maximum = attributes.maximumBufferCount
        enum Step {
            case handout(PooledPixelMemory?, trimmed: [PooledPixelMemory])
            /// At the bound: wait this long for a buffer to come back.
            case wait(timeout: UInt64)
            /// Nothing came back during the wait; the bound in force.
            case starved(bound: Int)
        }
        // First without waiting; at the bound, waits of the starvation timeout until a buffer
        // comes back, the bound rises or the consumer flushes.
        var deadline: UInt64?
        while true {
            let step: Result<Step, PixelBufferPoolError> = monitor.withLock(
                waitingUntil: { state in
                    guard waitIfExhausted, let maximum else { return true }
                    return !state.free.isEmpty || state.total < maximum + (consumer?.heldBufferCount ?? 0)
                        || consumer?.isFlushing == true
                },
                deadline: deadline ?? 0
            ) { state, available in
                if consumer?.isFlushing == true { return .failure(.flushing) }
                if !available {
                    let bound = (maximum ?? 0) + (consumer?.heldBufferCount ?? 0)
                    return .success(
                        deadline == nil ? .wait(timeout: starvationTimeout(for: state)) : .starved(bound: bound))
                }
                let recycled = state.free.popLast()
                if recycled == nil, let maximum {
                    let bound = maximum + (consumer?.heldBufferCount ?? 0)
                    if state.total >= bound { return .failure(.maximumBufferCountReached(bound)) }
                }
                // Counted in use at once: a new allocation reserves its place under the maximum
                // before it is made, so concurrent callers cannot overshoot.
                state.inUse += 1
                return .success(.handout(recycled, trimmed: noteHandout(&state)))
            }
            switch try step.get() {
            case .wait(let timeout):
                deadline = Monitor<State>.monotonicNanoseconds() &+ timeout
            case .starved(let bound):
                // A consumer that permits it raises the bound (the next try allocates); one that
                // does not (a paused pipeline) is waited for again.
                consumer?.noteStarvation(atBound: bound)
                deadline = nil
            case .handout(let recycled, let trimmed):
                withExtendedLifetime(trimmed) {}
                if let recycled {
                    return PixelBuffer(lending: recycled, from: self, attachments: attributes.attachments)
                }
                // Allocated outside the lock: page-faulting megabytes must not stall threads
                // giving buffers back.
                do {
                    let allocated = try PooledPixelMemory(layout: layout)
                    monitor.withLock { $0.allocationCount += 1 }
                    return PixelBuffer(lending: allocated, from: self, attachments: attributes.attachments)
                } catch {
                    monitor.withLock { $0.inUse -= 1 }
                    throw .allocationFailed(error)
                }
            }
        }
    }

    /// How long a wait at the bound lasts before the consumer is taken to keep its pictures
    /// (under the lock): none for a consumer known to keep them, else four of its slowest recent
    /// intervals between give-backs, and never under ``minimumStarvationTimeoutNanoseconds``.
    private func starvationTimeout(for state: State) -> UInt64 {
        if consumer?.keepsPictures == true { return 0 }
        let slowest = max(state.windowLongestGiveBackInterval, state.previousWindowLongestGiveBackInterval)
        return min(
            Self.maximumStarvationTimeoutNanoseconds,
            max(Self.minimumStarvationTimeoutNanoseconds, slowest.multipliedReportingOverflow(by: 4).partialValue))
    }

    /// Window bookkeeping after a handout (under the lock). At the end of a window, the idle
    /// allocations beyond the window's peak are taken out of the pool and returned, for the
    /// caller to free after unlocking.
    private func noteHandout(_ state: inout State) -> [PooledPixelMemory] {
        state.windowPeak = max(state.windowPeak, state.inUse)
        state.windowHandouts += 1
        guard state.windowHandouts >= Self.trimWindow else { return [] }
        let keep = max(state.windowPeak, attributes.minimumBufferCount)
        var trimmed: [PooledPixelMemory] = []
        if state.total > keep {
            // The least recently used ones: the free list hands out from its end.
            let count = min(state.free.count, state.total - keep)
            trimmed = Array(state.free.prefix(count))
            state.free.removeFirst(count)
        }
        state.windowPeak = state.inUse
        state.windowHandouts = 0
        state.previousWindowLongestGiveBackInterval = state.windowLongestGiveBackInterval
        state.windowLongestGiveBackInterval = 0
        return trimmed
    }

    /// Called by a buffer's `deinit`: the memory is free again, and a waiter may take it.
    func giveBack(_ memory: PooledPixelMemory) {
        // The buffer's last release decremented its reference count with release ordering; the
        // monitor's mutex orders everything that thread wrote to the pixels before the next
        // borrower sees the memory.
        let now = Monitor<State>.monotonicNanoseconds()
        let dropped: PooledPixelMemory? = monitor.withLock { state in
            state.inUse -= 1
            if state.lastGiveBack != 0, now > state.lastGiveBack {
                state.windowLongestGiveBackInterval = max(state.windowLongestGiveBackInterval, now - state.lastGiveBack)
            }
            state.lastGiveBack = now
            if state.isInvalidated { return memory }
            state.free.append(memory)
            return nil
        }
        withExtendedLifetime(dropped) {}
    }

    /// Wakes waiters so that they re-check the consumer's state (called by the consumer).
    func wakeWaiters() {
        monitor.withLock { _ in }
    }

    /// How many buffers the pool has ever allocated. Constant in steady state: that is the
    /// point of the pool, and what tests and benchmarks check.
    public var allocationCount: Int {
        monitor.withLock { $0.allocationCount }
    }

    /// How many allocations the pool currently owns, lent or free.
    public var bufferCount: Int {
        monitor.withLock { $0.total }
    }

    /// How many of the pool's buffers currently exist outside the pool.
    public var buffersInUseCount: Int {
        monitor.withLock { $0.inUse }
    }

    /// Frees every allocation that is not in use (after a resolution change, a seek, or when
    /// memory is tight). Buffers in use are recycled normally once given back. Later requests
    /// allocate again as needed, regardless of the minimum count.
    public func flush() {
        let dropped: [PooledPixelMemory] = monitor.withLock { state in
            defer { state.free.removeAll() }
            return state.free
        }
        withExtendedLifetime(dropped) {}
    }

    /// For a pool nobody will take buffers from again (its decoder changed format): frees the
    /// idle allocations now and every lent one as soon as it is given back.
    public func invalidate() {
        let dropped: [PooledPixelMemory] = monitor.withLock { state in
            state.isInvalidated = true
            defer { state.free.removeAll() }
            return state.free
        }
        withExtendedLifetime(dropped) {}
    }
}

/// The consumer of one producer's pictures, as the producer's pools see it: how many buffers it
/// keeps at once (GStreamer's `min_buffers` from the allocation query: a sink's last sample, an
/// encoder's lookahead), which raises every pool's maximum, and whether it is flushing, which
/// stops every wait for a buffer (`gst_buffer_pool_set_flushing` over several pools).
///
/// An element makes one, gives it to its decoder (``DestinationImageBufferAttributes``), sets
/// the held count from each allocation query and the flushing state on FLUSH_START/FLUSH_STOP and
/// on the way down to READY, so that a decode waiting for downstream never outlives a seek or a
/// state change.
///
/// A consumer may also keep pictures beyond what it announced (an application holding its last
/// K samples; GstVideoDecoder in reverse playback, which holds a GOP's pictures before pushing
/// them): a pool that waited for it in vain (``PixelBufferPool``'s starvation timeout) reports
/// it with ``noteStarvation(atBound:)``, and the bound doubles, while growth is permitted
/// (``setGrowthPermitted(_:)``: an element in PAUSED is not consuming at all, and its pools wait).
public final class PixelBufferConsumer: Sendable {
    private struct WeakPool {
        weak var pool: PixelBufferPool?
    }

    private struct State {
        var heldBufferCount: Int
        /// Buffers added to the bound after waits in vain (see the type's description).
        var grownBufferCount = 0
        var isFlushing = false
        var growthPermitted = true
        var keepsPictures = false
        var pixelFormatPreferences: [PixelFormat]?
        var pools: [WeakPool] = []
    }

    private let state: Mutex<State>

    public init(heldBufferCount: Int = 0) {
        state = Mutex(State(heldBufferCount: max(0, heldBufferCount)))
    }

    /// Buffers the consumer holds at once, added to every pool's maximum: what it announced and
    /// what it was found to keep.
    public var heldBufferCount: Int {
        state.withLock { $0.heldBufferCount.addingReportingOverflow($0.grownBufferCount).partialValue }
    }

    /// How many buffers waits in vain added to the bound (0 until a pool starved).
    public var grownBufferCount: Int { state.withLock { $0.grownBufferCount } }

    /// Whether waits for buffers stop (and new requests fail) with ``PixelBufferPoolError/flushing``.
    public var isFlushing: Bool { state.withLock { $0.isFlushing } }

    /// Whether the consumer is known to keep pictures until more arrive: a pool at its bound
    /// then grows without waiting.
    public var keepsPictures: Bool { state.withLock { $0.keepsPictures } }

    public func setHeldBufferCount(_ count: Int) {
        // A larger maximum may let a waiter allocate.
        updateAndWake { $0.heldBufferCount = max(0, count) }
    }

    /// Starts (true) or ends (false) flushing. Starting wakes every waiter of every pool, which
    /// then throws ``PixelBufferPoolError/flushing``.
    public func setFlushing(_ flushing: Bool) {
        updateAndWake { $0.isFlushing = flushing }
    }

    /// Whether a wait in vain may raise the bound: false while the consumer is known not to be
    /// consuming (a paused pipeline), when waiting is right however long it lasts.
    public func setGrowthPermitted(_ permitted: Bool) {
        updateAndWake { $0.growthPermitted = permitted }
    }

    /// Tells the pools that the consumer keeps pictures until more arrive (reverse playback):
    /// at the bound they grow at once instead of waiting.
    public func setKeepsPictures(_ keeps: Bool) {
        updateAndWake { $0.keepsPictures = keeps }
    }

    /// The pixel formats the consumer takes now, most preferred first, when they changed after
    /// the decoder was made (a GStreamer downstream that renegotiates while playing); nil for
    /// the ones the decoder was made with. Decoders read it for every picture they output.
    public var pixelFormatPreferences: [PixelFormat]? { state.withLock { $0.pixelFormatPreferences } }

    public func setPixelFormatPreferences(_ formats: [PixelFormat]?) {
        state.withLock { $0.pixelFormatPreferences = formats }
    }

    /// Forgets the growth waits in vain caused (a new stream, a new consumer).
    public func resetGrowth() {
        state.withLock { $0.grownBufferCount = 0 }
    }

    /// A pool waited in vain at `bound` buffers: the consumer keeps what it has. Where growth is
    /// permitted, the bound doubles (at least one more buffer), so that a consumer keeping K
    /// pictures is met after log2(K) waits.
    public func noteStarvation(atBound bound: Int) {
        updateAndWake { state in
            // A consumer that keeps pictures may need them to preroll at all (reverse playback
            // pushes nothing before its GOP is complete), so it grows in PAUSED too.
            guard state.growthPermitted || state.keepsPictures, !state.isFlushing else { return }
            state.grownBufferCount = state.grownBufferCount.addingReportingOverflow(max(1, bound)).partialValue
        }
    }

    /// Changes the state, then wakes every pool's waiters to re-check it. Woken outside this
    /// lock: a pool's waiter reads this object while holding the pool's lock (order: pool, then
    /// consumer).
    private func updateAndWake(_ change: (inout State) -> Void) {
        let pools = state.withLock { state in
            change(&state)
            return state.pools
        }
        for entry in pools { entry.pool?.wakeWaiters() }
    }

    func register(_ pool: PixelBufferPool) {
        state.withLock { state in
            state.pools.removeAll { $0.pool == nil }
            state.pools.append(WeakPool(pool: pool))
        }
    }
}
