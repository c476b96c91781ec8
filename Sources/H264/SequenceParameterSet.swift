/// A sequence parameter set: seq_parameter_set_data() of 7.3.2.1.1 with the semantics of
/// 7.4.2.1.1. Every element is range-checked; absent elements hold the values the spec infers.
public struct SequenceParameterSet: Hashable, Sendable {
    /// profile_idc (A.2, Annex G/H profiles included).
    public var profileIdc = 0
    public var constraintSet0Flag = false
    public var constraintSet1Flag = false
    public var constraintSet2Flag = false
    public var constraintSet3Flag = false
    public var constraintSet4Flag = false
    public var constraintSet5Flag = false
    /// level_idc (Table A-1: 10 * level, 9 or 11 with constraint_set3_flag for level 1b).
    public var levelIdc = 0
    /// seq_parameter_set_id, 0...31.
    public var seqParameterSetID = 0
    /// chroma_format_idc, 0...3; inferred 1 (4:2:0) for profiles that do not send it.
    public var chromaFormatIdc = 1
    public var separateColourPlaneFlag = false
    /// bit_depth_luma_minus8, 0...6.
    public var bitDepthLumaMinus8 = 0
    /// bit_depth_chroma_minus8, 0...6.
    public var bitDepthChromaMinus8 = 0
    public var qpprimeYZeroTransformBypassFlag = false
    public var seqScalingMatrixPresentFlag = false
    /// The sequence-level scaling lists, resolved by fall-back rule A; `ScalingMatrix.flat`
    /// when seq_scaling_matrix_present_flag is 0.
    public var scalingMatrix = ScalingMatrix.flat
    /// log2_max_frame_num_minus4, 0...12.
    public var log2MaxFrameNumMinus4 = 0
    /// pic_order_cnt_type, 0...2.
    public var picOrderCntType = 0
    /// log2_max_pic_order_cnt_lsb_minus4, 0...12 (pic_order_cnt_type 0 only).
    public var log2MaxPicOrderCntLsbMinus4 = 0
    /// delta_pic_order_always_zero_flag (pic_order_cnt_type 1 only).
    public var deltaPicOrderAlwaysZeroFlag = false
    /// offset_for_non_ref_pic, -2^31 + 1 ... 2^31 - 1 (pic_order_cnt_type 1 only).
    public var offsetForNonRefPic: Int32 = 0
    /// offset_for_top_to_bottom_field (pic_order_cnt_type 1 only).
    public var offsetForTopToBottomField: Int32 = 0
    /// num_ref_frames_in_pic_order_cnt_cycle, 0...255 (pic_order_cnt_type 1 only).
    public var numRefFramesInPicOrderCntCycle = 0
    /// offset_for_ref_frame[i], num_ref_frames_in_pic_order_cnt_cycle entries.
    public var offsetForRefFrame: [Int32] = []
    /// max_num_ref_frames, 0...16 (bounded by MaxDpbFrames, itself at most 16).
    public var maxNumRefFrames = 0
    public var gapsInFrameNumValueAllowedFlag = false
    /// pic_width_in_mbs_minus1 (bounded here to 0...2047, far above any level's limit).
    public var picWidthInMbsMinus1 = 0
    /// pic_height_in_map_units_minus1 (bounded here to 0...2047).
    public var picHeightInMapUnitsMinus1 = 0
    public var frameMbsOnlyFlag = true
    public var mbAdaptiveFrameFieldFlag = false
    public var direct8x8InferenceFlag = false
    public var frameCroppingFlag = false
    public var frameCropLeftOffset = 0
    public var frameCropRightOffset = 0
    public var frameCropTopOffset = 0
    public var frameCropBottomOffset = 0
    public var vuiParametersPresentFlag = false
    public var vui: VUIParameters?

    public init() {}

    /// The largest value accepted for pic_width_in_mbs_minus1 and
    /// pic_height_in_map_units_minus1: 2048 macroblocks = 32768 samples, well above level 6.2
    /// (PicWidthInMbs <= Sqrt(8 * MaxFS) = 1055), small enough that no size computation can
    /// overflow or cause an absurd allocation.
    public static let maxDimensionInMbsMinus1 = 2047

    // MARK: Parsing

