/// A point in time or a duration, stored as the exact rational `value / timescale` seconds.
///
/// This is CoreMedia's `CMTime` without the epoch (GStreamer has no notion of epochs).
/// Media clocks are rational (NTSC's 1001/30000 s frame duration, 90 kHz MPEG timestamps,
/// 48 kHz audio), so times are kept as integers over a timescale and arithmetic is exact whenever
/// the result is representable; floating point is only used by ``seconds``.
///
/// Besides numeric times there are four special values, as in CoreMedia: ``invalid`` (no time at
/// all, e.g. a missing timestamp), ``positiveInfinity``, ``negativeInfinity`` and ``indefinite``
/// (a time that exists but is not known, e.g. the duration of a live stream). They propagate
/// through arithmetic the way CoreMedia documents (`invalid` wins over everything, then
/// `indefinite`, `+inf + -inf` is indefinite, an infinity absorbs any numeric time).
///
/// Overflow is never silent. Intermediate products are computed in 128 bits; a result whose value
/// does not fit in `Int64` *saturates* to ``positiveInfinity`` or ``negativeInfinity`` with the
/// ``Flags/hasBeenRounded`` flag set, so callers can tell an overflow from a true infinity.
/// (CoreMedia instead halves the timescale until the value fits; saturating is simpler to reason
/// about and such values are ~292 years at nanosecond precision, so they only arise from bugs or
/// hostile input.)
public struct MediaTime: Sendable {
    /// What kind of time a ``MediaTime`` is, and whether precision was lost computing it.
    public struct Flags: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// Set on every time except ``MediaTime/invalid``.
        public static let valid = Flags(rawValue: 1 << 0)
        /// The value is not exact: some operation that produced it had to round (or saturate).
        public static let hasBeenRounded = Flags(rawValue: 1 << 1)
        public static let positiveInfinity = Flags(rawValue: 1 << 2)
        public static let negativeInfinity = Flags(rawValue: 1 << 3)
        /// A time that exists but is unknown (CoreMedia's `kCMTimeFlags_Indefinite`).
        public static let indefinite = Flags(rawValue: 1 << 4)
    }

    /// The numerator; for non-numeric times it is 0 and carries no meaning.
    public let value: Int64
    /// Units per second; positive for numeric times, 0 for the special values.
    public let timescale: Int32
    public let flags: Flags

    /// The only place a `MediaTime` is assembled from raw fields; callers uphold the invariant
    /// that numeric times have a positive timescale.
    init(uncheckedValue value: Int64, timescale: Int32, flags: Flags) {
        self.value = value
        self.timescale = timescale
        self.flags = flags
    }

    /// `value / timescale` seconds. A timescale of zero or less cannot describe a time and yields
    /// ``invalid`` (CoreMedia would produce a time that every API then rejects).
    public init(value: Int64, timescale: Int32) {
        if timescale > 0 {
            self.init(uncheckedValue: value, timescale: timescale, flags: .valid)
        } else {
            self = .invalid
        }
    }

    /// The time closest to `seconds` on the grid of `preferredTimescale`, rounding half away from
    /// zero (and flagging ``Flags/hasBeenRounded`` if that changed the value).
    ///
    /// NaN gives ``invalid``; infinities give the matching infinity; a finite value too large for
    /// the timescale saturates to a flagged infinity; a timescale of zero or less gives ``invalid``.
    public init(seconds: Double, preferredTimescale: Int32) {
        guard preferredTimescale > 0, !seconds.isNaN else {
            self = .invalid
            return
        }
        if seconds.isInfinite {
            self = seconds > 0 ? .positiveInfinity : .negativeInfinity
            return
        }
        let scaled = seconds * Double(preferredTimescale)
        let rounded = scaled.rounded(.toNearestOrAwayFromZero)
        // Double(Int64.max) rounds up to 2^63, so the upper bound must be strict.
        guard rounded >= -9_223_372_036_854_775_808.0, rounded < 9_223_372_036_854_775_808.0 else {
            self = rounded > 0 ? .saturatedPositiveInfinity : .saturatedNegativeInfinity
            return
        }
        let flags: Flags = rounded == scaled ? .valid : [.valid, .hasBeenRounded]
        self.init(uncheckedValue: Int64(rounded), timescale: preferredTimescale, flags: flags)
    }

    // MARK: Special values

    /// No time: the result of any operation on an invalid operand. All fields are zero.
    public static let invalid = MediaTime(uncheckedValue: 0, timescale: 0, flags: [])
    /// `0/1`.
    public static let zero = MediaTime(uncheckedValue: 0, timescale: 1, flags: .valid)
    public static let positiveInfinity = MediaTime(
        uncheckedValue: 0, timescale: 0, flags: [.valid, .positiveInfinity])
    public static let negativeInfinity = MediaTime(
        uncheckedValue: 0, timescale: 0, flags: [.valid, .negativeInfinity])
    /// A time that exists but is not known, e.g. the duration of a live stream.
    public static let indefinite = MediaTime(
        uncheckedValue: 0, timescale: 0, flags: [.valid, .indefinite])

    static let saturatedPositiveInfinity = MediaTime(
        uncheckedValue: 0, timescale: 0, flags: [.valid, .positiveInfinity, .hasBeenRounded])
    static let saturatedNegativeInfinity = MediaTime(
        uncheckedValue: 0, timescale: 0, flags: [.valid, .negativeInfinity, .hasBeenRounded])

    // MARK: Classification

    /// The classes of time, declared in CoreMedia's sort order
    /// (`-inf < numeric < indefinite < +inf < invalid`) so that the raw value is the sort rank.
    enum Kind: Int {
        case negativeInfinity, numeric, indefinite, positiveInfinity, invalid
    }

    var kind: Kind {
        guard flags.contains(.valid) else { return .invalid }
        if flags.contains(.indefinite) { return .indefinite }
        if flags.contains(.positiveInfinity) { return .positiveInfinity }
        if flags.contains(.negativeInfinity) { return .negativeInfinity }
        return timescale > 0 ? .numeric : .invalid
    }

    public var isValid: Bool { kind != .invalid }
    /// True for finite times: valid and neither infinite nor indefinite.
    public var isNumeric: Bool { kind == .numeric }
    public var isPositiveInfinity: Bool { kind == .positiveInfinity }
    public var isNegativeInfinity: Bool { kind == .negativeInfinity }
    public var isIndefinite: Bool { kind == .indefinite }
    /// Whether some operation producing this time lost precision (rounded or saturated).
    public var hasBeenRounded: Bool { flags.contains(.hasBeenRounded) }

    /// The time in seconds as the nearest `Double` (lossy beyond 2^53 units): `.infinity` and
    /// `-.infinity` for the infinities, NaN for ``invalid`` and ``indefinite``.
    public var seconds: Double {
        switch kind {
        case .numeric: return Double(value) / Double(timescale)
        case .positiveInfinity: return .infinity
        case .negativeInfinity: return -.infinity
        case .indefinite, .invalid: return .nan
        }
    }

    // MARK: Construction helpers

    /// The numeric time `value / timescale`, or a flagged infinity when `value` does not fit.
    static func saturating(_ value: Int128, timescale: Int32, rounded: Bool) -> MediaTime {
        guard let exact = Int64(exactly: value) else {
            return value > 0 ? .saturatedPositiveInfinity : .saturatedNegativeInfinity
        }
        return MediaTime(
            uncheckedValue: exact, timescale: timescale,
            flags: rounded ? [.valid, .hasBeenRounded] : .valid)
    }

    /// `self` with ``Flags/hasBeenRounded`` added when `rounded` is true (for non-invalid times).
    func addingRoundedFlag(_ rounded: Bool) -> MediaTime {
        guard rounded, isValid, !flags.contains(.hasBeenRounded) else { return self }
        return MediaTime(uncheckedValue: value, timescale: timescale, flags: flags.union(.hasBeenRounded))
    }

    // MARK: Conversion

    /// The same time on the grid of `newTimescale`, rounded with `rounding`.
    ///
    /// Non-numeric times are returned unchanged (an infinity stays infinite whatever the scale).
    /// `newTimescale <= 0` gives ``invalid``. If the converted value does not fit in `Int64` the
    /// result saturates to a flagged infinity.
    public func converted(to newTimescale: Int32, rounding: RoundingMethod = .default) -> MediaTime {
        guard newTimescale > 0 else { return .invalid }
        guard isNumeric, newTimescale != timescale else { return self }
        // |value * newTimescale| < 2^63 * 2^31, comfortably inside Int128.
        let (quotient, exact) = Rational128.divide(
            Int128(value) * Int128(newTimescale), by: Int128(timescale), rounding: rounding,
            coarsening: newTimescale < timescale)
        return .saturating(quotient, timescale: newTimescale, rounded: !exact || hasBeenRounded)
    }

    // MARK: Multiplication

    /// `self * multiplier`, keeping the timescale (frame `n` starts at `frameDuration * n`).
    ///
    /// Exact unless it overflows, in which case it saturates to a flagged infinity.
    /// An infinity times a negative number flips sign; an infinity times zero is ``indefinite``
    /// (the product has no meaningful value).
    public func multiplied(by multiplier: Int) -> MediaTime {
        switch kind {
        case .invalid, .indefinite:
            return self
        case .positiveInfinity, .negativeInfinity:
            return Self.scaledInfinity(self, sign: multiplier.signum())
        case .numeric:
            // |value * multiplier| <= 2^126, no Int128 overflow.
            return .saturating(
                Int128(value) * Int128(multiplier), timescale: timescale, rounded: hasBeenRounded)
        }
    }

    /// `self * numerator / denominator`, keeping the timescale and rounding with `rounding`.
    ///
    /// The counterpart of `CMTimeMultiplyByRatio`, for frame-rate and speed math such as turning a
    /// 1/30 s tick into an NTSC 1001/30000 s one (`multiplied(by: 1001, dividedBy: 1000)`).
    /// A zero `denominator` gives ``invalid``. Infinities follow the sign of the ratio; an
    /// infinity times a zero ratio is ``indefinite``.
    public func multiplied(
        by numerator: Int32, dividedBy denominator: Int32, rounding: RoundingMethod = .default
    ) -> MediaTime {
        guard denominator != 0 else { return .invalid }
        switch kind {
        case .invalid, .indefinite:
            return self
        case .positiveInfinity, .negativeInfinity:
            return Self.scaledInfinity(self, sign: Int(numerator.signum() * denominator.signum()))
        case .numeric:
            // Normalize to a positive divisor (Int128 holds -Int32.min without overflow).
            var product = Int128(value) * Int128(numerator)
            var divisor = Int128(denominator)
            if divisor < 0 { (product, divisor) = (-product, -divisor) }
            let (quotient, exact) = Rational128.divide(
                product, by: divisor, rounding: rounding,
                coarsening: numerator.magnitude <= denominator.magnitude)
            return .saturating(quotient, timescale: timescale, rounded: !exact || hasBeenRounded)
        }
    }

    private static func scaledInfinity(_ infinity: MediaTime, sign: Int) -> MediaTime {
        switch sign {
        case 0: return .indefinite
        case 1: return infinity
        default: return infinity.isPositiveInfinity ? .negativeInfinity : .positiveInfinity
        }
    }

    // MARK: Sign

    /// The time with the opposite sign; infinities swap. Negating `Int64.min / t` saturates.
    public static prefix func - (time: MediaTime) -> MediaTime {
        switch time.kind {
        case .invalid, .indefinite: return time
        case .positiveInfinity: return MediaTime.negativeInfinity.addingRoundedFlag(time.hasBeenRounded)
        case .negativeInfinity: return MediaTime.positiveInfinity.addingRoundedFlag(time.hasBeenRounded)
        case .numeric:
            return .saturating(-Int128(time.value), timescale: time.timescale, rounded: time.hasBeenRounded)
        }
    }

    /// The magnitude of the time (`CMTimeAbsoluteValue`); `-inf` becomes `+inf`.
    public var absoluteValue: MediaTime {
        switch kind {
        case .negativeInfinity: return -self
        case .numeric where value < 0: return -self
        default: return self
        }
    }
}

