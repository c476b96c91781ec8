import Glibc

/// Conversion between a NAL unit's escaped payload and its raw byte sequence payload (RBSP).
///
/// H.264 7.4.1 and H.265 7.4.2 say the same: inside a NAL unit, any byte 0x00..0x03 that follows
/// two zero bytes is preceded by an emulation_prevention_three_byte (0x03) so that no start code
/// prefix (00 00 01) can appear. Decoders remove every 0x03 that follows 00 00.
///
/// The functions take whatever escaped byte range they are given: the codec parsers pass the
/// payload after the NAL unit header (one byte in H.264, two in H.265).
public enum RBSP {
    /// Removes emulation_prevention_three_bytes (H.264 7.4.1, H.265 7.4.2: 0x000003 -> 0x0000).
    ///
    /// `maxBytes` bounds the RBSP produced: headers are short and slices can be large, so header
    /// parsers only unescape the beginning.
    public static func extractRBSP(from nal: UnsafeRawBufferPointer, maxBytes: Int = .max) -> [UInt8] {
        let capacity = Swift.min(nal.count, Swift.max(maxBytes, 0))
        guard capacity > 0, let base = nal.baseAddress else { return [] }
        // Copied in runs between the 0x03 bytes, which glibc's vectorised memchr finds: SEI NAL
        // units run to kilobytes, and a byte-by-byte copy was a visible part of parsing them.
        // A 0x03 is an emulation_prevention_three_byte when the two bytes before it are 00 00:
        // the same rule as counting zeros since the last one removed, since a removed byte is
        // never 00 and the two bytes before a 0x03 are the last two output when they are 00 00.
        return [UInt8](unsafeUninitializedCapacity: capacity) { output, count in
            guard let destination = output.baseAddress else { return }
            var produced = 0
            var index = 0
            let end = nal.count
            while index < end && produced < capacity {
                let three = memchr(base + index, 3, end &- index).map { UnsafeRawPointer($0) - base } ?? end
                let run = Swift.min(three &- index, capacity &- produced)
                (destination + produced).initialize(from: base.assumingMemoryBound(to: UInt8.self) + index, count: run)
                produced &+= run
                index &+= run
                guard index == three, three < end else { break }
                index &+= 1
                if three >= 2 && nal[three &- 1] == 0 && nal[three &- 2] == 0 { continue }
                if produced < capacity {
                    destination[produced] = 3
                    produced &+= 1
                }
            }
            count = produced
        }
    }

    /// `extractRBSP(from:maxBytes:)` for arrays.
    public static func extractRBSP(from nal: [UInt8], maxBytes: Int = .max) -> [UInt8] {
        nal.withUnsafeBytes { extractRBSP(from: $0, maxBytes: maxBytes) }
    }

    /// Like `extractRBSP(from:maxBytes:)`, and also reports the offsets (in `nal`) of the
    /// emulation_prevention_three_bytes removed, in increasing order. With them a bit position
    /// in the RBSP can be mapped back to the escaped NAL unit (`escapedBitOffset`).
    public static func extractRBSPWithRemovedPositions(
        from nal: UnsafeRawBufferPointer, maxBytes: Int = .max
    ) -> (rbsp: [UInt8], removedPositions: [Int]) {
        var output: [UInt8] = []
        output.reserveCapacity(Swift.min(nal.count, Swift.max(maxBytes, 0)))
        var removed: [Int] = []
        var zeros = 0
        for (offset, byte) in nal.enumerated() {
            if output.count >= maxBytes { break }
            if zeros >= 2 && byte == 3 {
                removed.append(offset)
                zeros = 0
                continue
            }
            output.append(byte)
            zeros = byte == 0 ? zeros &+ 1 : 0
        }
        return (output, removed)
    }

    /// Maps a bit offset in the RBSP to the bit offset of the same bit in the escaped bytes,
    /// given the removed positions reported by `extractRBSPWithRemovedPositions`. Emulation
    /// prevention bytes that come before the byte holding `rbspBitOffset` are counted.
    public static func escapedBitOffset(forRBSPBitOffset rbspBitOffset: Int, removedPositions: [Int]) -> Int {
        let rbspByte = rbspBitOffset >> 3
        var count = 0
        // The j-th removed byte (0-based) sits right before RBSP byte removedPositions[j] - j.
        for (j, position) in removedPositions.enumerated() where position &- j <= rbspByte {
            count &+= 1
        }
        return rbspBitOffset &+ count &* 8
    }

    /// Maps a bit offset in the RBSP of `nal` to the escaped bytes by rescanning them; no
    /// allocation (used for a slice header's size in the escaped NAL unit).
    public static func escapedBitOffset(forRBSPBitOffset rbspBitOffset: Int, in nal: UnsafeRawBufferPointer) -> Int {
        let rbspByte = rbspBitOffset >> 3
        var produced = 0
        var removed = 0
        var zeros = 0
        for byte in nal {
            if zeros >= 2 && byte == 3 {
                removed &+= 1
                zeros = 0
                continue
            }
            if produced == rbspByte { break }
            produced &+= 1
            zeros = byte == 0 ? zeros &+ 1 : 0
        }
        return rbspBitOffset &+ removed &* 8
    }

    /// Inserts emulation_prevention_three_bytes (H.264 7.4.1, H.265 7.4.2): a 0x03 before any
    /// byte 0x00..0x03 that follows two zero bytes, and after a final 00 00 (the RBSP can only end
    /// in 0x00 when it ends with cabac_zero_words, and then both specs append a 0x03).
    public static func insertEmulationPrevention(_ rbsp: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(rbsp.count &+ rbsp.count / 64 &+ 4)
        var zeros = 0
        for byte in rbsp {
            if zeros >= 2 && byte <= 3 {
                output.append(3)
                zeros = 0
            }
            output.append(byte)
            zeros = byte == 0 ? zeros &+ 1 : 0
        }
        if zeros >= 2 { output.append(3) }
        return output
    }

    /// Unescapes at most `maxBytes` of `nal` starting at `offset` into temporary memory (on the
    /// stack when small) and lends the RBSP to `body`: the header parsers' allocation-free path.
    @inlinable
    public static func withUnescapedPayload<R>(
        of nal: UnsafeRawBufferPointer, from offset: Int, maxBytes: Int,
        _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
        let start = Swift.min(Swift.max(offset, 0), nal.count)
        let capacity = Swift.max(0, Swift.min(nal.count &- start, maxBytes))
        return withUnsafeTemporaryAllocation(byteCount: Swift.max(capacity, 1), alignment: 8) { buffer in
            var produced = 0
            var zeros = 0
            var index = start
            let end = nal.count
            while index < end && produced < capacity {
                let byte = nal[index]
                index &+= 1
                if zeros >= 2 && byte == 3 {
                    zeros = 0
                    continue
                }
                buffer[produced] = byte
                produced &+= 1
                zeros = byte == 0 ? zeros &+ 1 : 0
            }
            return body(UnsafeRawBufferPointer(rebasing: buffer[0..<produced]))
        }
    }
}
