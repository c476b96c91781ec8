import Glibc
import Synchronization

/// A timeline that runs at a rate against a master clock: Core Media's `CMTimebase`, as
/// AVSampleBufferDisplayLayer's `controlTimebase` uses it to display at 1x, pause (rate 0), play
/// slower or faster, and jump (set the time).
///
/// The timebase is an anchor, a (time, master time) pair, and a rate; between changes its time
/// is `anchor time + (master time - anchor master time) * rate` (``time(at:)``). ``setRate(_:)``
/// re-anchors at the current time so the timeline continues without a jump; ``setTime(_:)``
/// re-anchors at the new time and keeps the rate.
///
/// Its GStreamer form is a clock's calibration (``clockCalibration``): with the master clock as a
/// GstClock's internal time, `gst_clock_set_calibration(clock, internal, external, num, denom)`
/// makes the clock read the timebase's time, and a pipeline given that clock
/// (`gst_pipeline_use_clock`) displays at the timebase's rate (pipelines/case1-timebase-display.py).
/// A GstClock's rate is a ratio of unsigned integers, so the rate is kept as a ratio too (to a
/// millionth) and may not be negative.
public final class Timebase: Sendable {
    public typealias MasterClock = @Sendable () -> MediaTime

    /// CLOCK_MONOTONIC in nanoseconds, Core Media's host time clock; what GstSystemClock's
    /// internal time is in its default (monotonic) clock type.
    public static let hostClock: MasterClock = {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return MediaTime(value: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec), timescale: 1_000_000_000)
    }

    /// The rate as a ratio of integers (a GstClock calibration's rate_num / rate_denom).
    public struct Rate: Sendable, Hashable {
        public let numerator: Int64
        public let denominator: Int64
        public static let rateDenominator: Int64 = 1_000_000

        /// `rate` to a millionth; nil for a negative or non-finite rate, or one above 10^6.
        public init?(_ rate: Double) {
            guard rate.isFinite, rate >= 0, rate <= 1e6 else { return nil }
            let scaled = Int64((rate * Double(Self.rateDenominator)).rounded())
            let divisor = Self.greatestCommonDivisor(scaled, Self.rateDenominator)
            numerator = scaled / divisor
            denominator = Self.rateDenominator / divisor
        }

        public var value: Double { Double(numerator) / Double(denominator) }

        /// Rate 0: a stopped timebase (paused display).
        public static let stopped = Rate(numerator: 0, denominator: 1)

        private init(numerator: Int64, denominator: Int64) {
            self.numerator = numerator
            self.denominator = denominator
        }

        private static func greatestCommonDivisor(_ a: Int64, _ b: Int64) -> Int64 {
            var (a, b) = (a, b)
            while b != 0 { (a, b) = (b, a % b) }
            return max(a, 1)
        }
    }

    public enum TimebaseError: Error, Equatable, CustomStringConvertible {
        /// A negative, non-finite or absurd rate (a GstClock cannot run backwards).
        case rateOutOfRange(Double)
        /// A time that is not a number (invalid, indefinite or infinite).
        case timeNotNumeric(String)

        public var description: String {
            switch self {
            case .rateOutOfRange(let rate):
                return "rate \(rate) is not between 0 (stopped) and 1000000; a timebase here cannot run backwards"
            case .timeNotNumeric(let time): return "time \(time) is not a number"
            }
        }
    }

    private struct Anchor {
        var time: Int64 // nanoseconds on the timebase
        var masterTime: Int64 // nanoseconds on the master clock
        var rate: Rate
    }

    public let masterClock: MasterClock
    private let anchor: Mutex<Anchor>

    /// A timebase at time 0, stopped (rate 0), as `CMTimebaseCreateWithSourceClock` makes one.
    public init(masterClock: @escaping MasterClock = Timebase.hostClock) {
        self.masterClock = masterClock
        let now = Self.nanoseconds(masterClock())
        anchor = Mutex(Anchor(time: 0, masterTime: now, rate: .stopped))
    }

    /// The time now (`CMTimebaseGetTime`).
    public var time: MediaTime { time(at: masterClock()) }

    /// The time when the master clock reads `masterTime` (`CMSyncConvertTime` from the master).
    public func time(at masterTime: MediaTime) -> MediaTime {
        let nanoseconds = anchor.withLock { Self.time(of: $0, at: Self.nanoseconds(masterTime)) }
        return MediaTime(value: nanoseconds, timescale: 1_000_000_000)
    }

    /// The rate (`CMTimebaseGetRate`): 0 stopped, 1 real time.
    public var rate: Double { anchor.withLock { $0.rate.value } }

    /// Changes the rate from now on; the time goes on from where it is (`CMTimebaseSetRate`).
    public func setRate(_ rate: Double) throws(TimebaseError) {
        guard let newRate = Rate(rate) else { throw .rateOutOfRange(rate) }
        let now = Self.nanoseconds(masterClock())
        anchor.withLock { anchor in
            anchor = Anchor(time: Self.time(of: anchor, at: now), masterTime: now, rate: newRate)
        }
    }

    /// Moves the timeline to `time` now, keeping the rate (`CMTimebaseSetTime`): a jump.
    public func setTime(_ time: MediaTime) throws(TimebaseError) {
        guard time.isNumeric else { throw .timeNotNumeric("\(time)") }
        let now = Self.nanoseconds(masterClock())
        anchor.withLock { $0 = Anchor(time: Self.nanoseconds(time), masterTime: now, rate: $0.rate) }
    }

    /// The timebase reads `time` when the master clock reads `masterTime`, and runs at `rate`
    /// from there (`CMTimebaseSetRateAndAnchorTime`).
    public func setRateAndAnchorTime(rate: Double, time: MediaTime, masterTime: MediaTime) throws(TimebaseError) {
        guard let newRate = Rate(rate) else { throw .rateOutOfRange(rate) }
        guard time.isNumeric else { throw .timeNotNumeric("\(time)") }
        guard masterTime.isNumeric else { throw .timeNotNumeric("\(masterTime)") }
        anchor.withLock {
            $0 = Anchor(time: Self.nanoseconds(time), masterTime: Self.nanoseconds(masterTime), rate: newRate)
        }
    }

    /// When the master clock will read `time` on this timebase, for scheduling a frame; nil when
    /// the timebase is stopped (it never gets there unless it is already there, and then the
    /// answer is "any time").
    public func masterTime(at time: MediaTime) -> MediaTime? {
        let target = Self.nanoseconds(time)
        return anchor.withLock { anchor -> MediaTime? in
            guard anchor.rate.numerator > 0 else { return nil }
            let elapsed = Int128(target - anchor.time) * Int128(anchor.rate.denominator) / Int128(anchor.rate.numerator)
            return MediaTime(value: Self.clamped(Int128(anchor.masterTime) + elapsed), timescale: 1_000_000_000)
        }
    }

    /// A GstClock calibration that makes a clock whose internal time is the master clock read
    /// this timebase: `gst_clock_set_calibration(clock, internal, external, rateNumerator,
    /// rateDenominator)`, where GStreamer computes
    /// `external = (internal_now - internal) * rateNumerator / rateDenominator + external`.
    /// GstClock times are unsigned: a timebase before 0 starts the clock at 0.
    public struct ClockCalibration: Sendable, Equatable {
        public var internalTime: UInt64
        public var externalTime: UInt64
        public var rateNumerator: UInt64
        public var rateDenominator: UInt64
    }

    public var clockCalibration: ClockCalibration {
        anchor.withLock { anchor in
            ClockCalibration(
                internalTime: UInt64(max(0, anchor.masterTime)), externalTime: UInt64(max(0, anchor.time)),
                rateNumerator: UInt64(anchor.rate.numerator), rateDenominator: UInt64(anchor.rate.denominator))
        }
    }

    // MARK: Arithmetic (nanoseconds; Int128 products, results clamped to Int64)

    private static func time(of anchor: Anchor, at masterTime: Int64) -> Int64 {
        let elapsed = Int128(masterTime) - Int128(anchor.masterTime)
        return clamped(Int128(anchor.time) + elapsed * Int128(anchor.rate.numerator) / Int128(anchor.rate.denominator))
    }

    private static func nanoseconds(_ time: MediaTime) -> Int64 {
        guard time.isNumeric else { return time.isNegativeInfinity ? .min : .max }
        let converted = time.converted(to: 1_000_000_000)
        return converted.isNumeric ? converted.value : (converted.isNegativeInfinity ? .min : .max)
    }

    private static func clamped(_ value: Int128) -> Int64 {
        value > Int128(Int64.max) ? .max : value < Int128(Int64.min) ? .min : Int64(value)
    }
}
