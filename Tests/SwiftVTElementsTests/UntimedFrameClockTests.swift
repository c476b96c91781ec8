import CGStreamer
import CSwiftVTShim
import MediaCore
import Testing

@testable import SwiftVTElements

@Suite("vtenc's clock for frames without time stamps")
struct UntimedFrameClockTests {
    @Test("a frame without a time stamp after one at the end of the clock's range saturates instead of trapping")
    func afterTheLastClockTime() {
        var clock = UntimedFrameClock()
        let none = GstClockTime(swiftvt_clock_time_none)
        let last = none - 1 // the largest valid GstClockTime
        #expect(clock.presentationTime(of: last, duration: 33_333_333, frameRate: FrameRate(30, 1)) == last)
        // The old code added the duration with `+`: UInt64 overflow, a trap.
        let next = clock.presentationTime(of: none, duration: 33_333_333, frameRate: FrameRate(30, 1))
        #expect(next == UInt64.max)
        // Ordinary untimed frames: one frame apart from the previous one.
        var fresh = UntimedFrameClock()
        #expect(fresh.presentationTime(of: 1_000, duration: none, frameRate: FrameRate(25, 1)) == 1_000)
        #expect(fresh.presentationTime(of: none, duration: none, frameRate: FrameRate(25, 1)) == 1_000 + 40_000_000)
    }
}
