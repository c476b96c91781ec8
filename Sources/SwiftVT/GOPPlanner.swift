import MediaCore

/// The GOP decisions shared by every encoder backend: where IDR pictures must be.
///
/// - every frame, when temporal compression is off;
/// - a frame with ``FrameProperties/forceKeyFrame``;
/// - the first frame at or after the last key frame + ``CompressionProperties/maxKeyFrameIntervalDuration``
///   (so IDR spacing in time never exceeds it when frames exist at that time);
/// - the frame ``CompressionProperties/maxKeyFrameInterval`` frames after the last key frame.
///
/// "The last key frame" is the later of the last IDR this planner asked for and the last sync
/// sample the backend output (a backend may insert its own at scene cuts; it reports them with
/// its reordering delay, so the planner may ask for an IDR a little early, never late).
struct GOPPlanner {
    private var lastKeyPresentationTime: MediaTime?
    /// Input frames since the last IDR this planner asked for.
    private var framesSinceKey = 0
    private var started = false

    mutating func frameType(
        presentationTimeStamp pts: MediaTime, forced: Bool, properties: CompressionProperties
    ) -> EncoderFrameType {
        var idr = forced || !started || !properties.allowTemporalCompression
        if properties.maxKeyFrameInterval > 0, framesSinceKey >= properties.maxKeyFrameInterval { idr = true }
        if properties.maxKeyFrameIntervalDuration > 0, let last = lastKeyPresentationTime,
            (pts - last).seconds >= properties.maxKeyFrameIntervalDuration - 1e-9
        {
            idr = true
        }
        started = true
        if idr {
            lastKeyPresentationTime = pts
            framesSinceKey = 1
            return .idr
        }
        framesSinceKey += 1
        return .automatic
    }

    mutating func noteKeyFrame(at pts: MediaTime) {
        guard pts.isNumeric else { return }
        if let last = lastKeyPresentationTime, pts <= last { return }
        lastKeyPresentationTime = pts
    }

    /// After a flush the next frame starts a new GOP.
    mutating func reset() { self = GOPPlanner() }
}
