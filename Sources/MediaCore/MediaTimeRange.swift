/// A half-open span of media time `[start, start + duration)`, CoreMedia's `CMTimeRange`.
///
/// Used for segments, trims and "which samples fall in this window" questions. The end is
/// exclusive, so back-to-back ranges (`[0, 1)` and `[1, 2)`) do not overlap and a frame whose
/// presentation time equals the end of a range is not in it.
///
/// A range is *invalid* when either time is invalid or the duration is negative (including
/// negative infinity); every query on an invalid range answers "no" and every operation
/// involving one returns ``invalid``.
public struct MediaTimeRange: Sendable, Hashable {
    public var start: MediaTime
    public var duration: MediaTime

    public init(start: MediaTime, duration: MediaTime) {
        self.start = start
        self.duration = duration
    }

    /// The range from `start` up to, not including, `end` (`duration = end - start`, so an end
    /// before the start gives an invalid range rather than a reordered one).
    public init(start: MediaTime, end: MediaTime) {
        self.init(start: start, duration: end - start)
    }

    public static let invalid = MediaTimeRange(start: .invalid, duration: .invalid)
    /// The empty range at time zero.
    public static let zero = MediaTimeRange(start: .zero, duration: .zero)

    public var isValid: Bool {
        start.isValid && duration.isValid && duration >= .zero
    }

    /// A valid range whose start or duration is indefinite (a live stream with unknown length).
    public var isIndefinite: Bool {
        isValid && (start.isIndefinite || duration.isIndefinite)
    }

    /// A valid range of zero duration: it contains no time, not even its start.
    public var isEmpty: Bool {
        isValid && duration == .zero
    }

    /// `start + duration`, the first time *after* the range; ``MediaTime/invalid`` for an
    /// invalid range.
    public var end: MediaTime {
        isValid ? start + duration : .invalid
    }

    /// Whether `start <= time < end`. False for invalid or indefinite ranges and for times that
    /// are invalid or indefinite (an unknown time cannot be placed).
    public func contains(_ time: MediaTime) -> Bool {
        guard isValid, !isIndefinite, time.isValid, !time.isIndefinite else { return false }
        return start <= time && time < end
    }

    /// Whether every time of `other` lies in `self`: `start <= other.start` and
    /// `other.end <= end`. An empty `other` is contained when its start lies in `[start, end]`.
    public func contains(_ other: MediaTimeRange) -> Bool {
        guard isValid, !isIndefinite, other.isValid, !other.isIndefinite else { return false }
        return start <= other.start && other.end <= end
    }

    /// The times common to both ranges. Disjoint (or merely touching) ranges give ``zero``,
    /// as CoreMedia does; an invalid operand gives ``invalid``.
    public func intersection(_ other: MediaTimeRange) -> MediaTimeRange {
        guard isValid, other.isValid else { return .invalid }
        let lower = max(start, other.start)
        let upper = min(end, other.end)
        guard lower < upper else { return .zero }
        return MediaTimeRange(start: lower, end: upper)
    }

    /// The smallest range containing both ranges (including any gap between them); an invalid
    /// operand gives ``invalid``.
    public func union(_ other: MediaTimeRange) -> MediaTimeRange {
        guard isValid, other.isValid else { return .invalid }
        return MediaTimeRange(start: min(start, other.start), end: max(end, other.end))
    }
}

extension MediaTimeRange: CustomStringConvertible {
    /// `{start, duration}` using ``MediaTime/description`` for both.
    public var description: String { "{\(start), \(duration)}" }
}
