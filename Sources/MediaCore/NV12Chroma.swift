/// NV12's interleaved chroma, for readers of device pictures that hand out I420.
public enum NV12Chroma {
    /// NV12's interleaved CbCr row into I420's two planes, 32 bytes (16 pairs) at a time: SIMD
    /// loads and the even/odd halves, which the compiler turns into byte shuffles (pshufb/unpck
    /// on x86, uzp on ARM), then the remaining pairs one by one.
    public static func deinterleave(
        _ source: UnsafeRawPointer, u: UnsafeMutableRawPointer, v: UnsafeMutableRawPointer, count: Int
    ) {
        var column = 0
        while column + 16 <= count {
            let pairs = source.loadUnaligned(fromByteOffset: 2 * column, as: SIMD32<UInt8>.self)
            u.storeBytes(of: pairs.evenHalf, toByteOffset: column, as: SIMD16<UInt8>.self)
            v.storeBytes(of: pairs.oddHalf, toByteOffset: column, as: SIMD16<UInt8>.self)
            column += 16
        }
        while column < count {
            u.storeBytes(
                of: source.load(fromByteOffset: 2 * column, as: UInt8.self), toByteOffset: column, as: UInt8.self)
            v.storeBytes(
                of: source.load(fromByteOffset: 2 * column + 1, as: UInt8.self), toByteOffset: column, as: UInt8.self)
            column += 1
        }
    }
}
