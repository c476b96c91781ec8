/// The decoded picture buffer of a frame decoder: reference marking (8.2.5) and output
/// ordering by "bumping" (C.4.5.3). Frames only: field pairs are not stored.
public struct H264DecodedPictureBuffer {
    /// The frames held, in the order they were stored.
    public private(set) var pictures: [H264Picture] = []
    /// The frame buffers of the DPB (A.3.1 MaxDpbFrames or the VUI's max_dec_frame_buffering).
    public var capacity = 16
    /// Output early when more pictures than this wait for output: the VUI's
    /// max_num_reorder_frames guarantees no later picture goes before them (C.4.5.3 is only
    /// triggered by a full DPB, which adds latency a decoder does not need).
    public var maxReorderFrames = 16
    /// MaxLongTermFrameIdx (7.4.3.3): nil for "no long-term frame indices".
    public private(set) var maxLongTermFrameIndex: Int?

    public init() {}

    public var referencePictures: [H264Picture] { pictures.filter { $0.marking.isReference } }
    public var shortTermReferences: [H264Picture] { pictures.filter { $0.isShortTermReference } }
    public var longTermReferences: [H264Picture] { pictures.filter { $0.isLongTermReference } }
    var countNeededForOutput: Int { pictures.reduce(0) { $0 + ($1.isNeededForOutput ? 1 : 0) } }

    /// 8.2.4.1: FrameNumWrap of every short-term reference frame, relative to the current
    /// picture's frame_num (8-27).
    mutating func updateFrameNumWrap(currentFrameNum: Int, maxFrameNum: Int) {
        for picture in pictures where picture.isShortTermReference {
            picture.frameNumWrap =
                picture.frameNum > currentFrameNum ? picture.frameNum - maxFrameNum : picture.frameNum
        }
    }

    // MARK: - Reference marking (8.2.5)

    /// 8.2.5.1 for an IDR picture: every reference picture becomes unused; the IDR picture is
    /// a long-term frame with LongTermFrameIdx 0 when long_term_reference_flag is set.
    mutating func markIDR(_ current: H264Picture, longTermReference: Bool) {
        for picture in pictures { picture.marking = .unused }
        if longTermReference {
            current.marking = .longTerm(frameIndex: 0)
            maxLongTermFrameIndex = 0
        } else {
            current.marking = .shortTerm
            maxLongTermFrameIndex = nil
        }
        removeUnneeded()
    }

    /// 8.2.5.3: the sliding window. When the DPB holds max(max_num_ref_frames, 1) reference
    /// frames, the short-term one with the smallest FrameNumWrap becomes unused, and its frame
    /// buffer is emptied at once when it is not waiting for output (C.4.5.3): the room is made
    /// before the accelerator is asked for a surface for a frame inferred for a frame_num gap
    /// (H264PictureDecoder.fillFrameNumGap). Left in the DPB until the next store, the frame
    /// kept its surface then, and stayed there for good when the accelerator's call failed.
    mutating func slidingWindow(maxNumRefFrames: Int) {
        let limit = Swift.max(maxNumRefFrames, 1)
        while shortTermReferences.count + longTermReferences.count >= limit {
            guard let oldest = shortTermReferences.min(by: { $0.frameNumWrap < $1.frameNumWrap }) else { break }
            oldest.marking = .unused
        }
        removeUnneeded()
    }

