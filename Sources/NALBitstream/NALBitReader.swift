/// Reads the descriptors of H.264 and H.265 clause 7.2 (u(n), ue(v), se(v), flags) from RBSP
/// bytes, i.e. bytes from which the emulation_prevention_three_bytes have already been removed
/// (see `RBSP`). Both specifications define these descriptors and Exp-Golomb codes identically
/// (H.264 9.1, H.265 9.2), so one reader serves both codecs.
///
/// The reader is a small struct over borrowed memory: it never allocates and keeps up to 64 bits
/// in a register-sized cache so that most reads are a shift and a mask. Because it borrows the
/// memory (`UnsafeRawBufferPointer`), it must only be used inside the closure that lends the
/// bytes (`withUnsafeBytes`, `RBSP.withUnescapedPayload`); for that reason it is deliberately not
/// `Sendable`.
///
/// Every read checks the end of the data and throws `Failure.truncated(what:)` naming the
/// syntax element being read; nothing in here traps on any input. `Failure` is the codec's own
/// error type (`H264Error`, `H265Error`), so a parser's errors stay typed and say which codec
/// they come from; each codec names its reader (`BitReader` in H264, `H265BitReader` in H265).
public struct NALBitReader<Failure: NALBitstreamError> {
    @usableFromInline let base: UnsafeRawBufferPointer
    /// Index of the next byte to move into `cache`.
    @usableFromInline var nextByte: Int
    /// Unread bits, left-aligned (the next bit to read is bit 63). Bits below the top
    /// `cacheBits` are always zero, which `readUE` relies on.
    @usableFromInline var cache: UInt64
    @usableFromInline var cacheBits: Int

    @inlinable
    public init(_ bytes: UnsafeRawBufferPointer) {
        base = bytes
        nextByte = 0
        cache = 0
        cacheBits = 0
    }

    /// Total number of bits in the data.
    @inlinable public var bitCount: Int { base.count &* 8 }

    /// Number of bits read (or skipped) so far.
    @inlinable public var bitPosition: Int { nextByte &* 8 &- cacheBits }

    /// Number of bits left to read.
    @inlinable public var bitsRemaining: Int { bitCount &- bitPosition }

    /// True when the next bit to read starts a byte (byte_aligned(), 7.2).
    @inlinable public var isByteAligned: Bool { cacheBits & 7 == 0 }

    /// Moves bytes into the cache until it holds at least 57 bits or the data is exhausted.
    @inlinable
    mutating func refill() {
        if nextByte &+ 8 <= base.count {
            // Fast path: one unaligned 64-bit load, keep as many whole bytes as fit.
            let word = UInt64(bigEndian: base.loadUnaligned(fromByteOffset: nextByte, as: UInt64.self))
            let take = (64 &- cacheBits) >> 3
            let newBits = cacheBits &+ (take << 3)
            var add = word >> UInt64(cacheBits)
            if newBits < 64 { add &= ~(UInt64.max >> UInt64(newBits)) }
            cache |= add
            cacheBits = newBits
            nextByte &+= take
            return
        }
        while cacheBits <= 56 && nextByte < base.count {
            cache |= UInt64(base[nextByte]) << UInt64(56 &- cacheBits)
            cacheBits &+= 8
            nextByte &+= 1
        }
    }

    @inlinable
    mutating func consume(_ n: Int) {
        // `<<` is Swift's smart shift: shifting by 64 yields 0 instead of trapping.
        cache = cache << UInt64(n)
        cacheBits &-= n
    }

    /// u(n): the next `n` bits (0...32) as an unsigned integer, most significant bit first.
    @inlinable
    public mutating func readBits(_ n: Int, _ field: String = "u(n)") throws(Failure) -> UInt32 {
        guard n > 0 else {
            if n == 0 { return 0 }
            throw Failure.invalidValue(field: "bit count of \(field)", value: Int64(n))
        }
        guard n <= 32 else { throw Failure.invalidValue(field: "bit count of \(field)", value: Int64(n)) }
        if cacheBits < n {
            refill()
            if cacheBits < n { throw Failure.truncated(what: field) }
        }
        let value = UInt32(truncatingIfNeeded: cache >> UInt64(64 &- n))
        consume(n)
        return value
    }

    /// u(1) as a Bool.
    @inlinable
    public mutating func readFlag(_ field: String = "u(1)") throws(Failure) -> Bool {
        if cacheBits == 0 {
            refill()
            if cacheBits == 0 { throw Failure.truncated(what: field) }
        }
        let bit = cache >> 63 != 0
        consume(1)
        return bit
    }

    /// The next `n` bits without consuming them (n 0...32).
    @inlinable
    public mutating func peekBits(_ n: Int) throws(Failure) -> UInt32 {
        if cacheBits < n { refill() }
        var copy = self
        return try copy.readBits(n, "next_bits()")
    }

