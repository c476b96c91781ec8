import MediaCore

// Where IDR pictures go: the one place an encoder decides it. An IDR picture starts a coded video
// sequence (7.4.1.2.4, 8.2.5.1: every reference picture is marked unused, so nothing after it
// refers to anything before it), which makes it a random access point and the boundary of a
// closed GOP.
//
// Two encoders' worth of callers keep one: CompressionSession, with the session's key-frame
// properties, decides for every backend which frames must be IDR pictures (the backend may add
// its own at scene cuts); H264CodingPlanner, with the IDR period of the stream it plans, decides
// it for the pictures it codes itself (the VA encoder).

/// How far apart IDR pictures may be at most.
public struct H264IDRLimits: Sendable, Equatable {
    /// Frames from one IDR picture to the next at most: the frame this many after the last IDR
    /// picture is one; 0 = no limit.
    public var maxFrameInterval: Int
    /// Seconds from one key frame to the next at most: the first frame presented at or after
    /// the last key frame plus this is an IDR picture; 0 = no limit.
    public var maxDuration: Double
    /// Every frame is an IDR picture (no inter prediction at all).
    public var everyFrame: Bool

    public init(maxFrameInterval: Int = 0, maxDuration: Double = 0, everyFrame: Bool = false) {
        self.maxFrameInterval = maxFrameInterval
        self.maxDuration = maxDuration
        self.everyFrame = everyFrame
    }
}

/// Decides, frame by frame in display order, which frames are IDR pictures.
///
/// A frame is one when
/// - it is the first frame (or the first after ``reset()``);
/// - it is forced (a requested key frame; the start of a multi-pass range);
/// - ``H264IDRLimits/everyFrame``;
/// - it is ``H264IDRLimits/maxFrameInterval`` frames after the last IDR picture this schedule
///   placed;
/// - it is presented ``H264IDRLimits/maxDuration`` or more after the last key frame (so IDR
///   spacing in time never exceeds it when frames exist at that time).
///
/// "The last key frame" is the later of the last IDR picture this schedule placed and the last
/// one reported by ``noteKeyFrame(at:)``: an encoder may insert its own at scene cuts, and
/// reports them with its reordering delay, so the schedule may ask for an IDR picture a little
/// early, never late. Reported key frames do not restart the frame count: only the schedule's
/// own IDR pictures do.
public struct H264IDRSchedule: Sendable {
    private var lastKeyPresentationTime: MediaTime?
    /// Frames decided since the last IDR picture placed here, that one included (1 right after
    /// it); 0 before the first frame.
    public private(set) var framesSinceIDR = 0
    private var started = false

    public init() {}

    /// Decides whether the next frame (display order) is an IDR picture, and counts it.
    ///
    /// - Parameters:
    ///   - presentationTimeStamp: the frame's time; nil when the caller keeps no times (then
    ///     ``H264IDRLimits/maxDuration`` cannot apply and must be 0).
    ///   - forced: the frame must be an IDR picture whatever the limits say.
    public mutating func nextFrameIsIDR(
        presentationTimeStamp pts: MediaTime?, forced: Bool, limits: H264IDRLimits
    ) -> Bool {
        var idr = forced || !started || limits.everyFrame
        if limits.maxFrameInterval > 0, framesSinceIDR >= limits.maxFrameInterval { idr = true }
        if limits.maxDuration > 0, let pts, let last = lastKeyPresentationTime,
            (pts - last).seconds >= limits.maxDuration - 1e-9
        {
            idr = true
        }
        started = true
        if idr {
            lastKeyPresentationTime = pts
            framesSinceIDR = 1
            return true
        }
        framesSinceIDR += 1
        return false
    }

    /// A key frame the encoder output at `pts` (e.g. one it placed at a scene cut): the time
    /// limit counts from it when it is later than the last one known.
    public mutating func noteKeyFrame(at pts: MediaTime) {
        guard pts.isNumeric else { return }
        if let last = lastKeyPresentationTime, pts <= last { return }
        lastKeyPresentationTime = pts
    }

    /// Forgets everything: the next frame is an IDR picture (after a flush, which starts a new
    /// coded video sequence).
    public mutating func reset() { self = H264IDRSchedule() }
}
