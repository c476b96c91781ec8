import Glibc
import SwiftVTTestSupport
import Synchronization
import Testing

@testable import MediaCore

extension MediaCoreTests {
    @Suite struct PixelBufferPoolTests {
        func makePool(minimum: Int = 0, maximum: Int? = nil, consumer: PixelBufferConsumer? = nil) throws
            -> PixelBufferPool
        {
            try PixelBufferPool(
                attributes: .init(
                    width: 320, height: 240, pixelFormat: .nv12VideoRange, rowAlignment: 64,
                    minimumBufferCount: minimum, maximumBufferCount: maximum,
                    attachments: PixelBufferAttachments(yCbCrMatrix: .bt709)), consumer: consumer)
        }

        /// The pixel memory a buffer lends (buffers are fresh objects; their memory is recycled).
        func memory(of buffer: PixelBuffer?) -> UnsafeMutableRawPointer? { buffer?.planes[0].baseAddress }

        @Test func heapProbeSeesAllocations() throws {
            let before = try #require(heapBytesInUse())
            // 64 KB: below glibc's mmap threshold (128 KB), so it comes from the heap proper,
            // which is what uordblks counts.
            let block = malloc(64 * 1024)
            defer { free(block) }
            let after = try #require(heapBytesInUse())
            // Less 4 KB: another thread of the test process (a GStreamer thread left by an
            // earlier suite) may free a few bytes between the two readings (seen: 176).
            #expect(after - before >= 60 * 1024)
        }

        @Test func recyclesWithoutAllocating() throws {
            let pool = try makePool(minimum: 2)
            #expect(pool.allocationCount == 2 && pool.bufferCount == 2)

            // Warm-up: a decoder holding up to three pictures at a time.
            func cycle(_ held: inout [PixelBuffer?], _ index: Int) throws {
                held[index % held.count] = nil
                held[index % held.count] = try pool.makePixelBuffer()
            }
            var held: [PixelBuffer?] = [nil, nil, nil]
            for index in 0..<10 { try cycle(&held, index) }
            let allocationsAfterWarmUp = pool.allocationCount
            #expect(allocationsAfterWarmUp == 3)
            let memories = Set(held.compactMap { memory(of: $0) })

            // Several attempts: the heap is process-wide, and a test in another target running
            // in parallel could allocate during one window. A leak of even one small block per
            // cycle would add 10,000 x at least 32 bytes = 320 KB in *every* attempt, so the
            // 16 KB tolerance (for such unrelated noise and malloc bookkeeping) cannot hide it.
            let growths = try heapGrowths(tolerance: 16 * 1024) {
                for index in 0..<10_000 { try cycle(&held, index) }
            }
            #expect(growths.contains { $0 <= 16 * 1024 }, "heap growth per 10,000 cycles: \(growths)")
            #expect(pool.allocationCount == allocationsAfterWarmUp)
            #expect(pool.bufferCount == 3)
            #expect(Set(held.compactMap { memory(of: $0) }).isSubset(of: memories))
        }

        @Test func recycledBuffersGetFreshAttachments() throws {
            let pool = try makePool()
            var buffer: PixelBuffer? = try pool.makePixelBuffer()
            let lent = memory(of: buffer)
            buffer?.updateAttachments {
                $0.yCbCrMatrix = .smpte170M
                $0.fullRange = true
            }
            buffer = nil
            let again = try pool.makePixelBuffer()
            #expect(memory(of: again) == lent && again.ownsMemory)
            #expect(again.attachments == PixelBufferAttachments(yCbCrMatrix: .bt709))
            #expect(again.width == 320 && again.height == 240 && again.pixelFormat == .nv12VideoRange)
        }

        @Test func maximumCountIsEnforced() throws {
            let pool = try makePool(maximum: 2)
            let first = try pool.makePixelBuffer()
            var second: PixelBuffer? = try pool.makePixelBuffer()
            #expect(memory(of: first) != memory(of: second))
            #expect(pool.buffersInUseCount == 2)
            #expect(throws: PixelBufferPoolError.maximumBufferCountReached(2)) {
                try pool.makePixelBuffer(waitIfExhausted: false)
            }
            second = nil
            #expect(pool.buffersInUseCount == 1)
            _ = try pool.makePixelBuffer()
            #expect(pool.allocationCount == 2)
        }

        @Test func flushDropsOnlyFreeBuffers() throws {
            let pool = try makePool(minimum: 4)
            let inUse = try pool.makePixelBuffer()
            #expect(pool.bufferCount == 4)
            pool.flush()
            #expect(pool.bufferCount == 1)
            let next = try pool.makePixelBuffer() // the in-use one cannot be handed out
            #expect(memory(of: next) != memory(of: inUse) && pool.allocationCount == 5)
        }

        // MARK: The maximum: waiting, waking, flushing (back pressure)

