/// Why a ``BlockBuffer`` access failed.
public enum BlockBufferError: Error, Hashable, Sendable {
    /// A single-byte access outside `0..<count`.
    case offsetOutOfRange(offset: Int, count: Int)
    /// A range that is not inside `0...count`.
    case rangeOutOfBounds(lowerBound: Int, upperBound: Int, count: Int)
    /// The destination of ``BlockBuffer/copyBytes(in:to:)`` is shorter than the range.
    case destinationTooSmall(required: Int, available: Int)
}

/// One allocation that backs (part of) one or more ``BlockBuffer``s.
///
/// A class because slices and appended buffers share it by reference, and because its `deinit`
/// is the natural "last reference went away" moment at which to run an external release
/// callback exactly once.
///
/// `@unchecked Sendable` invariant:
/// - external memory is never written through a block; its provider promised it stays valid and
///   unchanged until `release` runs;
/// - `ownedBytes` is only mutated by a ``BlockBuffer`` that has exclusive (`inout`) access to
///   itself and has just checked, with `isKnownUniquelyReferenced`, that it holds the only
///   reference to the block - so no other thread can be reading it.
final class MemoryBlock: @unchecked Sendable {
    /// Swift-owned bytes; empty for external blocks.
    var ownedBytes: [UInt8]
    private let externalBytes: UnsafeRawBufferPointer?
    private let release: (@Sendable () -> Void)?

    init(owning bytes: [UInt8]) {
        ownedBytes = bytes
        externalBytes = nil
        release = nil
    }

    init(external bytes: UnsafeRawBufferPointer, release: @escaping @Sendable () -> Void) {
        ownedBytes = []
        externalBytes = bytes
        self.release = release
    }

    deinit { release?() }

    var isExternal: Bool { externalBytes != nil }

