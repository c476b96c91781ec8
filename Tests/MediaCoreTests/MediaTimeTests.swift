import Testing

@testable import MediaCore

/// All MediaCore suites are nested in this serialized suite: the pool test measures process-wide
/// heap usage, which other tests running in parallel would disturb.
@Suite(.serialized) enum MediaCoreTests {}

/// An exact fraction for checking MediaTime results independently of MediaTime's own arithmetic.
struct Fraction: Equatable {
    let numerator: Int128
    let denominator: Int128

    init(_ numerator: Int128, _ denominator: Int128) {
        var (n, d) = (numerator, denominator)
        if d < 0 { (n, d) = (-n, -d) }
        var (a, b) = (n.magnitude, d.magnitude)
        while b != 0 { (a, b) = (b, a % b) }
        let gcd = Int128(a == 0 ? 1 : a)
        self.numerator = n / gcd
        self.denominator = d / gcd
    }

    init(_ time: MediaTime) {
        self.init(Int128(time.value), Int128(time.timescale))
    }

    static func + (a: Fraction, b: Fraction) -> Fraction {
        Fraction(a.numerator * b.denominator + b.numerator * a.denominator, a.denominator * b.denominator)
    }

    static func - (a: Fraction, b: Fraction) -> Fraction {
        Fraction(a.numerator * b.denominator - b.numerator * a.denominator, a.denominator * b.denominator)
    }
}

/// |time - exact| <= 1 / (2 * timescale), i.e. `time` is the exact value rounded to its grid.
func isNearest(_ time: MediaTime, to exact: Fraction) -> Bool {
    let difference = (Int128(time.value) * exact.denominator - exact.numerator * Int128(time.timescale)).magnitude
    return difference * 2 <= exact.denominator.magnitude
}

func t(_ value: Int64, _ timescale: Int32) -> MediaTime { MediaTime(value: value, timescale: timescale) }

extension MediaCoreTests {
    @Suite struct MediaTimeTests {
        @Test func constantsAndClassification() {
            #expect(!MediaTime.invalid.isValid)
            #expect(MediaTime.zero.isNumeric && MediaTime.zero.value == 0 && MediaTime.zero.timescale == 1)
            #expect(MediaTime.positiveInfinity.isPositiveInfinity && !MediaTime.positiveInfinity.isNumeric)
            #expect(MediaTime.negativeInfinity.isNegativeInfinity)
            #expect(MediaTime.indefinite.isIndefinite && MediaTime.indefinite.isValid)
            #expect(!t(1, 0).isValid)
            #expect(!t(1, -30).isValid)
            #expect(t(1001, 30000).seconds == 1001.0 / 30000.0)
            #expect(MediaTime.positiveInfinity.seconds == .infinity)
            #expect(MediaTime.negativeInfinity.seconds == -.infinity)
            #expect(MediaTime.invalid.seconds.isNaN && MediaTime.indefinite.seconds.isNaN)
        }

        @Test func mixedTimescaleAdditionIsExactWhenTheLCMFits() {
            let sum = t(1001, 30000) + t(1, 90000)
            #expect(sum.timescale == 90000 && sum.value == 3004 && !sum.hasBeenRounded)
            let difference = t(1001, 30000) - t(1, 90000)
            #expect(difference.timescale == 90000 && difference.value == 3002)
            let sameScale = t(1001, 30000) + t(1001, 30000)
            #expect(sameScale.timescale == 30000 && sameScale.value == 2002)
            // lcm(30000, 48000) = 240000.
            let audio = t(1001, 30000) + t(1024, 48000)
            #expect(audio.timescale == 240000 && audio.value == 8008 + 5120 && !audio.hasBeenRounded)
        }

        @Test func additionFallsBackToTheLargerTimescaleWithRounding() {
            // lcm(30000, 1e9) = 3e9 does not fit in Int32.
            let sum = t(1, 30000) + t(1, 1_000_000_000)
            #expect(sum.timescale == 1_000_000_000)
            #expect(sum.value == 33334) // 33333.33... + 1, rounded
            #expect(sum.hasBeenRounded)
            #expect(isNearest(sum, to: Fraction(1, 30000) + Fraction(1, 1_000_000_000)))

            let extreme = t(1, Int32.max) + t(1, Int32.max - 1)
            #expect(extreme.timescale == Int32.max && extreme.hasBeenRounded)
            #expect(isNearest(extreme, to: Fraction(1, Int128(Int32.max)) + Fraction(1, Int128(Int32.max - 1))))
        }

