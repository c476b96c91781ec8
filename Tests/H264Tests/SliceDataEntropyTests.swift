import Testing

@testable import H264

/// `SliceHeader.entropyEvidence`: the cabac_alignment_one_bits (7.3.4) after a header tell
/// CABAC slice data from CAVLC slice data written under a CABAC PPS.
@Suite("SliceDataEntropyTests")
struct SliceDataEntropyTests {
    /// An I slice of an IDR picture under `context`'s PPS, followed by `data` (bits), then the
    /// RBSP trailing bits; the parsed header and the NAL unit.
    func idrSlice(
        _ base: SliceTestContext, _ layout: HeaderLayout, data: (inout BitWriter) -> Void
    ) throws -> (SliceHeader, [UInt8]) {
        var context = base
        if layout.withoutBottomFieldOrder { context.pps.bottomFieldPicOrderInFramePresentFlag = false }
        var h = SliceHeader()
        h.nalRefIdc = 3
        h.nalUnitType = .codedSliceIDR
        h.sliceType = 7
        h.picParameterSetID = context.pps.picParameterSetID
        h.idrPicID = layout.idrPicID
        var w = try h.write(sequenceParameterSet: context.sps, pictureParameterSet: context.pps)
        data(&w)
        w.writeRBSPTrailingBits()
        let nal = [UInt8(3 << 5) | NALUnitType.codedSliceIDR.rawValue] + RBSP.insertEmulationPrevention(w.bytes)
        return (try context.parse(nal), nal)
    }

    /// What sets the header's length: idr_pic_id (ue(v): 1, 3, 5 ... bits) and whether the PPS
    /// has delta_pic_order_cnt_bottom in slice headers (se(v) of 0: one bit less without).
    struct HeaderLayout {
        var idrPicID = 0
        var withoutBottomFieldOrder = false
    }

    /// A layout that leaves the header a number of bits past a byte boundary that `accepts` takes.
    func layout(_ context: SliceTestContext, where accepts: (Int) -> Bool) throws -> HeaderLayout {
        for withoutBottomFieldOrder in [false, true] {
            for id in 0..<16 {
                let layout = HeaderLayout(idrPicID: id, withoutBottomFieldOrder: withoutBottomFieldOrder)
                let (header, _) = try idrSlice(context, layout) { _ in }
                if accepts(header.headerBitSize % 8) { return layout }
            }
        }
        throw H264Error.unsupported("no header layout found")
    }

    @Test func cabacAlignmentBitsAreConsistent() throws {
        let context = mainContext()
        let (header, nal) = try idrSlice(context, try layout(context) { $0 != 0 }) { w in
            while !w.isByteAligned { w.writeFlag(true) } // cabac_alignment_one_bit
            w.writeBytes([0x12, 0x34])
        }
        #expect(nal.withUnsafeBytes { header.entropyEvidence(nalUnit: $0, pps: context.pps) } == .cabacAlignment)
    }

    @Test func cavlcSliceDataUnderACABACPPSIsCaught() throws {
        let context = mainContext()
        // mb_type I_PCM (25) as ue(v): 000011010, then pcm_alignment_zero_bits: what a CAVLC
        // encoder writes first, where CABAC needs 1 bits up to the byte boundary.
        let (header, nal) = try idrSlice(context, try layout(context) { $0 != 0 }) { w in
            w.writeUE(25)
            w.byteAlignWithZeros()
            w.writeBytes([0x80, 0x80])
        }
        let evidence = nal.withUnsafeBytes { header.entropyEvidence(nalUnit: $0, pps: context.pps) }
        #expect(evidence == .notCABAC(bitOffset: header.headerBitSize))
    }

    @Test func nothingToTellOnAByteBoundaryOrUnderCAVLC() throws {
        var context = mainContext()
        let (aligned, alignedNAL) = try idrSlice(context, try layout(context) { $0 == 0 }) { w in w.writeBytes([0x00]) }
        #expect(alignedNAL.withUnsafeBytes { aligned.entropyEvidence(nalUnit: $0, pps: context.pps) } == .undetermined)
        context.pps.entropyCodingModeFlag = false
        let (header, nal) = try idrSlice(context, HeaderLayout()) { w in w.writeUE(25) }
        #expect(nal.withUnsafeBytes { header.entropyEvidence(nalUnit: $0, pps: context.pps) } == .undetermined)
        // A NAL unit cut inside the header's last byte: no claim either way.
        var cabac = mainContext()
        cabac.pps.entropyCodingModeFlag = true
        let (cut, whole) = try idrSlice(cabac, try layout(cabac) { $0 != 0 }) { w in w.writeUE(25) }
        let truncated = Array(whole.prefix(1 + cut.headerBitSize / 8))
        #expect(truncated.withUnsafeBytes { cut.entropyEvidence(nalUnit: $0, pps: cabac.pps) } == .undetermined)
    }
}
