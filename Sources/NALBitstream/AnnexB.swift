import Glibc

/// Where one NAL unit sits inside an Annex B byte stream (ITU-T H.264 and H.265 Annex B, which
/// define the same byte stream format).
///
/// Offsets, not copies: the bytes stay in the caller's buffer.
public struct AnnexBNALUnit: Hashable, Sendable {
    /// Offset of the first byte of the start code (including a leading zero_byte, if any).
    public var startCodeOffset: Int
    /// Length of the start code: 3 (`00 00 01`) or 4 (`00 00 00 01`, B.1.1 zero_byte + start code).
    public var startCodeLength: Int
    /// Offset of the NAL unit header byte.
    public var payloadOffset: Int { startCodeOffset + startCodeLength }
    /// Bytes of the NAL unit itself: header and (escaped) RBSP, trailing_zero_8bits excluded.
    public var payloadLength: Int
    public var payloadRange: Range<Int> { payloadOffset..<(payloadOffset + payloadLength) }

    public init(startCodeOffset: Int, startCodeLength: Int, payloadLength: Int) {
        self.startCodeOffset = startCodeOffset
        self.startCodeLength = startCodeLength
        self.payloadLength = payloadLength
    }
}

/// Start-code scanning over Annex B byte streams.
///
/// The hot loop asks glibc's vectorised `memchr` for the next `0x01` byte and then looks back two
/// bytes for `00 00`. In compressed slice data a `0x01` appears about once every 256 bytes, so
/// almost all bytes are examined 16 or 32 at a time instead of one by one; emulation prevention
/// (H.264 7.4.1, H.265 7.4.2) guarantees that `00 00 01` never occurs inside a NAL unit, so every hit is a real start.
public enum AnnexB {
    /// Offset of the `00` that begins the next three-byte start code `00 00 01` at or after
    /// `offset`, or nil when there is none.
    @inlinable
    public static func findStartCode(in bytes: UnsafeRawBufferPointer, from offset: Int) -> Int? {
        guard let base = bytes.baseAddress, offset >= 0 else { return nil }
        let count = bytes.count
        // The 0x01 of the start code sits at least two bytes after `offset`.
        var searchFrom = offset + 2
        while searchFrom < count {
            guard let hit = memchr(base + searchFrom, 1, count - searchFrom) else { return nil }
            let oneIndex = base.distance(to: UnsafeRawPointer(hit))
            if bytes[oneIndex - 1] == 0 && bytes[oneIndex - 2] == 0 {
                return oneIndex - 2
            }
            searchFrom = oneIndex + 1
        }
        return nil
    }

    /// Calls `body` for every NAL unit of a complete Annex B buffer, in order.
    ///
    /// Bytes before the first start code are not part of any NAL unit (B.2: leading_zero_8bits,
    /// or garbage in damaged input) and are skipped. Trailing zero bytes after a NAL unit belong
    /// to the byte stream (trailing_zero_8bits), not to the NAL unit, and are trimmed: a NAL unit
    /// never ends in `00` because rbsp_trailing_bits end in a one bit and cabac_zero_words are
    /// followed by an emulation-prevention `03` (H.264 7.4.2.10; H.265 7.4.2).
    @inlinable
    public static func forEachNALUnit(
        in bytes: UnsafeRawBufferPointer, _ body: (AnnexBNALUnit) throws -> Void
    ) rethrows {
        guard var current = findStartCode(in: bytes, from: 0) else { return }
        while true {
            let payloadStart = current + 3
            let next = findStartCode(in: bytes, from: payloadStart)
            var end = next ?? bytes.count
            while end > payloadStart && bytes[end - 1] == 0 { end -= 1 }
            // A zero_byte immediately before the start code makes it a four-byte start code.
            let hasZeroByte = current > 0 && bytes[current - 1] == 0
            let startCodeOffset = hasZeroByte ? current - 1 : current
            let unit = AnnexBNALUnit(
                startCodeOffset: startCodeOffset, startCodeLength: hasZeroByte ? 4 : 3,
                payloadLength: end - payloadStart)
            if unit.payloadLength > 0 { try body(unit) }
            guard let following = next else { return }
            current = following
        }
    }

