import MediaCore

/// The exact timing of the samples libavcodec is decoding, under the sequence number given to it
/// as each packet's `pts` (libavcodec carries it to the frame decoded from the packet, through
/// reordering and frame threads).
///
/// Entries of samples that produce no picture of their own (the second field of a pair, data the
/// decoder skipped) are never taken; the table drops those far behind the newest sample sent.
/// The cut is made from SwiftVT's own sequence numbers, never from the frame's `pts`:
/// libavcodec may return a frame with neither `pts` nor `best_effort_timestamp`
/// (`AV_NOPTS_VALUE`, `Int64.min`), and arithmetic on that value would trap.
struct SampleTimingTable {
    struct Timing: Sendable {
        var presentationTimeStamp: MediaTime
        var duration: MediaTime
        var frameReference: UInt64
    }

    /// More pending entries than this start a cut; reordering (the DPB, 16 frames at most, A.3.1,
    /// plus frame threads) never reaches `keptBehindNewest` samples back.
    static let pruneThreshold = 256
    static let keptBehindNewest: Int64 = 128

    private var entries: [Int64: Timing] = [:]
    private(set) var nextSequenceNumber: Int64 = 0

    var count: Int { entries.count }

    /// A sequence number for the next sample sent to libavcodec.
    mutating func takeSequenceNumber() -> Int64 {
        defer { nextSequenceNumber += 1 }
        return nextSequenceNumber
    }

    mutating func record(_ timing: Timing, for sequenceNumber: Int64) {
        entries[sequenceNumber] = timing
    }

    /// The timing of the sample a frame was decoded from, by the frame's `pts` (any value: an
    /// unknown one finds nothing).
    mutating func take(framePTS: Int64) -> Timing? {
        let timing = entries.removeValue(forKey: framePTS)
        if entries.count > Self.pruneThreshold {
            let oldestKept = nextSequenceNumber.subtractingSaturating(Self.keptBehindNewest)
            entries = entries.filter { $0.key >= oldestKept }
        }
        return timing
    }

    mutating func removeAll() {
        entries.removeAll(keepingCapacity: true)
    }
}
