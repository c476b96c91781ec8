import SwiftVTTestSupport
import Testing

@testable import H264

/// Writes slice_header() for `h` under `sps`/`pps` (test-side encoder), returning the RBSP
/// writer so a test can append slice data.
func writeSliceHeader(_ h: SliceHeader, sps: SequenceParameterSet, pps: PictureParameterSet) -> BitWriter {
    var w = BitWriter()
    let kind = h.sliceKind
    w.writeUE(UInt32(h.firstMbInSlice))
    w.writeUE(UInt32(h.sliceType))
    w.writeUE(UInt32(h.picParameterSetID))
    if sps.separateColourPlaneFlag { w.writeBits(UInt32(h.colourPlaneID), count: 2) }
    w.writeBits(UInt32(h.frameNum), count: sps.log2MaxFrameNumMinus4 + 4)
    if !sps.frameMbsOnlyFlag {
        w.writeFlag(h.fieldPicFlag)
        if h.fieldPicFlag { w.writeFlag(h.bottomFieldFlag) }
    }
    if h.idrPicFlag { w.writeUE(UInt32(h.idrPicID)) }
    if sps.picOrderCntType == 0 {
        w.writeBits(UInt32(h.picOrderCntLsb), count: sps.log2MaxPicOrderCntLsbMinus4 + 4)
        if pps.bottomFieldPicOrderInFramePresentFlag && !h.fieldPicFlag { w.writeSE(Int32(h.deltaPicOrderCntBottom)) }
    }
    if sps.picOrderCntType == 1 && !sps.deltaPicOrderAlwaysZeroFlag {
        w.writeSE(Int32(h.deltaPicOrderCnt0))
        if pps.bottomFieldPicOrderInFramePresentFlag && !h.fieldPicFlag { w.writeSE(Int32(h.deltaPicOrderCnt1)) }
    }
    if pps.redundantPicCntPresentFlag { w.writeUE(UInt32(h.redundantPicCnt)) }
    if kind == .b { w.writeFlag(h.directSpatialMvPredFlag) }
    if kind == .p || kind == .sp || kind == .b {
        w.writeFlag(h.numRefIdxActiveOverrideFlag)
        if h.numRefIdxActiveOverrideFlag {
            w.writeUE(UInt32(h.numRefIdxL0ActiveMinus1))
            if kind == .b { w.writeUE(UInt32(h.numRefIdxL1ActiveMinus1)) }
        }
    }
    func modifications(_ flag: Bool, _ list: [RefPicListModification]) {
        w.writeFlag(flag)
        guard flag else { return }
        for m in list {
            w.writeUE(UInt32(m.modificationOfPicNumsIdc))
            w.writeUE(UInt32(m.value))
        }
        w.writeUE(3)
    }
    if !kind.isIntra { modifications(h.refPicListModificationFlagL0, h.refPicListModificationL0) }
    if kind == .b { modifications(h.refPicListModificationFlagL1, h.refPicListModificationL1) }
    if let table = h.predWeightTable {
        w.writeUE(UInt32(table.lumaLog2WeightDenom))
        if sps.chromaArrayType != 0 { w.writeUE(UInt32(table.chromaLog2WeightDenom)) }
        for entries in [table.l0, table.l1] {
            for e in entries {
                w.writeFlag(e.lumaWeightFlag)
                if e.lumaWeightFlag {
                    w.writeSE(Int32(e.lumaWeight))
                    w.writeSE(Int32(e.lumaOffset))
                }
                if sps.chromaArrayType != 0 {
                    w.writeFlag(e.chromaWeightFlag)
                    if e.chromaWeightFlag {
                        for v in [e.chromaWeightCb, e.chromaOffsetCb, e.chromaWeightCr, e.chromaOffsetCr] {
                            w.writeSE(Int32(v))
                        }
                    }
                }
            }
        }
    }
    if h.nalRefIdc != 0 {
        if h.idrPicFlag {
            w.writeFlag(h.noOutputOfPriorPicsFlag)
            w.writeFlag(h.longTermReferenceFlag)
        } else {
            w.writeFlag(h.adaptiveRefPicMarkingModeFlag)
            if h.adaptiveRefPicMarkingModeFlag {
                for op in h.memoryManagementControlOperations {
                    w.writeUE(UInt32(op.operation))
                    switch op {
                    case .markShortTermUnused(let d): w.writeUE(UInt32(d))
                    case .markLongTermUnused(let n): w.writeUE(UInt32(n))
                    case .assignLongTermFrameIdx(let d, let i):
                        w.writeUE(UInt32(d))
                        w.writeUE(UInt32(i))
                    case .setMaxLongTermFrameIdx(let m): w.writeUE(UInt32(m))
                    case .markAllUnused: break
                    case .markCurrentLongTerm(let i): w.writeUE(UInt32(i))
                    }
                }
                w.writeUE(0)
            }
        }
    }
    if pps.entropyCodingModeFlag && !kind.isIntra { w.writeUE(UInt32(h.cabacInitIdc)) }
    w.writeSE(Int32(h.sliceQpDelta))
    if kind == .sp || kind == .si {
        if kind == .sp { w.writeFlag(h.spForSwitchFlag) }
        w.writeSE(Int32(h.sliceQsDelta))
    }
    if pps.deblockingFilterControlPresentFlag {
        w.writeUE(UInt32(h.disableDeblockingFilterIdc))
        if h.disableDeblockingFilterIdc != 1 {
            w.writeSE(Int32(h.sliceAlphaC0OffsetDiv2))
            w.writeSE(Int32(h.sliceBetaOffsetDiv2))
        }
    }
    if pps.numSliceGroupsMinus1 > 0 && (3...5).contains(pps.sliceGroupMapType) {
        let units = sps.picSizeInMapUnits
        let rate = pps.sliceGroupChangeRate
        let maxCycle = (units + rate - 1) / rate
        var bits = 0
        while (1 << bits) - 1 < maxCycle { bits += 1 }
        w.writeBits(UInt32(h.sliceGroupChangeCycle), count: bits)
    }
    return w
}