// MARK: - Addition and subtraction

extension MediaTime {
    /// `lhs + rhs`, exact when representable.
    ///
    /// With equal timescales the result keeps that timescale. Otherwise the result uses the least
    /// common multiple of the two timescales when it fits in `Int32` (exact), else the larger of the
    /// two timescales, rounding half away from zero and setting ``Flags/hasBeenRounded`` if that
    /// was inexact. Values that do not fit in `Int64` saturate to a flagged infinity.
    /// ``Flags/hasBeenRounded`` on either operand carries over to the result.
    public static func + (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        combine(lhs, rhs, subtracting: false)
    }

    /// `lhs - rhs`; the same timescale and rounding rules as ``+(_:_:)``.
    /// `+inf - +inf` and `-inf - -inf` are ``indefinite``.
    public static func - (lhs: MediaTime, rhs: MediaTime) -> MediaTime {
        combine(lhs, rhs, subtracting: true)
    }

    public static func += (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs + rhs }
    public static func -= (lhs: inout MediaTime, rhs: MediaTime) { lhs = lhs - rhs }

    private static func combine(_ lhs: MediaTime, _ rhs: MediaTime, subtracting: Bool) -> MediaTime {
        let rounded = lhs.hasBeenRounded || rhs.hasBeenRounded
        var rightKind = rhs.kind
        if subtracting {
            // a - (+inf) behaves as a + (-inf).
            if rightKind == .positiveInfinity {
                rightKind = .negativeInfinity
            } else if rightKind == .negativeInfinity {
                rightKind = .positiveInfinity
            }
        }
        switch (lhs.kind, rightKind) {
        case (.invalid, _), (_, .invalid):
            return .invalid
        case (.indefinite, _), (_, .indefinite),
            (.positiveInfinity, .negativeInfinity), (.negativeInfinity, .positiveInfinity):
            return MediaTime.indefinite.addingRoundedFlag(rounded)
        case (.positiveInfinity, _), (_, .positiveInfinity):
            return MediaTime.positiveInfinity.addingRoundedFlag(rounded)
        case (.negativeInfinity, _), (_, .negativeInfinity):
            return MediaTime.negativeInfinity.addingRoundedFlag(rounded)
        case (.numeric, .numeric):
            return numericSum(lhs, rhs, subtracting: subtracting, rounded: rounded)
        }
    }

