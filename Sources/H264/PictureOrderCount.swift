/// What the picture order count process (8.2.1) needs to know about one picture: fields of its
/// first slice header and of the active SPS/PPS. Kept apart from the full headers so the
/// calculator can be driven (and tested) with exactly these values.
public struct PictureOrderCountInputs: Hashable, Sendable {
    // From the SPS.
    public var picOrderCntType: Int
    /// MaxPicOrderCntLsb = 2^(log2_max_pic_order_cnt_lsb_minus4 + 4) (7-11); type 0 only.
    public var maxPicOrderCntLsb: Int64
    /// MaxFrameNum = 2^(log2_max_frame_num_minus4 + 4) (7-10).
    public var maxFrameNum: Int64
    public var offsetForNonRefPic: Int64
    public var offsetForTopToBottomField: Int64
    /// offset_for_ref_frame[i], i < num_ref_frames_in_pic_order_cnt_cycle.
    public var offsetForRefFrame: [Int64]
    // From the slice header / NAL unit header.
    public var isIDR: Bool
    public var nalRefIdc: UInt8
    public var frameNum: Int64
    public var fieldPicFlag: Bool
    public var bottomFieldFlag: Bool
    public var picOrderCntLsb: Int64
    public var deltaPicOrderCntBottom: Int64
    public var deltaPicOrderCnt0: Int64
    public var deltaPicOrderCnt1: Int64
    /// The picture's dec_ref_pic_marking holds memory_management_control_operation 5.
    public var hasMemoryManagementControlOperation5: Bool

    public init(
        picOrderCntType: Int, maxPicOrderCntLsb: Int64 = 16, maxFrameNum: Int64 = 16,
        offsetForNonRefPic: Int64 = 0, offsetForTopToBottomField: Int64 = 0, offsetForRefFrame: [Int64] = [],
        isIDR: Bool, nalRefIdc: UInt8, frameNum: Int64, fieldPicFlag: Bool = false, bottomFieldFlag: Bool = false,
        picOrderCntLsb: Int64 = 0, deltaPicOrderCntBottom: Int64 = 0, deltaPicOrderCnt0: Int64 = 0,
        deltaPicOrderCnt1: Int64 = 0, hasMemoryManagementControlOperation5: Bool = false
    ) {
        self.picOrderCntType = picOrderCntType
        self.maxPicOrderCntLsb = maxPicOrderCntLsb
        self.maxFrameNum = maxFrameNum
        self.offsetForNonRefPic = offsetForNonRefPic
        self.offsetForTopToBottomField = offsetForTopToBottomField
        self.offsetForRefFrame = offsetForRefFrame
        self.isIDR = isIDR
        self.nalRefIdc = nalRefIdc
        self.frameNum = frameNum
        self.fieldPicFlag = fieldPicFlag
        self.bottomFieldFlag = bottomFieldFlag
        self.picOrderCntLsb = picOrderCntLsb
        self.deltaPicOrderCntBottom = deltaPicOrderCntBottom
        self.deltaPicOrderCnt0 = deltaPicOrderCnt0
        self.deltaPicOrderCnt1 = deltaPicOrderCnt1
        self.hasMemoryManagementControlOperation5 = hasMemoryManagementControlOperation5
    }
}

/// The result of 8.2.1 for one picture.
public struct PictureOrderCount: Hashable, Sendable {
    /// TopFieldOrderCnt; nil for a bottom field picture.
    public var topFieldOrderCnt: Int64?
    /// BottomFieldOrderCnt; nil for a top field picture.
    public var bottomFieldOrderCnt: Int64?

    public init(topFieldOrderCnt: Int64? = nil, bottomFieldOrderCnt: Int64? = nil) {
        self.topFieldOrderCnt = topFieldOrderCnt
        self.bottomFieldOrderCnt = bottomFieldOrderCnt
    }
    /// PicOrderCnt(CurrPic) (8-1): the smaller of the two for a frame, the field's own otherwise.
    public var picOrderCnt: Int64 {
        switch (topFieldOrderCnt, bottomFieldOrderCnt) {
        case (let top?, let bottom?): return min(top, bottom)
        case (let top?, nil): return top
        case (nil, let bottom?): return bottom
        case (nil, nil): return 0
        }
    }
}