    /// Parses a whole SPS NAL unit (nal_unit_type 7): the one-byte header, then the escaped
    /// RBSP. Bytes after the rbsp_trailing_bits are ignored; a truncated SPS throws.
    public static func parse(nalUnit: UnsafeRawBufferPointer) throws(H264Error) -> SequenceParameterSet {
        guard let first = nalUnit.first else { throw H264Error.truncated(what: "nal_unit_header") }
        let header = NALUnitHeader(byte: first)
        guard header.nalUnitType == .sequenceParameterSet else {
            throw H264Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        // An SPS is at most a few kilobytes (255 offset_for_ref_frame and 12 scaling lists).
        return try RBSP.withUnescapedPayload(of: nalUnit, from: 1, maxBytes: 4096) { rbsp in
            Result { () throws(H264Error) -> SequenceParameterSet in try parse(rbsp: rbsp) }
        }.get()
    }

    /// `parse(nalUnit:)` for an array.
    public static func parse(nalUnit: [UInt8]) throws(H264Error) -> SequenceParameterSet {
        try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H264Error) -> SequenceParameterSet in try parse(nalUnit: bytes) }
        }.get()
    }

    /// Parses seq_parameter_set_rbsp() from RBSP bytes (after the NAL header, no emulation
    /// prevention bytes).
    public static func parse(rbsp: UnsafeRawBufferPointer) throws(H264Error) -> SequenceParameterSet {
        var reader = BitReader(rbsp)
        let sps = try parseData(&reader)
        try reader.readRBSPTrailingBits()
        return sps
    }

    /// seq_parameter_set_data(), 7.3.2.1.1: shared by the SPS and the subset SPS (7.3.2.1.3).
    static func parseData(_ r: inout BitReader) throws(H264Error) -> SequenceParameterSet {
        var sps = SequenceParameterSet()
        sps.profileIdc = Int(try r.readBits(8, "profile_idc"))
        let constraints = try r.readBits(8, "constraint_set_flags")
        sps.constraintSet0Flag = constraints & 0x80 != 0
        sps.constraintSet1Flag = constraints & 0x40 != 0
        sps.constraintSet2Flag = constraints & 0x20 != 0
        sps.constraintSet3Flag = constraints & 0x10 != 0
        sps.constraintSet4Flag = constraints & 0x08 != 0
        sps.constraintSet5Flag = constraints & 0x04 != 0
        // reserved_zero_2bits: decoders shall ignore their value (7.4.2.1.1).
        sps.levelIdc = Int(try r.readBits(8, "level_idc"))
        sps.seqParameterSetID = try r.readUE("seq_parameter_set_id", max: 31)

        if hasChromaInfo(profileIdc: sps.profileIdc) {
            sps.chromaFormatIdc = try r.readUE("chroma_format_idc", max: 3)
            if sps.chromaFormatIdc == 3 {
                sps.separateColourPlaneFlag = try r.readFlag("separate_colour_plane_flag")
            }
            sps.bitDepthLumaMinus8 = try r.readUE("bit_depth_luma_minus8", max: 6)
            sps.bitDepthChromaMinus8 = try r.readUE("bit_depth_chroma_minus8", max: 6)
            sps.qpprimeYZeroTransformBypassFlag = try r.readFlag("qpprime_y_zero_transform_bypass_flag")
            sps.seqScalingMatrixPresentFlag = try r.readFlag("seq_scaling_matrix_present_flag")
            if sps.seqScalingMatrixPresentFlag {
                sps.scalingMatrix = try ScalingMatrix.parse(
                    &r, listCount: sps.chromaFormatIdc != 3 ? 8 : 12, fallBack: nil)
            }
        }

        sps.log2MaxFrameNumMinus4 = try r.readUE("log2_max_frame_num_minus4", max: 12)
        sps.picOrderCntType = try r.readUE("pic_order_cnt_type", max: 2)
        if sps.picOrderCntType == 0 {
            sps.log2MaxPicOrderCntLsbMinus4 = try r.readUE("log2_max_pic_order_cnt_lsb_minus4", max: 12)
        } else if sps.picOrderCntType == 1 {
            sps.deltaPicOrderAlwaysZeroFlag = try r.readFlag("delta_pic_order_always_zero_flag")
            // 7.4.2.1.1: -2^31 + 1 ... 2^31 - 1, exactly the range of an se(v) readSE accepts.
            sps.offsetForNonRefPic = try r.readSE("offset_for_non_ref_pic")
            sps.offsetForTopToBottomField = try r.readSE("offset_for_top_to_bottom_field")
            sps.numRefFramesInPicOrderCntCycle = try r.readUE("num_ref_frames_in_pic_order_cnt_cycle", max: 255)
            sps.offsetForRefFrame.reserveCapacity(sps.numRefFramesInPicOrderCntCycle)
            for _ in 0..<sps.numRefFramesInPicOrderCntCycle {
                sps.offsetForRefFrame.append(try r.readSE("offset_for_ref_frame"))
            }
        }
        // 7.4.2.1.1: 0...MaxDpbFrames (A.3.1: at most 16).
        sps.maxNumRefFrames = try r.readUE("max_num_ref_frames", max: 16)
        sps.gapsInFrameNumValueAllowedFlag = try r.readFlag("gaps_in_frame_num_value_allowed_flag")
        sps.picWidthInMbsMinus1 = try r.readUE("pic_width_in_mbs_minus1", max: maxDimensionInMbsMinus1)
        sps.picHeightInMapUnitsMinus1 = try r.readUE(
            "pic_height_in_map_units_minus1", max: maxDimensionInMbsMinus1)
        sps.frameMbsOnlyFlag = try r.readFlag("frame_mbs_only_flag")
        if !sps.frameMbsOnlyFlag {
            sps.mbAdaptiveFrameFieldFlag = try r.readFlag("mb_adaptive_frame_field_flag")
        }
        sps.direct8x8InferenceFlag = try r.readFlag("direct_8x8_inference_flag")
        sps.frameCroppingFlag = try r.readFlag("frame_cropping_flag")
        if sps.frameCroppingFlag {
            sps.frameCropLeftOffset = Int(try r.readUE("frame_crop_left_offset"))
            sps.frameCropRightOffset = Int(try r.readUE("frame_crop_right_offset"))
            sps.frameCropTopOffset = Int(try r.readUE("frame_crop_top_offset"))
            sps.frameCropBottomOffset = Int(try r.readUE("frame_crop_bottom_offset"))
            // 7.4.2.1.1: left <= PicWidthInSamplesL / CropUnitX - (right + 1), i.e. at least
            // one column remains; likewise for rows with FrameHeightInMbs and CropUnitY.
            // Offsets are < 2^32 and crop units <= 4, so the products cannot overflow an Int.
            if (sps.frameCropLeftOffset &+ sps.frameCropRightOffset) &* sps.cropUnitX >= sps.codedWidth {
                throw H264Error.invalidValue(field: "frame_crop_right_offset", value: Int64(sps.frameCropRightOffset))
            }
            if (sps.frameCropTopOffset &+ sps.frameCropBottomOffset) &* sps.cropUnitY >= sps.codedHeight {
                throw H264Error.invalidValue(field: "frame_crop_bottom_offset", value: Int64(sps.frameCropBottomOffset))
            }
        }
        sps.vuiParametersPresentFlag = try r.readFlag("vui_parameters_present_flag")
        if sps.vuiParametersPresentFlag {
            sps.vui = try VUIParameters.parse(&r)
        }
        return sps
    }

    /// The profiles whose SPS carries chroma_format_idc, bit depths and scaling matrices
    /// (the `if( profile_idc == 100 || ...)` condition of 7.3.2.1.1).
    public static func hasChromaInfo(profileIdc: Int) -> Bool {
        switch profileIdc {
        case 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135: return true
        default: return false
        }
    }

    // MARK: Derived values (7.4.2.1.1, 6.2)

    /// ChromaArrayType: 0 for monochrome or separately coded colour planes, else chroma_format_idc.
    public var chromaArrayType: Int { separateColourPlaneFlag ? 0 : chromaFormatIdc }

    /// SubWidthC (Table 6-1); 1 where the table leaves it undefined (monochrome) or for
    /// separate colour planes.
    public var subWidthC: Int { (chromaFormatIdc == 1 || chromaFormatIdc == 2) && !separateColourPlaneFlag ? 2 : 1 }

    /// SubHeightC (Table 6-1); 1 where undefined.
    public var subHeightC: Int { chromaFormatIdc == 1 && !separateColourPlaneFlag ? 2 : 1 }

    /// BitDepthY = 8 + bit_depth_luma_minus8 (7-3).
    public var bitDepthLuma: Int { 8 &+ bitDepthLumaMinus8 }
    /// BitDepthC = 8 + bit_depth_chroma_minus8 (7-5).
    public var bitDepthChroma: Int { 8 &+ bitDepthChromaMinus8 }

    /// MaxFrameNum = 2^(log2_max_frame_num_minus4 + 4) (7-10).
    public var maxFrameNum: Int { 1 << (log2MaxFrameNumMinus4 &+ 4) }

    /// MaxPicOrderCntLsb = 2^(log2_max_pic_order_cnt_lsb_minus4 + 4) (7-11).
    public var maxPicOrderCntLsb: Int { 1 << (log2MaxPicOrderCntLsbMinus4 &+ 4) }

    /// ExpectedDeltaPerPicOrderCntCycle (7-12), for pic_order_cnt_type 1.
    public var expectedDeltaPerPicOrderCntCycle: Int64 {
        offsetForRefFrame.reduce(Int64(0)) { $0 &+ Int64($1) }
    }

    /// PicWidthInMbs (7-13).
    public var widthInMbs: Int { picWidthInMbsMinus1 &+ 1 }
    /// PicHeightInMapUnits (7-16).
    public var heightInMapUnits: Int { picHeightInMapUnitsMinus1 &+ 1 }
    /// PicSizeInMapUnits (7-17).
    public var picSizeInMapUnits: Int { widthInMbs &* heightInMapUnits }
    /// FrameHeightInMbs = (2 - frame_mbs_only_flag) * PicHeightInMapUnits (7-18).
    public var frameHeightInMbs: Int { (frameMbsOnlyFlag ? 1 : 2) &* heightInMapUnits }
    /// Macroblocks in a frame, PicWidthInMbs * FrameHeightInMbs.
    public var frameSizeInMbs: Int { widthInMbs &* frameHeightInMbs }

    /// PicWidthInSamplesL (7-14): coded width in luma samples, before cropping.
    public var codedWidth: Int { widthInMbs &* 16 }
    /// Coded frame height in luma samples (16 * FrameHeightInMbs), before cropping.
    public var codedHeight: Int { frameHeightInMbs &* 16 }

    /// CropUnitX (7-19, 7-21).
    public var cropUnitX: Int { chromaArrayType == 0 ? 1 : subWidthC }
    /// CropUnitY (7-20, 7-22).
    public var cropUnitY: Int { (chromaArrayType == 0 ? 1 : subHeightC) &* (frameMbsOnlyFlag ? 1 : 2) }

    /// The frame cropping rectangle in luma samples (7.4.2.1.1); the whole frame without
    /// frame_cropping_flag. Parsing guarantees it is non-empty and inside the frame.
    public var cropRect: (x: Int, y: Int, width: Int, height: Int) {
        let x = cropUnitX &* frameCropLeftOffset
        let y = cropUnitY &* frameCropTopOffset
        let width = codedWidth &- cropUnitX &* (frameCropLeftOffset &+ frameCropRightOffset)
        let height = codedHeight &- cropUnitY &* (frameCropTopOffset &+ frameCropBottomOffset)
        return (x, y, width, height)
    }

    /// Width of the output pictures (after cropping) in luma samples.
    public var displayWidth: Int { cropRect.width }
    /// Height of the output pictures (after cropping) in luma samples.
    public var displayHeight: Int { cropRect.height }

    /// The profile, named as in Annex A (G, H for SVC and MVC).
    public var profile: H264Profile {
        H264Profile(
            profileIdc: profileIdc, constraintSet1Flag: constraintSet1Flag, constraintSet3Flag: constraintSet3Flag,
            constraintSet4Flag: constraintSet4Flag, constraintSet5Flag: constraintSet5Flag)
    }

    /// The profile as GStreamer's caps spell it (gst_codec_utils_h264_get_profile), e.g.
    /// "constrained-baseline", "high-4:2:2"; nil for a profile_idc GStreamer has no name for.
    public var gstreamerProfileName: String? { profile.gstreamerName }

    /// The level as GStreamer's caps spell it (gst_codec_utils_h264_get_level): "1b" for
    /// level_idc 9, or 11 with constraint_set3_flag in Baseline/Main/Extended (A.3.1); "3.1"
    /// for 31 and so on; nil for an unknown level_idc.
    public var levelName: String? {
        if levelIdc == 9 || (levelIdc == 11 && constraintSet3Flag && [66, 77, 88].contains(profileIdc)) {
            return "1b"
        }
        switch levelIdc {
        case 10, 20, 30, 40, 50, 60: return String(levelIdc / 10)
        case 11, 12, 13, 21, 22, 31, 32, 41, 42, 51, 52, 61, 62: return "\(levelIdc / 10).\(levelIdc % 10)"
        default: return nil
        }
    }

    /// MaxDpbMbs of Table A-1 for this level; nil for an unknown level_idc.
    public var maxDpbMbs: Int? {
        if levelName == "1b" { return 396 }
        switch levelIdc {
        case 10: return 396
        case 11: return 900
        case 12, 13, 20: return 2376
        case 21: return 4752
        case 22, 30: return 8100
        case 31: return 18000
        case 32: return 20480
        case 40, 41: return 32768
        case 42: return 34816
        case 50: return 110400
        case 51, 52: return 184320
        case 60, 61, 62: return 696320
        default: return nil
        }
    }

    /// MaxDpbFrames from the level (A.3.1 item h): Min(MaxDpbMbs / (PicWidthInMbs *
    /// FrameHeightInMbs), 16); nil for an unknown level.
    public var maxDpbFramesFromLevel: Int? {
        guard let mbs = maxDpbMbs else { return nil }
        return Swift.min(mbs / Swift.max(frameSizeInMbs, 1), 16)
    }

    /// The DPB size in frames a decoder needs: max_dec_frame_buffering when the VUI has a
    /// bitstream restriction (at least 1), else MaxDpbFrames from the level (16 for an unknown
    /// level), never less than max_num_ref_frames, at most 16 (the rule GStreamer's
    /// h264decoder applies).
    public var maxDpbFrames: Int {
        var frames: Int
        if let buffering = vui?.maxDecFrameBuffering {
            frames = Swift.max(1, buffering)
        } else {
            frames = maxDpbFramesFromLevel ?? 16
        }
        frames = Swift.max(frames, maxNumRefFrames)
        return Swift.min(Swift.max(frames, 1), 16)
    }

    /// How many frames may precede a picture in decoding order and follow it in output order:
    /// max_num_reorder_frames where the VUI has a bitstream restriction (E.2.1). Without one,
    /// E.2.1 infers MaxDpbFrames, except where pictures cannot be reordered: intra-only profiles
    /// (A.2.8-A.2.11, constraint_set3_flag) and Baseline (no B slices, A.2.1). At most 16.
    public var outputReorderDepth: Int {
        let intraOnly = profileIdc == 44 || ([100, 110, 122, 244].contains(profileIdc) && constraintSet3Flag)
        let frames: Int
        if let reorder = vui?.maxNumReorderFrames {
            frames = reorder
        } else if intraOnly || profileIdc == 66 {
            frames = 0
        } else {
            frames = maxDpbFrames
        }
        return Swift.min(Swift.max(frames, 0), 16)
    }

    /// The reorder bound the decoding process outputs by (C.4.5.3 bumps with the active SPS's
    /// max_num_reorder_frames): the VUI's max_num_reorder_frames (at most the DPB), else 0 where
    /// output order is decoding order (pic_order_cnt_type 2, 8.2.1.3), else the whole DPB.
    /// Unlike ``outputReorderDepth`` it assumes nothing from the profile: the decoder must stay
    /// conformant on streams that reorder where their profile makes it unusual.
    public var bumpingReorderFrames: Int {
        if let fromVUI = vui?.maxNumReorderFrames { return Swift.min(fromVUI, maxDpbFrames) }
        return picOrderCntType == 2 ? 0 : maxDpbFrames
    }

    /// How many pictures a picture may wait behind before it is presented, for deriving
    /// presentation times from the POC (a parser without a decoder): 0 when output order is
    /// decoding order (pic_order_cnt_type 2, 8.2.1.3), otherwise the DPB size or the VUI's
    /// max_num_reorder_frames, whichever is larger. max_num_reorder_frames bounds how many
    /// earlier-decoded pictures a picture may overtake, not how many later ones may overtake it
    /// (a P picture is overtaken by all the B pictures of a hierarchical group), while a picture
    /// cannot wait for output longer than the DPB holds it (C.4.5.3).
    public var presentationReorderWindow: Int {
        picOrderCntType == 2 ? 0 : Swift.max(vui?.maxNumReorderFrames ?? 0, maxDpbFrames)
    }

    /// The presentation delay the stream states (E.2.1 max_num_reorder_frames), 0 where output
    /// order is decoding order (8.2.1.3); nil when the VUI does not say.
    public var statedPresentationDelay: Int? {
        picOrderCntType == 2 ? 0 : vui?.maxNumReorderFrames
    }
}