        @Test func arithmeticMatchesExactFractions() {
            let values: [Int64] = [0, 1, -1, 1001, -3003, 123_456_789, -987_654_321_123, 1 << 40, Int64.max / 3]
            let scales: [Int32] = [1, 1000, 30000, 90000, 48000, 1_000_000_000, Int32.max, 1001, 7]
            var exactCount = 0
            for (i, a) in values.enumerated() {
                for (j, b) in values.enumerated() {
                    let sa = scales[i % scales.count]
                    let sb = scales[(j + i) % scales.count]
                    for subtracting in [false, true] {
                        let result = subtracting ? t(a, sa) - t(b, sb) : t(a, sa) + t(b, sb)
                        let exact =
                            subtracting
                            ? Fraction(t(a, sa)) - Fraction(t(b, sb)) : Fraction(t(a, sa)) + Fraction(t(b, sb))
                        guard result.isNumeric else {
                            // Only saturation may leave the numeric domain, and it is flagged.
                            #expect(result.hasBeenRounded)
                            continue
                        }
                        if result.hasBeenRounded {
                            #expect(isNearest(result, to: exact), "\(a)/\(sa) ± \(b)/\(sb) = \(result)")
                            #expect(result.timescale == max(sa, sb))
                        } else {
                            #expect(Fraction(result) == exact, "\(a)/\(sa) ± \(b)/\(sb) = \(result)")
                            exactCount += 1
                        }
                    }
                }
            }
            #expect(exactCount > 50)
        }

        @Test func overflowSaturatesToFlaggedInfinity() {
            let up = t(Int64.max, 1) + t(1, 1)
            #expect(up.isPositiveInfinity && up.hasBeenRounded)
            let down = t(Int64.min, 1) - t(1, 1)
            #expect(down.isNegativeInfinity && down.hasBeenRounded)
            // Different timescales: the common scale makes the value overflow.
            let scaled = t(Int64.max, 1) + t(1, 2)
            #expect(scaled.isPositiveInfinity && scaled.hasBeenRounded)
            let large = t(Int64.max, Int32.max) + t(Int64.max, Int32.max - 1)
            #expect(large.isPositiveInfinity && large.hasBeenRounded)
            let fits = t(Int64.max / 4, Int32.max) + t(Int64.max / 4, Int32.max - 1)
            #expect(fits.isNumeric && fits.hasBeenRounded && fits.timescale == Int32.max)
            #expect(
                isNearest(
                    fits,
                    to: Fraction(Int128(Int64.max / 4), Int128(Int32.max))
                        + Fraction(Int128(Int64.max / 4), Int128(Int32.max - 1))))
            #expect((-t(Int64.min, 1)).isPositiveInfinity)
            #expect((-t(Int64.min, 1)).hasBeenRounded)
            // Exactly representable extremes stay exact.
            let edge = t(Int64.max - 1, 1) + t(1, 1)
            #expect(edge.value == Int64.max && !edge.hasBeenRounded)
        }

        @Test func roundedFlagPropagates() {
            let rounded = t(1, 3).converted(to: 10)
            #expect(rounded.hasBeenRounded)
            #expect((rounded + t(1, 10)).hasBeenRounded)
            #expect((t(1, 10) - rounded).hasBeenRounded)
            #expect(rounded == t(3, 10)) // equality ignores the flag
        }

        @Test func specialValuesPropagate() {
            let one = t(1, 1)
            #expect(!(MediaTime.invalid + one).isValid)
            #expect(!(MediaTime.invalid + .positiveInfinity).isValid)
            #expect(!(MediaTime.indefinite - .invalid).isValid)
            #expect((MediaTime.indefinite + one).isIndefinite)
            #expect((MediaTime.indefinite + .positiveInfinity).isIndefinite)
            #expect((MediaTime.positiveInfinity + one).isPositiveInfinity)
            #expect((one + .negativeInfinity).isNegativeInfinity)
            #expect((MediaTime.positiveInfinity + .negativeInfinity).isIndefinite)
            #expect((MediaTime.positiveInfinity - .positiveInfinity).isIndefinite)
            #expect((MediaTime.positiveInfinity - .negativeInfinity).isPositiveInfinity)
            #expect((one - .positiveInfinity).isNegativeInfinity)
            #expect((one - .negativeInfinity).isPositiveInfinity)
            #expect(!MediaTime.positiveInfinity.hasBeenRounded)
        }