/// The decoding process for picture order count, 8.2.1, for all three pic_order_cnt_type values.
///
/// Feed pictures in decoding order, one call per primary coded picture (per field for field
/// pictures). The state carried between pictures is the "prev" variables of 8.2.1.1 to 8.2.1.3.
/// POC values restart at every IDR picture and after a picture with
/// memory_management_control_operation 5; `epoch` counts those restarts so that a caller
/// ordering pictures for output can compare (epoch, POC) pairs.
public struct PictureOrderCountCalculator: Sendable {
    // 8.2.1.1 (type 0)
    private var prevPicOrderCntMsb: Int64 = 0
    private var prevPicOrderCntLsb: Int64 = 0
    // 8.2.1.2 / 8.2.1.3 (types 1 and 2)
    private var prevFrameNumOffset: Int64 = 0
    private var prevFrameNum: Int64 = 0
    /// The previous picture (in decoding order) had memory_management_control_operation 5.
    private var prevHadMMCO5 = false
    /// For type 0 after MMCO 5: whether that picture was a bottom field, and its TopFieldOrderCnt
    /// after the reset of 8.2.1 ("tempPicOrderCnt").
    private var prevReferenceWasBottomFieldWithMMCO5 = false
    private var prevReferenceTopAfterMMCO5: Int64 = 0

    /// Incremented at every IDR picture and after every MMCO 5 picture.
    public private(set) var epoch = 0

    /// The POC of the last computed picture as it is while that picture is decoded. It differs
    /// from what ``compute(_:)`` returned only for a picture with MMCO 5: 8.2.1 takes its POC
    /// relative to itself ("tempPicOrderCnt") only after it is decoded, so its own inter
    /// prediction (temporal direct, implicit weights) still uses this value.
    public private(set) var lastPictureOrderCountWhileDecoding = PictureOrderCount()

    public init() {}

    /// Computes the POC of the next picture in decoding order and updates the state.
    public mutating func compute(_ picture: PictureOrderCountInputs) throws(H264Error) -> PictureOrderCount {
        if picture.isIDR { epoch += 1 }
        // C.4.4: a picture with MMCO 5 is output after every earlier picture, like an IDR; its
        // POC is reset relative to itself below, so it opens the new epoch.
        if picture.hasMemoryManagementControlOperation5 && !picture.isIDR { epoch += 1 }
        var result: PictureOrderCount
        switch picture.picOrderCntType {
        case 0: result = computeType0(picture)
        case 1: result = try computeType1(picture)
        case 2: result = computeType2(picture)
        default:
            throw H264Error.invalidValue(field: "pic_order_cnt_type", value: Int64(picture.picOrderCntType))
        }
        lastPictureOrderCountWhileDecoding = result
        finish(picture, result: &result)
        return result
    }

    /// 8.2.1.1: type 0, the POC LSBs are sent and the MSBs are inferred from wrap-arounds.
    private mutating func computeType0(_ picture: PictureOrderCountInputs) -> PictureOrderCount {
        var prevMsb = prevPicOrderCntMsb
        var prevLsb = prevPicOrderCntLsb
        if picture.isIDR {
            prevMsb = 0
            prevLsb = 0
        } else if prevHadMMCO5 {
            // The previous reference picture had MMCO 5: 8.2.1.1 resets prevPicOrderCntMsb and
            // takes prevPicOrderCntLsb from its TopFieldOrderCnt unless it was a bottom field.
            prevMsb = 0
            prevLsb = prevReferenceWasBottomFieldWithMMCO5 ? 0 : prevReferenceTopAfterMMCO5
        }
        let lsb = picture.picOrderCntLsb
        let max = picture.maxPicOrderCntLsb
        let msb: Int64
        // (8-3)
        if lsb < prevLsb && (prevLsb - lsb) >= max / 2 {
            msb = prevMsb &+ max
        } else if lsb > prevLsb && (lsb - prevLsb) > max / 2 {
            msb = prevMsb &- max
        } else {
            msb = prevMsb
        }
        var result = PictureOrderCount()
        if !picture.fieldPicFlag {
            let top = msb &+ lsb
            result.topFieldOrderCnt = top
            result.bottomFieldOrderCnt = top &+ picture.deltaPicOrderCntBottom
        } else if !picture.bottomFieldFlag {
            result.topFieldOrderCnt = msb &+ lsb
        } else {
            result.bottomFieldOrderCnt = msb &+ lsb
        }
        // prevPicOrderCntMsb/Lsb come from the previous *reference* picture.
        if picture.nalRefIdc != 0 {
            prevPicOrderCntMsb = msb
            prevPicOrderCntLsb = lsb
        }
        return result
    }