    private static func numericSum(
        _ lhs: MediaTime, _ rhs: MediaTime, subtracting: Bool, rounded: Bool
    ) -> MediaTime {
        let right = subtracting ? -Int128(rhs.value) : Int128(rhs.value)
        if lhs.timescale == rhs.timescale {
            return .saturating(Int128(lhs.value) + right, timescale: lhs.timescale, rounded: rounded)
        }
        let leftScale = Int128(lhs.timescale)
        let rightScale = Int128(rhs.timescale)
        let gcd = Rational128.greatestCommonDivisor(leftScale, rightScale)
        let lcm = leftScale / gcd * rightScale
        // Exact sum = (l * rs + r * ls) / (ls * rs). Bounds: |l * rs| < 2^94, so the numerator is
        // below 2^95 and times a target timescale (< 2^31) below 2^126 - no Int128 overflow.
        let numerator = Int128(lhs.value) * rightScale + right * leftScale
        if let exactScale = Int32(exactly: lcm) {
            // lcm / (ls * rs) == 1 / gcd and the division is exact by construction.
            return .saturating(numerator / gcd, timescale: exactScale, rounded: rounded)
        }
        let targetScale = max(lhs.timescale, rhs.timescale)
        let (quotient, exact) = Rational128.divide(
            numerator * Int128(targetScale), by: leftScale * rightScale,
            rounding: .roundHalfAwayFromZero)
        return .saturating(quotient, timescale: targetScale, rounded: rounded || !exact)
    }
}