    /// 8.2.5.4: adaptive marking, the memory_management_control_operations of the current
    /// picture in order. Operations naming a picture that is not there (a damaged stream) are
    /// ignored. Returns true when the current picture was made long-term (operation 6).
    mutating func applyMemoryManagementControlOperations(
        _ operations: [MemoryManagementControlOperation], current: H264Picture, currPicNum: Int
    ) -> Bool {
        // The long-term frames the operations act on: the DPB's, and the current picture once
        // operation 6 made it one, so that a later operation of the same list taking its
        // LongTermFrameIdx (3), its LongTermPicNum (2) or lowering MaxLongTermFrameIdx (4)
        // applies to it too. Without it, operation 3 gave an index the current picture held to a
        // second frame, and the DPB had two frames with one LongTermFrameIdx.
        func longTermFrames() -> [H264Picture] {
            longTermReferences + (current.isLongTermReference ? [current] : [])
        }
        for operation in operations {
            switch operation {
            case .markShortTermUnused(let difference):
                // 8.2.5.4.1: picNumX = CurrPicNum - (difference_of_pic_nums_minus1 + 1) (8-39).
                let picNumX = currPicNum - (difference + 1)
                shortTermReferences.first { $0.picNum == picNumX }?.marking = .unused
            case .markLongTermUnused(let longTermPicNum):
                // 8.2.5.4.2
                longTermFrames().first { $0.longTermPicNum == longTermPicNum }?.marking = .unused
            case .assignLongTermFrameIdx(let difference, let index):
                // 8.2.5.4.3: a long-term frame already holding the index gives it up.
                let picNumX = currPicNum - (difference + 1)
                guard let picture = shortTermReferences.first(where: { $0.picNum == picNumX }) else { continue }
                longTermFrames().first { $0.longTermFrameIndex == index }?.marking = .unused
                picture.marking = .longTerm(frameIndex: index)
            case .setMaxLongTermFrameIdx(let maxPlus1):
                // 8.2.5.4.4: long-term frames above the new maximum become unused.
                maxLongTermFrameIndex = maxPlus1 == 0 ? nil : maxPlus1 - 1
                for picture in longTermFrames() {
                    if let index = picture.longTermFrameIndex, maxPlus1 == 0 || index > maxPlus1 - 1 {
                        picture.marking = .unused
                    }
                }
            case .markAllUnused:
                // 8.2.5.4.5
                for picture in pictures where picture !== current { picture.marking = .unused }
                maxLongTermFrameIndex = nil
            case .markCurrentLongTerm(let index):
                // 8.2.5.4.6
                longTermReferences.first { $0.longTermFrameIndex == index && $0 !== current }?.marking = .unused
                current.marking = .longTerm(frameIndex: index)
            }
        }
        return current.isLongTermReference
    }

    // MARK: - Output (C.4)

    /// Removes the frames that are neither references nor waiting for output (C.4.5.3: their
    /// frame buffers become empty).
    mutating func removeUnneeded() {
        pictures.removeAll { !$0.marking.isReference && !$0.isNeededForOutput }
    }

    /// C.4.5.3 "bumping": the picture waiting for output with the smallest PicOrderCnt. Its
    /// frame buffer is emptied when it is not a reference. nil when none waits.
    mutating func bump() -> H264Picture? {
        var best: H264Picture?
        for picture in pictures where picture.isNeededForOutput {
            if best.map({ picture.picOrderCnt < $0.picOrderCnt }) ?? true { best = picture }
        }
        guard let best else { return nil }
        best.isNeededForOutput = false
        removeUnneeded()
        return best
    }

    /// Every picture waiting for output, in output order (C.4.4 for an IDR or MMCO 5 picture,
    /// C.4.5.3 at the end of the stream); the DPB keeps only reference pictures afterwards.
    mutating func bumpAll() -> [H264Picture] {
        var output: [H264Picture] = []
        while let picture = bump() { output.append(picture) }
        return output
    }

    /// C.4.4 with no_output_of_prior_pics_flag: every frame is dropped without output.
    mutating func removeAll() {
        pictures.removeAll()
    }

    /// C.4.5.1 / C.4.5.2: stores the decoded current picture, bumping while the DPB is full.
    /// A non-reference picture that would be output before everything waiting is output at once
    /// instead of being stored. Returns the pictures output, in order.
    mutating func store(_ current: H264Picture) -> [H264Picture] {
        var output: [H264Picture] = []
        removeUnneeded()
        while pictures.count >= capacity {
            if !current.marking.isReference,
                !pictures.contains(where: { $0.isNeededForOutput && $0.picOrderCnt <= current.picOrderCnt })
            {
                // C.4.5.2: output directly, never stored.
                current.isNeededForOutput = false
                output.append(current)
                return output
            }
            guard let bumped = bump() else { break }
            output.append(bumped)
        }
        if pictures.count >= capacity {
            // Only reference frames remain and the DPB is full: a stream that keeps more
            // references than its DPB holds (MMCO 3 or 6 past MaxLongTermFrameIdx, 8.2.5.4, in a
            // damaged stream). Drop one rather than grow past the DPB, whose size is what an
            // accelerator has surfaces for: the oldest short-term reference or, when every
            // frame is long-term, the one with the smallest LongTermFrameIdx (FFmpeg drops the
            // same one for the same damage).
            let dropped =
                shortTermReferences.min { $0.frameNumWrap < $1.frameNumWrap }
                ?? longTermReferences.min { ($0.longTermFrameIndex ?? 0) < ($1.longTermFrameIndex ?? 0) }
            if let dropped {
                dropped.marking = .unused
                removeUnneeded()
            }
        }
        pictures.append(current)
        while countNeededForOutput > maxReorderFrames, let bumped = bump() {
            output.append(bumped)
        }
        return output
    }

    /// A frame inferred for a frame_num gap (8.2.5.2), stored as a short-term reference.
    mutating func storeNonExisting(_ picture: H264Picture) -> [H264Picture] {
        picture.marking = .shortTerm
        return store(picture)
    }
}