/// A slice NAL unit: header, then `dataBytes` of slice data (with a stop bit).
func sliceNAL(_ h: SliceHeader, sps: SequenceParameterSet, pps: PictureParameterSet, dataBytes: [UInt8] = [0xA5, 0x5A])
    -> (nal: [UInt8], headerBits: Int)
{
    var w = writeSliceHeader(h, sps: sps, pps: pps)
    let headerBits = w.bitCount
    w.writeBytes(dataBytes)
    w.writeRBSPTrailingBits()
    let headerByte = UInt8(h.nalRefIdc << 5) | h.nalUnitType.rawValue
    return ([headerByte] + RBSP.insertEmulationPrevention(w.bytes), headerBits)
}

/// Fills the values the parser derives, so a written header compares equal to its parse.
func withDerived(_ h: SliceHeader, sps: SequenceParameterSet, pps: PictureParameterSet, headerBits: Int) -> SliceHeader
{
    var e = h
    e.seqParameterSetID = pps.seqParameterSetID
    e.mbaffFrameFlag = sps.mbAdaptiveFrameFieldFlag && !h.fieldPicFlag
    e.maxPicNum = h.fieldPicFlag ? 2 * sps.maxFrameNum : sps.maxFrameNum
    e.sliceQPY = 26 + pps.picInitQpMinus26 + h.sliceQpDelta
    if !h.numRefIdxActiveOverrideFlag {
        e.numRefIdxL0ActiveMinus1 = pps.numRefIdxL0DefaultActiveMinus1
        e.numRefIdxL1ActiveMinus1 = pps.numRefIdxL1DefaultActiveMinus1
    } else if h.sliceKind != .b {
        e.numRefIdxL1ActiveMinus1 = pps.numRefIdxL1DefaultActiveMinus1
    }
    e.headerBitSize = headerBits
    return e
}

struct SliceTestContext {
    var sps: SequenceParameterSet
    var pps: PictureParameterSet

