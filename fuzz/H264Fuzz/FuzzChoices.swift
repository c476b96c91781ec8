/// The fuzz input read as a stream of choices: each call takes the bits it needs from the input,
/// and an exhausted input answers with the smallest value. libFuzzer's mutations of the bytes
/// become mutations of the choices, so coverage guides the generator as it guides a parser.
struct FuzzChoices {
    private let bytes: UnsafeRawBufferPointer
    private var bitPosition = 0

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    /// The next `count` bits (at most 32), most significant first; zeros past the end.
    mutating func bits(_ count: Int) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            var bit: UInt32 = 0
            let byteIndex = bitPosition >> 3
            if byteIndex < bytes.count {
                bit = UInt32(bytes[byteIndex] >> (7 - UInt8(bitPosition & 7))) & 1
            }
            bitPosition += 1
            value = value << 1 | bit
        }
        return value
    }

    mutating func flag() -> Bool { bits(1) == 1 }

    /// A value in `range`: the next bits that cover its width, folded into it.
    mutating func value(in range: ClosedRange<Int>) -> Int {
        let width = UInt64(range.upperBound - range.lowerBound)
        guard width > 0 else { return range.lowerBound }
        var needed = 0
        while needed < 64 && (UInt64(1) << UInt64(needed)) <= width { needed += 1 }
        var raw: UInt64 = 0
        var remaining = needed
        while remaining > 0 {
            let take = min(remaining, 32)
            raw = raw << UInt64(take) | UInt64(bits(take))
            remaining -= take
        }
        return range.lowerBound + Int(raw % (width + 1))
    }

    /// A value in `range`, mostly near its lower end: so that lists, counts and sizes are
    /// small in most inputs and reach their limits in some.
    mutating func smallValue(in range: ClosedRange<Int>) -> Int {
        let upper = flag() ? range.upperBound : min(range.upperBound, range.lowerBound + 3)
        return value(in: range.lowerBound...upper)
    }

    /// One of `options`.
    mutating func element<T>(of options: [T]) -> T {
        options[value(in: 0...(options.count - 1))]
    }

    /// An se(v) value in the full range 7.4 allows for 32-bit elements, -2^31 + 1 ... 2^31 - 1.
    mutating func signed32() -> Int32 {
        Int32(value(in: -Int(Int32.max)...Int(Int32.max)))
    }
}
