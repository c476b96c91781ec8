import Glibc
import SwiftVTTestSupport
import Testing

@testable import MediaCore

extension MediaCoreTests {
    @Suite struct PixelBufferPoolTests {
        func makePool(minimum: Int = 0, maximum: Int? = nil) throws -> PixelBufferPool {
            try PixelBufferPool(attributes: .init(
                width: 320, height: 240, pixelFormat: .nv12VideoRange, rowAlignment: 64,
                minimumBufferCount: minimum, maximumBufferCount: maximum,
                attachments: PixelBufferAttachments(yCbCrMatrix: .bt709)))
        }

        @Test func heapProbeSeesAllocations() throws {
            let before = try #require(heapBytesInUse())
            // 64 KB: below glibc's mmap threshold (128 KB), so it comes from the heap proper,
            // which is what uordblks counts.
            let block = malloc(64 * 1024)
            defer { free(block) }
            let after = try #require(heapBytesInUse())
            #expect(after - before >= 64 * 1024)
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
            let identities = Set(held.compactMap { $0.map(ObjectIdentifier.init) })

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
            #expect(Set(held.compactMap { $0.map(ObjectIdentifier.init) }).isSubset(of: identities))
        }

        @Test func recycledBuffersGetFreshAttachments() throws {
            let pool = try makePool()
            var buffer: PixelBuffer? = try pool.makePixelBuffer()
            let identity = buffer.map(ObjectIdentifier.init)
            buffer?.updateAttachments { $0.yCbCrMatrix = .smpte170M; $0.fullRange = true }
            buffer = nil
            let again = try pool.makePixelBuffer()
            #expect(ObjectIdentifier(again) == identity)
            #expect(again.attachments == PixelBufferAttachments(yCbCrMatrix: .bt709))
            #expect(again.width == 320 && again.height == 240 && again.pixelFormat == .nv12VideoRange)
        }

        @Test func maximumCountIsEnforced() throws {
            let pool = try makePool(maximum: 2)
            let first = try pool.makePixelBuffer()
            var second: PixelBuffer? = try pool.makePixelBuffer()
            #expect(first !== second)
            #expect(pool.buffersInUseCount == 2)
            #expect(throws: PixelBufferPoolError.maximumBufferCountReached(2)) { try pool.makePixelBuffer() }
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
            let next = try pool.makePixelBuffer()  // the in-use one cannot be handed out
            #expect(next !== inUse && pool.allocationCount == 5)
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
            #expect(pool.allocationCount <= taskCount)
            #expect(pool.buffersInUseCount == 0)
        }
    }
}
