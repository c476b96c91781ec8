import Glibc
import Synchronization
import Testing

@testable import MediaCore

/// Counts calls to a release callback from any thread.
final class ReleaseCounter: Sendable {
    private let calls = Atomic<Int>(0)
    var count: Int { calls.load(ordering: .sequentiallyConsistent) }
    func record() { calls.add(1, ordering: .sequentiallyConsistent) }
}

extension MediaCoreTests {
    @Suite struct BlockBufferTests {
        /// Three blocks: [0..<4], [4..<10], [10..<16] holding bytes 0...15.
        func threeBlocks() -> BlockBuffer {
            var buffer = BlockBuffer([0, 1, 2, 3])
            buffer.append(BlockBuffer([4, 5, 6, 7, 8, 9]))
            buffer.append(BlockBuffer([10, 11, 12, 13, 14, 15]))
            return buffer
        }

        @Test func basics() throws {
            let empty = BlockBuffer()
            #expect(empty.isEmpty && empty.isContiguous && empty.segmentCount == 0)
            #expect(BlockBuffer([]).segmentCount == 0)
            let buffer = threeBlocks()
            #expect(buffer.count == 16 && buffer.segmentCount == 3 && !buffer.isContiguous)
            #expect(buffer.copyToArray() == Array(0...15))
            #expect(try buffer[0] == 0)
            #expect(try buffer[4] == 4)
            #expect(try buffer[15] == 15)
            #expect(throws: BlockBufferError.offsetOutOfRange(offset: 16, count: 16)) { try buffer[16] }
            #expect(throws: BlockBufferError.offsetOutOfRange(offset: -1, count: 16)) { try buffer[-1] }
        }

        @Test func arrayInitializerDoesNotCopy() {
            let bytes: [UInt8] = Array(repeating: 7, count: 4096)
            let arrayAddress = bytes.withUnsafeBytes { UInt(bitPattern: $0.baseAddress) }
            let buffer = BlockBuffer(bytes)
            let bufferAddress = buffer.withContiguousBytes { UInt(bitPattern: $0.baseAddress) }
            #expect(arrayAddress == bufferAddress)
        }

