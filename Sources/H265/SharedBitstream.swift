// What H.265 shares with H.264 (the bit reader and writer, RBSP emulation prevention, start-code
// scanning, length-prefixed framing) lives in the NALBitstream module; it is re-exported so that
// `import H265` alone gives a user `AnnexB`, `RBSP` and `BitWriter` too, as `import H264` does.
//
// Every public type of this module starts with `H265` (or is named after ISO/IEC 14496-15, like
// `HEVCDecoderConfigurationRecord`): a file that imports both H264 and H265 (a session that takes
// either codec) then needs no module-qualified names.
@_exported import NALBitstream

/// The bit reader of the H.265 parsers: the shared reader, reporting `H265Error`s.
public typealias H265BitReader = NALBitReader<H265Error>

/// Parsing a whole NAL unit: the two-byte header (7.3.1.2), then the escaped RBSP.
enum H265NALUnitParsing {
    /// Checks the header, unescapes at most `maxBytes` of the payload after it and hands both
    /// to `body`. Header problems (a NAL unit of another type, a forbidden_zero_bit) throw
    /// before any payload is read.
    static func parse<Parsed>(
        nalUnit: UnsafeRawBufferPointer, expecting expected: H265NALUnitType, maxBytes: Int,
        _ body: (inout H265BitReader, H265NALUnitHeader) throws(H265Error) -> Parsed
    ) throws(H265Error) -> Parsed {
        let header = try H265NALUnitHeader(parsing: nalUnit)
        guard header.nalUnitType == expected else {
            throw H265Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        return try RBSP.withUnescapedPayload(of: nalUnit, from: H265NALUnitHeader.byteCount, maxBytes: maxBytes) {
            rbsp in
            Result { () throws(H265Error) -> Parsed in
                var reader = H265BitReader(rbsp)
                return try body(&reader, header)
            }
        }.get()
    }

    /// `parse(nalUnit:expecting:maxBytes:_:)` for an array.
    static func parse<Parsed>(
        nalUnit: [UInt8], expecting expected: H265NALUnitType, maxBytes: Int,
        _ body: (inout H265BitReader, H265NALUnitHeader) throws(H265Error) -> Parsed
    ) throws(H265Error) -> Parsed {
        try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H265Error) -> Parsed in
                try parse(nalUnit: bytes, expecting: expected, maxBytes: maxBytes, body)
            }
        }.get()
    }
}

/// Ceil(Log2(x)) (5.7) for x >= 1: the length of u(v) elements that index one of x things.
func ceilLog2(_ value: Int) -> Int {
    guard value > 1 else { return 0 }
    return Int.bitWidth &- (value &- 1).leadingZeroBitCount
}
