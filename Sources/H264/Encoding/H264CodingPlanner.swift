// The hardware-agnostic half of an H.264 encoder: which frame is coded as what, in which order,
// with which references, and the syntax values that follow from it (frame_num, POC, idr_pic_id).
// Which frames are IDR pictures is the H264IDRSchedule's decision, the same rule the compression
// session applies for every backend; the planner owns one and decides the rest.
// A backend (the VA encoder) turns each ``H264CodingPicture`` into its API's parameters and the
// slice header ``H264CodingPicture/sliceHeader(...)`` writes.
//
// The GOP is I(DR) P P P ... or, with B pictures, I B B P B B P ... (display order), coded as
// I P B B P B B: B pictures are not references (nal_ref_idc 0), so the decoded picture buffer
// holds at most the two anchors a B picture sits between.

/// How the planner shapes the stream: fixed for a sequence.
public struct H264GOPStructure: Sendable, Equatable {
    /// Frames between IDR pictures at most (the backend's own limit, the planner's
    /// ``H264IDRLimits/maxFrameInterval``; the session may ask for IDR pictures earlier);
    /// 0 = no limit.
    public var idrPeriod: Int
    /// B pictures between two anchors (0 = I/P only).
    public var consecutiveBFrames: Int
    /// log2(MaxFrameNum) and log2(MaxPicOrderCntLsb) (7.4.2.1.1), 4...16; the latter at least
    /// what the B pictures need.
    public var log2MaxFrameNum: Int
    public var log2MaxPicOrderCntLsb: Int

    /// `log2MaxPicOrderCntLsb` is raised to what the B pictures need (see
    /// ``minimumLog2MaxPicOrderCntLsb(consecutiveBFrames:)``), `consecutiveBFrames` lowered to
    /// what 16 bits of POC LSB can carry.
    public init(idrPeriod: Int, consecutiveBFrames: Int, log2MaxFrameNum: Int = 8, log2MaxPicOrderCntLsb: Int = 8) {
        self.idrPeriod = max(0, idrPeriod)
        self.consecutiveBFrames = min(max(0, consecutiveBFrames), (1 << 16) / 4 - 1)
        self.log2MaxFrameNum = min(max(log2MaxFrameNum, 4), 16)
        let needed = Self.minimumLog2MaxPicOrderCntLsb(consecutiveBFrames: self.consecutiveBFrames)
        self.log2MaxPicOrderCntLsb = min(max(log2MaxPicOrderCntLsb, needed), 16)
    }

    /// The smallest log2(MaxPicOrderCntLsb) a decoder recovers this GOP's POC from (8.2.1.1):
    /// PicOrderCntMsb is inferred right only while a picture's POC is less than
    /// MaxPicOrderCntLsb / 2 below, or at most that much above, the previous reference
    /// picture's. An anchor is 2 * (B + 1) above the one before it, a B picture up to 2 * B
    /// below the anchor coded before it, so MaxPicOrderCntLsb >= 4 * (B + 1). With fewer bits
    /// (4, the smallest, and 4 or more B pictures) the decoder got POCs that jump back.
    public static func minimumLog2MaxPicOrderCntLsb(consecutiveBFrames: Int) -> Int {
        var bits = 4
        while (1 << bits) < 4 * (consecutiveBFrames + 1) { bits += 1 }
        return bits
    }

    /// max_num_ref_frames: the last anchor, and for B pictures the one before it.
    public var maxReferenceFrames: Int { consecutiveBFrames > 0 ? 2 : 1 }

    /// max_num_reorder_frames (E.2.1): an anchor is coded before the B pictures shown before it,
    /// so one frame at most precedes a picture in decoding order and follows it in output order.
    public var maxReorderFrames: Int { consecutiveBFrames > 0 ? 1 : 0 }

    /// Input frames held before the first output at most.
    public var frameDelay: Int { consecutiveBFrames }
}

/// What a picture is coded as.
public enum H264CodingType: String, Sendable, Hashable {
    case idr, intra, predicted, bidirectional

    /// slice_type of Table 7-6, in its "all slices of the picture" form (5...9).
    public var sliceType: Int {
        switch self {
        case .idr, .intra: 7
        case .predicted: 5
        case .bidirectional: 6
        }
    }
}

/// A reference picture as the planner knows it: the coded picture it came from and its numbers.
public struct H264CodingReference: Sendable, Hashable {
    /// ``H264CodingPicture/codingIndex`` of the picture (backends key their reconstructed
    /// surfaces by it).
    public var codingIndex: UInt64
    public var frameNum: Int
    public var pictureOrderCount: Int
}