        @Test func comparisonIsNumericAcrossTimescales() {
            #expect(t(1, 2) == t(2, 4))
            #expect(t(1, 2).hashValue == t(2, 4).hashValue)
            #expect(t(0, 1) == t(0, 90000) && t(0, 1).hashValue == t(0, 90000).hashValue)
            #expect(t(-3, 6).hashValue == t(-1, 2).hashValue)
            #expect(Set([t(1, 2), t(2, 4), t(500, 1000), t(1, 3)]).count == 2)
            #expect(t(1001, 30000) > t(1, 30))
            #expect(t(3003, 90000) == t(1001, 30000))
            #expect(t(Int64.max, Int32.max) > t(Int64.max - 1, Int32.max))
            #expect(t(Int64.max, Int32.max - 1) > t(Int64.max, Int32.max))
            #expect(t(Int64.min, 1) < t(Int64.min + 1, 1))
            // -inf < numeric < indefinite < +inf < invalid
            let ordered: [MediaTime] = [
                .negativeInfinity, t(Int64.min, 1), t(0, 1), t(Int64.max, 1), .indefinite, .positiveInfinity, .invalid
            ]
            #expect(ordered.shuffled().sorted() == ordered)
            for (a, b) in zip(ordered, ordered.dropFirst()) {
                #expect(MediaTime.compare(a, b) == -1 && MediaTime.compare(b, a) == 1)
            }
            #expect(MediaTime.invalid == t(5, 0))
            #expect(MediaTime.compare(.indefinite, .indefinite) == 0)
        }

        @Test(arguments: [
            // (value, scale, newScale, halfAway, towardZero, away, +inf, -inf, quickTime)
            (Int64(5), Int32(10), Int32(1), Int64(1), Int64(0), Int64(1), Int64(1), Int64(0), Int64(0)),
            (-5, 10, 1, -1, 0, -1, 0, -1, -1),
            (4, 10, 1, 0, 0, 1, 1, 0, 0),
            (-4, 10, 1, 0, 0, -1, 0, -1, -1),
            (16, 10, 1, 2, 1, 2, 2, 1, 1),
            (-16, 10, 1, -2, -1, -2, -1, -2, -1),
            (1, 3, 10, 3, 3, 4, 4, 3, 4),
            (-1, 3, 10, -3, -3, -4, -3, -4, -4),
            (1001, 30000, 1000, 33, 33, 34, 34, 33, 33),
            (1001, 30000, 90000, 3003, 3003, 3003, 3003, 3003, 3003)
        ])
        func conversionRounding(
            _ row: (Int64, Int32, Int32, Int64, Int64, Int64, Int64, Int64, Int64)
        ) {
            let time = t(row.0, row.1)
            let expected: [(RoundingMethod, Int64)] = [
                (.roundHalfAwayFromZero, row.3), (.towardZero, row.4), (.awayFromZero, row.5),
                (.towardPositiveInfinity, row.6), (.towardNegativeInfinity, row.7), (.quickTime, row.8)
            ]
            let exact = Fraction(time)
            for (method, value) in expected {
                let converted = time.converted(to: row.2, rounding: method)
                #expect(converted.timescale == row.2, "\(method)")
                #expect(converted.value == value, "\(time) -> \(row.2) \(method)")
                #expect(converted.hasBeenRounded == (Fraction(converted) != exact), "\(method)")
            }
            #expect(time.converted(to: row.2) == time.converted(to: row.2, rounding: .roundHalfAwayFromZero))
        }