        /// A thread blocked at the maximum: `take` runs makePixelBuffer on it and reports the
        /// outcome; `finished` says whether it has returned yet.
        final class BlockedTaker: @unchecked Sendable {
            // `outcome` is written by the taker thread and read after `done` is seen set; the
            // Atomic's ordering makes the write visible.
            private let done = Atomic<Bool>(false)
            private var outcome: Result<PixelBuffer, PixelBufferPoolError>?
            private var thread = pthread_t()

            init(_ pool: PixelBufferPool) {
                let box = Unmanaged.passRetained(
                    Box { [self] in
                        self.outcome = Result { () throws(PixelBufferPoolError) in try pool.makePixelBuffer() }
                        self.done.store(true, ordering: .releasing)
                    })
                pthread_create(
                    &thread, nil,
                    { argument in
                        guard let argument else { return nil }
                        Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
                        return nil
                    }, box.toOpaque())
            }

            var finished: Bool { done.load(ordering: .acquiring) }

            /// Joins the thread and returns what makePixelBuffer gave it.
            func result() -> Result<PixelBuffer, PixelBufferPoolError>? {
                pthread_join(thread, nil)
                return outcome
            }

            final class Box {
                let body: () -> Void
                init(_ body: @escaping () -> Void) { self.body = body }
            }
        }

        /// Gives a blocked thread time to (wrongly) return: 100 ms is far longer than a lock
        /// hand-over, so a taker that did not block would have finished.
        func settle() { usleep(100_000) }

        @Test func atTheMaximumATakerWaitsForABufferGivenBackOnAnotherThread() throws {
            let pool = try makePool(maximum: 2)
            let first = try pool.makePixelBuffer()
            var second: PixelBuffer? = try pool.makePixelBuffer()
            let secondMemory = memory(of: second)
            let taker = BlockedTaker(pool)
            settle()
            #expect(!taker.finished, "makePixelBuffer returned at the maximum instead of waiting")
            #expect(pool.bufferCount == 2)
            // The consumer (this thread, as a GStreamer sink's would) drops its picture.
            second = nil
            let taken = try #require(try taker.result()?.get())
            #expect(memory(of: taken) == secondMemory, "the waiter got the buffer given back")
            #expect(pool.allocationCount == 2 && pool.buffersInUseCount == 2)
            withExtendedLifetime(first) {}
        }