    func parse(_ nal: [UInt8]) throws -> SliceHeader {
        try SliceHeader.parse(
            nalUnit: nal, pictureParameterSets: { $0 == pps.picParameterSetID ? pps : nil },
            sequenceParameterSets: { $0 == sps.seqParameterSetID ? sps : nil })
    }

    /// Writes `h`, parses it back and checks every field.
    @discardableResult
    func roundTrip(_ h: SliceHeader, sourceLocation: SourceLocation = #_sourceLocation) throws -> SliceHeader {
        let (nal, bits) = sliceNAL(h, sps: sps, pps: pps)
        let parsed = try parse(nal)
        var expected = withDerived(h, sps: sps, pps: pps, headerBits: bits)
        expected.escapedHeaderBitSize = parsed.escapedHeaderBitSize
        #expect(parsed == expected, sourceLocation: sourceLocation)
        #expect(parsed.escapedHeaderBitSize >= parsed.headerBitSize, sourceLocation: sourceLocation)
        return parsed
    }
}

func mainContext() -> SliceTestContext {
    var sps = baselineSPS()
    sps.profileIdc = 77
    sps.seqParameterSetID = 1
    sps.log2MaxFrameNumMinus4 = 4
    sps.picOrderCntType = 0
    sps.log2MaxPicOrderCntLsbMinus4 = 2
    sps.maxNumRefFrames = 4
    sps.frameMbsOnlyFlag = false
    sps.mbAdaptiveFrameFieldFlag = true
    var pps = PictureParameterSet()
    pps.picParameterSetID = 7
    pps.seqParameterSetID = 1
    pps.entropyCodingModeFlag = true
    pps.bottomFieldPicOrderInFramePresentFlag = true
    pps.numRefIdxL0DefaultActiveMinus1 = 2
    pps.numRefIdxL1DefaultActiveMinus1 = 1
    pps.weightedPredFlag = true
    pps.weightedBipredIdc = 1
    pps.picInitQpMinus26 = -3
    pps.deblockingFilterControlPresentFlag = true
    pps.redundantPicCntPresentFlag = true
    return SliceTestContext(sps: sps, pps: pps)
}

@Suite("SliceHeaderTests")
struct SliceHeaderTests {
    @Test func idrISlice() throws {
        let context = mainContext()
        var h = SliceHeader()
        h.nalRefIdc = 3
        h.nalUnitType = .codedSliceIDR
        h.sliceType = 7
        h.picParameterSetID = 7
        h.idrPicID = 65535
        h.picOrderCntLsb = 0
        h.deltaPicOrderCntBottom = -1
        h.redundantPicCnt = 127
        h.noOutputOfPriorPicsFlag = true
        h.longTermReferenceFlag = true
        h.sliceQpDelta = 28 // SliceQPY 51
        h.disableDeblockingFilterIdc = 1
        let parsed = try context.roundTrip(h)
        #expect(parsed.sliceKind == .i)
        #expect(parsed.allSlicesOfPictureSameType)
        #expect(parsed.idrPicFlag)
        #expect(parsed.sliceQPY == 51)
        #expect(parsed.numRefIdxL0Active == 0)
        #expect(!parsed.hasMemoryManagementControlOperation5)
    }

