import Testing

@testable import MediaCore

extension MediaCoreTests {
    @Suite struct MediaTimeRangeTests {
        func range(_ start: Int64, _ duration: Int64, _ timescale: Int32 = 1) -> MediaTimeRange {
            MediaTimeRange(start: t(start, timescale), duration: t(duration, timescale))
        }

        @Test func validityAndEmptiness() {
            #expect(range(0, 10).isValid && !range(0, 10).isEmpty)
            #expect(range(5, 0).isEmpty)
            #expect(MediaTimeRange.zero.isEmpty && MediaTimeRange.zero.isValid)
            #expect(!MediaTimeRange.invalid.isValid && !MediaTimeRange.invalid.isEmpty)
            #expect(!range(0, -1).isValid)
            #expect(!MediaTimeRange(start: .invalid, duration: t(1, 1)).isValid)
            #expect(!MediaTimeRange(start: t(0, 1), duration: .negativeInfinity).isValid)
            #expect(MediaTimeRange(start: t(0, 1), duration: .positiveInfinity).isValid)
            let live = MediaTimeRange(start: t(0, 1), duration: .indefinite)
            #expect(live.isValid && live.isIndefinite)
            #expect(!MediaTimeRange.invalid.end.isValid)
        }

        @Test func startEndInitializer() {
            let r = MediaTimeRange(start: t(1001, 30000), end: t(3, 90000) + t(1, 1))
            #expect(r.start == t(1001, 30000))
            #expect(r.end == t(90003, 90000))
            #expect(r.duration == t(90003 - 3003, 90000))
            #expect(!MediaTimeRange(start: t(2, 1), end: t(1, 1)).isValid)
        }

        @Test func containsTimeIsHalfOpen() {
            let r = range(10, 5)
            #expect(r.contains(t(10, 1)))
            #expect(r.contains(t(14_999, 1000)))
            #expect(!r.contains(t(15, 1)))
            #expect(!r.contains(t(9_999, 1000)))
            #expect(!range(10, 0).contains(t(10, 1)))
            #expect(!r.contains(MediaTime.invalid))
            #expect(!r.contains(MediaTime.indefinite))
            #expect(!MediaTimeRange.invalid.contains(t(0, 1)))
            let unbounded = MediaTimeRange(start: t(0, 1), duration: .positiveInfinity)
            #expect(unbounded.contains(t(Int64.max, 1)))
            #expect(!unbounded.contains(.positiveInfinity))
            // Mixed timescales compare exactly.
            #expect(range(3003, 3003, 90000).contains(t(1001, 30000)))
            #expect(!range(3003, 3003, 90000).contains(t(2002, 30000)))
        }

        @Test func containsRange() {
            let r = range(10, 10)
            #expect(r.contains(range(10, 10)))
            #expect(r.contains(range(12, 3)))
            #expect(!r.contains(range(9, 3)))
            #expect(!r.contains(range(15, 6)))
            #expect(r.contains(range(20, 0))) // empty range at the end
            #expect(!r.contains(range(21, 0)))
            #expect(!r.contains(MediaTimeRange.invalid))
            #expect(!MediaTimeRange.invalid.contains(r))
        }

        @Test func intersection() {
            #expect(range(0, 10).intersection(range(5, 10)) == range(5, 5))
            #expect(range(0, 10).intersection(range(2, 3)) == range(2, 3))
            #expect(range(0, 10).intersection(range(10, 5)) == .zero) // touching
            #expect(range(0, 10).intersection(range(20, 5)) == .zero) // disjoint
            #expect(range(0, 10).intersection(range(5, 0)) == .zero) // empty operand
            #expect(!range(0, 10).intersection(.invalid).isValid)
            let mixed = range(0, 1).intersection(MediaTimeRange(start: t(1001, 30000), duration: t(1, 1)))
            #expect(mixed.start == t(1001, 30000) && mixed.end == t(1, 1))
        }

        @Test func union() {
            #expect(range(0, 10).union(range(5, 10)) == range(0, 15))
            #expect(range(0, 2).union(range(8, 2)) == range(0, 10)) // covers the gap
            #expect(range(3, 2).union(range(0, 10)) == range(0, 10))
            #expect(!range(0, 1).union(.invalid).isValid)
            let infinite = range(0, 1).union(MediaTimeRange(start: t(5, 1), duration: .positiveInfinity))
            #expect(infinite.start == t(0, 1) && infinite.duration.isPositiveInfinity)
        }

        @Test func equalityUsesNumericTimes() {
            #expect(range(1, 2) == range(1000, 2000, 1000))
            #expect(range(1, 2).hashValue == range(1000, 2000, 1000).hashValue)
            #expect(range(1, 2).description == "{{1/1 = 1.000}, {2/1 = 2.000}}")
        }
    }
}