        @Test func conversionEdges() {
            let exact = t(1, 2).converted(to: 1000)
            #expect(exact.value == 500 && !exact.hasBeenRounded)
            #expect(!t(1, 2).converted(to: 0).isValid)
            #expect(MediaTime.positiveInfinity.converted(to: 1000).isPositiveInfinity)
            #expect(!MediaTime.invalid.converted(to: 1000).isValid)
            let overflow = t(Int64.max, 1).converted(to: 1000)
            #expect(overflow.isPositiveInfinity && overflow.hasBeenRounded)
            let negativeOverflow = t(Int64.min, 1).converted(to: Int32.max)
            #expect(negativeOverflow.isNegativeInfinity && negativeOverflow.hasBeenRounded)
            let fine = t(Int64.max, Int32.max).converted(to: 1)
            #expect(fine.value == Int64((Int128(Int64.max) * 2 + Int128(Int32.max)) / (2 * Int128(Int32.max))))
        }

        @Test func multiplication() {
            let frame = t(1001, 30000)
            #expect(frame.multiplied(by: 30) == t(30030, 30000))
            #expect(frame.multiplied(by: 30).timescale == 30000)
            #expect(frame.multiplied(by: -2).value == -2002)
            let overflow = frame.multiplied(by: Int.max)
            #expect(overflow.isPositiveInfinity && overflow.hasBeenRounded)
            #expect(MediaTime.positiveInfinity.multiplied(by: 0).isIndefinite)
            #expect(MediaTime.positiveInfinity.multiplied(by: -3).isNegativeInfinity)
            #expect(MediaTime.negativeInfinity.multiplied(by: -3).isPositiveInfinity)
            #expect(!MediaTime.invalid.multiplied(by: 2).isValid)

            let ntsc = t(3000, 90000).multiplied(by: 1001, dividedBy: 1000)
            #expect(ntsc.value == 3003 && ntsc.timescale == 90000 && !ntsc.hasBeenRounded)
            let rounded = t(1, 30).multiplied(by: 1001, dividedBy: 1000)
            #expect(rounded.value == 1 && rounded.hasBeenRounded)
            let negativeDivisor = t(10, 1).multiplied(by: 1, dividedBy: -4)
            #expect(negativeDivisor.value == -3 && negativeDivisor.hasBeenRounded) // -2.5 -> -3
            #expect(t(10, 1).multiplied(by: 1, dividedBy: -4, rounding: .towardZero).value == -2)
            #expect(!t(1, 1).multiplied(by: 1, dividedBy: 0).isValid)
            let big = t(Int64.max, 1).multiplied(by: Int32.max, dividedBy: Int32.max)
            #expect(big.value == Int64.max && !big.hasBeenRounded)
            #expect(t(Int64.max, 1).multiplied(by: 2, dividedBy: 1).isPositiveInfinity)
            #expect(MediaTime.positiveInfinity.multiplied(by: -1, dividedBy: 2).isNegativeInfinity)
            #expect(MediaTime.positiveInfinity.multiplied(by: 0, dividedBy: 2).isIndefinite)
        }

        @Test func secondsInitializer() {
            let half = MediaTime(seconds: 0.5, preferredTimescale: 1000)
            #expect(half.value == 500 && half.timescale == 1000 && !half.hasBeenRounded)
            let rounded = MediaTime(seconds: 0.0333, preferredTimescale: 1000)
            #expect(rounded.value == 33 && rounded.hasBeenRounded)
            let negative = MediaTime(seconds: -2.5, preferredTimescale: 1)
            #expect(negative.value == -3 && negative.hasBeenRounded) // half away from zero
            #expect(!MediaTime(seconds: .nan, preferredTimescale: 1000).isValid)
            #expect(!MediaTime(seconds: 1, preferredTimescale: 0).isValid)
            #expect(MediaTime(seconds: .infinity, preferredTimescale: 1000).isPositiveInfinity)
            #expect(MediaTime(seconds: -.infinity, preferredTimescale: 1000).isNegativeInfinity)
            let huge = MediaTime(seconds: 1e300, preferredTimescale: 1000)
            #expect(huge.isPositiveInfinity && huge.hasBeenRounded)
            let edge = MediaTime(seconds: 9_223_372_036_854_775_808.0, preferredTimescale: 1)
            #expect(edge.isPositiveInfinity)
        }