    /// ue(v), H.264 9.1 / H.265 9.2: Exp-Golomb code. Codes with more than 31 leading zero bits
    /// would exceed 2^32 - 2, the largest value either spec allows for any ue(v) element, and are
    /// rejected.
    @inlinable
    public mutating func readUE(_ field: String = "ue(v)") throws(Failure) -> UInt32 {
        if cacheBits < 32 { refill() }
        if cache != 0 {
            let leadingZeros = cache.leadingZeroBitCount
            let length = leadingZeros &* 2 &+ 1
            if length <= cacheBits && leadingZeros < 32 {
                // Whole code in the cache: the value is the code read as a number, minus 1.
                let code = cache >> UInt64(64 &- length)
                consume(length)
                return UInt32(truncatingIfNeeded: code &- 1)
            }
        }
        return try readUESlow(field)
    }

    @usableFromInline
    mutating func readUESlow(_ field: String) throws(Failure) -> UInt32 {
        var leadingZeros = 0
        while true {
            if cacheBits == 0 {
                refill()
                if cacheBits == 0 { throw Failure.truncated(what: field) }
            }
            if cache == 0 {
                // All cached bits are zero (bits below cacheBits are kept zero).
                leadingZeros &+= cacheBits
                consume(cacheBits)
            } else {
                let zeros = cache.leadingZeroBitCount
                leadingZeros &+= zeros
                consume(zeros &+ 1)
                break
            }
            if leadingZeros > 31 { break }
        }
        guard leadingZeros <= 31 else {
            throw Failure.invalidValue(field: "\(field) (Exp-Golomb prefix length)", value: Int64(leadingZeros))
        }
        let suffix = try readBits(leadingZeros, field)
        return UInt32(truncatingIfNeeded: (UInt64(1) << UInt64(leadingZeros)) &- 1 &+ UInt64(suffix))
    }

    /// se(v), H.264 9.1.1 / H.265 9.2.2 (Table 9-3 in both): k maps to (-1)^(k+1) * Ceil(k / 2).
    @inlinable
    public mutating func readSE(_ field: String = "se(v)") throws(Failure) -> Int32 {
        let codeNum = Int64(try readUE(field))
        let magnitude = (codeNum &+ 1) >> 1
        return Int32(truncatingIfNeeded: codeNum & 1 == 1 ? magnitude : -magnitude)
    }

    /// ue(v) checked against an inclusive upper bound, as an Int (the common case in the
    /// parameter-set and slice-header parsers, which range-check every element).
    @inlinable
    public mutating func readUE(_ field: String, max: Int) throws(Failure) -> Int {
        let value = Int(try readUE(field))
        guard value <= max else { throw Failure.invalidValue(field: field, value: Int64(value)) }
        return value
    }

    /// se(v) checked against an inclusive range, as an Int.
    @inlinable
    public mutating func readSE(_ field: String, range: ClosedRange<Int>) throws(Failure) -> Int {
        let value = Int(try readSE(field))
        guard range.contains(value) else { throw Failure.invalidValue(field: field, value: Int64(value)) }
        return value
    }

    /// u(n) checked against an inclusive upper bound, as an Int.
    @inlinable
    public mutating func readBits(_ n: Int, _ field: String, max: Int) throws(Failure) -> Int {
        let value = Int(try readBits(n, field))
        guard value <= max else { throw Failure.invalidValue(field: field, value: Int64(value)) }
        return value
    }

    /// Skips `n` bits; throws if fewer remain (nothing is skipped then).
    @inlinable
    public mutating func skipBits(_ n: Int, _ field: String = "skipped bits") throws(Failure) {
        guard n >= 0 else { throw Failure.invalidValue(field: "bit count of \(field)", value: Int64(n)) }
        guard n <= bitsRemaining else { throw Failure.truncated(what: field) }
        if n <= cacheBits {
            consume(n)
            return
        }
        let rest = n &- cacheBits
        cache = 0
        cacheBits = 0
        nextByte &+= rest >> 3
        _ = try readBits(rest & 7, field)
    }

    /// Skips to the next byte boundary (the bits skipped are not checked).
    @inlinable
    public mutating func byteAlign() {
        consume(cacheBits & 7)
    }

    /// more_rbsp_data(), 7.2 (the same in H.264 and H.265): true if there is more data before the
    /// rbsp_stop_one_bit, i.e. if the current position is before the last 1 bit of the RBSP. Zero
    /// bytes after the stop bit (trailing cabac_zero_words) are allowed; all-zero data has no
    /// more data.
    @inlinable
    public func moreRBSPData() -> Bool {
        var last = base.count &- 1
        while last >= 0 && base[last] == 0 { last &-= 1 }
        guard last >= 0 else { return false }
        let stopBitPosition = last &* 8 &+ 7 &- base[last].trailingZeroBitCount
        return bitPosition < stopBitPosition
    }

    /// rbsp_trailing_bits() (H.264 7.3.2.11, H.265 7.3.2.11): checks that the stop bit follows
    /// (data after it is tolerated, see `moreRBSPData`).
    @inlinable
    public mutating func readRBSPTrailingBits() throws(Failure) {
        guard try readFlag("rbsp_stop_one_bit") else {
            throw Failure.invalidValue(field: "rbsp_stop_one_bit", value: 0)
        }
    }
}