// MARK: - Comparison and hashing

extension MediaTime: Comparable, Hashable {
    /// `-1`, `0` or `1` like `CMTimeCompare`: numeric times compare exactly across timescales
    /// (`1/2 == 2/4`) and the special values sort as `-inf < numeric < indefinite < +inf < invalid`.
    /// ``Flags/hasBeenRounded`` does not take part.
    public static func compare(_ lhs: MediaTime, _ rhs: MediaTime) -> Int {
        let (leftKind, rightKind) = (lhs.kind, rhs.kind)
        guard leftKind == .numeric, rightKind == .numeric else {
            return (leftKind.rawValue - rightKind.rawValue).signum()
        }
        if lhs.timescale == rhs.timescale {
            return lhs.value < rhs.value ? -1 : (lhs.value == rhs.value ? 0 : 1)
        }
        // Cross-multiplication in 128 bits is exact: |value * timescale| < 2^94.
        let left = Int128(lhs.value) * Int128(rhs.timescale)
        let right = Int128(rhs.value) * Int128(lhs.timescale)
        return left < right ? -1 : (left == right ? 0 : 1)
    }

    public static func < (lhs: MediaTime, rhs: MediaTime) -> Bool { compare(lhs, rhs) < 0 }

    /// Numeric equality (`1/2 == 2/4`); all invalid times are equal to each other, as are all
    /// times of the same special kind.
    public static func == (lhs: MediaTime, rhs: MediaTime) -> Bool { compare(lhs, rhs) == 0 }

