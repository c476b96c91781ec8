/// Integer arithmetic that clamps to the type's range instead of trapping on overflow.
///
/// Swift traps on overflow, so `a + b` on values that come from input (an upstream time stamp
/// near the end of the clock's range, a buffer offset, a duration a demuxer made up) would be a
/// crash reachable by a file or a source. Where such a value is added to, subtracted from or
/// multiplied, SwiftVT clamps: a time stamp at the end of the range stays there, and the checks
/// that follow (ordering, ranges) report it instead.
extension FixedWidthInteger {
    /// `self + other`, or the type's largest (smallest) value when the sum would be above (below) it.
    @inlinable
    public func addingSaturating(_ other: Self) -> Self {
        let (sum, overflow) = addingReportingOverflow(other)
        guard overflow else { return sum }
        return other > 0 ? .max : .min
    }

    /// `self - other`, clamped like ``addingSaturating(_:)``.
    @inlinable
    public func subtractingSaturating(_ other: Self) -> Self {
        let (difference, overflow) = subtractingReportingOverflow(other)
        guard overflow else { return difference }
        // Unsigned: only a negative result overflows. Signed: the sign of `-other` decides.
        return other > 0 || !Self.isSigned ? .min : .max
    }

    /// `self * other`, clamped like ``addingSaturating(_:)``.
    @inlinable
    public func multipliedSaturating(by other: Self) -> Self {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        guard overflow else { return product }
        return (self < 0) == (other < 0) ? .max : .min
    }
}

extension Int {
    /// `value` rounded toward zero and clamped to Int's range (NaN gives 0), where `Int(value)`
    /// would trap: for a Double computed from input or properties (a duration times a frame rate).
    @inlinable
    public init(clampingTowardZero value: Double) {
        if value.isNaN {
            self = 0
        } else if value >= Double(Int.max) {
            // Double(Int.max) is 2^63, one above Int.max.
            self = .max
        } else if value <= Double(Int.min) {
            self = .min
        } else {
            self = Int(value)
        }
    }
}
