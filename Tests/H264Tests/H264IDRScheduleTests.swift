import H264
import MediaCore
import Testing

/// The IDR placement rule both encoder paths use: CompressionSession (for every backend, with the
/// session's key-frame properties) and H264CodingPlanner (for the VA encoder, with its IDR period).
@Suite("H.264 encoding: IDR schedule")
struct H264IDRScheduleTests {
    /// Frame `index` of a 30 fps stream.
    private static func time(_ index: Int) -> MediaTime { MediaTime(value: Int64(index), timescale: 30) }

    /// The frames of `count` that the schedule makes IDR pictures.
    private static func idrFrames(
        _ count: Int, limits: H264IDRLimits, forced: Set<Int> = [], keyFramesReported: Set<Int> = []
    ) -> [Int] {
        var schedule = H264IDRSchedule()
        var idrs: [Int] = []
        for index in 0..<count {
            if schedule.nextFrameIsIDR(
                presentationTimeStamp: time(index), forced: forced.contains(index), limits: limits)
            {
                idrs.append(index)
            }
            if keyFramesReported.contains(index) { schedule.noteKeyFrame(at: time(index)) }
        }
        return idrs
    }

    @Test("without limits only the first frame and forced frames are IDR pictures")
    func firstAndForced() {
        #expect(Self.idrFrames(40, limits: H264IDRLimits()) == [0])
        #expect(Self.idrFrames(40, limits: H264IDRLimits(), forced: [13, 14]) == [0, 13, 14])
    }

    @Test("maxFrameInterval: the frame that many after the last IDR picture; a forced one restarts the count")
    func frameInterval() {
        #expect(Self.idrFrames(20, limits: H264IDRLimits(maxFrameInterval: 5)) == [0, 5, 10, 15])
        #expect(Self.idrFrames(20, limits: H264IDRLimits(maxFrameInterval: 5), forced: [7]) == [0, 5, 7, 12, 17])
        #expect(Self.idrFrames(4, limits: H264IDRLimits(maxFrameInterval: 1)) == [0, 1, 2, 3])
    }

    @Test("everyFrame: every frame an IDR picture")
    func everyFrame() {
        #expect(Self.idrFrames(6, limits: H264IDRLimits(maxFrameInterval: 250, everyFrame: true)) == Array(0..<6))
    }

    @Test("maxDuration: the first frame at or after the last key frame plus the duration")
    func duration() {
        // 0.5 s at 30 fps is 15 frames; exact times must not miss the boundary by rounding.
        #expect(Self.idrFrames(40, limits: H264IDRLimits(maxDuration: 0.5)) == [0, 15, 30])
        // Frames with gaps: the IDR picture falls on the first frame past the limit.
        var schedule = H264IDRSchedule()
        let times = [0, 10, 20, 31, 40, 62].map(Self.time)
        let idr = times.map {
            schedule.nextFrameIsIDR(presentationTimeStamp: $0, forced: false, limits: H264IDRLimits(maxDuration: 1))
        }
        #expect(idr == [true, false, false, true, false, true])
    }

    @Test("a key frame the encoder reports moves the time limit, never back, and not the frame count")
    func reportedKeyFrames() {
        // The encoder's own key frame at 10 (a scene cut): the next IDR picture is 15 frames after it.
        #expect(Self.idrFrames(40, limits: H264IDRLimits(maxDuration: 0.5), keyFramesReported: [10]) == [0, 25])
        // Reported key frames do not restart the count in frames.
        #expect(Self.idrFrames(12, limits: H264IDRLimits(maxFrameInterval: 5), keyFramesReported: [3]) == [0, 5, 10])
        // An earlier or non-numeric time changes nothing.
        var schedule = H264IDRSchedule()
        let limits = H264IDRLimits(maxDuration: 0.5)
        var idr = [schedule.nextFrameIsIDR(presentationTimeStamp: Self.time(30), forced: false, limits: limits)]
        schedule.noteKeyFrame(at: Self.time(20))
        schedule.noteKeyFrame(at: .invalid)
        for index in [44, 45] {
            idr.append(schedule.nextFrameIsIDR(presentationTimeStamp: Self.time(index), forced: false, limits: limits))
        }
        #expect(idr == [true, false, true])
    }

    @Test("reset: the next frame starts over with an IDR picture; framesSinceIDR counts the IDR picture as 1")
    func resetAndCount() {
        var schedule = H264IDRSchedule()
        #expect(schedule.framesSinceIDR == 0)
        for index in 0..<4 {
            _ = schedule.nextFrameIsIDR(presentationTimeStamp: Self.time(index), forced: false, limits: H264IDRLimits())
        }
        #expect(schedule.framesSinceIDR == 4)
        schedule.reset()
        let afterReset = schedule.nextFrameIsIDR(
            presentationTimeStamp: Self.time(4), forced: false, limits: H264IDRLimits())
        #expect(afterReset && schedule.framesSinceIDR == 1)
        // The coding planner keeps no times: without a duration limit nil times are fine.
        let untimed = (0..<3).map { _ in
            schedule.nextFrameIsIDR(
                presentationTimeStamp: nil, forced: false, limits: H264IDRLimits(maxFrameInterval: 3))
        }
        #expect(untimed == [false, false, true])
    }
}
