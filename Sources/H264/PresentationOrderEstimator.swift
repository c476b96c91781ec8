/// Places pictures on a frame grid when a stream carries no timestamps: a decode position from
/// decoding order, and a presentation position from the picture order count.
///
/// Within one POC epoch (from an IDR or a picture with MMCO 5 to the next, see
/// `PictureOrderCountCalculator`) output order is POC order (C.4.5.3), and every picture of an
/// earlier epoch is output before the first picture of a later one (C.4.4). Encoders number
/// frames with a constant POC step, almost always 2 (one per field); the step is learnt as the
/// greatest common divisor of the POC distances seen, so streams stepping by 1 or 4 also get one
/// frame per slot. With pic_order_cnt_type 2 output order is decoding order (8.2.1.3).
///
/// Presentation positions are delayed by `reorderDelay` frames (the VUI's
/// max_num_reorder_frames, or the DPB size) so that no picture is presented before it is
/// decoded.
public struct PresentationOrderEstimator: Sendable {
    public let reorderDelay: Int64
    private var decodePosition: Int64 = 0
    private var epoch: Int?
    private var epochBasePosition: Int64 = 0
    private var epochBasePictureOrderCount: Int64 = 0
    private var largestPresentationIndex: Int64 = -1
    /// The POC distance between consecutive frames, learnt from the stream.
    public private(set) var pictureOrderCountStep: Int64 = 2

    public init(reorderDelay: Int) {
        self.reorderDelay = Int64(max(0, reorderDelay))
    }

    public struct Placement: Hashable, Sendable {
        /// Frames since the first picture, in decoding order.
        public var decodePosition: Int64
        /// Frames since the first picture, in presentation order, plus the reorder delay.
        public var presentationPosition: Int64
    }

    /// Places the next picture in decoding order.
    public mutating func place(_ picture: AccessUnitPicture, picOrderCntType: Int) -> Placement {
        defer { decodePosition += 1 }
        let presentationIndex: Int64
        if picOrderCntType == 2 {
            presentationIndex = decodePosition
        } else {
            let poc = picture.pictureOrderCount.picOrderCnt
            if epoch != picture.pictureOrderCountEpoch {
                // C.4.4: everything before this picture is presented before it.
                epoch = picture.pictureOrderCountEpoch
                epochBasePosition = max(decodePosition, largestPresentationIndex + 1)
                epochBasePictureOrderCount = poc
            }
            let distance = poc - epochBasePictureOrderCount
            if distance != 0 {
                pictureOrderCountStep = Self.greatestCommonDivisor(pictureOrderCountStep, abs(distance))
            }
            presentationIndex = epochBasePosition + distance / pictureOrderCountStep
        }
        largestPresentationIndex = max(largestPresentationIndex, presentationIndex)
        return Placement(
            decodePosition: decodePosition,
            presentationPosition: max(0, presentationIndex + reorderDelay))
    }

    /// Starts again from position 0 (after a flush or seek).
    public mutating func reset() {
        self = PresentationOrderEstimator(reorderDelay: Int(reorderDelay))
    }

    private static func greatestCommonDivisor(_ a: Int64, _ b: Int64) -> Int64 {
        var (x, y) = (a, b)
        while y != 0 { (x, y) = (y, x % y) }
        return max(1, x)
    }
}
