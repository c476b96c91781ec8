import MediaCore
import Testing

@testable import SoftwareCodecs

@Suite("libavcodec decoder's timing table")
struct SampleTimingTableTests {
    static func timing(_ index: Int64) -> SampleTimingTable.Timing {
        .init(
            presentationTimeStamp: MediaTime(value: index, timescale: 25), duration: MediaTime(value: 1, timescale: 25),
            frameReference: UInt64(index))
    }

    @Test("a frame without pts (AV_NOPTS_VALUE, Int64.min) finds no timing and does not trap; the table stays bounded")
    func unknownFramePTS() {
        var table = SampleTimingTable()
        // Samples that gave no picture of their own pile up past the pruning threshold.
        for _ in 0..<(SampleTimingTable.pruneThreshold + 40) {
            let number = table.takeSequenceNumber()
            table.record(Self.timing(number), for: number)
        }
        // The old code pruned with `framePTS - 128`: Int64.min - 128 trapped here.
        #expect(table.take(framePTS: Int64.min) == nil)
        #expect(table.count <= Int(SampleTimingTable.keptBehindNewest))
        // The recent samples are still there for the frames reordering brings later.
        let newest = table.nextSequenceNumber - 1
        #expect(table.take(framePTS: newest)?.frameReference == UInt64(newest))
        #expect(table.take(framePTS: Int64.max) == nil)
    }
}