    /// All NAL units of a complete Annex B buffer.
    public static func nalUnits(in bytes: UnsafeRawBufferPointer) -> [AnnexBNALUnit] {
        var units: [AnnexBNALUnit] = []
        forEachNALUnit(in: bytes) { units.append($0) }
        return units
    }

    public static func nalUnits(in bytes: [UInt8]) -> [AnnexBNALUnit] {
        bytes.withUnsafeBytes { nalUnits(in: $0) }
    }
}

/// Splits an Annex B stream that arrives in arbitrary chunks (a file read, a network packet) into
/// whole NAL units, finding each start code exactly once however the chunks fall.
///
/// The bytes of an unfinished NAL unit are kept in an internal buffer until its end is seen: a
/// NAL unit may straddle any number of chunks, and handing out contiguous NAL units needs them in
/// one place. That is the only copy; callers that already hold contiguous data (GstBaseParse's
/// adapter, a memory-mapped file) use `AnnexB.forEachNALUnit` directly and copy nothing.
public struct AnnexBStreamSplitter: Sendable {
    private var pending: [UInt8] = []
    /// Offset in `pending` up to which no start code can begin (already searched).
    private var searchedUpTo = 0
    /// Offset of the start code of the NAL unit being accumulated, if one has been seen.
    private var currentStart: Int?

    public init() {}

    /// Bytes held back waiting for the end of a NAL unit.
    public var bufferedByteCount: Int { pending.count }

    /// Appends a chunk and returns the NAL units (header + escaped payload, without start code)
    /// that it completed.
    public mutating func append(_ chunk: UnsafeRawBufferPointer) -> [[UInt8]] {
        // Copy: see the type's comment; the chunk's memory is not ours to keep.
        pending.append(contentsOf: chunk)
        var completed: [[UInt8]] = []
        pending.withUnsafeBytes { bytes in
            while let found = AnnexB.findStartCode(in: bytes, from: searchedUpTo) {
                if let start = currentStart, let unit = Self.trimmed(bytes, from: start + 3, to: found) {
                    completed.append(unit)
                }
                currentStart = found
                searchedUpTo = found + 3
            }
            // A start code may straddle the end of this chunk: search its last two bytes again.
            searchedUpTo = max(searchedUpTo, bytes.count - 2)
        }
        compact()
        return completed
    }

    public mutating func append(_ chunk: [UInt8]) -> [[UInt8]] {
        chunk.withUnsafeBytes { append($0) }
    }

    /// Ends the stream: the NAL unit still being accumulated is complete.
    public mutating func finish() -> [UInt8]? {
        defer {
            pending.removeAll(keepingCapacity: true)
            searchedUpTo = 0
            currentStart = nil
        }
        guard let start = currentStart else { return nil }
        return pending.withUnsafeBytes { Self.trimmed($0, from: start + 3, to: $0.count) }
    }

    private static func trimmed(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> [UInt8]? {
        var end = end
        while end > start && bytes[end - 1] == 0 { end -= 1 }
        guard end > start else { return nil }
        // Copy: the result must outlive `pending`, which is compacted below.
        return Array(bytes[start..<end])
    }

    /// Drops bytes that can no longer belong to any NAL unit, so memory stays bounded by the size
    /// of the largest NAL unit rather than the stream. Moving the kept bytes costs their size, so
    /// it is done only once the dead prefix is at least as large as what is kept: amortised, each
    /// byte moves at most once.
    private mutating func compact() {
        let keepFrom = currentStart ?? max(0, pending.count - 2)
        guard keepFrom > 0, keepFrom >= pending.count - keepFrom else { return }
        pending.removeFirst(keepFrom)
        searchedUpTo -= keepFrom
        if currentStart != nil { currentStart = 0 }
    }
}

// What the access-unit splitters of H.264 (H264's AccessUnitSplitter) and H.265
// (H265AccessUnitSplitter) say and are told, so that a parser can drive either.
extension AnnexB {
    /// How the end of the data passed to an access-unit splitter relates to the stream's structure.
    public enum DataEnd: Sendable {
        /// More bytes may follow: a NAL unit may continue past the end.
        case streamContinues
        /// The data ends at a NAL unit boundary (upstream `alignment=nal`).
        case nalUnitBoundary
        /// The data ends at an access-unit boundary (upstream `alignment=au`, or end of stream).
        case accessUnitBoundary
    }

