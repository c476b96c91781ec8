/// Places pictures on a frame grid when a stream carries no timestamps: a decode position from
/// decoding order, and a presentation position from the pictures' output order.
///
/// Output order within one POC epoch (an IDR or a picture with MMCO 5 up to the next one, see
/// `PictureOrderCountCalculator`) is POC order (C.4.5.3), and every picture of an earlier epoch
/// is output before any picture of a later one (C.4.4). A picture's place in output order is its
/// rank by POC in its epoch, which depends on pictures that follow it in decoding order: up to
/// `reorderWindow` of them (max_num_reorder_frames, or the DPB size, bounds how far a picture can
/// move; even an IDR may be output after the pictures that follow it, when they have lower
/// POCs). So pictures are held until `reorderWindow` later pictures, or a new epoch, have been
/// seen; `place` returns those that became final. The rank does not depend on the POC step, so
/// any POC numbering works.
///
/// Presentation positions are delayed so that no picture is presented before it is decoded: by
/// `presentationDelay` when the stream states its reorder depth (the VUI's
/// max_num_reorder_frames bounds decode position minus output position, E.2.1), otherwise by
/// the largest such difference among the pictures held when the first one is placed. The delay
/// is kept small on purpose: muxers and demuxers treat a composition offset longer than a short
/// clip as damage.
// @inlinable and @usableFromInline: the queue is generic and its clients (the parser elements)
// are in other modules; without them every call went through run-time generic metadata lookups
// (a sixth of h265parse-to-hvcc's time per access unit).
@frozen
public struct PresentationOrderQueue<Payload> {
    @frozen
    public struct Placed {
        public var payload: Payload
        /// Frames since the first picture, in decoding order.
        public var decodePosition: Int64
        /// Frames since the first picture, in presentation order, plus the presentation delay.
        public var presentationPosition: Int64

        @inlinable
        init(payload: Payload, decodePosition: Int64, presentationPosition: Int64) {
            self.payload = payload
            self.decodePosition = decodePosition
            self.presentationPosition = presentationPosition
        }
    }

    @usableFromInline
    struct Pending {
        @usableFromInline var payload: Payload
        @usableFromInline var decodePosition: Int64
        @usableFromInline var epoch: Int
        /// Decode position of the first picture of the epoch: every picture before it is
        /// presented before every picture of the epoch.
        @usableFromInline var epochStart: Int64
        @usableFromInline var pictureOrderCount: Int64

        @inlinable
        init(payload: Payload, decodePosition: Int64, epoch: Int, epochStart: Int64, pictureOrderCount: Int64) {
            self.payload = payload
            self.decodePosition = decodePosition
            self.epoch = epoch
            self.epochStart = epochStart
            self.pictureOrderCount = pictureOrderCount
        }
    }

    public let reorderWindow: Int
    /// Frames added to every presentation position; nil until the first picture is placed when
    /// the stream did not state its reorder depth.
    public var presentationDelay: Int64? { storedPresentationDelay }
    @usableFromInline var storedPresentationDelay: Int64?
    @usableFromInline let statedPresentationDelay: Int?
    @usableFromInline var pending: [Pending] = []
    @usableFromInline var nextDecodePosition: Int64 = 0
    @usableFromInline var currentEpoch: Int?
    @usableFromInline var currentEpochStart: Int64 = 0
    /// POCs of the pictures already placed, sorted, for the epochs that still have pictures held.
    @usableFromInline var placedPictureOrderCounts: [Int: [Int64]] = [:]

    /// - Parameters:
    ///   - reorderWindow: how many later pictures may be output before a picture (the DPB size).
    ///   - presentationDelay: the stream's max_num_reorder_frames, when it states it.
    @inlinable
    public init(reorderWindow: Int, presentationDelay: Int? = nil) {
        self.reorderWindow = max(0, reorderWindow)
        statedPresentationDelay = presentationDelay.map { max(0, $0) }
        storedPresentationDelay = statedPresentationDelay.map(Int64.init)
    }

    /// The number of pictures held back.
    @inlinable
    public var count: Int { pending.count }

    /// Adds the next picture in decoding order; returns the pictures whose presentation position
    /// is now known, in decoding order.
    @inlinable
    public mutating func place(_ payload: Payload, picture: AccessUnitPicture) -> [Placed] {
        place(payload, epoch: picture.pictureOrderCountEpoch, pictureOrderCount: picture.pictureOrderCount.picOrderCnt)
    }

