import Testing

@testable import H264

/// access_unit_delimiter_rbsp() (7.3.2.4) as vtenc writes it in front of every access unit.
@Suite("H.264 access unit delimiters")
struct AccessUnitDelimiterTests {
    @Test("primary_pic_type is the smallest Table 7-5 set holding every slice type")
    func primaryPictureTypes() {
        let cases: [([SliceKind], UInt8)] = [
            ([.i], 0), ([], 0), ([.p], 1), ([.i, .p], 1), ([.b], 2), ([.p, .b, .i], 2), ([.si], 3), ([.sp], 4),
            ([.si, .sp], 4), ([.i, .si], 5), ([.p, .si], 6), ([.i, .sp], 6), ([.sp, .b], 7), ([.si, .b], 7)
        ]
        for (kinds, expected) in cases {
            #expect(AccessUnitDelimiter.primaryPictureType(sliceKinds: kinds) == expected, "\(kinds)")
        }
    }

    @Test("the NAL unit: header 0x09, then primary_pic_type and the stop bit; x264's bytes")
    func nalUnitBytes() {
        // x264 writes 09 10 before I, 09 30 before P and 09 50 before B pictures.
        #expect(AccessUnitDelimiter.nalUnit(primaryPictureType: 0) == [0x09, 0x10])
        #expect(AccessUnitDelimiter.nalUnit(primaryPictureType: 1) == [0x09, 0x30])
        #expect(AccessUnitDelimiter.nalUnit(primaryPictureType: 2) == [0x09, 0x50])
        #expect(AccessUnitDelimiter.nalUnit(primaryPictureType: 7) == [0x09, 0xF0])
    }

    @Test("slice types are read from the slices of an access unit; unreadable slices allow every type")
    func fromAccessUnit() {
        // first_mb_in_slice 0 ('1'), slice_type ue(v), pic_parameter_set_id 0 ('1'), then bits.
        let idrI: [UInt8] = [0x65, 0b1_0001000, 0b1_1000000] // slice_type 7 (I, all slices)
        let p: [UInt8] = [0x41, 0b1_1_1_10000] // slice_type 0 (P)
        let b: [UInt8] = [0x01, 0b1_010_1_100] // slice_type 1 (B)
        let sei: [UInt8] = [0x06, 0x05, 0x01, 0x00, 0x80]
        func delimiter(_ units: [[UInt8]]) -> [UInt8] {
            var result: [UInt8] = []
            units.withUnsafeBufferPointerArray { result = AccessUnitDelimiter.nalUnit(forAccessUnit: $0) }
            return result
        }
        #expect(delimiter([sei, idrI]) == [0x09, 0x10])
        #expect(delimiter([p, p]) == [0x09, 0x30])
        #expect(delimiter([b, p]) == [0x09, 0x50])
        #expect(delimiter([[0x01]]) == [0x09, 0xF0]) // a slice with no header bits
    }
}

extension Array where Element == [UInt8] {
    /// Raw buffers over every element, valid inside `body` only.
    fileprivate func withUnsafeBufferPointerArray(_ body: ([UnsafeRawBufferPointer]) -> Void) {
        func nest(_ index: Int, _ collected: [UnsafeRawBufferPointer]) {
            guard index < count else { return body(collected) }
            self[index].withUnsafeBytes { nest(index + 1, collected + [$0]) }
        }
        nest(0, [])
    }
}
