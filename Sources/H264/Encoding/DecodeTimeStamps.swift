import MediaCore

/// Decode time stamps for an encoder that outputs pictures in coding order.
///
/// With a reorder delay of d frames (``H264GOPStructure/maxReorderFrames``), the k-th picture in
/// coding order gets the k-th smallest presentation time stamp shifted back by d frames: the
/// PTS of the (k - d)-th frame, and for the first d pictures times extrapolated before the first
/// PTS by the frame duration. So DTS increases strictly and never exceeds the picture's PTS
/// (an anchor is coded at most d frames before it is shown), as a decoder's buffer model
/// expects (C.4); the first DTS may be negative when the first PTS is 0, as with x264.
public struct DecodeTimeStampSequencer: Sendable {
    public let reorderDelay: Int
    /// Presentation times received and not yet used as a DTS, ascending.
    private var pending: [MediaTime] = []
    private var firstPresentationTime: MediaTime?
    private var coded = 0
    /// The last DTS handed out: a restart (a new range of a multi-pass pass) keeps DTS
    /// increasing unless time goes back.
    private var lastDecodeTimeStamp: MediaTime?

    public init(reorderDelay: Int) {
        self.reorderDelay = max(0, reorderDelay)
    }

    /// Notes a frame's PTS when it enters the encoder (in display order).
    public mutating func noteInput(presentationTimeStamp pts: MediaTime) {
        if firstPresentationTime == nil {
            firstPresentationTime = pts
            if let last = lastDecodeTimeStamp, pts < last { lastDecodeTimeStamp = nil } // a new timeline
        }
        let index = pending.firstIndex { $0 > pts } ?? pending.count
        pending.insert(pts, at: index)
    }

    /// The DTS of the next picture in coding order, whose PTS is `pts` and which lasts `frameDuration`.
    public mutating func next(presentationTimeStamp pts: MediaTime, frameDuration: MediaTime) -> MediaTime {
        var dts: MediaTime
        if coded < reorderDelay, let first = firstPresentationTime {
            let step =
                frameDuration.isNumeric && frameDuration > .zero
                ? frameDuration : MediaTime(value: 1, timescale: 90_000)
            // MediaTime's multiplication saturates: `step` is upstream's frame duration, which may
            // be absurdly long.
            dts = first - step.multiplied(by: reorderDelay - coded)
        } else if !pending.isEmpty {
            dts = pending.removeFirst()
        } else {
            dts = pts
        }
        coded += 1
        if let last = lastDecodeTimeStamp, dts <= last {
            dts = last + MediaTime(value: 1, timescale: 90_000)
        }
        dts = min(dts, pts)
        lastDecodeTimeStamp = dts
        return dts
    }

    /// A new sequence of frames (after a flush) starts its own reorder delay.
    public mutating func restart() {
        pending.removeAll()
        firstPresentationTime = nil
        coded = 0
    }
}
