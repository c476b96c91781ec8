import H264
import Testing

@Suite("Presentation order from POC")
struct PresentationOrderQueueTests {
    static func picture(poc: Int64, epoch: Int) -> AccessUnitPicture {
        AccessUnitPicture(
            isIDR: false, nalRefIdc: 1, frameNum: 0, seqParameterSetID: 0, picParameterSetID: 0,
            fieldPicFlag: false, bottomFieldFlag: false, idrPicID: 0, hasMemoryManagementControlOperation5: false,
            pictureOrderCount: PictureOrderCount(topFieldOrderCnt: poc, bottomFieldOrderCnt: poc),
            pictureOrderCountEpoch: epoch)
    }

    /// Places pictures given as (POC, epoch) in decoding order; returns presentation positions in
    /// decoding order.
    static func positions(_ pictures: [(Int64, Int)], window: Int, delay: Int? = nil) -> [Int64] {
        var queue = PresentationOrderQueue<Int>(reorderWindow: window, presentationDelay: delay)
        var placed: [PresentationOrderQueue<Int>.Placed] = []
        for (index, (poc, epoch)) in pictures.enumerated() {
            placed += queue.place(index, picture: picture(poc: poc, epoch: epoch))
        }
        placed += queue.drain()
        #expect(placed.map(\.payload) == Array(0..<pictures.count))
        #expect(placed.map(\.decodePosition) == (0..<pictures.count).map(Int64.init))
        return placed.map(\.presentationPosition)
    }

    @Test("a window of 0: output order is decoding order, whatever the POCs say, with the stated delay")
    func windowZeroIsDecodingOrder() {
        // Low delay (H.265 sps_max_num_reorder_pics 0, H.264 POC type 2): each picture is placed
        // as it comes; a POC going down (damage) does not reorder anything.
        #expect(Self.positions([(0, 1), (2, 1), (4, 1), (0, 2), (2, 2)], window: 0) == [0, 1, 2, 3, 4])
        #expect(Self.positions([(0, 1), (6, 1), (4, 1)], window: 0) == [0, 1, 2])
        #expect(Self.positions([(0, 1), (2, 1)], window: 0, delay: 1) == [1, 2])
    }

    @Test("hierarchical B pictures (POC step 2): output order from POC, delayed by the stated reorder depth")
    func hierarchicalB() {
        // Decoding order I0 P8 B4 b2 b6 P16 B12 b10 b14.
        let result = Self.positions(
            [(0, 1), (8, 1), (4, 1), (2, 1), (6, 1), (16, 1), (12, 1), (10, 1), (14, 1)], window: 4, delay: 2)
        #expect(result == [0, 4, 2, 1, 3, 8, 6, 5, 7].map { $0 + 2 })
    }

    @Test("an IDR followed by leading pictures with lower POC is presented after them; the delay is learnt")
    func leadingPicturesAfterIDR() {
        // Two IDRs (POC 0), the second followed by seven pictures with POC -14...-2.
        let pictures: [(Int64, Int)] = [(0, 1), (0, 2)] + stride(from: -14, through: -2, by: 2).map { (Int64($0), 2) }
        let result = Self.positions(pictures, window: 16)
        // Output: first IDR, the seven leading pictures, the second IDR; decode position minus
        // output position is at most 1, so the learnt delay is 1.
        #expect(result == [0, 8, 1, 2, 3, 4, 5, 6, 7].map { $0 + 1 })
    }

    @Test("POC steps other than 2 and POC type 2 order")
    func otherSteps() {
        #expect(Self.positions([(0, 1), (3, 1), (1, 1), (2, 1)], window: 2) == [0, 3, 1, 2].map { $0 + 1 })
        #expect(Self.positions([(0, 1), (2, 1), (4, 1), (0, 2), (2, 2)], window: 0, delay: 0) == [0, 1, 2, 3, 4])
    }
}
