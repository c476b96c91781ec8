/// What the bits right after a slice header say about how its slice_data() is entropy coded.
///
/// An encoder that is asked for CABAC (entropy_coding_mode_flag 1 in the PPS) but writes CAVLC
/// slice data anyway (a hardware encoder that stores the flag and ignores it) produces a stream
/// every decoder misreads. The one place where the two differ in a fixed way is the start of
/// slice_data() (7.3.4): under CABAC, `cabac_alignment_one_bit`s (each 1) fill the rest of the
/// byte the header ends in; under CAVLC the first syntax element starts there (mb_skip_run or
/// mb_type, ue(v), whose code begins with a 0 unless its value is 0).
public enum SliceDataEntropyEvidence: Sendable, Equatable {
    /// The PPS says CABAC and every bit up to the byte boundary is a cabac_alignment_one_bit.
    case cabacAlignment
    /// The PPS says CABAC but the bit at this RBSP bit offset (after the NAL unit header byte),
    /// before the byte boundary, is 0: slice_data() was not written as CABAC.
    case notCABAC(bitOffset: Int)
    /// Nothing to tell: the PPS says CAVLC, or the header ends on a byte boundary (no alignment
    /// bits), or the slice ends before the boundary.
    case undetermined
}

extension SliceHeader {
    /// The evidence in `nalUnit` (this slice's NAL unit, header byte included, escaped) for the
    /// entropy coding of its slice data, given the `pps` the header was parsed with.
    public func entropyEvidence(nalUnit: UnsafeRawBufferPointer, pps: PictureParameterSet) -> SliceDataEntropyEvidence {
        guard pps.entropyCodingModeFlag, headerBitSize % 8 != 0 else { return .undetermined }
        let boundary = (headerBitSize / 8 + 1) * 8
        return RBSP.withUnescapedPayload(of: nalUnit, from: 1, maxBytes: boundary / 8) { rbsp in
            guard rbsp.count * 8 >= boundary else { return .undetermined }
            for offset in headerBitSize..<boundary where (rbsp[offset / 8] >> (7 - UInt8(offset % 8))) & 1 == 0 {
                return .notCABAC(bitOffset: offset)
            }
            return .cabacAlignment
        }
    }
}