/// One picture, in coding order, with everything its slice header and the backend need.
public struct H264CodingPicture<Frame> {
    public var frame: Frame
    public var type: H264CodingType
    /// Position in coding order since the planner started (never reset; identifies the picture).
    public var codingIndex: UInt64
    /// nal_ref_idc != 0: kept for reference after it is decoded.
    public var isReference: Bool
    /// frame_num (7.4.3): 0 at an IDR picture, PrevRefFrameNum + 1 otherwise, modulo MaxFrameNum.
    public var frameNum: Int
    /// PicOrderCnt of the frame (8.2.1.1, type 0): twice its display position since the IDR.
    public var pictureOrderCount: Int
    /// idr_pic_id (7.4.3): differs between consecutive IDR pictures.
    public var idrPicID: Int
    /// The short-term reference frames in the DPB while this picture is coded (8.2.5.3 sliding
    /// window), oldest first.
    public var referenceFrames: [H264CodingReference]
    /// RefPicList0/1 as the default initialisation orders them (8.2.4.2.1, 8.2.4.2.3), cut to
    /// the active entries, so no ref_pic_list_modification is needed.
    public var list0: [H264CodingReference]
    public var list1: [H264CodingReference]

    /// slice_header() for the whole picture in one slice starting at macroblock 0.
    public func sliceHeader(
        structure: H264GOPStructure, pictureParameterSet pps: PictureParameterSet, sliceQpDelta: Int
    ) -> SliceHeader {
        var header = SliceHeader()
        header.nalUnitType = type == .idr ? .codedSliceIDR : .codedSliceNonIDR
        header.nalRefIdc = isReference ? (type == .idr || type == .intra ? 3 : 2) : 0
        header.firstMbInSlice = 0
        header.sliceType = type.sliceType
        header.picParameterSetID = pps.picParameterSetID
        header.seqParameterSetID = pps.seqParameterSetID
        header.frameNum = frameNum
        header.idrPicID = idrPicID
        header.picOrderCntLsb = pictureOrderCount & ((1 << structure.log2MaxPicOrderCntLsb) - 1)
        // Spatial direct prediction needs no co-located motion bookkeeping beyond what every
        // decoder has (8.4.1.2.2); it is what x264 and FFmpeg's VA encoder use by default. Only
        // B slice headers carry the flag (7.3.3); elsewhere it is 0, as a decoder reads it.
        header.directSpatialMvPredFlag = type == .bidirectional
        // What the header does not override is the PPS default (7.4.3), also in the slices that
        // have no list 1 (or no lists): the header is the one a decoder parses back.
        header.numRefIdxL0ActiveMinus1 = pps.numRefIdxL0DefaultActiveMinus1
        header.numRefIdxL1ActiveMinus1 = pps.numRefIdxL1DefaultActiveMinus1
        let defaultL0 = pps.numRefIdxL0DefaultActiveMinus1 + 1
        let defaultL1 = pps.numRefIdxL1DefaultActiveMinus1 + 1
        if type == .predicted || type == .bidirectional {
            header.numRefIdxL0ActiveMinus1 = max(list0.count, 1) - 1
            if type == .bidirectional { header.numRefIdxL1ActiveMinus1 = max(list1.count, 1) - 1 }
            header.numRefIdxActiveOverrideFlag =
                list0.count != defaultL0 || (type == .bidirectional && list1.count != defaultL1)
        }
        header.sliceQpDelta = sliceQpDelta
        header.sliceQPY = 26 + pps.picInitQpMinus26 + sliceQpDelta
        header.maxPicNum = 1 << structure.log2MaxFrameNum
        return header
    }
}

/// Turns frames in display order into pictures in coding order (see the file's comment).
///
/// Two decisions, each in one place: which frames are IDR pictures (``H264IDRSchedule``, with
/// ``H264GOPStructure/idrPeriod`` as its frame limit, and the frames the caller forces), and how
/// the frames between them are coded (here: P or B, coding order, references, frame_num, POC).
///
/// `Frame` is whatever the backend needs back with the picture (its uploaded surface, times).
public struct H264CodingPlanner<Frame> {
    public let structure: H264GOPStructure
    /// Frames waiting for the anchor they are B pictures of, in display order, with their POC.
    private var waiting: [(frame: Frame, pictureOrderCount: Int)] = []
    private var idrSchedule = H264IDRSchedule()
    private var nextCodingIndex: UInt64 = 0
    private var previousReferenceFrameNum = 0
    private var nextIDRPicID = 0
    /// The DPB's short-term reference frames, oldest first.
    private var references: [H264CodingReference] = []

    public init(structure: H264GOPStructure) {
        self.structure = structure
    }

    /// Frames accepted and not yet returned as pictures.
    public var heldFrameCount: Int { waiting.count }

    /// The DPB's short-term reference frames after the last picture returned, oldest first.
    public var referenceFrames: [H264CodingReference] { references }

