import MediaCore
import Synchronization
import Testing

/// The CMTimebase model: time from an anchor and a rate against a master clock, and the GstClock
/// calibration that makes a clock read it.
@Suite struct TimebaseTests {
    /// A master clock the test moves by hand.
    final class ManualClock: Sendable {
        private let now = Mutex<Int64>(5_000_000_000)
        func advance(seconds: Double) { now.withLock { $0 += Int64(seconds * 1e9) } }
        var read: Timebase.MasterClock { { [self] in MediaTime(value: now.withLock { $0 }, timescale: 1_000_000_000) } }
    }

    static func seconds(_ value: Double) -> MediaTime { MediaTime(seconds: value, preferredTimescale: 1_000_000_000) }

    @Test func aNewTimebaseIsStoppedAtZeroAndRunsAtItsRateOnceStarted() throws {
        let clock = ManualClock()
        let timebase = Timebase(masterClock: clock.read)
        clock.advance(seconds: 3)
        #expect(timebase.time == .zero)
        #expect(timebase.rate == 0)
        try timebase.setRate(1)
        clock.advance(seconds: 2)
        #expect(timebase.time == Self.seconds(2))
    }

    @Test func aRateChangeContinuesFromTheCurrentTimeAndPauseHoldsIt() throws {
        let clock = ManualClock()
        let timebase = Timebase(masterClock: clock.read)
        try timebase.setRate(1)
        clock.advance(seconds: 2) // 2 s
        try timebase.setRate(0) // paused
        clock.advance(seconds: 1.5)
        #expect(timebase.time == Self.seconds(2))
        try timebase.setRate(0.5)
        clock.advance(seconds: 2) // +1 s
        #expect(timebase.time == Self.seconds(3))
        try timebase.setRate(2)
        clock.advance(seconds: 1.5) // +3 s
        #expect(timebase.time == Self.seconds(6))
        #expect(timebase.rate == 2)
    }

    @Test func setTimeJumpsAndKeepsTheRate() throws {
        let clock = ManualClock()
        let timebase = Timebase(masterClock: clock.read)
        try timebase.setRate(2)
        clock.advance(seconds: 1)
        try timebase.setTime(Self.seconds(10))
        #expect(timebase.time == Self.seconds(10))
        clock.advance(seconds: 1)
        #expect(timebase.time == Self.seconds(12))
    }

    @Test func timeAtAndMasterTimeAtAreInverses() throws {
        let clock = ManualClock()
        let timebase = Timebase(masterClock: clock.read)
        try timebase.setRateAndAnchorTime(rate: 0.5, time: Self.seconds(100), masterTime: Self.seconds(5))
        #expect(timebase.time(at: Self.seconds(9)) == Self.seconds(102))
        #expect(timebase.masterTime(at: Self.seconds(102)) == Self.seconds(9))
        try timebase.setRate(0)
        #expect(timebase.masterTime(at: Self.seconds(200)) == nil, "a stopped timebase never gets there")
    }

    @Test func ratesAreKeptToAMillionthAndNegativeOrEndlessRatesAreRefused() throws {
        let clock = ManualClock()
        let timebase = Timebase(masterClock: clock.read)
        try timebase.setRate(1.0 / 3.0)
        #expect(timebase.rate == 333_333.0 / 1_000_000)
        #expect(throws: Timebase.TimebaseError.rateOutOfRange(-1)) { try timebase.setRate(-1) }
        #expect(throws: Timebase.TimebaseError.self) { try timebase.setRate(.nan) }
        #expect(throws: Timebase.TimebaseError.self) { try timebase.setRate(.infinity) }
        #expect(throws: Timebase.TimebaseError.self) { try timebase.setTime(.invalid) }
        #expect(timebase.rate == 333_333.0 / 1_000_000, "a refused change leaves the timebase as it was")
    }

    @Test func theClockCalibrationReproducesTheTimebaseTheWayGStreamerComputesIt() throws {
        let clock = ManualClock()
        let timebase = Timebase(masterClock: clock.read)
        try timebase.setRate(1)
        clock.advance(seconds: 4)
        try timebase.setRate(0.5)
        clock.advance(seconds: 1)
        let calibration = timebase.clockCalibration
        #expect(calibration.rateNumerator * 2 == calibration.rateDenominator)
        // gst_clock_adjust_with_calibration: (internal - cinternal) * num / denom + cexternal.
        clock.advance(seconds: 3)
        let internalNow = UInt64(clock.read().value)
        let external =
            (internalNow - calibration.internalTime) * calibration.rateNumerator / calibration.rateDenominator
            + calibration.externalTime
        #expect(MediaTime(value: Int64(external), timescale: 1_000_000_000) == timebase.time)
        #expect(timebase.time == Self.seconds(6))
    }

    @Test func theHostClockIsMonotonic() {
        let first = Timebase.hostClock()
        let second = Timebase.hostClock()
        #expect(first <= second)
        #expect(first.timescale == 1_000_000_000)
    }
}