/// H.264 profiles (A.2, G.10, H.10), told apart by profile_idc and the constraint flags.
public enum H264Profile: Hashable, Sendable {
    case constrainedBaseline, baseline, main, extended
    case high, progressiveHigh, constrainedHigh
    case high10, high10Intra, progressiveHigh10
    case high422, high422Intra
    case high444Predictive, high444Intra, cavlc444Intra
    case scalableBaseline, scalableConstrainedBaseline, scalableHigh, scalableConstrainedHigh, scalableHighIntra
    case multiviewHigh, stereoHigh, multiviewDepthHigh, enhancedMultiviewDepthHigh, mfcHigh, mfcDepthHigh
    case unknown(profileIdc: Int)

    public init(
        profileIdc: Int, constraintSet1Flag: Bool, constraintSet3Flag: Bool, constraintSet4Flag: Bool,
        constraintSet5Flag: Bool
    ) {
        switch profileIdc {
        case 66: self = constraintSet1Flag ? .constrainedBaseline : .baseline
        case 77: self = .main
        case 88: self = .extended
        case 100:
            if constraintSet4Flag {
                self = constraintSet5Flag ? .constrainedHigh : .progressiveHigh
            } else {
                self = .high
            }
        case 110:
            if constraintSet3Flag {
                self = .high10Intra
            } else {
                self = constraintSet4Flag ? .progressiveHigh10 : .high10
            }
        case 122: self = constraintSet3Flag ? .high422Intra : .high422
        case 244: self = constraintSet3Flag ? .high444Intra : .high444Predictive
        case 44: self = .cavlc444Intra
        case 83: self = constraintSet5Flag ? .scalableConstrainedBaseline : .scalableBaseline
        case 86:
            if constraintSet3Flag {
                self = .scalableHighIntra
            } else {
                self = constraintSet5Flag ? .scalableConstrainedHigh : .scalableHigh
            }
        case 118: self = .multiviewHigh
        case 128: self = .stereoHigh
        case 138: self = .multiviewDepthHigh
        case 139: self = .enhancedMultiviewDepthHigh
        case 134: self = .mfcHigh
        case 135: self = .mfcDepthHigh
        default: self = .unknown(profileIdc: profileIdc)
        }
    }

