import H264
import Testing

/// 7.4.1.2.3 and 7.4.1.2.4 on hand-made streams: each test is one rule.
@Suite("Access-unit assembly rules")
struct AccessUnitAssemblyTests {
    typealias Slice = SyntheticStream.Slice

    /// Pushes NAL units and returns, per access unit, the NAL unit types it holds and its picture.
    static func assemble(_ units: [[UInt8]]) -> (
        groups: [[UInt8]], pictures: [AccessUnitPicture], problems: [H264Error]
    ) {
        var assembler = AccessUnitAssembler()
        var groups: [[UInt8]] = []
        var pictures: [AccessUnitPicture] = []
        var problems: [H264Error] = []
        for unit in units {
            let step = unit.withUnsafeBytes { assembler.push(nalUnit: $0) }
            if let problem = step.problem { problems.append(problem) }
            if step.startsNewAccessUnit { groups.append([]) }
            if let picture = step.completedPicture { pictures.append(picture) }
            if !groups.isEmpty { groups[groups.count - 1].append(unit[0] & 0x1F) }
        }
        if let last = assembler.finish() { pictures.append(last) }
        return (groups, pictures, problems)
    }

    static let header = [SyntheticStream.sequenceParameterSet(), SyntheticStream.pictureParameterSet()]

    @Test("a new picture is found by frame_num even when its first slice is not macroblock 0 (ASO)")
    func arbitrarySliceOrder() {
        let result = Self.assemble(
            Self.header + [
                SyntheticStream.slice(Slice(isIDR: true, firstMb: 0)),
                SyntheticStream.slice(Slice(isIDR: true, firstMb: 2)),
                SyntheticStream.slice(Slice(firstMb: 2, frameNum: 1, picOrderCntLsb: 2)),
                SyntheticStream.slice(Slice(firstMb: 0, frameNum: 1, picOrderCntLsb: 2))
            ])
        #expect(result.problems.isEmpty)
        #expect(result.groups == [[7, 8, 5, 5], [1, 1]])
        #expect(result.pictures.map(\.sliceCount) == [2, 2])
        #expect(result.pictures.map(\.isIDR) == [true, false])
    }

    @Test("same frame_num, different pic_order_cnt_lsb: two non-reference pictures")
    func pictureOrderCountDifference() {
        let result = Self.assemble(
            Self.header + [
                SyntheticStream.slice(Slice(isIDR: true)),
                SyntheticStream.slice(Slice(nalRefIdc: 0, frameNum: 1, picOrderCntLsb: 2)),
                SyntheticStream.slice(Slice(nalRefIdc: 0, frameNum: 1, picOrderCntLsb: 4))
            ])
        #expect(result.groups.count == 3)
        #expect(result.pictures.map(\.pictureOrderCount.picOrderCnt) == [0, 2, 4])
    }

    @Test("nal_ref_idc changing between zero and non-zero starts a new picture")
    func referenceIndicatorDifference() {
        let result = Self.assemble(
            Self.header + [
                SyntheticStream.slice(Slice(isIDR: true)),
                SyntheticStream.slice(Slice(nalRefIdc: 2, frameNum: 1, picOrderCntLsb: 4)),
                SyntheticStream.slice(Slice(nalRefIdc: 0, frameNum: 1, picOrderCntLsb: 4))
            ])
        #expect(result.groups.count == 3)
    }

    @Test("consecutive IDR pictures are told apart by idr_pic_id")
    func consecutiveIDRs() {
        let result = Self.assemble(
            Self.header + [
                SyntheticStream.slice(Slice(isIDR: true, idrPicID: 0)),
                SyntheticStream.slice(Slice(isIDR: true, firstMb: 2, idrPicID: 0)),
                SyntheticStream.slice(Slice(isIDR: true, idrPicID: 1))
            ])
        #expect(result.groups == [[7, 8, 5, 5], [5]])
        #expect(result.pictures.map(\.pictureOrderCountEpoch) == [1, 2])
    }

