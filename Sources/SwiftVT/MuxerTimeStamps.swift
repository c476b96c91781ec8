import MediaCore

/// Time stamps of compressed frames as a muxer needs them (GStreamer's `mp4mux`, from a frame
/// silo or a splice of several): nanoseconds, none negative, decode times strictly increasing
/// and never after the presentation time.
///
/// - Every time stamp is shifted by the first frame's lead of DTS before 0: GstClockTime is
///   unsigned, and an encoder with B-frames puts the first DTS before the first PTS. The muxer
///   gets a segment starting at that shift (``segmentStart``), so the first PTS runs at 0 and
///   the lead becomes an edit list.
/// - Ranges re-encoded by a fresh encoder, or spliced chunks, extrapolate their first DTS before
///   their first PTS (the B-frame delay), which can touch the previous range's last DTS; one
///   nanosecond later keeps the order.
public struct MuxerTimeStamps: Sendable {
    private var lastDecode: Int64?
    private var shift: Int64?

    public init() {}

    /// The shift of every time stamp: the start of the muxer's segment. Known after the first
    /// ``next(presentation:decode:)``.
    public var segmentStart: Int64 { shift ?? 0 }

    /// The next frame's time stamps in decode order, shifted (saturating: upstream's time stamps
    /// may reach the end of the range).
    public mutating func next(presentation: Int64, decode: Int64) -> (presentation: Int64, decode: Int64) {
        let shift = self.shift ?? max(0, Int64(0).subtractingSaturating(min(presentation, decode)))
        self.shift = shift
        var value = min(decode, presentation)
        if let lastDecode, value <= lastDecode { value = lastDecode.addingSaturating(1) }
        lastDecode = value
        return (max(0, presentation.addingSaturating(shift)), max(0, value.addingSaturating(shift)))
    }
}
