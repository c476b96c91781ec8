/// Writes the descriptors of 7.2 (u(n), ue(v), se(v), flags; the same in H.264 and H.265) into
/// RBSP bytes; the counterpart of `NALBitReader`, used by encoders for parameter sets and slice
/// headers and by the tests.
///
/// The output is RBSP: run it through `RBSP.insertEmulationPrevention` (and prefix the NAL unit
/// header) to get a NAL unit. Nothing here traps: out-of-range bit counts are clamped and every
/// UInt32/Int32 value has an Exp-Golomb code (even those a reader rejects as out of range).
public struct BitWriter: Sendable {
    /// Completed bytes.
    @usableFromInline var storage: [UInt8] = []
    /// Pending bits, right-aligned; fewer than 8 after every public call.
    @usableFromInline var pending: UInt64 = 0
    @usableFromInline var pendingBits: Int = 0

    public init() {}

    /// Number of bits written.
    @inlinable public var bitCount: Int { storage.count &* 8 &+ pendingBits }

    /// True when the next bit starts a byte.
    @inlinable public var isByteAligned: Bool { pendingBits == 0 }

    /// The bytes written; a partially written last byte is padded with zero bits.
    public var bytes: [UInt8] {
        guard pendingBits > 0 else { return storage }
        var result = storage
        result.append(UInt8(truncatingIfNeeded: pending << UInt64(8 &- pendingBits)))
        return result
    }

    @inlinable
    mutating func flushWholeBytes() {
        while pendingBits >= 8 {
            pendingBits &-= 8
            storage.append(UInt8(truncatingIfNeeded: pending >> UInt64(pendingBits)))
        }
        pending &= (UInt64(1) << UInt64(pendingBits)) &- 1
    }

    /// u(n): the low `n` bits of `value`, most significant first. `n` is clamped to 0...32.
    @inlinable
    public mutating func writeBits(_ value: UInt32, count n: Int) {
        let n = Swift.min(Swift.max(n, 0), 32)
        guard n > 0 else { return }
        let masked = UInt64(value) & ((UInt64(1) << UInt64(n)) &- 1)
        pending = (pending << UInt64(n)) | masked
        pendingBits &+= n
        flushWholeBytes()
    }

    /// u(1).
    @inlinable
    public mutating func writeFlag(_ flag: Bool) {
        writeBits(flag ? 1 : 0, count: 1)
    }

    /// ue(v), H.264 9.1 / H.265 9.2: leadingZeros zero bits, then codeNum + 1 in leadingZeros + 1 bits.
    @inlinable
    public mutating func writeUE(_ value: UInt32) {
        writeExpGolomb(UInt64(value))
    }

    /// se(v), H.264 9.1.1 / H.265 9.2.2: positive v maps to 2v - 1, non-positive v to -2v.
    @inlinable
    public mutating func writeSE(_ value: Int32) {
        let v = Int64(value)
        writeExpGolomb(v > 0 ? UInt64(2 &* v &- 1) : UInt64(-2 &* v))
    }

    @inlinable
    mutating func writeExpGolomb(_ codeNum: UInt64) {
        let code = codeNum &+ 1 // at most 2^32, so 33 significant bits
        let significantBits = 64 &- code.leadingZeroBitCount
        let leadingZeros = significantBits &- 1
        writeBits(0, count: Swift.min(leadingZeros, 32))
        if leadingZeros > 32 { writeBits(0, count: leadingZeros &- 32) }
        if significantBits > 32 {
            writeBits(UInt32(truncatingIfNeeded: code >> 32), count: significantBits &- 32)
            writeBits(UInt32(truncatingIfNeeded: code), count: 32)
        } else {
            writeBits(UInt32(truncatingIfNeeded: code), count: significantBits)
        }
    }

    /// Appends whole bytes (the writer need not be byte aligned).
    public mutating func writeBytes(_ bytes: some Sequence<UInt8>) {
        for byte in bytes { writeBits(UInt32(byte), count: 8) }
    }

    /// Pads with zero bits to the next byte boundary (e.g. alignment_zero_bit).
    public mutating func byteAlignWithZeros() {
        if pendingBits > 0 { writeBits(0, count: 8 &- pendingBits) }
    }

    /// rbsp_trailing_bits(), 7.3.2.11: rbsp_stop_one_bit, then rbsp_alignment_zero_bits.
    public mutating func writeRBSPTrailingBits() {
        writeFlag(true)
        byteAlignWithZeros()
    }
}
