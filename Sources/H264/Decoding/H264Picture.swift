/// How a picture in the decoded picture buffer is marked (8.2.5).
public enum H264ReferenceMarking: Hashable, Sendable {
    case unused
    case shortTerm
    /// With its LongTermFrameIdx (7.4.3.3).
    case longTerm(frameIndex: Int)

    public var isReference: Bool { self != .unused }
}

/// One decoded (or being decoded) frame of ``H264PictureDecoder``: what the DPB knows about it,
/// and the accelerator's own data for it (a VA surface, for example).
///
/// A class because the DPB, the reference lists and the accelerator refer to the same picture,
/// and the accelerator's data must live exactly as long as the picture does.
public final class H264Picture {
    /// frame_num (7.4.3); 0 after a picture with MMCO 5 has been decoded (8.2.1).
    public internal(set) var frameNum: Int
    /// FrameNumWrap (8-27): frame_num made relative to the current picture's. Valid for the
    /// short-term reference pictures while a picture is being decoded.
    public internal(set) var frameNumWrap: Int
    /// TopFieldOrderCnt and BottomFieldOrderCnt (8.2.1); frames only, so both are set.
    public internal(set) var topFieldOrderCnt: Int
    public internal(set) var bottomFieldOrderCnt: Int
    public internal(set) var marking: H264ReferenceMarking = .unused
    /// Waiting in the DPB to be output (C.4.5).
    public internal(set) var isNeededForOutput: Bool
    public let isIDR: Bool
    public let nalRefIdc: UInt8
    /// A frame inferred for a gap in frame_num (8.2.5.2): never decoded nor output, it only holds
    /// a place in the reference lists. An accelerator has no data for it.
    public let isNonExisting: Bool
    /// The current picture carries memory_management_control_operation 5.
    public internal(set) var hasMemoryManagementControlOperation5 = false
    /// The value given with the access unit this picture came from.
    public let frameReference: UInt64
    /// The slice types seen, for the caller's "key frame" and statistics.
    public internal(set) var hasOnlyIntraSlices = true
    /// Set when the accelerator failed to decode it: output anyway (its place in output order
    /// and its timing are kept), flagged so the caller can report it.
    public internal(set) var decodingFailed = false
    /// The accelerator's per-picture data (architecture rule: it lives on the picture).
    public var acceleratorData: AnyObject?

    init(
        frameNum: Int, topFieldOrderCnt: Int, bottomFieldOrderCnt: Int, isIDR: Bool, nalRefIdc: UInt8,
        isNonExisting: Bool, frameReference: UInt64
    ) {
        self.frameNum = frameNum
        self.frameNumWrap = frameNum
        self.topFieldOrderCnt = topFieldOrderCnt
        self.bottomFieldOrderCnt = bottomFieldOrderCnt
        self.isIDR = isIDR
        self.nalRefIdc = nalRefIdc
        self.isNonExisting = isNonExisting
        self.isNeededForOutput = !isNonExisting
        self.frameReference = frameReference
    }

    /// PicOrderCnt of a frame (8-1): the smaller of its two field order counts.
    public var picOrderCnt: Int { Swift.min(topFieldOrderCnt, bottomFieldOrderCnt) }

    public var isShortTermReference: Bool { marking == .shortTerm }
    public var longTermFrameIndex: Int? {
        if case .longTerm(let index) = marking { return index }
        return nil
    }
    public var isLongTermReference: Bool { longTermFrameIndex != nil }

    /// PicNum of a short-term frame (8-28, frames: PicNum = FrameNumWrap).
    public var picNum: Int { frameNumWrap }
    /// LongTermPicNum of a long-term frame (8-29, frames: LongTermPicNum = LongTermFrameIdx).
    public var longTermPicNum: Int? { longTermFrameIndex }
}

/// The SPS/PPS in force for a picture (7.4.1.2.1 activation).
public struct H264ActiveParameterSets: Sendable {
    public var sequence: SequenceParameterSet
    public var picture: PictureParameterSet

    /// The scaling lists in force (7.4.2.2): the PPS's when it has pic_scaling_matrix_present_flag,
    /// else the SPS's, which are flat without seq_scaling_matrix_present_flag.
    public var scalingMatrixInForce: ScalingMatrix {
        picture.picScalingMatrixPresentFlag ? picture.scalingMatrix : sequence.scalingMatrix
    }
}