        @Test func flushingWakesAWaiterAndRefusesUntilItEnds() throws {
            let consumer = PixelBufferConsumer()
            // A paused consumer: a wait in vain must not grow the pool while this test is slow.
            consumer.setGrowthPermitted(false)
            let pool = try makePool(maximum: 1, consumer: consumer)
            let held = try pool.makePixelBuffer()
            let taker = BlockedTaker(pool)
            settle()
            #expect(!taker.finished)
            // A seek: the consumer flushes without giving `held` back.
            consumer.setFlushing(true)
            let outcome = taker.result()
            #expect(throws: PixelBufferPoolError.flushing) { try outcome?.get() }
            #expect(throws: PixelBufferPoolError.flushing) { try pool.makePixelBuffer() }
            consumer.setFlushing(false)
            #expect(throws: PixelBufferPoolError.maximumBufferCountReached(1)) {
                try pool.makePixelBuffer(waitIfExhausted: false)
            }
            withExtendedLifetime(held) {}
        }

        @Test func theConsumersHeldCountRaisesTheMaximumAndWakesWaiters() throws {
            let consumer = PixelBufferConsumer(heldBufferCount: 1)
            consumer.setGrowthPermitted(false)
            let pool = try makePool(maximum: 1, consumer: consumer)
            #expect(pool.effectiveMaximumBufferCount == 2)
            let held = [try pool.makePixelBuffer(), try pool.makePixelBuffer()]
            let taker = BlockedTaker(pool)
            settle()
            #expect(!taker.finished)
            // Downstream's allocation query now says it keeps two buffers.
            consumer.setHeldBufferCount(2)
            let taken = try #require(try taker.result()?.get())
            #expect(pool.bufferCount == 3 && pool.allocationCount == 3)
            withExtendedLifetime((held, taken)) {}
        }

        // MARK: A consumer that keeps its pictures (issue 32, rows 1-2)

        @Test func aConsumerThatGivesNothingBackIsMetByDoublingTheBound() throws {
            let consumer = PixelBufferConsumer()
            let pool = try makePool(maximum: 2, consumer: consumer)
            let held = [try pool.makePixelBuffer(), try pool.makePixelBuffer()]
            let start = monotonicSeconds()
            // Nothing comes back: after the starvation timeout the bound doubles (2 -> 4).
            let third = try pool.makePixelBuffer()
            let waited = monotonicSeconds() - start
            #expect(
                waited >= Double(PixelBufferPool.minimumStarvationTimeoutNanoseconds) / 1e9 * 0.9,
                "the pool grew after \(waited) s, before the starvation timeout")
            #expect(consumer.grownBufferCount == 2 && pool.effectiveMaximumBufferCount == 4)
            let fourth = try pool.makePixelBuffer()
            #expect(throws: PixelBufferPoolError.maximumBufferCountReached(4)) {
                try pool.makePixelBuffer(waitIfExhausted: false)
            }
            withExtendedLifetime((held, third, fourth)) {}
        }

        @Test func aPausedConsumerIsWaitedForBeyondTheTimeoutUntilItFlushes() throws {
            let consumer = PixelBufferConsumer()
            consumer.setGrowthPermitted(false)
            let pool = try makePool(maximum: 1, consumer: consumer)
            let held = try pool.makePixelBuffer()
            let taker = BlockedTaker(pool)
            usleep(UInt32(PixelBufferPool.minimumStarvationTimeoutNanoseconds / 1000 * 2))
            #expect(!taker.finished, "a paused consumer's pool grew")
            #expect(consumer.grownBufferCount == 0)
            consumer.setFlushing(true)
            #expect(throws: PixelBufferPoolError.flushing) { try taker.result()?.get() }
            withExtendedLifetime(held) {}
        }

        @Test func aConsumerKnownToKeepPicturesGrowsThePoolWithoutWaiting() throws {
            let consumer = PixelBufferConsumer()
            consumer.setGrowthPermitted(false)
            // Reverse playback: the element itself keeps a GOP's pictures before pushing them.
            consumer.setKeepsPictures(true)
            let pool = try makePool(maximum: 2, consumer: consumer)
            let start = monotonicSeconds()
            var held: [PixelBuffer] = []
            for _ in 0..<30 { held.append(try pool.makePixelBuffer()) }
            #expect(monotonicSeconds() - start < 0.2, "growing for a consumer that keeps pictures waited")
            #expect(pool.bufferCount == 30)
        }

        @Test func idleBuffersAreTrimmedWhenTheHighWaterMarkFalls() throws {
            let pool = try makePool(maximum: 16)
            // A burst: a consumer holding ten pictures.
            var burst: [PixelBuffer] = []
            for _ in 0..<10 { burst.append(try pool.makePixelBuffer()) }
            burst.removeAll()
            #expect(pool.bufferCount == 10)
            // Then steady state with two in use: after a full window the other eight are freed.
            var held: [PixelBuffer?] = [nil, nil]
            for index in 0..<(2 * PixelBufferPool.trimWindow) {
                held[index % 2] = nil
                held[index % 2] = try pool.makePixelBuffer()
            }
            #expect(pool.bufferCount == 2, "idle buffers after the burst: \(pool.bufferCount)")
            #expect(pool.allocationCount == 10)
        }

        @Test func anInvalidatedPoolFreesBuffersAsTheyComeBack() throws {
            let pool = try makePool(minimum: 3)
            var inUse: PixelBuffer? = try pool.makePixelBuffer()
            pool.invalidate()
            #expect(pool.bufferCount == 1)
            inUse = nil
            #expect(pool.bufferCount == 0 && inUse == nil)
        }

        @Test func invalidAttributes() {
            #expect(throws: PixelBufferPoolError.invalidBufferAttributes(.invalidDimensions(width: 0, height: 240))) {
                try PixelBufferPool(attributes: .init(width: 0, height: 240, pixelFormat: .i420))
            }
            #expect(throws: PixelBufferPoolError.invalidBufferCounts(minimum: 3, maximum: 2)) {
                try makePool(minimum: 3, maximum: 2)
            }
            #expect(throws: PixelBufferPoolError.invalidBufferCounts(minimum: -1, maximum: nil)) {
                try makePool(minimum: -1)
            }
            #expect(throws: PixelBufferPoolError.invalidBufferCounts(minimum: 0, maximum: 0)) {
                try makePool(maximum: 0)
            }
        }

        @Test func concurrentUse() async throws {
            let taskCount = 8
            let pool = try makePool(maximum: taskCount)
            let failures = await withTaskGroup(of: Int.self) { group in
                for task in 0..<taskCount {
                    group.addTask {
                        var failures = 0
                        for iteration in 0..<2000 {
                            guard let buffer = try? pool.makePixelBuffer() else {
                                failures += 1
                                continue
                            }
                            // While this task holds the buffer nobody else may: stamp it and
                            // check the stamp survives a yield.
                            let stamp = UInt32(task << 16 | iteration & 0xFFFF)
                            let luma = buffer.planes[0].baseAddress
                            luma.storeBytes(of: stamp, as: UInt32.self)
                            if iteration % 64 == 0 { await Task.yield() }
                            if luma.load(as: UInt32.self) != stamp { failures += 1 }
                        }
                        return failures
                    }
                }
                return await group.reduce(0, +)
            }
            #expect(failures == 0)
            // Never more than the maximum at once. (allocationCount may exceed it: a window in
            // which fewer tasks held buffers at once trims the idle ones, and later ones allocate
            // again.)
            #expect(pool.bufferCount <= taskCount)
            #expect(pool.buffersInUseCount == 0)
        }
    }
}

private func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