    /// What an access-unit splitter found in the data it was given.
    public enum SplitResult<AccessUnit> {
        /// Bytes before the first start code, which belong to no NAL unit: drop them.
        case skip(Int)
        /// Call again with more data.
        case needMoreData
        case accessUnit(AccessUnit)
    }
}

extension AnnexB.SplitResult: Sendable where AccessUnit: Sendable {}

/// The NAL-unit scan an incremental access-unit splitter runs over Annex B data it does not own
/// (B.2): it finds the next complete NAL unit after `classifiedUpTo`, scanning every byte once
/// however the data arrives, and says which bytes before the first start code belong to no NAL
/// unit. The splitter owns the grouping into access units; it moves `classifiedUpTo` past each NAL
/// unit it takes (and back by the bytes it hands out as an access unit).
public struct AnnexBNALUnitScan: Sendable {
    public enum Step: Sendable {
        /// Bytes before the first start code, which belong to no NAL unit (only before any NAL
        /// unit has begun): drop them.
        case skip(Int)
        /// Call again with more data.
        case needMoreData
        /// No start code follows and the data ends at an access-unit boundary.
        case endOfData
        /// A complete NAL unit: its start code (with a zero_byte in front, when there is one) at
        /// `codeStart`, its bytes (header included, trailing zeros excluded) at `payload`.
        case nalUnit(codeStart: Int, payload: Range<Int>)
    }

    /// Offset up to which the data has been classified: the end of the last NAL unit taken.
    public var classifiedUpTo = 0
    /// Where the search for the end of the open NAL unit resumes, so that bytes are scanned once
    /// when a large NAL unit arrives in many pieces.
    private var endSearchFrom = 0

    public init() {}

    /// Starts over at the beginning of the data.
    public mutating func reset() {
        classifiedUpTo = 0
        endSearchFrom = 0
    }

    /// The next NAL unit after `classifiedUpTo`.
    ///
    /// - Parameter hasBegun: the splitter holds a NAL unit already (bytes before a start code are
    ///   then part of it, not garbage).
    public mutating func next(in data: UnsafeRawBufferPointer, dataEnd: AnnexB.DataEnd, hasBegun: Bool) -> Step {
        while true {
            guard let code = AnnexB.findStartCode(in: data, from: classifiedUpTo) else {
                if !hasBegun {
                    // No NAL unit has begun: all is garbage but the last two bytes, which may
                    // begin a start code that the next data completes.
                    let garbage = dataEnd == .accessUnitBoundary ? data.count : max(0, data.count &- 2)
                    return garbage > 0 ? .skip(garbage) : .needMoreData
                }
                return dataEnd == .accessUnitBoundary ? .endOfData : .needMoreData
            }
            // A zero_byte in front makes it a four-byte start code (B.2.1).
            let codeStart = code > classifiedUpTo && data[code &- 1] == 0 ? code &- 1 : code
            if !hasBegun && codeStart > 0 { return .skip(codeStart) }
            let payloadStart = code &+ 3
            let end: Int
            if let nextCode = AnnexB.findStartCode(in: data, from: max(payloadStart, endSearchFrom)) {
                end = nextCode
            } else if dataEnd != .streamContinues {
                end = data.count
            } else {
                endSearchFrom = max(payloadStart, data.count &- 2)
                return .needMoreData
            }
            endSearchFrom = 0
            // trailing_zero_8bits and the next start code's zero_byte belong to no NAL unit.
            var nalEnd = end
            while nalEnd > payloadStart && data[nalEnd &- 1] == 0 { nalEnd &-= 1 }
            guard nalEnd > payloadStart else {
                classifiedUpTo = end
                continue
            }
            return .nalUnit(codeStart: codeStart, payload: payloadStart..<nalEnd)
        }
    }
}