/// What the state machine knows about a coded video sequence when it starts (8.1 / C.4).
public struct H264SequenceInfo: Sendable {
    public var sequenceParameterSet: SequenceParameterSet
    /// The DPB size in frames (A.3.1 MaxDpbFrames, or max_dec_frame_buffering from the VUI).
    public var maxDpbFrames: Int
    /// Pictures that may wait for output before a later one in decoding order is output:
    /// max_num_reorder_frames from the VUI, 0 for pic_order_cnt_type 2 (output order is
    /// decoding order, 8.2.1.3), else the DPB size.
    public var maxReorderFrames: Int
}

/// One slice as the accelerator needs it: the parsed header and the whole NAL unit (header byte
/// included, escaped, as it was in the stream). `nalUnit` is only valid during the call.
public struct H264SliceData {
    public var header: SliceHeader
    public var nalUnit: UnsafeRawBufferPointer
}

/// Why the decoding state machine stopped a picture or the stream.
public enum H264DecodingError: Error, Sendable, CustomStringConvertible {
    /// The bitstream is wrong (a header cannot be parsed, a parameter set is missing).
    case bitstream(H264Error)
    /// Valid H.264 this decoder path does not handle (field pictures and MBAFF on the VA path):
    /// the caller falls back to another decoder.
    case unsupported(String)
    /// The accelerator failed (a VA call failed, the device is gone): `message` says which call
    /// and why; the device API's own status and the call that returned it, when there is one,
    /// stay values up to the session's error (VTError's backendStatus and operation).
    case acceleratorFailed(String, status: Int32? = nil, operation: String? = nil)

    public var description: String {
        switch self {
        case .bitstream(let error): return error.description
        case .unsupported(let what): return what
        case .acceleratorFailed(let message, _, _): return message
        }
    }
}

/// The cut between the hardware-agnostic H.264 decoding state machine (``H264PictureDecoder``)
/// and a decoding device: the calls of a VA-API (or any slice-level) accelerator, with every
/// argument it needs made explicit, so an accelerator never reads the state machine's state.
/// GStreamer's `GstH264DecoderClass` vfuncs draw the same line.
///
/// Calls come in this order: `newSequence` when an SPS is activated with different parameters,
/// then per picture `startPicture`, `decodeSlice` for each slice, `endPicture`; `outputPicture`
/// whenever the DPB outputs one (C.4.5.3), in output order. A picture whose `startPicture` or a
/// `decodeSlice` threw gets no more `decodeSlice` calls (its device state is unknown; it is
/// output flagged with `decodingFailed`), but still its `endPicture`.
public protocol H264Accelerator: AnyObject {
    /// A coded video sequence with new parameters begins (the first IDR, or an SPS change).
    /// The accelerator sizes its surfaces here (DPB size + headroom).
    func newSequence(_ sequence: H264SequenceInfo) throws(H264DecodingError)
    /// The first slice of `picture` arrived. `referenceFrames` are the DPB's reference pictures
    /// (short- and long-term, non-existing frames included) that the picture may use.
    func startPicture(
        _ picture: H264Picture, firstSlice: SliceHeader, parameterSets: H264ActiveParameterSets,
        referenceFrames: [H264Picture]
    ) throws(H264DecodingError)
    /// One slice with its final reference picture lists (8.2.4), `num_ref_idx_lX_active`
    /// entries each; nil where no picture is available ("no reference picture", or a picture
    /// lost in a damaged stream).
    func decodeSlice(
        _ picture: H264Picture, slice: H264SliceData, parameterSets: H264ActiveParameterSets,
        referencePictureList0: [H264Picture?], referencePictureList1: [H264Picture?]
    ) throws(H264DecodingError)
    /// All slices of `picture` were given. Called for every picture `startPicture` was called
    /// for, also when `startPicture` or a `decodeSlice` failed (`picture.decodingFailed` is then
    /// true): an accelerator that began the picture on its device ends it here.
    func endPicture(_ picture: H264Picture) throws(H264DecodingError)
    /// `picture` is output (C.4.5.3); it may stay in the DPB as a reference.
    func outputPicture(_ picture: H264Picture) throws(H264DecodingError)
    /// A frame inferred for a gap in frame_num (8.2.5.2, `picture.isNonExisting`) enters the DPB
    /// as a short-term reference. It is never decoded or output, but devices that build their
    /// reference state from the picture parameters' ReferenceFrames (NVDEC, AMD firmware) need
    /// every entry to be a real surface, so an accelerator gives it one here (FFmpeg allocates
    /// gap frames too).
    func storeNonExistingFrame(_ picture: H264Picture) throws(H264DecodingError)
}

extension H264Accelerator {
    /// Accelerators that keep no per-picture memory need nothing for an inferred frame.
    public func storeNonExistingFrame(_ picture: H264Picture) throws(H264DecodingError) {}
}