    /// Consistent with ``==(_:_:)``: numeric times hash their reduced fraction.
    public func hash(into hasher: inout Hasher) {
        let kind = self.kind
        hasher.combine(kind.rawValue)
        guard kind == .numeric else { return }
        let gcd = Rational128.greatestCommonDivisor(Int128(value), Int128(timescale))
        hasher.combine(Int128(value) / gcd)
        hasher.combine(Int128(timescale) / gcd)
    }
}

// MARK: - GStreamer bridging

extension MediaTime {
    /// GStreamer's `GST_CLOCK_TIME_NONE`: "no time".
    public static let gstreamerClockTimeNone: UInt64 = .max

    /// The time in nanoseconds on GStreamer's clock-time scale (`GstClockTime`).
    ///
    /// `GST_CLOCK_TIME_NONE` (`UInt64.max`) becomes ``invalid``. Other values above `Int64.max`,
    /// which GStreamer itself cannot turn into a signed `GstClockTimeDiff`, become
    /// ``positiveInfinity``. Everything else is exact at timescale 1,000,000,000.
    public init(gstreamerNanoseconds nanoseconds: UInt64) {
        if nanoseconds == Self.gstreamerClockTimeNone {
            self = .invalid
        } else if let value = Int64(exactly: nanoseconds) {
            self.init(uncheckedValue: value, timescale: 1_000_000_000, flags: .valid)
        } else {
            self = .positiveInfinity
        }
    }

    /// The time as a `GstClockTime` in nanoseconds.
    ///
    /// Exact when the timescale divides 10^9, otherwise rounded to the nearest nanosecond (half
    /// away from zero). `GstClockTime` is unsigned and reserves `UInt64.max`, so:
    /// - ``invalid`` and ``indefinite`` map to `GST_CLOCK_TIME_NONE` (`UInt64.max`);
    /// - negative times and ``negativeInfinity`` clamp to 0;
    /// - ``positiveInfinity`` and times beyond `Int64.max` ns clamp to `Int64.max` ns, the
    ///   largest clock time GStreamer can still convert to a signed `GstClockTimeDiff`.
    public var gstreamerNanoseconds: UInt64 {
        let largest = UInt64(Int64.max)
        switch kind {
        case .invalid, .indefinite: return Self.gstreamerClockTimeNone
        case .negativeInfinity: return 0
        case .positiveInfinity: return largest
        case .numeric:
            let (nanoseconds, _) = Rational128.divide(
                Int128(value) * 1_000_000_000, by: Int128(timescale), rounding: .roundHalfAwayFromZero)
            if nanoseconds <= 0 { return 0 }
            return UInt64(exactly: nanoseconds).map { min($0, largest) } ?? largest
        }
    }
}

// MARK: - Description

extension MediaTime: CustomStringConvertible {
    /// `{1001/30000 = 0.033}` like `CMTimeShow`, `{INVALID}`, `{+INFINITY}`, `{-INFINITY}` or
    /// `{INDEFINITE}`. The seconds are rounded to milliseconds from the exact fraction.
    public var description: String {
        switch kind {
        case .invalid: return "{INVALID}"
        case .positiveInfinity: return "{+INFINITY}"
        case .negativeInfinity: return "{-INFINITY}"
        case .indefinite: return "{INDEFINITE}"
        case .numeric:
            let (milliseconds, _) = Rational128.divide(
                Int128(value) * 1000, by: Int128(timescale), rounding: .roundHalfAwayFromZero)
            let magnitude = milliseconds.magnitude
            let fraction = String(magnitude % 1000)
            let padding = String(repeating: "0", count: 3 - fraction.count)
            let sign = milliseconds < 0 ? "-" : ""
            return "{\(value)/\(timescale) = \(sign)\(magnitude / 1000).\(padding)\(fraction)}"
        }
    }
}