        @Test func slicing() throws {
            let buffer = threeBlocks()
            let middle = try buffer.slice(2..<12)
            #expect(middle.copyToArray() == Array(2..<12))
            #expect(middle.segmentCount == 3)
            let inner = try middle.slice(3..<6) // bytes 5, 6, 7: inside the second block
            #expect(inner.copyToArray() == [5, 6, 7] && inner.isContiguous)
            #expect(try buffer.slice(0..<0).isEmpty)
            #expect(try buffer.slice(16..<16).isEmpty)
            #expect(try buffer.slice(0..<16).copyToArray() == Array(0...15))
            #expect(throws: BlockBufferError.rangeOutOfBounds(lowerBound: 10, upperBound: 17, count: 16)) {
                try buffer.slice(10..<17)
            }
            #expect(throws: BlockBufferError.rangeOutOfBounds(lowerBound: -1, upperBound: 2, count: 16)) {
                try buffer.slice(-1..<2)
            }
        }

        @Test func slicesShareMemoryAndAppendMergesAdjacentPieces() throws {
            let whole = BlockBuffer(Array(0..<100))
            let base = whole.withContiguousBytes { UInt(bitPattern: $0.baseAddress) }
            let slice = try whole.slice(10..<20)
            #expect(slice.withContiguousBytes { UInt(bitPattern: $0.baseAddress) } == base + 10)
            var rejoined = try whole.slice(0..<30)
            rejoined.append(try whole.slice(30..<100))
            #expect(rejoined.isContiguous && rejoined.count == 100)
            #expect(rejoined.withContiguousBytes { UInt(bitPattern: $0.baseAddress) } == base)
            var gap = try whole.slice(0..<10)
            gap.append(try whole.slice(20..<30))
            #expect(gap.segmentCount == 2 && gap.copyToArray() == Array(0..<10) + Array(20..<30))
        }

        @Test func contiguousAccessAndSegments() throws {
            let buffer = threeBlocks()
            let sum = buffer.withContiguousBytes { bytes in bytes.reduce(0) { $0 + Int($1) } }
            #expect(sum == 120)
            var segments: [[UInt8]] = []
            buffer.forEachSegment { segments.append(Array($0)) }
            #expect(segments == [[0, 1, 2, 3], [4, 5, 6, 7, 8, 9], [10, 11, 12, 13, 14, 15]])
            BlockBuffer().withContiguousBytes { #expect($0.isEmpty) }

            struct Stop: Error {}
            var visited = 0
            #expect(throws: Stop.self) {
                try buffer.forEachSegment { (_) throws(Stop) in
                    visited += 1
                    throw Stop()
                }
            }
            #expect(visited == 1)
        }

        @Test func copyBytes() throws {
            let buffer = threeBlocks()
            var destination = [UInt8](repeating: 0xFF, count: 12)
            try destination.withUnsafeMutableBytes { try buffer.copyBytes(in: 3..<13, to: $0) }
            #expect(destination == Array(3..<13) + [0xFF, 0xFF])
            try destination.withUnsafeMutableBytes { destination in
                #expect(throws: BlockBufferError.destinationTooSmall(required: 13, available: 12)) {
                    try buffer.copyBytes(in: 0..<13, to: destination)
                }
                #expect(throws: BlockBufferError.rangeOutOfBounds(lowerBound: 8, upperBound: 20, count: 16)) {
                    try buffer.copyBytes(in: 8..<20, to: destination)
                }
                try buffer.copyBytes(in: 5..<5, to: destination)
            }
        }

        @Test func externalMemoryIsReleasedOnceAfterTheLastSliceDies() throws {
            let counter = ReleaseCounter()
            // The release callback is @Sendable; the test owns this memory and frees it only there.
            nonisolated(unsafe) let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 16)
            for index in 0..<64 { memory[index] = UInt8(index) }
            var slice: BlockBuffer?
            var combined: BlockBuffer?
            do {
                let external = BlockBuffer(externalMemory: UnsafeRawBufferPointer(memory)) {
                    counter.record()
                    memory.deallocate()
                }
                slice = try external.slice(8..<16)
                var joined = BlockBuffer([200])
                joined.append(try external.slice(60..<64))
                combined = joined
                #expect(external.withContiguousBytes { $0.baseAddress } == UnsafeRawPointer(memory.baseAddress))
            }
            #expect(counter.count == 0)
            #expect(slice?.copyToArray() == Array(8..<16))
            slice = nil
            #expect(counter.count == 0)
            #expect(combined?.copyToArray() == [200, 60, 61, 62, 63])
            combined = nil
            #expect(counter.count == 1)

            let emptyCounter = ReleaseCounter()
            _ = BlockBuffer(externalMemory: UnsafeRawBufferPointer(start: nil, count: 0)) { emptyCounter.record() }
            #expect(emptyCounter.count == 1)
        }

        @Test func inPlaceMutationOnlyWhenUnique() throws {
            var unique = BlockBuffer([0, 0, 0, 1, 0xAA])
            let before = unique.withContiguousBytes { UInt(bitPattern: $0.baseAddress) }
            let written: Void? = unique.withUnsafeMutableBytesInPlace { bytes in
                bytes.storeBytes(of: UInt32(1).bigEndian, toByteOffset: 0, as: UInt32.self)
            }
            #expect(written != nil)
            #expect(unique.copyToArray() == [0, 0, 0, 1, 0xAA])
            #expect(unique.withContiguousBytes { UInt(bitPattern: $0.baseAddress) } == before)

            var shared = BlockBuffer([1, 2, 3])
            let other = shared
            #expect(shared.withUnsafeMutableBytesInPlace { $0[0] = 9 } == nil)
            shared.withUnsafeMutableBytes { $0[0] = 9 } // copies: `other` must not change
            #expect(shared.copyToArray() == [9, 2, 3] && other.copyToArray() == [1, 2, 3])

            let counter = ReleaseCounter()
            let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: 4, alignment: 4)
            defer { memory.deallocate() } // outlives the buffer, so it can be inspected afterwards
            memory.initializeMemory(as: UInt8.self, repeating: 5)
            var external = BlockBuffer(externalMemory: UnsafeRawBufferPointer(memory)) { counter.record() }
            #expect(external.withUnsafeMutableBytesInPlace { $0[0] = 1 } == nil)
            external.withUnsafeMutableBytes { $0[0] = 1 }
            #expect(external.copyToArray() == [1, 5, 5, 5] && memory[0] == 5)
            #expect(counter.count == 1) // the copy dropped the last reference to external memory

            var fragmented = threeBlocks()
            #expect(fragmented.withUnsafeMutableBytesInPlace { _ in } == nil)
            fragmented.withUnsafeMutableBytes { $0[15] = 99 }
            #expect(fragmented.isContiguous)
            #expect(try fragmented[15] == 99)
        }

        @Test func replaceBytesAcrossSegmentsIsCopyOnWrite() throws {
            var buffer = threeBlocks()
            let snapshot = buffer
            try buffer.replaceBytes(at: 2, with: [20, 30, 40, 50, 60])
            #expect(buffer.copyToArray() == [0, 1, 20, 30, 40, 50, 60] + Array(7...15))
            #expect(snapshot.copyToArray() == Array(0...15))
            #expect(throws: BlockBufferError.rangeOutOfBounds(lowerBound: 14, upperBound: 17, count: 16)) {
                try buffer.replaceBytes(at: 14, with: [1, 2, 3])
            }
            #expect(throws: BlockBufferError.rangeOutOfBounds(lowerBound: -1, upperBound: 0, count: 16)) {
                try buffer.replaceBytes(at: -1, with: [1])
            }
            var unique = BlockBuffer([1, 2, 3, 4])
            let address = unique.withContiguousBytes { UInt(bitPattern: $0.baseAddress) }
            try unique.replaceBytes(at: 1, with: [7, 7])
            #expect(unique.copyToArray() == [1, 7, 7, 4])
            #expect(unique.withContiguousBytes { UInt(bitPattern: $0.baseAddress) } == address)
        }
    }
}
