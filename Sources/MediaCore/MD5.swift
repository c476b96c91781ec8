/// MD5 (RFC 1321), for comparing decoded pictures with reference digests: the corpus's, and the
/// decoded picture hash SEI of H.265 (D.3.19) that vtdec's verify-picture-hash checks. MD5 is
/// what the conformance suites publish, not a security measure.
public struct MD5: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476)
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    public init() {}

    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21
    ]
    private static let constants: [UInt32] = (0..<64).map { index in
        // K[i] = floor(2^32 * |sin(i + 1)|)
        UInt32(truncatingIfNeeded: Int64((abs(sine(Double(index + 1))) * 4_294_967_296.0).rounded(.down)))
    }

    /// sin(x) by its Taylor series after range reduction (no Foundation here); exact enough for
    /// the 32 bits the constants need.
    private static func sine(_ x: Double) -> Double {
        let twoPi = 6.283_185_307_179_586_476_925
        var y = x.truncatingRemainder(dividingBy: twoPi)
        if y > twoPi / 2 { y -= twoPi }
        var term = y
        var sum = y
        for n in 1..<30 {
            term *= -y * y / Double((2 * n) * (2 * n + 1))
            sum += term
        }
        return sum
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0..<take])
            offset = take
            if pending.count == 64 {
                pending.withUnsafeBytes { process($0) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        while bytes.count - offset >= 64 {
            process(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 64)]))
            offset += 64
        }
        if offset < bytes.count { pending.append(contentsOf: bytes[offset...]) }
    }

    public mutating func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The 16-byte digest of everything given so far (the hasher is spent afterwards).
    public mutating func finalizeDigest() -> [UInt8] {
        let bitLength = length &* 8
        var padding: [UInt8] = [0x80]
        let used = (pending.count + 1) % 64
        padding += [UInt8](repeating: 0, count: (used <= 56 ? 56 - used : 120 - used))
        for shift in stride(from: 0, to: 64, by: 8) {
            padding.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        let savedLength = length
        update(padding)
        length = savedLength
        var digest: [UInt8] = []
        digest.reserveCapacity(16)
        for word in [state.0, state.1, state.2, state.3] {
            for byteIndex in 0..<4 { digest.append(UInt8(truncatingIfNeeded: word >> UInt32(8 * byteIndex))) }
        }
        return digest
    }

    /// The digest in lower-case hexadecimal.
    public mutating func finalize() -> String {
        let digits: [Character] = Array("0123456789abcdef")
        var text = ""
        for byte in finalizeDigest() {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return text
    }

    private mutating func process(_ block: UnsafeRawBufferPointer) {
        // The block's words are read where they are (little-endian, RFC 1321 3.4), no array.
        func words(_ index: Int) -> UInt32 {
            block.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self).littleEndian
        }
        var (a, b, c, d) = state
        for index in 0..<64 {
            var f: UInt32
            let g: Int
            switch index {
            case 0..<16:
                f = (b & c) | (~b & d)
                g = index
            case 16..<32:
                f = (d & b) | (~d & c)
                g = (5 * index + 1) % 16
            case 32..<48:
                f = b ^ c ^ d
                g = (3 * index + 5) % 16
            default:
                f = c ^ (b | ~d)
                g = (7 * index) % 16
            }
            f = f &+ a &+ Self.constants[index] &+ words(g)
            a = d
            d = c
            c = b
            let shift = Self.shifts[index]
            b = b &+ ((f << shift) | (f >> (32 - shift)))
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
    }

    public static func hex(of bytes: [UInt8]) -> String {
        var hash = MD5()
        hash.update(bytes)
        return hash.finalize()
    }
}
