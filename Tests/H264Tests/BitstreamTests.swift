import SwiftVTTestSupport
import Testing

@testable import H264

/// Runs `body` with a BitReader over `bytes`.
func withReader(_ bytes: [UInt8], _ body: (inout BitReader) throws -> Void) throws {
    try bytes.withUnsafeBytes { raw in
        var reader = BitReader(raw)
        try body(&reader)
    }
}

@Suite("BitstreamTests")
struct BitstreamTests {
    @Test func fixedWidthRoundTripAcrossCacheBoundaries() throws {
        var generator = SeededGenerator(seed: 1)
        var writer = BitWriter()
        var expected: [(UInt32, Int)] = []
        for _ in 0..<2000 {
            let n = Int.random(in: 0...32, using: &generator)
            let value = n == 0 ? 0 : UInt32.random(in: 0...UInt32.max, using: &generator) >> UInt32(32 - n)
            writer.writeBits(value, count: n)
            expected.append((value, n))
        }
        let totalBits = expected.reduce(0) { $0 + $1.1 }
        #expect(writer.bitCount == totalBits)
        try withReader(writer.bytes) { (r: inout BitReader) throws in
            for (value, n) in expected {
                #expect(try r.readBits(n) == value)
            }
            #expect(r.bitPosition == totalBits)
            #expect(r.bitsRemaining == (8 - totalBits % 8) % 8)
        }
    }

