import CGStreamer
import CSwiftVTShim
import H264
import MediaCore

/// Access units held back until their presentation position is known (when time stamps are
/// derived from the POC, see ``PresentationOrderQueue``; h264parse-to-avcc and h265parse-to-hvcc
/// place their pictures by POC epoch and POC), owned: each leaves once, stamped, in an
/// ``OwnedBufferList``, and whatever is still held when the queue is emptied or dropped goes back.
struct HeldAccessUnits: ~Copyable, @unchecked Sendable {
    // The queue owns one reference per held access unit (PresentationOrderQueue is generic over a
    // copyable payload, so the reference is a pointer here): they leave only through
    // `released(_:timestamps:)` and `discardAll(stopping:)`, or in deinit. Used under the
    // element's lock; references may be released on any thread.
    private struct Held {
        let buffer: UnsafeMutablePointer<GstBuffer>
        let inputByteCount: Int
    }

    private var queue: PresentationOrderQueue<Held>?

    init() {}

    deinit {
        guard var queue else { return }
        for held in queue.reset() { gst_buffer_unref(held.buffer) }
    }

    /// Whether access units are being placed: started by the first picture when upstream gives no
    /// time stamps.
    var isHolding: Bool { queue != nil }

    mutating func start(reorderWindow: Int, presentationDelay: Int?) {
        queue = PresentationOrderQueue(reorderWindow: reorderWindow, presentationDelay: presentationDelay)
    }

    /// Gives up everything held (a flush, a seek; released by the caller, outside its lock);
    /// positions start again at 0. `stopping` also ends holding until the next ``start``.
    mutating func discardAll(stopping: Bool) -> OwnedBufferList {
        var discarded = OwnedBufferList()
        guard var current = queue else { return discarded }
        for held in current.reset() { discarded.append(OwnedBuffer(adopting: held.buffer)) }
        queue = stopping ? nil : current
        return discarded
    }

    /// Holds the next access unit in decoding order; returns those whose presentation position is
    /// now known, stamped.
    ///
    /// - Parameters:
    ///   - epoch: counts the stretches within which output order is POC order (H.264: IDR and
    ///     MMCO 5 resets; H.265: coded video sequences); every picture of an earlier epoch is
    ///     output before any picture of a later one.
    mutating func place(
        _ buffer: consuming OwnedBuffer, inputByteCount: Int, epoch: Int, pictureOrderCount: Int64,
        timestamps: inout DerivedTimestamps
    ) -> OwnedBufferList {
        let held = Held(buffer: buffer.take(), inputByteCount: inputByteCount)
        var list = OwnedBufferList()
        guard queue != nil else {
            // Not holding: nothing to order it against.
            list.append(OwnedBuffer(adopting: held.buffer), inputByteCount: inputByteCount)
            return list
        }
        // Mutated in place (optional chaining), not through a copy: a copy shares the queue's
        // arrays and dictionary, and each access unit would then copy them all. The released
        // access units go straight into the list (no array of them in between).
        queue?.place(held, epoch: epoch, pictureOrderCount: pictureOrderCount) { entry in
            Self.release(entry, into: &list, timestamps: &timestamps)
        }
        return list
    }

    /// Everything held, stamped (the end of the stream, or before new caps).
    mutating func drain(timestamps: inout DerivedTimestamps) -> OwnedBufferList {
        // In place, as in `place`.
        guard let placed = queue?.drain() else { return OwnedBufferList() }
        return Self.released(placed, timestamps: &timestamps)
    }

    private static func released(
        _ placed: [PresentationOrderQueue<Held>.Placed], timestamps: inout DerivedTimestamps
    ) -> OwnedBufferList {
        var list = OwnedBufferList()
        for entry in placed { release(entry, into: &list, timestamps: &timestamps) }
        return list
    }

    /// Stamps a released access unit and appends it to `list`, which owns it from then on.
    private static func release(
        _ entry: PresentationOrderQueue<Held>.Placed, into list: inout OwnedBufferList,
        timestamps: inout DerivedTimestamps
    ) {
        let buffer = OwnedBuffer(adopting: entry.payload.buffer)
        timestamps.stamp(buffer, decodePosition: entry.decodePosition, presentationPosition: entry.presentationPosition)
        list.append(buffer, inputByteCount: entry.payload.inputByteCount)
    }
}

/// Time stamps for access units without upstream ones: positions in decoding and presentation
/// order on the frame grid, moved after a seek so that the first picture released has the time
/// GstBaseParse resumed at; never below 0.
struct DerivedTimestamps: Sendable {
    /// Frame duration used for derived time stamps.
    var frameDuration = MediaTime(value: 1, timescale: 25)
    /// Where derived time stamps restart after a seek: GstBaseParse's time for the offset it
    /// resumed at (the DTS it gives the first buffer, its index entry: the key frame's PTS),
    /// applied to the first picture released in output order; then the offset between the
    /// queue's positions and the stream's time.
    var pendingTimeBase: GstClockTime?
    var timeOffset: Int64 = 0

    mutating func stamp(_ buffer: borrowing OwnedBuffer, decodePosition: Int64, presentationPosition: Int64) {
        let presentation = Int64(clamping: frameDuration.multiplied(by: Int(presentationPosition)).gstreamerNanoseconds)
        let decode = Int64(clamping: frameDuration.multiplied(by: Int(decodePosition)).gstreamerNanoseconds)
        if let base = pendingTimeBase {
            timeOffset = Int64(clamping: base).subtractingSaturating(presentation)
            pendingTimeBase = nil
        }
        buffer.presentationTimeStamp = GstClockTime(max(0, presentation.addingSaturating(timeOffset)))
        buffer.decodeTimeStamp = GstClockTime(max(0, decode.addingSaturating(timeOffset)))
    }
}