    @Test("a redundant coded picture stays in the access unit of its primary picture")
    func redundantPicture() {
        let result = Self.assemble([
            SyntheticStream.sequenceParameterSet(), SyntheticStream.pictureParameterSet(redundantPicCntPresent: true),
            SyntheticStream.slice(Slice(isIDR: true, redundantPicCnt: 0)),
            SyntheticStream.slice(Slice(isIDR: true, idrPicID: 0, redundantPicCnt: 1)),
            SyntheticStream.slice(Slice(frameNum: 1, picOrderCntLsb: 2, redundantPicCnt: 0))
        ])
        #expect(result.problems.isEmpty)
        #expect(result.groups == [[7, 8, 5, 5], [1]])
    }

    @Test("AUD, SEI and parameter sets after a picture begin the next access unit; a recovery point is reported")
    func prefixNALUnitsStartAccessUnits() {
        let result = Self.assemble(
            Self.header + [
                SyntheticStream.slice(Slice(isIDR: true)),
                SyntheticStream.accessUnitDelimiter,
                SyntheticStream.recoveryPointSEI,
                SyntheticStream.slice(Slice(frameNum: 1, picOrderCntLsb: 2)),
                SyntheticStream.sequenceParameterSet(),
                SyntheticStream.slice(Slice(frameNum: 2, picOrderCntLsb: 4))
            ])
        #expect(result.problems.isEmpty)
        #expect(result.groups == [[7, 8, 5], [9, 6, 1], [7, 1]])
        #expect(result.pictures.map(\.recoveryFrameCount) == [nil, 0, nil])
        #expect(result.pictures[1].isRandomAccessPoint)
    }

    @Test("a slice whose PPS never came is reported and does not end the access unit")
    func missingParameterSet() {
        let result = Self.assemble(
            [SyntheticStream.slice(Slice(isIDR: true))] + Self.header + [
                SyntheticStream.slice(Slice(isIDR: true))
            ])
        #expect(result.problems == [.missingParameterSet(kind: "PPS", id: 0)])
        #expect(result.pictures.count == 1)
    }

    @Test("memory_management_control_operation 5 resets POC and opens a new epoch")
    func mmco5() {
        let result = Self.assemble(
            Self.header + [
                SyntheticStream.slice(Slice(isIDR: true)),
                SyntheticStream.slice(Slice(frameNum: 1, picOrderCntLsb: 8, memoryManagementControlOperation5: true)),
                SyntheticStream.slice(Slice(frameNum: 0, picOrderCntLsb: 2))
            ])
        #expect(result.problems.isEmpty)
        #expect(result.pictures.map(\.hasMemoryManagementControlOperation5) == [false, true, false])
        #expect(result.pictures.map(\.pictureOrderCount.picOrderCnt) == [0, 0, 2])
        #expect(result.pictures.map(\.pictureOrderCountEpoch) == [1, 2, 2])
    }
}

@Suite("Picture order count (8.2.1)")
struct PictureOrderCountTests {
    @Test("type 0: the MSB follows wrap-arounds of pic_order_cnt_lsb in both directions")
    func type0WrapAround() throws {
        var calculator = PictureOrderCountCalculator()
        func poc(_ lsb: Int64, idr: Bool = false, ref: UInt8 = 1) throws -> Int64 {
            try calculator.compute(
                PictureOrderCountInputs(
                    picOrderCntType: 0, maxPicOrderCntLsb: 16, isIDR: idr, nalRefIdc: ref, frameNum: 0,
                    picOrderCntLsb: lsb)
            ).picOrderCnt
        }
        #expect(try poc(0, idr: true) == 0)
        #expect(try poc(6) == 6)
        #expect(try poc(12) == 12)
        #expect(try poc(2) == 18) // wrapped forward: 16 + 2
        #expect(try poc(14, ref: 0) == 14) // backwards within half the range
        #expect(try poc(4) == 20) // non-reference pictures do not move prevPicOrderCnt
        #expect(try poc(0, idr: true) == 0)
        #expect(try poc(14) == -2) // wrapped backwards from an IDR
    }

