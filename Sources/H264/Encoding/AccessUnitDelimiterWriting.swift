/// access_unit_delimiter_rbsp() (7.3.2.4): the NAL unit (nal_unit_type 9) that starts an access
/// unit (7.4.1.2.3: when present it is the first NAL unit of its access unit), whose only field
/// says which slice types the primary coded picture holds (7.4.2.4, Table 7-5). H.222.0 (2.14)
/// asks for one before every access unit carried in MPEG-2 transport streams, and x264enc writes
/// one by default.
public enum AccessUnitDelimiter {
    /// primary_pic_type (Table 7-5) for a picture whose slices are of `kinds`: the smallest value
    /// whose set of allowed slice types holds them all (0: I; 1: I, P; 2: I, P, B; 3: SI;
    /// 4: SI, SP; 5: I, SI; 6: I, SI, P, SP; 7: every type).
    public static func primaryPictureType(sliceKinds kinds: some Sequence<SliceKind>) -> UInt8 {
        let present = Set(kinds)
        let switching = present.contains(.si) || present.contains(.sp)
        if present.contains(.b) { return switching ? 7 : 2 }
        if present.contains(.sp) { return present.contains(.i) || present.contains(.p) ? 6 : 4 }
        if present.contains(.p) { return present.contains(.si) ? 6 : 1 }
        if present.contains(.si) { return present.contains(.i) ? 5 : 3 }
        return 0
    }

    /// The AUD for the access unit made of `nalUnits` (each without start code or length):
    /// primary_pic_type from the slice_type of every slice NAL unit (first_mb_in_slice and
    /// slice_type lead the slice header, 7.3.3, so no parameter set is needed to read them). A
    /// slice that cannot be read allows every type (7), which is never wrong.
    public static func nalUnit(forAccessUnit nalUnits: [UnsafeRawBufferPointer]) -> [UInt8] {
        var kinds: [SliceKind] = []
        for unit in nalUnits {
            guard let first = unit.first else { continue }
            switch NALUnitHeader(byte: first).nalUnitType.rawValue {
            case 1, 5: // coded slice of a non-IDR / IDR picture (Table 7-1); not auxiliary (19)
                guard let peeked = try? SliceHeader.peekFirstMBAndPPS(nalUnit: unit),
                    let kind = SliceKind(rawValue: UInt8(truncatingIfNeeded: peeked.sliceType % 5))
                else { return nalUnit(primaryPictureType: 7) }
                kinds.append(kind)
            default:
                continue
            }
        }
        return nalUnit(primaryPictureType: primaryPictureType(sliceKinds: kinds))
    }

    /// The two bytes of the NAL unit: the header (forbidden_zero_bit 0, nal_ref_idc 0 as 7.4.1
    /// requires for nal_unit_type 9, nal_unit_type 9), then primary_pic_type u(3) and
    /// rbsp_trailing_bits (a 1 and four 0 bits). No emulation prevention is needed: neither byte
    /// is 0x00.
    public static func nalUnit(primaryPictureType: UInt8) -> [UInt8] {
        [0x09, (primaryPictureType & 0x07) << 5 | 0x10]
    }
}