    /// FrameNumOffset of 8.2.1.2 and 8.2.1.3 (8-6, 8-11).
    private func frameNumOffset(_ picture: PictureOrderCountInputs) -> Int64 {
        if picture.isIDR { return 0 }
        let previousOffset = prevHadMMCO5 ? 0 : prevFrameNumOffset
        if prevFrameNum > picture.frameNum { return previousOffset &+ picture.maxFrameNum }
        return previousOffset
    }

    /// 8.2.1.2: type 1, POC derived from frame_num and the cycle of expected deltas in the SPS.
    private mutating func computeType1(_ picture: PictureOrderCountInputs) throws(H264Error) -> PictureOrderCount {
        let offset = frameNumOffset(picture)
        let cycleLength = Int64(picture.offsetForRefFrame.count)
        // (8-7)
        var absFrameNum: Int64 = cycleLength != 0 ? offset &+ picture.frameNum : 0
        if picture.nalRefIdc == 0 && absFrameNum > 0 { absFrameNum -= 1 }
        var expectedPicOrderCnt: Int64 = 0
        if absFrameNum > 0 {
            // (8-8), (8-9)
            let expectedDeltaPerCycle = picture.offsetForRefFrame.reduce(0, &+)
            let cycleCount = (absFrameNum - 1) / cycleLength
            let frameNumInCycle = Int((absFrameNum - 1) % cycleLength)
            expectedPicOrderCnt = cycleCount &* expectedDeltaPerCycle
            for index in 0...frameNumInCycle {
                expectedPicOrderCnt = expectedPicOrderCnt &+ picture.offsetForRefFrame[index]
            }
        }
        if picture.nalRefIdc == 0 { expectedPicOrderCnt = expectedPicOrderCnt &+ picture.offsetForNonRefPic }
        var result = PictureOrderCount()
        // (8-10)
        if !picture.fieldPicFlag {
            let top = expectedPicOrderCnt &+ picture.deltaPicOrderCnt0
            result.topFieldOrderCnt = top
            result.bottomFieldOrderCnt = top &+ picture.offsetForTopToBottomField &+ picture.deltaPicOrderCnt1
        } else if !picture.bottomFieldFlag {
            result.topFieldOrderCnt = expectedPicOrderCnt &+ picture.deltaPicOrderCnt0
        } else {
            result.bottomFieldOrderCnt =
                expectedPicOrderCnt &+ picture.offsetForTopToBottomField &+ picture.deltaPicOrderCnt0
        }
        prevFrameNumOffset = offset
        return result
    }

    /// 8.2.1.3: type 2, output order equals decoding order; POC = 2 * (FrameNumOffset + frame_num),
    /// one less for non-reference pictures.
    private mutating func computeType2(_ picture: PictureOrderCountInputs) -> PictureOrderCount {
        let offset = frameNumOffset(picture)
        // (8-12)
        var temp: Int64 = 0
        if !picture.isIDR {
            temp = 2 &* (offset &+ picture.frameNum)
            if picture.nalRefIdc == 0 { temp -= 1 }
        }
        var result = PictureOrderCount()
        // (8-13)
        if !picture.fieldPicFlag {
            result.topFieldOrderCnt = temp
            result.bottomFieldOrderCnt = temp
        } else if picture.bottomFieldFlag {
            result.bottomFieldOrderCnt = temp
        } else {
            result.topFieldOrderCnt = temp
        }
        prevFrameNumOffset = offset
        return result
    }

    /// Updates the state that depends on MMCO 5 and frame_num after the picture is decoded.
    private mutating func finish(_ picture: PictureOrderCountInputs, result: inout PictureOrderCount) {
        prevHadMMCO5 = picture.hasMemoryManagementControlOperation5
        if picture.hasMemoryManagementControlOperation5 {
            // 8.2.1: after decoding a picture with MMCO 5, its POC is taken relative to itself
            // ("tempPicOrderCnt"); the next picture sees it as the start of a new POC epoch.
            let temp = result.picOrderCnt
            if let top = result.topFieldOrderCnt { result.topFieldOrderCnt = top &- temp }
            if let bottom = result.bottomFieldOrderCnt { result.bottomFieldOrderCnt = bottom &- temp }
            prevReferenceWasBottomFieldWithMMCO5 = picture.fieldPicFlag && picture.bottomFieldFlag
            prevReferenceTopAfterMMCO5 = result.topFieldOrderCnt ?? 0
            // 7.4.3: frame_num is inferred to be 0 after MMCO 5.
            prevFrameNum = 0
            prevFrameNumOffset = 0
        } else {
            prevFrameNum = picture.frameNum
        }
    }
}