    @Test func pSliceWithOverrideModificationsWeightsAndMMCO() throws {
        let context = mainContext()
        var h = SliceHeader()
        h.nalRefIdc = 2
        h.nalUnitType = .codedSliceNonIDR
        h.firstMbInSlice = 100
        h.sliceType = 0
        h.picParameterSetID = 7
        h.frameNum = 255
        h.fieldPicFlag = true
        h.bottomFieldFlag = true
        h.picOrderCntLsb = 63
        h.numRefIdxActiveOverrideFlag = true
        h.numRefIdxL0ActiveMinus1 = 31 // allowed for a field
        h.refPicListModificationFlagL0 = true
        h.refPicListModificationL0 = [
            .init(modificationOfPicNumsIdc: 0, value: 511), .init(modificationOfPicNumsIdc: 1, value: 0),
            .init(modificationOfPicNumsIdc: 2, value: 31)
        ]
        var table = PredWeightTable()
        table.lumaLog2WeightDenom = 7
        table.chromaLog2WeightDenom = 3
        table.l0 = (0..<32).map { i in
            var e = PredWeightTable.Entry()
            e.lumaWeight = 128
            e.chromaWeightCb = 8
            e.chromaWeightCr = 8
            if i % 2 == 0 {
                e.lumaWeightFlag = true
                e.lumaWeight = Int16(-128 + i)
                e.lumaOffset = 127
            }
            if i % 3 == 0 {
                e.chromaWeightFlag = true
                e.chromaWeightCb = -5
                e.chromaOffsetCb = -128
                e.chromaWeightCr = 127
                e.chromaOffsetCr = 3
            }
            return e
        }
        h.predWeightTable = table
        h.adaptiveRefPicMarkingModeFlag = true
        h.memoryManagementControlOperations = [
            .markShortTermUnused(differenceOfPicNumsMinus1: 3), .markLongTermUnused(longTermPicNum: 2),
            .assignLongTermFrameIdx(differenceOfPicNumsMinus1: 0, longTermFrameIdx: 1),
            .setMaxLongTermFrameIdx(maxLongTermFrameIdxPlus1: 4), .markAllUnused,
            .markCurrentLongTerm(longTermFrameIdx: 0)
        ]
        h.cabacInitIdc = 2
        h.sliceQpDelta = -20
        h.sliceAlphaC0OffsetDiv2 = -6
        h.sliceBetaOffsetDiv2 = 6
        let parsed = try context.roundTrip(h)
        #expect(parsed.hasMemoryManagementControlOperation5)
        #expect(parsed.maxPicNum == 512)
        #expect(parsed.numRefIdxL0Active == 32)
        #expect(parsed.refPicListModificationL0[2].longTermPicNum == 31)
        #expect(parsed.refPicListModificationL0[0].absDiffPicNumMinus1 == 511)

        // The same header as a frame: 32 references are too many (7.4.3).
        var frame = h
        frame.fieldPicFlag = false
        frame.bottomFieldFlag = false
        frame.deltaPicOrderCntBottom = 5
        #expect(throws: H264Error.invalidValue(field: "num_ref_idx_l0_active_minus1", value: 31)) {
            try context.parse(sliceNAL(frame, sps: context.sps, pps: context.pps).nal)
        }
    }

    @Test func bSliceWithBothListsAndPOCType1() throws {
        var context = mainContext()
        context.sps.picOrderCntType = 1
        context.sps.offsetForRefFrame = [1, 2]
        context.sps.numRefFramesInPicOrderCntCycle = 2
        context.sps.frameMbsOnlyFlag = true
        context.sps.mbAdaptiveFrameFieldFlag = false
        context.pps.redundantPicCntPresentFlag = false
        var h = SliceHeader()
        h.nalRefIdc = 0
        h.sliceType = 1
        h.picParameterSetID = 7
        h.frameNum = 3
        h.deltaPicOrderCnt0 = -7
        h.deltaPicOrderCnt1 = 9
        h.directSpatialMvPredFlag = true
        h.refPicListModificationFlagL1 = true
        h.refPicListModificationL1 = [.init(modificationOfPicNumsIdc: 1, value: 2)]
        var table = PredWeightTable()
        table.lumaLog2WeightDenom = 0
        table.chromaLog2WeightDenom = 0
        var plain = PredWeightTable.Entry()
        plain.lumaWeight = 1
        plain.chromaWeightCb = 1
        plain.chromaWeightCr = 1
        table.l0 = Array(repeating: plain, count: 3)
        table.l1 = Array(repeating: plain, count: 2)
        table.l1[1].lumaWeightFlag = true
        table.l1[1].lumaWeight = 3
        h.predWeightTable = table
        h.cabacInitIdc = 1
        h.disableDeblockingFilterIdc = 2
        h.sliceAlphaC0OffsetDiv2 = 1
        let parsed = try context.roundTrip(h)
        #expect(parsed.sliceKind == .b)
        #expect(!parsed.allSlicesOfPictureSameType)
        #expect(parsed.numRefIdxL1Active == 2)
        #expect(!parsed.isReference)
    }

    @Test func spSliceSeparatePlanesAndSliceGroupChangeCycle() throws {
        var sps = baselineSPS()
        sps.profileIdc = 244
        sps.chromaFormatIdc = 3
        sps.separateColourPlaneFlag = true
        sps.picOrderCntType = 2
        var pps = PictureParameterSet()
        pps.numSliceGroupsMinus1 = 1
        pps.sliceGroupMapType = 4
        pps.sliceGroupChangeRateMinus1 = 9 // 396 / 10 -> up to 40, 6 bits
        pps.picInitQsMinus26 = 0
        let context = SliceTestContext(sps: sps, pps: pps)
        var h = SliceHeader()
        h.nalRefIdc = 1
        h.sliceType = 3
        h.colourPlaneID = 2
        h.frameNum = 9
        h.spForSwitchFlag = true
        h.sliceQsDelta = 25
        h.sliceGroupChangeCycle = 40
        try context.roundTrip(h)
        h.sliceType = 9
        h.nalUnitType = .codedSliceIDR
        h.sliceQsDelta = -26
        h.spForSwitchFlag = false
        h.sliceGroupChangeCycle = 0
        try context.roundTrip(h)
        h.sliceGroupChangeCycle = 41
        #expect(throws: H264Error.invalidValue(field: "slice_group_change_cycle", value: 41)) {
            try context.parse(sliceNAL(h, sps: sps, pps: pps).nal)
        }
    }

    @Test func escapedHeaderSizeCountsEmulationPrevention() throws {
        // frame_num 0 and pic_order_cnt_lsb 0 with 16-bit fields produce 00 00 runs.
        var sps = baselineSPS()
        sps.log2MaxFrameNumMinus4 = 12
        sps.picOrderCntType = 0
        sps.log2MaxPicOrderCntLsbMinus4 = 12
        let pps = PictureParameterSet()
        let context = SliceTestContext(sps: sps, pps: pps)
        var h = SliceHeader()
        h.nalRefIdc = 1
        h.sliceType = 5
        let (nal, bits) = sliceNAL(h, sps: sps, pps: pps, dataBytes: [0, 0, 1])
        let parsed = try context.parse(nal)
        #expect(parsed.headerBitSize == bits)
        let (_, removed) = nal.withUnsafeBytes {
            RBSP.extractRBSPWithRemovedPositions(from: UnsafeRawBufferPointer(rebasing: $0[1...]))
        }
        #expect(!removed.isEmpty)
        #expect(parsed.escapedHeaderBitSize == RBSP.escapedBitOffset(forRBSPBitOffset: bits, removedPositions: removed))
        #expect(parsed.escapedHeaderBitSize > parsed.headerBitSize)
        // The bits at the escaped offset are the slice data: 0x00 0x00 0x(03) 0x01.
        let escapedPayload = Array(nal.dropFirst())
        let dataStart = escapedPayload.withUnsafeBytes { raw -> UInt32? in
            var r = BitReader(raw)
            try? r.skipBits(parsed.escapedHeaderBitSize)
            return try? r.readBits(16)
        }
        #expect(dataStart == 0)
    }

    @Test func errorsAndFastPaths() throws {
        let context = mainContext()
        var h = SliceHeader()
        h.nalRefIdc = 1
        h.firstMbInSlice = 33
        h.sliceType = 2
        h.picParameterSetID = 7
        let (nal, _) = sliceNAL(h, sps: context.sps, pps: context.pps)
        let peek = try nal.withUnsafeBytes { try SliceHeader.peekFirstMBAndPPS(nalUnit: $0) }
        #expect(peek.firstMbInSlice == 33 && peek.sliceType == 2 && peek.ppsID == 7)

        #expect(throws: H264Error.missingParameterSet(kind: "PPS", id: 7)) {
            try SliceHeader.parse(nalUnit: nal, pictureParameterSets: { _ in nil }, sequenceParameterSets: { _ in nil })
        }
        #expect(throws: H264Error.missingParameterSet(kind: "SPS", id: 1)) {
            try SliceHeader.parse(
                nalUnit: nal, pictureParameterSets: { _ in context.pps }, sequenceParameterSets: { _ in nil })
        }
        var ext = nal
        ext[0] = 0x74 // nal_unit_type 20
        do {
            _ = try context.parse(ext)
            Issue.record("nal_unit_type 20 parsed")
        } catch {
            if case .unsupported = error as? H264Error {} else { Issue.record("expected .unsupported, got \(error)") }
        }
        // IDR with a P slice type, or nal_ref_idc 0.
        var idr = h
        idr.nalUnitType = .codedSliceIDR
        idr.sliceType = 0
        #expect(throws: H264Error.invalidValue(field: "slice_type", value: 0)) {
            try context.parse(sliceNAL(idr, sps: context.sps, pps: context.pps).nal)
        }
        idr.sliceType = 2
        idr.nalRefIdc = 0
        #expect(throws: H264Error.invalidValue(field: "nal_ref_idc", value: 0)) {
            try context.parse(sliceNAL(idr, sps: context.sps, pps: context.pps).nal)
        }
        // first_mb_in_slice beyond the picture (MBAFF frame of 22 x 36 MBs: 396 pairs).
        var far = h
        far.firstMbInSlice = 396
        #expect(throws: H264Error.invalidValue(field: "first_mb_in_slice", value: 396)) {
            try context.parse(sliceNAL(far, sps: context.sps, pps: context.pps).nal)
        }
        // Slice QP out of range.
        var qp = h
        qp.sliceQpDelta = 29
        #expect(throws: H264Error.invalidValue(field: "slice_qp_delta", value: 29)) {
            try context.parse(sliceNAL(qp, sps: context.sps, pps: context.pps).nal)
        }
        // Truncated inside the header.
        var big = h
        big.sliceType = 0
        big.memoryManagementControlOperations = [.markAllUnused]
        big.adaptiveRefPicMarkingModeFlag = true
        let w = writeSliceHeader(big, sps: context.sps, pps: context.pps)
        let full = [UInt8(0x21)] + RBSP.insertEmulationPrevention(w.bytes)
        for length in 0..<(full.count - 1) {
            #expect(throws: H264Error.self) { try context.parse(Array(full[0..<length])) }
        }
    }

    @Test func largeHeaderNeedsTheRetryPath() throws {
        // 32 weighted entries per list and many MMCOs: more than 256 bytes of header.
        var context = mainContext()
        context.pps.numRefIdxL0DefaultActiveMinus1 = 31
        context.pps.numRefIdxL1DefaultActiveMinus1 = 31
        var h = SliceHeader()
        h.nalRefIdc = 1
        h.sliceType = 1
        h.picParameterSetID = 7
        h.fieldPicFlag = true
        h.frameNum = 1
        var table = PredWeightTable()
        table.lumaLog2WeightDenom = 7
        table.chromaLog2WeightDenom = 7
        var e = PredWeightTable.Entry()
        e.lumaWeightFlag = true
        e.lumaWeight = -128
        e.lumaOffset = -128
        e.chromaWeightFlag = true
        e.chromaWeightCb = -128
        e.chromaOffsetCb = -128
        e.chromaWeightCr = -128
        e.chromaOffsetCr = -128
        table.l0 = Array(repeating: e, count: 32)
        table.l1 = Array(repeating: e, count: 32)
        h.predWeightTable = table
        h.adaptiveRefPicMarkingModeFlag = true
        h.memoryManagementControlOperations = Array(
            repeating: .assignLongTermFrameIdx(differenceOfPicNumsMinus1: 511, longTermFrameIdx: 15), count: 66)
        let parsed = try context.roundTrip(h)
        #expect(parsed.headerBitSize > 256 * 8)
        // 67 operations are refused.
        h.memoryManagementControlOperations.append(.markAllUnused)
        #expect(throws: H264Error.self) { try context.parse(sliceNAL(h, sps: context.sps, pps: context.pps).nal) }
    }

    @Test func bitFlipsNeverTrap() throws {
        let context = mainContext()
        var h = SliceHeader()
        h.nalRefIdc = 2
        h.sliceType = 0
        h.picParameterSetID = 7
        h.frameNum = 5
        h.numRefIdxActiveOverrideFlag = true
        h.numRefIdxL0ActiveMinus1 = 3
        h.predWeightTable = PredWeightTable()
        h.predWeightTable?.l0 = Array(repeating: PredWeightTable.Entry(), count: 4).map {
            var e = $0
            e.lumaWeight = 1
            e.chromaWeightCb = 1
            e.chromaWeightCr = 1
            return e
        }
        let (nal, _) = sliceNAL(h, sps: context.sps, pps: context.pps)
        var generator = SeededGenerator(seed: 5)
        var parsedCount = 0
        for _ in 0..<5000 {
            var bytes = nal
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let i = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[i] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
            }
            if Bool.random(using: &generator) { bytes.removeLast(Int.random(in: 0..<bytes.count, using: &generator)) }
            if (try? context.parse(bytes)) != nil { parsedCount += 1 }
            _ = try? bytes.withUnsafeBytes { try SliceHeader.peekFirstMBAndPPS(nalUnit: $0) }
        }
        #expect(parsedCount > 0)
    }

    // MARK: Corpus

    @Test(.requiresCorpus) func corpusFirstSlicesParse() throws {
        guard let manifest = Corpus.manifest() else { return }
        var checkedFiles = 0
        for entry in manifest where !entry.isDamaged {
            let bytes = try #require(Corpus.bytes(of: entry))
            var spsByID: [Int: SequenceParameterSet] = [:]
            var ppsByID: [Int: PictureParameterSet] = [:]
            var slices = 0
            var sawIDR = false
            for nal in TestNALUnits.split(bytes) {
                let unit = Array(nal)
                switch unit[0] & 0x1F {
                case 7:
                    let sps = try SequenceParameterSet.parse(nalUnit: unit)
                    spsByID[sps.seqParameterSetID] = sps
                case 8:
                    let pps = try PictureParameterSet.parse(nalUnit: unit, sequenceParameterSets: { spsByID[$0] })
                    ppsByID[pps.picParameterSetID] = pps
                case 1, 5:
                    let header = try SliceHeader.parse(
                        nalUnit: unit, pictureParameterSets: { ppsByID[$0] }, sequenceParameterSets: { spsByID[$0] })
                    if header.idrPicFlag && !sawIDR {
                        sawIDR = true
                        #expect(header.sliceKind == .i, "\(entry.file): first IDR slice is \(header.sliceKind)")
                    }
                    #expect(header.escapedHeaderBitSize >= header.headerBitSize)
                    #expect(header.headerBitSize < (unit.count - 1) * 8, "\(entry.file)")
                    let peek = try unit.withUnsafeBytes { try SliceHeader.peekFirstMBAndPPS(nalUnit: $0) }
                    #expect(peek.firstMbInSlice == header.firstMbInSlice && peek.ppsID == header.picParameterSetID)
                    slices += 1
                case 6:
                    let sei = try SEI.parse(
                        nalUnit: unit, activeSequenceParameterSetID: spsByID.keys.first,
                        sequenceParameterSets: { spsByID[$0] })
                    #expect(sei.error == nil, "\(entry.file): SEI error \(String(describing: sei.error))")
                default:
                    break
                }
                if slices >= 40 { break }
            }
            #expect(slices > 0, "\(entry.file): no slices parsed")
            checkedFiles += 1
        }
        #expect(checkedFiles >= 15)
    }
}