    @Test func expGolombEdgeValues() throws {
        let ue: [UInt32] = [
            0, 1, 2, 3, 7, 8, 254, 255, 65535, 1 << 20, (1 << 31) - 2, (1 << 31) - 1, 1 << 31, UInt32.max - 1
        ]
        let se: [Int32] = [0, 1, -1, 2, -2, 127, -128, 1 << 20, -(1 << 20), Int32.max, -Int32.max]
        var writer = BitWriter()
        // A 3-bit prefix shifts everything off byte alignment.
        writer.writeBits(5, count: 3)
        for v in ue { writer.writeUE(v) }
        for v in se { writer.writeSE(v) }
        writer.writeFlag(true)
        writer.writeRBSPTrailingBits()
        try withReader(writer.bytes) { (r: inout BitReader) throws in
            #expect(try r.readBits(3) == 5)
            for v in ue { #expect(try r.readUE() == v) }
            for v in se { #expect(try r.readSE() == v) }
            #expect(try r.readFlag())
            #expect(!r.moreRBSPData())
            try r.readRBSPTrailingBits()
            #expect(r.isByteAligned)
        }
    }

    @Test func knownExpGolombCodes() throws {
        // 1 | 010 | 011 | 00100 | 00111 -> 0, 1, 2, 3, 6 (Table 9-2).
        var writer = BitWriter()
        for bit in "1010011001000011" { writer.writeFlag(bit == "1") }
        #expect(writer.bytes == [0b1010_0110, 0b0100_0011])
        try withReader(writer.bytes) { (r: inout BitReader) throws in
            #expect(try r.readUE() == 0)
            #expect(try r.readUE() == 1)
            #expect(try r.readUE() == 2)
            #expect(try r.readUE() == 3)
            #expect(try r.readBits(4) == 0b0011)
        }
        // se(v): codeNum 1 -> 1, 2 -> -1, 3 -> 2 (Table 9-3).
        try withReader([0b0100_1100, 0b1000_0000]) { (r: inout BitReader) throws in
            #expect(try r.readSE() == 1)
            #expect(try r.readSE() == -1)
            #expect(try r.readSE() == 2)
        }
    }

    @Test func randomExpGolombRoundTrip() throws {
        var generator = SeededGenerator(seed: 7)
        var writer = BitWriter()
        var values: [UInt32] = []
        for _ in 0..<5000 {
            let bits = Int.random(in: 0...31, using: &generator)
            let v = UInt32.random(in: 0...UInt32.max, using: &generator) >> UInt32(32 - max(bits, 1))
            values.append(v)
            writer.writeUE(v)
        }
        try withReader(writer.bytes) { (r: inout BitReader) throws in
            for v in values { #expect(try r.readUE() == v) }
        }
    }

    @Test func overlongExpGolombIsRejected() throws {
        // 32 leading zeros: the value would exceed 2^32 - 2.
        let bytes: [UInt8] = [0, 0, 0, 0, 0x80, 0, 0, 0, 0]
        try withReader(bytes) { (r: inout BitReader) throws in
            #expect(throws: H264Error.self) { try r.readUE("test_element") }
        }
        // 40 zero bits and nothing else: rejected, not looped over.
        try withReader([UInt8](repeating: 0, count: 5)) { (r: inout BitReader) throws in
            #expect(throws: H264Error.self) { try r.readUE() }
        }
        // All zeros shorter than 32 bits: truncated.
        try withReader([0, 0]) { (r: inout BitReader) throws in
            #expect(throws: H264Error.truncated(what: "x")) { try r.readUE("x") }
        }
    }

    @Test func truncationErrorsNameTheElement() throws {
        try withReader([0xFF]) { (r: inout BitReader) throws in
            #expect(throws: H264Error.truncated(what: "profile_idc")) { try r.readBits(9, "profile_idc") }
        }
        try withReader([0b0001_0000]) { (r: inout BitReader) throws in
            // Prefix of 3 zeros needs 3 more bits after the 1, only 4 remain -> fine; then empty.
            #expect(throws: H264Error.truncated(what: "ue")) {
                _ = try r.readUE("ue")
                _ = try r.readUE("ue")
            }
        }
        try withReader([]) { (r: inout BitReader) throws in
            #expect(throws: H264Error.truncated(what: "flag")) { try r.readFlag("flag") }
            #expect(!r.moreRBSPData())
        }
        try withReader([1, 2]) { (r: inout BitReader) throws in
            #expect(throws: H264Error.self) { try r.readBits(33) }
            #expect(throws: H264Error.self) { try r.skipBits(17) }
            #expect(r.bitPosition == 0)
            try? r.skipBits(16)
            #expect(r.bitsRemaining == 0)
        }
    }

    @Test func skipAndAlign() throws {
        let bytes: [UInt8] = (0..<40).map { UInt8($0) }
        try withReader(bytes) { (r: inout BitReader) throws in
            try r.skipBits(3)
            #expect(!r.isByteAligned)
            r.byteAlign()
            #expect(r.bitPosition == 8)
            #expect(try r.readBits(8) == 1)
            try r.skipBits(8 * 20 + 4)
            #expect(r.bitPosition == 8 * 22 + 4)
            #expect(try r.readBits(4) == 22 & 0xF)
            #expect(try r.peekBits(8) == 23)
            #expect(try r.readBits(16) == 23 << 8 | 24)
            #expect(r.bitsRemaining == (40 - 25) * 8)
        }
    }

    @Test func moreRBSPDataEdgeCases() throws {
        // Stop bit right at the position: no more data.
        try withReader([0x80]) { (r: inout BitReader) throws in #expect(!r.moreRBSPData()) }
        // One data bit (1) then the stop bit.
        try withReader([0xC0]) { (r: inout BitReader) throws in
            #expect(r.moreRBSPData())
            _ = try r.readFlag()
            #expect(!r.moreRBSPData())
        }
        // Data bit 0 before the stop bit still counts as data.
        try withReader([0x40]) { (r: inout BitReader) throws in
            #expect(r.moreRBSPData())
            _ = try r.readFlag()
            #expect(!r.moreRBSPData())
        }
        // Trailing zero bytes (cabac_zero_words) after the stop bit are not data.
        try withReader([0xA5, 0x80, 0x00, 0x00]) { (r: inout BitReader) throws in
            try r.skipBits(8)
            #expect(!r.moreRBSPData())
        }
        try withReader([0xA5, 0x01, 0x00, 0x00]) { (r: inout BitReader) throws in
            try r.skipBits(8)
            #expect(r.moreRBSPData())
            try r.skipBits(7)
            #expect(!r.moreRBSPData())
        }
        try withReader([0, 0, 0]) { (r: inout BitReader) throws in #expect(!r.moreRBSPData()) }
    }

    @Test func writerPadsAndCounts() {
        var writer = BitWriter()
        writer.writeBits(1, count: 1)
        #expect(writer.bytes == [0x80])
        #expect(writer.bitCount == 1)
        writer.writeRBSPTrailingBits()
        #expect(writer.bytes == [0xC0])
        #expect(writer.isByteAligned)
        writer.writeBits(0xFFFF_FFFF, count: 40) // clamped to 32
        #expect(writer.bitCount == 40)
        writer.writeUE(UInt32.max) // 65-bit code, never traps
        #expect(writer.bitCount == 40 + 65)
    }

    // MARK: RBSP

    func extract(_ bytes: [UInt8]) -> [UInt8] { RBSP.extractRBSP(from: bytes) }

    @Test func emulationPreventionHandMadeSequences() {
        #expect(extract([0x00, 0x00, 0x03, 0x00, 0x00, 0x03]) == [0, 0, 0, 0])
        #expect(extract([0x00, 0x00, 0x03]) == [0, 0])
        #expect(extract([0x00, 0x00, 0x03, 0x01]) == [0, 0, 1])
        #expect(extract([0x00, 0x03, 0x00]) == [0, 3, 0])
        #expect(extract([0x00, 0x00, 0x03, 0x03]) == [0, 0, 3])
        #expect(extract([0x00, 0x00, 0x00, 0x03]) == [0, 0, 0])
        #expect(extract([0x00, 0x00, 0x03, 0x00, 0x03]) == [0, 0, 0, 3])
        #expect(RBSP.insertEmulationPrevention([0, 0, 0, 0]) == [0, 0, 3, 0, 0, 3])
        #expect(RBSP.insertEmulationPrevention([0, 0]) == [0, 0, 3])
        #expect(RBSP.insertEmulationPrevention([0, 0, 1]) == [0, 0, 3, 1])
        #expect(RBSP.insertEmulationPrevention([0, 0, 4]) == [0, 0, 4])
        #expect(RBSP.insertEmulationPrevention([0, 0, 3]) == [0, 0, 3, 3])
        #expect(RBSP.insertEmulationPrevention([1, 0, 2]) == [1, 0, 2])
        #expect(RBSP.extractRBSP(from: [1, 0, 0, 3, 2, 5, 6], maxBytes: 4) == [1, 0, 0, 2])
    }

    @Test func emulationPreventionRoundTripOnRandomData() {
        var generator = SeededGenerator(seed: 42)
        for round in 0..<500 {
            let count = Int.random(in: 0...200, using: &generator)
            // Many zeros and small values to provoke the escaping.
            let data: [UInt8] = (0..<count).map { _ in
                let r = UInt8.random(in: 0...15, using: &generator)
                return r < 8 ? 0 : (r < 13 ? r - 8 : UInt8.random(in: 0...255, using: &generator))
            }
            let escaped = RBSP.insertEmulationPrevention(data)
            #expect(extract(escaped) == data, "round \(round)")
            // No start code prefix and no 00 00 0x (x <= 2) survives escaping.
            for i in 0..<max(0, escaped.count - 2) {
                #expect(!(escaped[i] == 0 && escaped[i + 1] == 0 && escaped[i + 2] <= 2))
            }
            let (rbsp, removed) = escaped.withUnsafeBytes { RBSP.extractRBSPWithRemovedPositions(from: $0) }
            #expect(rbsp == data)
            #expect(removed.count == escaped.count - data.count)
            for position in removed { #expect(escaped[position] == 3) }
        }
    }

    /// extractRBSP copies runs between 0x03 bytes (memchr); on any bytes, escaped or not, and any
    /// bound it gives what the byte-by-byte rule gives (extractRBSPWithRemovedPositions).
    @Test func extractionMatchesTheByteByByteRuleOnArbitraryData() {
        var generator = SeededGenerator(seed: 7)
        for round in 0..<2000 {
            let count = Int.random(in: 0...120, using: &generator)
            let data: [UInt8] = (0..<count).map { _ in
                let r = UInt8.random(in: 0...9, using: &generator)
                return r < 5 ? 0 : (r < 8 ? 3 : UInt8.random(in: 0...255, using: &generator))
            }
            let maxBytes = Bool.random(using: &generator) ? Int.max : Int.random(in: -1...130, using: &generator)
            let reference = data.withUnsafeBytes {
                RBSP.extractRBSPWithRemovedPositions(from: $0, maxBytes: maxBytes).rbsp
            }
            #expect(RBSP.extractRBSP(from: data, maxBytes: maxBytes) == reference, "round \(round)")
        }
    }

    @Test func escapedBitOffsets() {
        // RBSP 00 00 00 01 ff -> escaped 00 00 03 00 01 ff (a 03 before RBSP byte 2).
        let escaped: [UInt8] = [0, 0, 3, 0, 1, 0xFF]
        let (rbsp, removed) = escaped.withUnsafeBytes { RBSP.extractRBSPWithRemovedPositions(from: $0) }
        #expect(rbsp == [0, 0, 0, 1, 0xFF])
        #expect(removed == [2])
        for (bit, expected) in [(0, 0), (15, 15), (16, 24), (17, 25), (39, 47)] {
            #expect(RBSP.escapedBitOffset(forRBSPBitOffset: bit, removedPositions: removed) == expected)
            #expect(escaped.withUnsafeBytes { RBSP.escapedBitOffset(forRBSPBitOffset: bit, in: $0) } == expected)
        }
    }

    @Test func unescapedPayloadIsBounded() {
        let nal: [UInt8] = [0x65, 0, 0, 3, 1, 2, 3, 4]
        let result = nal.withUnsafeBytes { raw in
            RBSP.withUnescapedPayload(of: raw, from: 1, maxBytes: 4) { Array($0) }
        }
        #expect(result == [0, 0, 1, 2])
        let empty = nal.withUnsafeBytes { raw in
            RBSP.withUnescapedPayload(of: raw, from: 9, maxBytes: 4) { Array($0) }
        }
        #expect(empty == [])
    }
}