    /// GStreamer's caps name (gst_codec_utils_h264_get_profile); nil where GStreamer has none.
    public var gstreamerName: String? {
        switch self {
        case .constrainedBaseline: return "constrained-baseline"
        case .baseline: return "baseline"
        case .main: return "main"
        case .extended: return "extended"
        case .high: return "high"
        case .progressiveHigh: return "progressive-high"
        case .constrainedHigh: return "constrained-high"
        case .high10: return "high-10"
        case .high10Intra: return "high-10-intra"
        case .progressiveHigh10: return "progressive-high-10"
        case .high422: return "high-4:2:2"
        case .high422Intra: return "high-4:2:2-intra"
        case .high444Predictive: return "high-4:4:4"
        case .high444Intra: return "high-4:4:4-intra"
        case .cavlc444Intra: return "cavlc-4:4:4-intra"
        case .scalableBaseline: return "scalable-baseline"
        case .scalableConstrainedBaseline: return "scalable-constrained-baseline"
        case .scalableHigh: return "scalable-high"
        case .scalableConstrainedHigh: return "scalable-constrained-high"
        case .scalableHighIntra: return "scalable-high-intra"
        case .multiviewHigh: return "multiview-high"
        case .stereoHigh: return "stereo-high"
        case .multiviewDepthHigh, .enhancedMultiviewDepthHigh, .mfcHigh, .mfcDepthHigh, .unknown: return nil
        }
    }
}