        @Test func negationAndAbsoluteValue() {
            #expect(-t(3, 4) == t(-3, 4))
            #expect(t(-3, 4).absoluteValue == t(3, 4))
            #expect((-MediaTime.positiveInfinity).isNegativeInfinity)
            #expect(MediaTime.negativeInfinity.absoluteValue.isPositiveInfinity)
        }

        @Test func gstreamerBridging() {
            #expect(!MediaTime(gstreamerNanoseconds: UInt64.max).isValid)
            #expect(MediaTime(gstreamerNanoseconds: UInt64.max - 1).isPositiveInfinity)
            let zero = MediaTime(gstreamerNanoseconds: 0)
            #expect(zero == .zero && zero.timescale == 1_000_000_000)
            for nanoseconds: UInt64 in [0, 1, 33_366_667, 1_000_000_000, 123_456_789_012_345, UInt64(Int64.max)] {
                #expect(MediaTime(gstreamerNanoseconds: nanoseconds).gstreamerNanoseconds == nanoseconds)
            }
            #expect(t(9, 90000).gstreamerNanoseconds == 100_000) // 90 kHz divides 1e9: exact
            #expect(t(1001, 30000).gstreamerNanoseconds == 33_366_667) // 33366666.67 rounds up
            #expect(t(1, 3).gstreamerNanoseconds == 333_333_333)
            #expect(t(2, 3).gstreamerNanoseconds == 666_666_667)
            #expect(MediaTime.invalid.gstreamerNanoseconds == UInt64.max)
            #expect(MediaTime.indefinite.gstreamerNanoseconds == UInt64.max)
            #expect(MediaTime.positiveInfinity.gstreamerNanoseconds == UInt64(Int64.max))
            #expect(MediaTime.negativeInfinity.gstreamerNanoseconds == 0)
            #expect(t(-1, 1).gstreamerNanoseconds == 0)
            #expect(t(Int64.max, 1).gstreamerNanoseconds == UInt64(Int64.max))
        }

        @Test func descriptions() {
            #expect(t(1001, 30000).description == "{1001/30000 = 0.033}")
            #expect(t(-1, 3).description == "{-1/3 = -0.333}")
            #expect(t(3, 2).description == "{3/2 = 1.500}")
            #expect(t(-1, 10000).description == "{-1/10000 = 0.000}")
            #expect(MediaTime.invalid.description == "{INVALID}")
            #expect(MediaTime.positiveInfinity.description == "{+INFINITY}")
            #expect(MediaTime.negativeInfinity.description == "{-INFINITY}")
            #expect(MediaTime.indefinite.description == "{INDEFINITE}")
        }
    }
}

@Suite("saturating integer arithmetic")
struct SaturatingArithmeticTests {
    @Test("sums, differences and products clamp at the range instead of trapping")
    func clamps() {
        #expect(Int64.max.addingSaturating(1) == .max)
        #expect(Int64.min.addingSaturating(-1) == .min)
        #expect(Int64(5).addingSaturating(-7) == -2)
        #expect(Int64.min.subtractingSaturating(1) == .min)
        #expect(Int64.max.subtractingSaturating(-1) == .max)
        #expect(Int64(0).subtractingSaturating(Int64.min) == .max)
        #expect(UInt64(3).subtractingSaturating(5) == 0)
        #expect((UInt64.max - 1).addingSaturating(33_000_000) == .max)
        #expect(Int64.max.multipliedSaturating(by: 2) == .max)
        #expect(Int64.max.multipliedSaturating(by: -2) == .min)
        #expect(Int64.min.multipliedSaturating(by: -1) == .max)
        #expect(Int64(-4).multipliedSaturating(by: 3) == -12)
    }
}

@Suite("clamped Int from Double")
struct ClampedIntegerConversionTests {
    @Test("beyond Int's range and NaN clamp instead of trapping")
    func clamps() {
        #expect(Int(clampingTowardZero: 3.9e19) == .max)
        #expect(Int(clampingTowardZero: -3.9e19) == .min)
        #expect(Int(clampingTowardZero: .infinity) == .max)
        #expect(Int(clampingTowardZero: .nan) == 0)
        #expect(Int(clampingTowardZero: 12.9) == 12)
        #expect(Int(clampingTowardZero: -12.9) == -12)
    }
}