    /// `place(_:picture:)` for any codec whose pictures are output in POC order within an epoch
    /// and epoch by epoch: H.265's coded video sequences (POC is unique within one, 8.3.1, and
    /// an IRAP picture with NoRaslOutputFlag 1 outputs every earlier picture first, C.5.2.2).
    @inlinable
    public mutating func place(_ payload: Payload, epoch: Int, pictureOrderCount: Int64) -> [Placed] {
        var ready: [Placed] = []
        place(payload, epoch: epoch, pictureOrderCount: pictureOrderCount) { ready.append($0) }
        return ready
    }

    /// `place(_:epoch:pictureOrderCount:)` handing each picture whose presentation position is
    /// now known to `released`, in decoding order, instead of returning an array (an allocation
    /// per picture placed).
    @inlinable
    public mutating func place(
        _ payload: Payload, epoch: Int, pictureOrderCount: Int64, released: (Placed) -> Void
    ) {
        if currentEpoch != epoch {
            // C.4.4: the new epoch's pictures all come after every earlier picture.
            currentEpoch = epoch
            currentEpochStart = nextDecodePosition
        }
        pending.append(
            Pending(
                payload: payload, decodePosition: nextDecodePosition, epoch: epoch,
                epochStart: currentEpochStart, pictureOrderCount: pictureOrderCount))
        nextDecodePosition += 1
        while pending.count > reorderWindow {
            released(placeFirst())
        }
    }

    /// Places every held picture (end of stream, or before a new epoch).
    @inlinable
    public mutating func drain() -> [Placed] {
        var ready: [Placed] = []
        while !pending.isEmpty { ready.append(placeFirst()) }
        return ready
    }

    /// Forgets everything (flush, seek): positions start again at 0. Held payloads are returned
    /// so that the caller can release them.
    @inlinable
    public mutating func reset() -> [Payload] {
        let dropped = pending.map(\.payload)
        self = PresentationOrderQueue(reorderWindow: reorderWindow, presentationDelay: statedPresentationDelay)
        return dropped
    }

    @inlinable
    mutating func placeFirst() -> Placed {
        if reorderWindow == 0 {
            // No later picture is output before an earlier one: output order is decoding order
            // (H.264 pic_order_cnt_type 2, 8.2.1.3; H.265 sps_max_num_reorder_pics 0, 7.4.3.2.1),
            // so a picture's place is its decode position, without the POC bookkeeping.
            let first = pending.removeFirst()
            if storedPresentationDelay == nil { storedPresentationDelay = 0 }
            return Placed(
                payload: first.payload, decodePosition: first.decodePosition,
                presentationPosition: first.decodePosition + (presentationDelay ?? 0))
        }
        if storedPresentationDelay == nil {
            // Decode position minus output position for every picture known now; their ranks can
            // only grow with more pictures, so this is at least what they need.
            var delay: Int64 = 0
            for picture in pending {
                delay = max(delay, picture.decodePosition - (picture.epochStart + Int64(rank(of: picture))))
            }
            storedPresentationDelay = delay
        }
        let first = pending.removeFirst()
        let presentationIndex = first.epochStart + Int64(rank(of: first))
        // Earlier epochs are complete once a picture of a later one is placed.
        if placedPictureOrderCounts[first.epoch] == nil {
            placedPictureOrderCounts = placedPictureOrderCounts.filter { $0.key > first.epoch }
        }
        Self.insertSorted(first.pictureOrderCount, into: &placedPictureOrderCounts[first.epoch, default: []])
        return Placed(
            payload: first.payload, decodePosition: first.decodePosition,
            presentationPosition: presentationIndex + (presentationDelay ?? 0))
    }

    /// Rank in output order within the epoch: pictures of the epoch with a lower POC, placed or
    /// held (`picture` itself is not in `pending` or is counted as not lower than itself).
    @inlinable
    func rank(of picture: Pending) -> Int {
        let placed =
            placedPictureOrderCounts[picture.epoch].map { Self.countLess(than: picture.pictureOrderCount, in: $0) } ?? 0
        let held = pending.lazy.filter { $0.epoch == picture.epoch && $0.pictureOrderCount < picture.pictureOrderCount }
            .count
        return placed + held
    }

    @inlinable
    static func countLess(than value: Int64, in sorted: [Int64]) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low
    }

    @inlinable
    static func insertSorted(_ value: Int64, into sorted: inout [Int64]) {
        sorted.insert(value, at: countLess(than: value, in: sorted))
    }
}

extension PresentationOrderQueue: Sendable where Payload: Sendable {}
extension PresentationOrderQueue.Pending: Sendable where Payload: Sendable {}
extension PresentationOrderQueue.Placed: Sendable where Payload: Sendable {}
