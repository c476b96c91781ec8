/// The decoding process for picture order count, 8.3.1: PicOrderCntVal of each picture from its
/// slice_pic_order_cnt_lsb and the previous picture of sub-layer 0 that others may refer to
/// (prevTid0Pic).
public struct H265PictureOrderCountCalculator: Hashable, Sendable {
    /// slice_pic_order_cnt_lsb and PicOrderCntMsb of prevTid0Pic; nil before the first picture.
    public private(set) var previousTid0Picture: (lsb: Int, msb: Int)?

    public init() {}

    /// PicOrderCntMsb and PicOrderCntVal (8-1, 8-2) of the next picture in decoding order, and
    /// whether it becomes prevTid0Pic for the pictures after it.
    ///
    /// - Parameters:
    ///   - isIRAPWithNoRaslOutputFlag: an IRAP picture with NoRaslOutputFlag 1 (8.1.3) starts a
    ///     coded video sequence, and its PicOrderCntMsb is 0.
    public mutating func pictureOrderCount(
        slicePicOrderCntLsb lsb: Int, maxPicOrderCntLsb: Int, nalUnitType: H265NALUnitType, temporalID: Int,
        isIRAPWithNoRaslOutputFlag: Bool
    ) -> (msb: Int, value: Int) {
        var msb = 0
        if !isIRAPWithNoRaslOutputFlag, let previous = previousTid0Picture {
            // 8-1: a jump of half the LSB range or more means the LSB wrapped around.
            if lsb < previous.lsb && previous.lsb &- lsb >= maxPicOrderCntLsb / 2 {
                msb = previous.msb &+ maxPicOrderCntLsb
            } else if lsb > previous.lsb && lsb &- previous.lsb > maxPicOrderCntLsb / 2 {
                msb = previous.msb &- maxPicOrderCntLsb
            } else {
                msb = previous.msb
            }
        }
        // 8.3.1: prevTid0Pic is the previous picture with TemporalId 0 that is not a RASL, RADL
        // or sub-layer non-reference picture: the ones a later picture can count on having been
        // decoded (leading pictures may be skipped, non-reference ones dropped by sub-layer
        // switching or thinning).
        if temporalID == 0 && !nalUnitType.isRASL && !nalUnitType.isRADL && !nalUnitType.isSubLayerNonReference {
            previousTid0Picture = (lsb, msb)
        }
        return (msb, msb &+ lsb)
    }

    /// Forgets the previous picture (a flush, a new stream).
    public mutating func reset() { previousTid0Picture = nil }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.previousTid0Picture?.lsb == rhs.previousTid0Picture?.lsb
            && lhs.previousTid0Picture?.msb == rhs.previousTid0Picture?.msb
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(previousTid0Picture?.lsb)
        hasher.combine(previousTid0Picture?.msb)
    }
}