    @Test("type 0 fields: bottom field POC adds delta_pic_order_cnt_bottom for frames")
    func type0Fields() throws {
        var calculator = PictureOrderCountCalculator()
        let frame = try calculator.compute(
            PictureOrderCountInputs(
                picOrderCntType: 0, maxPicOrderCntLsb: 256, isIDR: true, nalRefIdc: 1, frameNum: 0,
                picOrderCntLsb: 0, deltaPicOrderCntBottom: 1))
        #expect(frame.topFieldOrderCnt == 0 && frame.bottomFieldOrderCnt == 1)
        let bottom = try calculator.compute(
            PictureOrderCountInputs(
                picOrderCntType: 0, maxPicOrderCntLsb: 256, isIDR: false, nalRefIdc: 1, frameNum: 1,
                fieldPicFlag: true, bottomFieldFlag: true, picOrderCntLsb: 5))
        #expect(bottom.topFieldOrderCnt == nil && bottom.bottomFieldOrderCnt == 5 && bottom.picOrderCnt == 5)
    }

    @Test("type 1: expected POC from the cycle of offset_for_ref_frame (8-7 to 8-10)")
    func type1() throws {
        var calculator = PictureOrderCountCalculator()
        func poc(_ frameNum: Int64, idr: Bool = false, ref: UInt8 = 1, delta0: Int64 = 0) throws -> Int64 {
            try calculator.compute(
                PictureOrderCountInputs(
                    picOrderCntType: 1, maxFrameNum: 16, offsetForNonRefPic: -1, offsetForTopToBottomField: 0,
                    offsetForRefFrame: [2, 4], isIDR: idr, nalRefIdc: ref, frameNum: frameNum,
                    deltaPicOrderCnt0: delta0)
            ).picOrderCnt
        }
        #expect(try poc(0, idr: true) == 0)
        #expect(try poc(1) == 2) // absFrameNum 1: offset_for_ref_frame[0]
        #expect(try poc(2) == 6) // absFrameNum 2: 2 + 4
        #expect(try poc(3) == 8) // absFrameNum 3: one cycle (6) + 2
        #expect(try poc(4, ref: 0) == 7) // non-ref: absFrameNum 3, expected 8, offset -1
        #expect(try poc(4, delta0: 1) == 13) // absFrameNum 4: 2 cycles (12) + delta 1
    }

    @Test("type 2: POC is twice the frame number, minus one for non-reference pictures, across frame_num wrap")
    func type2() throws {
        var calculator = PictureOrderCountCalculator()
        func poc(_ frameNum: Int64, idr: Bool = false, ref: UInt8 = 1) throws -> Int64 {
            try calculator.compute(
                PictureOrderCountInputs(
                    picOrderCntType: 2, maxFrameNum: 16, isIDR: idr, nalRefIdc: ref, frameNum: frameNum)
            ).picOrderCnt
        }
        #expect(try poc(0, idr: true) == 0)
        #expect(try poc(1) == 2)
        #expect(try poc(2, ref: 0) == 3)
        #expect(try poc(15) == 30)
        #expect(try poc(0) == 32) // FrameNumOffset grew by MaxFrameNum
        #expect(try poc(1) == 34)
    }

    @Test("an invalid pic_order_cnt_type is an error, not a crash")
    func invalidType() {
        var calculator = PictureOrderCountCalculator()
        #expect(throws: H264Error.invalidValue(field: "pic_order_cnt_type", value: 3)) {
            try calculator.compute(PictureOrderCountInputs(picOrderCntType: 3, isIDR: true, nalRefIdc: 1, frameNum: 0))
        }
    }
}
