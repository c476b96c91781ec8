/// How a value that falls between two representable values is rounded.
///
/// Mirrors `CMTimeRoundingMethod`. Every operation of ``MediaTime`` that has to drop precision
/// (a timescale conversion, arithmetic across timescales whose LCM does not fit, a ratio
/// multiplication) uses one of these and sets ``MediaTime/Flags/hasBeenRounded`` on the result
/// when the result is not exact.
public enum RoundingMethod: Sendable, Hashable, CaseIterable {
    /// Round to the nearest representable value; exact halves go away from zero.
    /// This is CoreMedia's default and the default everywhere in MediaCore.
    case roundHalfAwayFromZero
    /// Truncate: drop the fractional part.
    case towardZero
    /// Any non-zero fractional part increases the magnitude.
    case awayFromZero
    /// Ceiling.
    case towardPositiveInfinity
    /// Floor.
    case towardNegativeInfinity
    /// QuickTime's historical rule: truncate (toward zero) when converting to a coarser timescale,
    /// round away from zero when converting to a finer one, and never let a negative time round
    /// to zero (it becomes the smallest negative value, `-1/newTimescale`) so that a time known
    /// to be before zero stays before zero.
    case quickTime

    /// CoreMedia's `kCMTimeRoundingMethod_Default`.
    public static let `default`: RoundingMethod = .roundHalfAwayFromZero
}

/// Exact integer division with a rounding rule, on 128-bit operands.
///
/// All of MediaTime's arithmetic funnels through here so that the only place precision is lost
/// is this one, explicitly rounded, division.
enum Rational128 {
    /// Divides `numerator` by `denominator` (which must be positive) with `rounding`.
    ///
    /// - Parameter coarsening: only consulted by ``RoundingMethod/quickTime``; true when the
    ///   division converts to a coarser (smaller) timescale.
    /// - Returns: the rounded quotient and whether it is exact.
    static func divide(
        _ numerator: Int128, by denominator: Int128, rounding: RoundingMethod, coarsening: Bool = true
    ) -> (quotient: Int128, exact: Bool) {
        // Internal invariant: every caller passes a product of positive timescales or a divisor
        // it has checked to be positive. A zero divisor cannot come from input.
        let quotient = numerator / denominator // truncates toward zero
        let remainder = numerator % denominator // has the sign of the numerator
        if remainder == 0 { return (quotient, true) }
        let negative = numerator < 0
        let awayStep: Int128 = negative ? -1 : 1
        switch rounding {
        case .roundHalfAwayFromZero:
            // |remainder| < denominator < 2^126, so doubling cannot overflow.
            let twiceRemainder = remainder.magnitude * 2
            return (twiceRemainder >= denominator.magnitude ? quotient + awayStep : quotient, false)
        case .towardZero:
            return (quotient, false)
        case .awayFromZero:
            return (quotient + awayStep, false)
        case .towardPositiveInfinity:
            return (negative ? quotient : quotient + 1, false)
        case .towardNegativeInfinity:
            return (negative ? quotient - 1 : quotient, false)
        case .quickTime:
            var rounded = coarsening ? quotient : quotient + awayStep
            if negative && rounded == 0 { rounded = -1 }
            return (rounded, false)
        }
    }

    static func greatestCommonDivisor(_ a: Int128, _ b: Int128) -> Int128 {
        var (x, y) = (a.magnitude, b.magnitude)
        while y != 0 { (x, y) = (y, x % y) }
        // x <= max(|a|, |b|), both of which came from Int128 values, but |Int128.min| does not
        // fit; callers only pass Int64/Int32-derived values, so this conversion is exact.
        return Int128(truncatingIfNeeded: x)
    }
}