    /// Takes the next frame in display order; returns the pictures that can be coded now, in
    /// coding order. `forceIDR` makes the frame an IDR picture; the frames held for B
    /// pictures before it are coded first (the last of them as a P picture).
    public mutating func submit(_ frame: Frame, forceIDR: Bool) -> [H264CodingPicture<Frame>] {
        // The planner keeps no times: its only limit is the period in frames.
        let idrLimits = H264IDRLimits(maxFrameInterval: structure.idrPeriod)
        if idrSchedule.nextFrameIsIDR(presentationTimeStamp: nil, forced: forceIDR, limits: idrLimits) {
            var pictures = codeWaiting()
            pictures.append(code(frame, type: .idr, pictureOrderCount: 0))
            return pictures
        }
        // 8.2.1.1 (type 0): twice the frame's display position since the IDR picture, which is
        // the frames counted since it, this one not included.
        let pictureOrderCount = 2 * (idrSchedule.framesSinceIDR - 1)
        if structure.consecutiveBFrames == 0 {
            return [code(frame, type: .predicted, pictureOrderCount: pictureOrderCount)]
        }
        waiting.append((frame, pictureOrderCount))
        guard waiting.count > structure.consecutiveBFrames else { return [] }
        return codeWaiting()
    }

    /// Codes every held frame (end of stream): the last as a P picture, the rest as B pictures.
    public mutating func flush() -> [H264CodingPicture<Frame>] { codeWaiting() }

    /// Forgets the sequence: the next frame starts a new coded video sequence with an IDR
    /// picture. Two numbers go on: the coding index (it identifies pictures for the backend,
    /// which keys reconstructed surfaces by it; restarting it handed an index still in use to the
    /// new IDR picture), and idr_pic_id (the new IDR picture may directly follow an IDR picture,
    /// and two IDR access units in a row must differ in it, 7.4.3, else a decoder takes them for
    /// one picture, 7.4.1.2.4).
    public mutating func reset() {
        var fresh = H264CodingPlanner(structure: structure)
        fresh.nextCodingIndex = nextCodingIndex
        fresh.nextIDRPicID = nextIDRPicID
        self = fresh
    }

    private mutating func codeWaiting() -> [H264CodingPicture<Frame>] {
        guard let anchor = waiting.popLast() else { return [] }
        var pictures = [code(anchor.frame, type: .predicted, pictureOrderCount: anchor.pictureOrderCount)]
        for held in waiting {
            pictures.append(code(held.frame, type: .bidirectional, pictureOrderCount: held.pictureOrderCount))
        }
        waiting.removeAll()
        return pictures
    }

    private mutating func code(_ frame: Frame, type: H264CodingType, pictureOrderCount: Int) -> H264CodingPicture<Frame>
    {
        let maxFrameNum = 1 << structure.log2MaxFrameNum
        let frameNum: Int
        let idrPicID: Int
        if type == .idr {
            // 8.2.5.1: an IDR picture marks every reference frame unused.
            references.removeAll()
            frameNum = 0
            idrPicID = nextIDRPicID
            nextIDRPicID = (nextIDRPicID + 1) % 65536
        } else {
            // 7.4.3: frame_num is PrevRefFrameNum + 1 after a reference picture, and stays
            // PrevRefFrameNum + 1 for the non-reference pictures that follow it.
            frameNum = (previousReferenceFrameNum + 1) % maxFrameNum
            idrPicID = 0
        }
        let isReference = type != .bidirectional
        let (list0, list1) = referenceLists(type: type, pictureOrderCount: pictureOrderCount)
        let picture = H264CodingPicture(
            frame: frame, type: type, codingIndex: nextCodingIndex, isReference: isReference, frameNum: frameNum,
            pictureOrderCount: pictureOrderCount, idrPicID: idrPicID, referenceFrames: references, list0: list0,
            list1: list1)
        if isReference {
            previousReferenceFrameNum = frameNum
            // 8.2.5.3 sliding window: the oldest short-term frame goes when the DPB is full.
            references.append(
                H264CodingReference(
                    codingIndex: nextCodingIndex, frameNum: frameNum, pictureOrderCount: pictureOrderCount))
            if references.count > structure.maxReferenceFrames { references.removeFirst() }
        }
        nextCodingIndex += 1
        return picture
    }

    /// The default lists (8.2.4.2), cut to the entries this encoder uses: a P picture refers to
    /// every reference frame (most recent first, descending PicNum, 8.2.4.2.1); a B picture to
    /// the nearest earlier anchor in list 0 and the nearest later one in list 1 (8.2.4.2.3).
    private func referenceLists(
        type: H264CodingType, pictureOrderCount: Int
    ) -> ([H264CodingReference], [H264CodingReference]) {
        switch type {
        case .idr, .intra:
            return ([], [])
        case .predicted:
            // With frame_num increasing in coding order and no wrap inside the DPB's window,
            // descending PicNum is the reverse of the coding order.
            return (references.reversed(), [])
        case .bidirectional:
            let before = references.filter { $0.pictureOrderCount < pictureOrderCount }
                .sorted { $0.pictureOrderCount > $1.pictureOrderCount }
            let after = references.filter { $0.pictureOrderCount > pictureOrderCount }
                .sorted { $0.pictureOrderCount < $1.pictureOrderCount }
            let list0 = before + after
            var list1 = after + before
            // 8.2.4.2.3: when list 1 would equal list 0 and has more than one entry, its first
            // two entries are swapped.
            if list1.count > 1 && list1 == list0 { list1.swapAt(0, 1) }
            return (Array(list0.prefix(1)), Array(list1.prefix(1)))
        }
    }
}