    /// Calls `body` with the whole block.
    func withBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        if let externalBytes { return try body(externalBytes) }
        return try ownedBytes.withUnsafeBytesTyped(body)
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` that keeps the closure's typed error (the stdlib version is `rethrows`,
    /// which erases it to `any Error`).
    func withUnsafeBytesTyped<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E> = withUnsafeBytes { bytes in Result { () throws(E) -> R in try body(bytes) } }
        return try result.get()
    }

    mutating func withUnsafeMutableBytesTyped<R, E: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        let result: Result<R, E> = withUnsafeMutableBytes { bytes in
            Result { () throws(E) -> R in try body(bytes) }
        }
        return try result.get()
    }
}

/// A sequence of bytes stored in one or more memory blocks: CoreMedia's `CMBlockBuffer`.
///
/// This is how compressed media moves through SwiftVT without being copied:
/// - a block is either Swift-owned (`[UInt8]`) or *external* memory, such as a mapped
///   `GstMemory` or an encoder's output buffer, released through a callback when the last
///   ``BlockBuffer`` referencing it goes away;
/// - ``slice(_:)`` and ``append(_:)`` only rearrange references to blocks, never bytes;
/// - reads go through ``forEachSegment(_:)`` (zero-copy, block by block) or
///   ``withContiguousBytes(_:)`` (zero-copy when the buffer is one block).
///
/// It is a value type: a copy is a new list of references to the same immutable-by-default
/// blocks, and mutation (``replaceBytes(at:with:)``, ``withUnsafeMutableBytes(_:)``) writes in
/// place only into Swift-owned blocks nobody else references, copying otherwise (copy-on-write).
public struct BlockBuffer: Sendable {
    /// A window `offset..<offset + count` into a block.
    struct Segment {
        var block: MemoryBlock
        var offset: Int
        var count: Int
    }

    /// The segments in order; never contains an empty segment, so an empty buffer has none and a
    /// contiguous one has exactly one.
    private var segments: [Segment]
    /// Total number of bytes.
    public private(set) var count: Int

    /// An empty buffer.
    public init() {
        segments = []
        count = 0
    }

    /// A buffer over `bytes`, which it takes over without copying (the array's storage is
    /// shared, not duplicated; if the caller later mutates its own copy of the array, `Array`'s
    /// copy-on-write separates the two).
    public init(_ bytes: [UInt8]) {
        count = bytes.count
        segments = bytes.isEmpty ? [] : [Segment(block: MemoryBlock(owning: bytes), offset: 0, count: bytes.count)]
    }

    /// A buffer over memory SwiftVT does not own, e.g. a mapped GStreamer buffer, without copying.
    ///
    /// `release` is called exactly once, on whichever thread drops the last ``BlockBuffer``
    /// (including slices and buffers this one was appended to) referencing the memory. The memory
    /// must stay valid and unmodified until then. For empty memory nothing can reference it, so
    /// `release` runs before this initializer returns.
    public init(externalMemory memory: UnsafeRawBufferPointer, release: @escaping @Sendable () -> Void) {
        let block = MemoryBlock(external: memory, release: release)
        count = memory.count
        segments = memory.isEmpty ? [] : [Segment(block: block, offset: 0, count: memory.count)]
    }

    public var isEmpty: Bool { count == 0 }

    /// Whether the bytes are in a single block (or there are none), i.e. whether
    /// ``withContiguousBytes(_:)`` is free.
    public var isContiguous: Bool { segments.count <= 1 }

    /// Number of separate memory regions the bytes are spread over.
    public var segmentCount: Int { segments.count }

    // MARK: Building

    /// The bytes in `range`, sharing this buffer's blocks (no bytes are copied).
    ///
    /// - Throws: ``BlockBufferError/rangeOutOfBounds(lowerBound:upperBound:count:)``.
    public func slice(_ range: Range<Int>) throws(BlockBufferError) -> BlockBuffer {
        try checkRange(range)
        var result = BlockBuffer()
        guard !range.isEmpty else { return result }
        var segmentStart = 0
        for segment in segments {
            let segmentEnd = segmentStart + segment.count
            defer { segmentStart = segmentEnd }
            let lower = max(range.lowerBound, segmentStart)
            let upper = min(range.upperBound, segmentEnd)
            guard lower < upper else {
                if segmentStart >= range.upperBound { break }
                continue
            }
            result.appendSegment(
                Segment(block: segment.block, offset: segment.offset + lower - segmentStart, count: upper - lower))
        }
        return result
    }

    /// Appends the bytes of `other` by referencing its blocks (no bytes are copied). A segment
    /// that directly continues the previous one in the same block is merged with it, so slicing
    /// a buffer and appending the pieces back in order yields a contiguous buffer again.
    public mutating func append(_ other: BlockBuffer) {
        segments.reserveCapacity(segments.count + other.segments.count)
        for segment in other.segments { appendSegment(segment) }
    }

    private mutating func appendSegment(_ segment: Segment) {
        count += segment.count
        if let last = segments.last, last.block === segment.block, last.offset + last.count == segment.offset {
            segments[segments.count - 1].count += segment.count
        } else {
            segments.append(segment)
        }
    }

    // MARK: Reading

    /// Calls `body` once per memory region, in order, with that region's bytes; nothing is copied.
    /// Not called at all for an empty buffer. Throw from `body` to stop early.
    public func forEachSegment<E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> Void) throws(E) {
        for segment in segments {
            try segment.block.withBytes { (block) throws(E) in
                try body(UnsafeRawBufferPointer(rebasing: block[segment.offset..<segment.offset + segment.count]))
            }
        }
    }

    /// Calls `body` with all the bytes as one buffer.
    ///
    /// Free for a contiguous buffer. When the bytes span several blocks they are not adjacent in
    /// memory, and a single `UnsafeRawBufferPointer` can only describe adjacent bytes, so they are
    /// copied into a temporary buffer for the duration of the call; use ``forEachSegment(_:)`` to
    /// avoid that copy when the consumer can work block by block.
    public func withContiguousBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        switch segments.count {
        case 0:
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        case 1:
            let segment = segments[0]
            return try segment.block.withBytes { (block) throws(E) -> R in
                try body(UnsafeRawBufferPointer(rebasing: block[segment.offset..<segment.offset + segment.count]))
            }
        default:
            return try copyToArray().withUnsafeBytesTyped(body)
        }
    }

    /// Copies the bytes in `range` to the start of `destination`.
    ///
    /// - Throws: ``BlockBufferError/rangeOutOfBounds(lowerBound:upperBound:count:)`` or
    ///   ``BlockBufferError/destinationTooSmall(required:available:)``.
    public func copyBytes(in range: Range<Int>, to destination: UnsafeMutableRawBufferPointer) throws(BlockBufferError)
    {
        try checkRange(range)
        guard destination.count >= range.count else {
            throw .destinationTooSmall(required: range.count, available: destination.count)
        }
        // The slice shares the blocks; only the bytes asked for are copied, segment by segment.
        var written = 0
        try slice(range).forEachSegment { segment in
            UnsafeMutableRawBufferPointer(rebasing: destination[written..<written + segment.count]).copyMemory(
                from: segment)
            written += segment.count
        }
    }

    /// A new array holding a copy of all the bytes (for when an owned `[UInt8]` is really needed).
    public func copyToArray() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { storage, initializedCount in
            let storage = UnsafeMutableRawBufferPointer(storage)
            var written = 0
            forEachSegment { segment in
                UnsafeMutableRawBufferPointer(rebasing: storage[written..<written + segment.count])
                    .copyMemory(from: segment)
                written += segment.count
            }
            initializedCount = written
        }
    }

    /// The byte at `offset`. Finds the block by walking the segments, so for byte-by-byte parsing
    /// prefer ``forEachSegment(_:)`` or ``withContiguousBytes(_:)``.
    ///
    /// - Throws: ``BlockBufferError/offsetOutOfRange(offset:count:)``.
    public subscript(offset: Int) -> UInt8 {
        get throws(BlockBufferError) {
            guard offset >= 0, offset < count else { throw .offsetOutOfRange(offset: offset, count: count) }
            var segmentStart = 0
            for segment in segments {
                if offset < segmentStart + segment.count {
                    let position = segment.offset + offset - segmentStart
                    return segment.block.withBytes { $0[position] }
                }
                segmentStart += segment.count
            }
            // Unreachable: the segment counts sum to `count` (type invariant).
            throw .offsetOutOfRange(offset: offset, count: count)
        }
    }

    // MARK: Mutating

    /// Calls `body` with mutable access to the bytes *if* that is possible without copying: the
    /// buffer is one Swift-owned block that no other ``BlockBuffer`` references. Otherwise returns
    /// nil without calling `body`, so the caller can choose its fallback (e.g. H.264 start-code to
    /// length-prefix rewriting is done in place on a freshly encoded buffer and written to a new
    /// buffer otherwise). An empty buffer calls `body` with an empty buffer.
    public mutating func withUnsafeMutableBytesInPlace<R, E: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R? {
        guard segments.count <= 1 else { return nil }
        guard !segments.isEmpty else { return try body(UnsafeMutableRawBufferPointer(start: nil, count: 0)) }
        guard isSegmentWritableInPlace(0) else { return nil }
        let segment = segments[0]
        return try segments[0].block.ownedBytes.withUnsafeMutableBytesTyped { (block) throws(E) -> R in
            try body(UnsafeMutableRawBufferPointer(rebasing: block[segment.offset..<segment.offset + segment.count]))
        }
    }

    /// Calls `body` with mutable access to all the bytes, copying them first into one new
    /// Swift-owned block when they are shared, external or spread over several blocks. The copy is
    /// what keeps other buffers (and external memory, which is read-only) unaffected by the
    /// mutation; use ``withUnsafeMutableBytesInPlace(_:)`` to refuse it instead.
    public mutating func withUnsafeMutableBytes<R, E: Error>(
        _ body: (UnsafeMutableRawBufferPointer) throws(E) -> R
    ) throws(E) -> R {
        if segments.count > 1 || (segments.count == 1 && !isSegmentWritableInPlace(0)) {
            self = BlockBuffer(copyToArray())
        }
        guard let segment = segments.first else {
            return try body(UnsafeMutableRawBufferPointer(start: nil, count: 0))
        }
        return try segments[0].block.ownedBytes.withUnsafeMutableBytesTyped { (block) throws(E) -> R in
            try body(UnsafeMutableRawBufferPointer(rebasing: block[segment.offset..<segment.offset + segment.count]))
        }
    }

    /// Overwrites `source.count` bytes starting at `offset` (the length does not change).
    ///
    /// Writes in place into Swift-owned blocks referenced only by this buffer. A block that is
    /// external or shared with another buffer is first copied, only for the affected segment:
    /// writing into it would change bytes other owners still see.
    ///
    /// - Throws: ``BlockBufferError/rangeOutOfBounds(lowerBound:upperBound:count:)``.
    public mutating func replaceBytes(at offset: Int, with source: UnsafeRawBufferPointer) throws(BlockBufferError) {
        let (end, overflow) = offset.addingReportingOverflow(source.count)
        guard !overflow else { throw .rangeOutOfBounds(lowerBound: offset, upperBound: Int.max, count: count) }
        try checkRange(offset..<end)
        var read = 0
        var segmentStart = 0
        for index in segments.indices {
            let segmentEnd = segmentStart + segments[index].count
            defer { segmentStart = segmentEnd }
            let lower = max(offset, segmentStart)
            let upper = min(end, segmentEnd)
            guard lower < upper else {
                if segmentStart >= end { break }
                continue
            }
            if !isSegmentWritableInPlace(index) {
                // Copy-on-write of just this segment (see above for why the copy is needed).
                let segment = segments[index]
                let copy = segment.block.withBytes { [UInt8]($0[segment.offset..<segment.offset + segment.count]) }
                segments[index] = Segment(block: MemoryBlock(owning: copy), offset: 0, count: segment.count)
            }
            let target = segments[index].offset + lower - segmentStart
            let length = upper - lower
            segments[index].block.ownedBytes.withUnsafeMutableBytes { block in
                UnsafeMutableRawBufferPointer(rebasing: block[target..<target + length])
                    .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[read..<read + length]))
            }
            read += length
        }
    }

    /// Overwrites `bytes.count` bytes starting at `offset`; see the `UnsafeRawBufferPointer` overload.
    public mutating func replaceBytes(at offset: Int, with bytes: [UInt8]) throws(BlockBufferError) {
        try bytes.withUnsafeBytesTyped { (source) throws(BlockBufferError) in
            try replaceBytes(at: offset, with: source)
        }
    }

    /// Whether segment `index` may be written without affecting anyone else. `mutating` because
    /// `isKnownUniquelyReferenced` needs `inout` access (that exclusivity is what makes the
    /// answer trustworthy).
    private mutating func isSegmentWritableInPlace(_ index: Int) -> Bool {
        !segments[index].block.isExternal && isKnownUniquelyReferenced(&segments[index].block)
    }

    private func checkRange(_ range: Range<Int>) throws(BlockBufferError) {
        guard range.lowerBound >= 0, range.upperBound <= count else {
            throw .rangeOutOfBounds(lowerBound: range.lowerBound, upperBound: range.upperBound, count: count)
        }
    }
}
