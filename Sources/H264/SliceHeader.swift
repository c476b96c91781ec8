/// The slice type family, slice_type % 5 (Table 7-6).
public enum SliceKind: UInt8, Hashable, Sendable {
    case p = 0
    case b = 1
    case i = 2
    case sp = 3
    case si = 4

    /// Intra-only slices (I and SI) have no reference picture lists.
    public var isIntra: Bool { self == .i || self == .si }
}

/// One ref_pic_list_modification() operation (7.3.3.1 / 7.4.3.1).
public struct RefPicListModification: Hashable, Sendable {
    /// modification_of_pic_nums_idc: 0 (subtract abs_diff_pic_num_minus1 + 1), 1 (add it) or
    /// 2 (long_term_pic_num). The terminating 3 is not stored.
    public var modificationOfPicNumsIdc: Int
    /// abs_diff_pic_num_minus1 for idc 0 and 1, long_term_pic_num for idc 2.
    public var value: Int

    public init(modificationOfPicNumsIdc: Int, value: Int) {
        self.modificationOfPicNumsIdc = modificationOfPicNumsIdc
        self.value = value
    }

    public var absDiffPicNumMinus1: Int? { modificationOfPicNumsIdc < 2 ? value : nil }
    public var longTermPicNum: Int? { modificationOfPicNumsIdc == 2 ? value : nil }
}

/// pred_weight_table(), 7.3.3.2 / 7.4.3.2, with the implied values filled in: an entry whose
/// luma_weight_lX_flag (chroma_weight_lX_flag) is 0 holds weight 2^denominator and offset 0.
public struct PredWeightTable: Hashable, Sendable {
    public struct Entry: Hashable, Sendable {
        public var lumaWeightFlag = false
        /// luma_weight_lX[i], -128...127.
        public var lumaWeight: Int16 = 0
        /// luma_offset_lX[i], -128...127 (scaled by 2^(BitDepthY - 8) when used, 8.4.2.3).
        public var lumaOffset: Int16 = 0
        public var chromaWeightFlag = false
        /// chroma_weight_lX[i][0] / [1] (Cb / Cr), -128...127.
        public var chromaWeightCb: Int16 = 0
        public var chromaWeightCr: Int16 = 0
        /// chroma_offset_lX[i][0] / [1], -128...127.
        public var chromaOffsetCb: Int16 = 0
        public var chromaOffsetCr: Int16 = 0
        public init() {}
    }

    /// luma_log2_weight_denom, 0...7.
    public var lumaLog2WeightDenom = 0
    /// chroma_log2_weight_denom, 0...7 (0 when ChromaArrayType is 0).
    public var chromaLog2WeightDenom = 0
    /// num_ref_idx_l0_active_minus1 + 1 entries.
    public var l0: [Entry] = []
    /// num_ref_idx_l1_active_minus1 + 1 entries for B slices, empty otherwise.
    public var l1: [Entry] = []
    public init() {}
}

/// One memory_management_control_operation of dec_ref_pic_marking() (7.3.3.3, Table 7-9).
public enum MemoryManagementControlOperation: Hashable, Sendable {
    /// 1: mark a short-term picture "unused for reference".
    case markShortTermUnused(differenceOfPicNumsMinus1: Int)
    /// 2: mark a long-term picture "unused for reference".
    case markLongTermUnused(longTermPicNum: Int)
    /// 3: turn a short-term picture into a long-term one.
    case assignLongTermFrameIdx(differenceOfPicNumsMinus1: Int, longTermFrameIdx: Int)
    /// 4: set MaxLongTermFrameIdx.
    case setMaxLongTermFrameIdx(maxLongTermFrameIdxPlus1: Int)
    /// 5: mark all reference pictures unused and reset frame_num / POC (8.2.1).
    case markAllUnused
    /// 6: mark the current picture long-term.
    case markCurrentLongTerm(longTermFrameIdx: Int)

    /// memory_management_control_operation (1...6).
    public var operation: Int {
        switch self {
        case .markShortTermUnused: return 1
        case .markLongTermUnused: return 2
        case .assignLongTermFrameIdx: return 3
        case .setMaxLongTermFrameIdx: return 4
        case .markAllUnused: return 5
        case .markCurrentLongTerm: return 6
        }
    }
}

/// A slice header, slice_header() of 7.3.3 with the semantics of 7.4.3, up to the start of
/// slice_data(), plus the NAL unit header fields the decoding process needs.
public struct SliceHeader: Hashable, Sendable {
    // NAL unit header (7.3.1).
    /// nal_ref_idc; 0 for a non-reference picture.
    public var nalRefIdc: UInt8 = 0
    public var nalUnitType: NALUnitType = .codedSliceNonIDR

    /// first_mb_in_slice.
    public var firstMbInSlice = 0
    /// slice_type, 0...9 (Table 7-6).
    public var sliceType = 0
    /// pic_parameter_set_id, 0...255.
    public var picParameterSetID = 0
    /// seq_parameter_set_id of the PPS (for convenience).
    public var seqParameterSetID = 0
    /// colour_plane_id, 0...2 (separate_colour_plane_flag only).
    public var colourPlaneID = 0
    /// frame_num, u(log2_max_frame_num_minus4 + 4).
    public var frameNum = 0
    public var fieldPicFlag = false
    public var bottomFieldFlag = false
    /// idr_pic_id, 0...65535 (IDR only).
    public var idrPicID = 0
    /// pic_order_cnt_lsb (pic_order_cnt_type 0).
    public var picOrderCntLsb = 0
    /// delta_pic_order_cnt_bottom (pic_order_cnt_type 0); 0 when absent.
    public var deltaPicOrderCntBottom = 0
    /// delta_pic_order_cnt[0] (pic_order_cnt_type 1); 0 when absent.
    public var deltaPicOrderCnt0 = 0
    /// delta_pic_order_cnt[1] (pic_order_cnt_type 1); 0 when absent.
    public var deltaPicOrderCnt1 = 0
    /// redundant_pic_cnt, 0...127; 0 when absent.
    public var redundantPicCnt = 0
    /// direct_spatial_mv_pred_flag (B slices).
    public var directSpatialMvPredFlag = false
    public var numRefIdxActiveOverrideFlag = false
    /// The effective num_ref_idx_l0_active_minus1: the slice's value when overridden, else the
    /// PPS default (7.4.3). 0...15 for frames, 0...31 for fields. Only meaningful for P, SP
    /// and B slices (see `numRefIdxL0Active`).
    public var numRefIdxL0ActiveMinus1 = 0
    /// The effective num_ref_idx_l1_active_minus1; only meaningful for B slices.
    public var numRefIdxL1ActiveMinus1 = 0
    public var refPicListModificationFlagL0 = false
    /// ref_pic_list_modification() for list 0, at most 32 operations (terminator excluded).
    public var refPicListModificationL0: [RefPicListModification] = []
    public var refPicListModificationFlagL1 = false
    public var refPicListModificationL1: [RefPicListModification] = []
    /// pred_weight_table(), when present (explicit weighted prediction).
    public var predWeightTable: PredWeightTable?
    /// no_output_of_prior_pics_flag (IDR only).
    public var noOutputOfPriorPicsFlag = false
    /// long_term_reference_flag (IDR only).
    public var longTermReferenceFlag = false
    /// adaptive_ref_pic_marking_mode_flag (non-IDR reference pictures).
    public var adaptiveRefPicMarkingModeFlag = false
    /// The MMCO list (terminating 0 excluded), at most 66 operations.
    public var memoryManagementControlOperations: [MemoryManagementControlOperation] = []
    /// cabac_init_idc, 0...2 (CABAC, non-intra slices).
    public var cabacInitIdc = 0
    /// slice_qp_delta.
    public var sliceQpDelta = 0
    /// sp_for_switch_flag (SP slices).
    public var spForSwitchFlag = false
    /// slice_qs_delta (SP and SI slices).
    public var sliceQsDelta = 0
    /// disable_deblocking_filter_idc, 0...2; 0 when absent.
    public var disableDeblockingFilterIdc = 0
    /// slice_alpha_c0_offset_div2, -6...6.
    public var sliceAlphaC0OffsetDiv2 = 0
    /// slice_beta_offset_div2, -6...6.
    public var sliceBetaOffsetDiv2 = 0
    /// slice_group_change_cycle (slice group map types 3...5).
    public var sliceGroupChangeCycle = 0

    /// SliceQPY = 26 + pic_init_qp_minus26 + slice_qp_delta (7-30).
    public var sliceQPY = 0
    /// MbaffFrameFlag = mb_adaptive_frame_field_flag && !field_pic_flag (7-25).
    public var mbaffFrameFlag = false
    /// MaxPicNum: MaxFrameNum for frames, 2 * MaxFrameNum for fields (7.4.3).
    public var maxPicNum = 16

    /// Size of the slice header in bits in the RBSP, from the first bit after the NAL unit
    /// header byte to the first bit of slice_data() (before any cabac_alignment_one_bit).
    public var headerBitSize = 0
    /// The same size counted in the escaped NAL unit (emulation prevention bytes before the
    /// start of slice_data included), again excluding the NAL unit header byte. VA-API's
    /// slice_data_bit_offset is this plus 8.
    public var escapedHeaderBitSize = 0

    public init() {}

    /// IdrPicFlag (7-1).
    public var idrPicFlag: Bool { nalUnitType == .codedSliceIDR }
    /// The slice type family (slice_type % 5).
    public var sliceKind: SliceKind { SliceKind(rawValue: UInt8(truncatingIfNeeded: sliceType % 5)) ?? .p }
    /// slice_type 5...9: all slices of the picture have the same type (7.4.3).
    public var allSlicesOfPictureSameType: Bool { sliceType >= 5 }
    /// The picture is a reference picture (nal_ref_idc != 0).
    public var isReference: Bool { nalRefIdc != 0 }
    /// dec_ref_pic_marking holds memory_management_control_operation 5.
    public var hasMemoryManagementControlOperation5: Bool {
        memoryManagementControlOperations.contains(.markAllUnused)
    }
    /// Entries of RefPicList0: 0 for I/SI slices, else num_ref_idx_l0_active_minus1 + 1.
    public var numRefIdxL0Active: Int { sliceKind.isIntra ? 0 : numRefIdxL0ActiveMinus1 &+ 1 }
    /// Entries of RefPicList1: num_ref_idx_l1_active_minus1 + 1 for B slices, else 0.
    public var numRefIdxL1Active: Int { sliceKind == .b ? numRefIdxL1ActiveMinus1 &+ 1 : 0 }

    // MARK: Parsing

    /// How much of a slice NAL unit is unescaped for the first parsing attempt; headers with
    /// large weight tables or MMCO lists are retried with the whole NAL unit.
    static let typicalHeaderBytes = 256

    /// Parses the slice header of a slice NAL unit (nal_unit_type 1, 2 (partition A), 5 or 19;
    /// header byte included, escaped). Only the first bytes of the NAL unit are unescaped, in
    /// temporary memory. Throws `.unsupported` for SVC/MVC slice extensions (20, 21) and
    /// `.missingParameterSet` when the PPS or its SPS is unknown.
    public static func parse(
        nalUnit: UnsafeRawBufferPointer, pictureParameterSets: (Int) -> PictureParameterSet?,
        sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> SliceHeader {
        guard let first = nalUnit.first else { throw H264Error.truncated(what: "nal_unit_header") }
        let nalHeader = NALUnitHeader(byte: first)
        switch nalHeader.nalUnitType.rawValue {
        case 1, 2, 5, 19: break
        case 20, 21:
            throw H264Error.unsupported(
                "slice extension NAL units (nal_unit_type \(nalHeader.nalUnitType.rawValue), SVC/MVC/3D-AVC)")
        default:
            throw H264Error.invalidValue(field: "nal_unit_type", value: Int64(nalHeader.nalUnitType.rawValue))
        }
        func parseWith(_ limit: Int) -> Result<SliceHeader, H264Error> {
            RBSP.withUnescapedPayload(of: nalUnit, from: 1, maxBytes: limit) { rbsp in
                Result { () throws(H264Error) -> SliceHeader in
                    try parse(
                        rbsp: rbsp, nalHeader: nalHeader, pictureParameterSets: pictureParameterSets,
                        sequenceParameterSets: sequenceParameterSets)
                }
            }
        }
        var result = parseWith(typicalHeaderBytes)
        if case .failure(.truncated) = result, nalUnit.count &- 1 > typicalHeaderBytes {
            result = parseWith(.max)
        }
        var header = try result.get()
        let payload = UnsafeRawBufferPointer(rebasing: nalUnit[1...])
        header.escapedHeaderBitSize = RBSP.escapedBitOffset(forRBSPBitOffset: header.headerBitSize, in: payload)
        return header
    }

    /// `parse(nalUnit:pictureParameterSets:sequenceParameterSets:)` for an array.
    public static func parse(
        nalUnit: [UInt8], pictureParameterSets: (Int) -> PictureParameterSet?,
        sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> SliceHeader {
        try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H264Error) -> SliceHeader in
                try parse(
                    nalUnit: bytes, pictureParameterSets: pictureParameterSets,
                    sequenceParameterSets: sequenceParameterSets)
            }
        }.get()
    }

    /// Reads just first_mb_in_slice, slice_type and pic_parameter_set_id (range-checked as far
    /// as possible without the parameter sets): enough to detect the first slice of a picture
    /// and which PPS it needs.
    public static func peekFirstMBAndPPS(
        nalUnit: UnsafeRawBufferPointer
    ) throws(H264Error) -> (firstMbInSlice: Int, sliceType: Int, ppsID: Int) {
        guard let first = nalUnit.first else { throw H264Error.truncated(what: "nal_unit_header") }
        let type = NALUnitHeader(byte: first).nalUnitType.rawValue
        switch type {
        case 1, 2, 5, 19: break
        case 20, 21: throw H264Error.unsupported("slice extension NAL units (nal_unit_type \(type), SVC/MVC/3D-AVC)")
        default: throw H264Error.invalidValue(field: "nal_unit_type", value: Int64(type))
        }
        // Three ue(v) of at most 63 bits each fit in 24 bytes.
        return try RBSP.withUnescapedPayload(of: nalUnit, from: 1, maxBytes: 24) { rbsp in
            Result { () throws(H264Error) -> (firstMbInSlice: Int, sliceType: Int, ppsID: Int) in
                var r = BitReader(rbsp)
                let firstMb = Int(try r.readUE("first_mb_in_slice"))
                let sliceType = try r.readUE("slice_type", max: 9)
                let pps = try r.readUE("pic_parameter_set_id", max: 255)
                return (firstMb, sliceType, pps)
            }
        }.get()
    }

    /// Parses slice_header() from RBSP bytes (after the NAL unit header byte).
    public static func parse(
        rbsp: UnsafeRawBufferPointer, nalHeader: NALUnitHeader, pictureParameterSets: (Int) -> PictureParameterSet?,
        sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> SliceHeader {
        var r = BitReader(rbsp)
        var h = SliceHeader()
        h.nalRefIdc = nalHeader.nalRefIdc
        h.nalUnitType = nalHeader.nalUnitType
        let idr = h.idrPicFlag
        // 7.4.1.2.3 / 7.4.1: an IDR picture is always a reference picture.
        if idr && h.nalRefIdc == 0 {
            throw H264Error.invalidValue(field: "nal_ref_idc", value: 0)
        }

        h.firstMbInSlice = Int(try r.readUE("first_mb_in_slice"))
        h.sliceType = try r.readUE("slice_type", max: 9)
        let kind = h.sliceKind
        // 7.4.3: IDR pictures contain only I or SI slices.
        if idr && !kind.isIntra {
            throw H264Error.invalidValue(field: "slice_type", value: Int64(h.sliceType))
        }
        h.picParameterSetID = try r.readUE("pic_parameter_set_id", max: 255)
        guard let pps = pictureParameterSets(h.picParameterSetID) else {
            throw H264Error.missingParameterSet(kind: "PPS", id: h.picParameterSetID)
        }
        h.seqParameterSetID = pps.seqParameterSetID
        guard let sps = sequenceParameterSets(pps.seqParameterSetID) else {
            throw H264Error.missingParameterSet(kind: "SPS", id: pps.seqParameterSetID)
        }

        if sps.separateColourPlaneFlag {
            h.colourPlaneID = try r.readBits(2, "colour_plane_id", max: 2)
        }
        h.frameNum = Int(try r.readBits(sps.log2MaxFrameNumMinus4 &+ 4, "frame_num"))
        if !sps.frameMbsOnlyFlag {
            h.fieldPicFlag = try r.readFlag("field_pic_flag")
            if h.fieldPicFlag {
                h.bottomFieldFlag = try r.readFlag("bottom_field_flag")
            }
        }
        h.mbaffFrameFlag = sps.mbAdaptiveFrameFieldFlag && !h.fieldPicFlag
        h.maxPicNum = h.fieldPicFlag ? 2 &* sps.maxFrameNum : sps.maxFrameNum
        // 7.4.3: first_mb_in_slice * (1 + MbaffFrameFlag) < PicSizeInMbs, where PicSizeInMbs is
        // PicWidthInMbs * FrameHeightInMbs / (1 + field_pic_flag).
        let picSizeInMbs = sps.frameSizeInMbs / (h.fieldPicFlag ? 2 : 1)
        if h.firstMbInSlice &* (h.mbaffFrameFlag ? 2 : 1) >= picSizeInMbs {
            throw H264Error.invalidValue(field: "first_mb_in_slice", value: Int64(h.firstMbInSlice))
        }
        if idr {
            h.idrPicID = try r.readUE("idr_pic_id", max: 65535)
        }
        let bottomPresent = pps.bottomFieldPicOrderInFramePresentFlag && !h.fieldPicFlag
        if sps.picOrderCntType == 0 {
            h.picOrderCntLsb = Int(try r.readBits(sps.log2MaxPicOrderCntLsbMinus4 &+ 4, "pic_order_cnt_lsb"))
            if bottomPresent {
                h.deltaPicOrderCntBottom = Int(try r.readSE("delta_pic_order_cnt_bottom"))
            }
        }
        if sps.picOrderCntType == 1 && !sps.deltaPicOrderAlwaysZeroFlag {
            h.deltaPicOrderCnt0 = Int(try r.readSE("delta_pic_order_cnt[0]"))
            if bottomPresent {
                h.deltaPicOrderCnt1 = Int(try r.readSE("delta_pic_order_cnt[1]"))
            }
        }
        if pps.redundantPicCntPresentFlag {
            h.redundantPicCnt = try r.readUE("redundant_pic_cnt", max: 127)
        }
        if kind == .b {
            h.directSpatialMvPredFlag = try r.readFlag("direct_spatial_mv_pred_flag")
        }
        h.numRefIdxL0ActiveMinus1 = pps.numRefIdxL0DefaultActiveMinus1
        h.numRefIdxL1ActiveMinus1 = pps.numRefIdxL1DefaultActiveMinus1
        if kind == .p || kind == .sp || kind == .b {
            h.numRefIdxActiveOverrideFlag = try r.readFlag("num_ref_idx_active_override_flag")
            if h.numRefIdxActiveOverrideFlag {
                h.numRefIdxL0ActiveMinus1 = try r.readUE("num_ref_idx_l0_active_minus1", max: 31)
                if kind == .b {
                    h.numRefIdxL1ActiveMinus1 = try r.readUE("num_ref_idx_l1_active_minus1", max: 31)
                }
            }
            // 7.4.3: the effective values are 0...15 for frames, 0...31 for fields.
            let limit = h.fieldPicFlag ? 31 : 15
            if h.numRefIdxL0ActiveMinus1 > limit {
                throw H264Error.invalidValue(
                    field: "num_ref_idx_l0_active_minus1", value: Int64(h.numRefIdxL0ActiveMinus1))
            }
            if kind == .b && h.numRefIdxL1ActiveMinus1 > limit {
                throw H264Error.invalidValue(
                    field: "num_ref_idx_l1_active_minus1", value: Int64(h.numRefIdxL1ActiveMinus1))
            }
        }

        // ref_pic_list_modification(), 7.3.3.1 (nal_unit_type 20/21 are rejected above).
        if !kind.isIntra {
            h.refPicListModificationFlagL0 = try r.readFlag("ref_pic_list_modification_flag_l0")
            if h.refPicListModificationFlagL0 {
                h.refPicListModificationL0 = try parseModifications(&r, maxPicNum: h.maxPicNum)
            }
        }
        if kind == .b {
            h.refPicListModificationFlagL1 = try r.readFlag("ref_pic_list_modification_flag_l1")
            if h.refPicListModificationFlagL1 {
                h.refPicListModificationL1 = try parseModifications(&r, maxPicNum: h.maxPicNum)
            }
        }

        if (pps.weightedPredFlag && (kind == .p || kind == .sp)) || (pps.weightedBipredIdc == 1 && kind == .b) {
            h.predWeightTable = try parsePredWeightTable(&r, header: h, chromaArrayType: sps.chromaArrayType)
        }
        if h.nalRefIdc != 0 {
            try h.parseDecRefPicMarking(&r, sps: sps)
        }
        if pps.entropyCodingModeFlag && !kind.isIntra {
            h.cabacInitIdc = try r.readUE("cabac_init_idc", max: 2)
        }
        // 7.4.3: SliceQPY in -QpBdOffsetY...51.
        h.sliceQpDelta = Int(try r.readSE("slice_qp_delta"))
        h.sliceQPY = 26 &+ pps.picInitQpMinus26 &+ h.sliceQpDelta
        if h.sliceQPY < -6 &* sps.bitDepthLumaMinus8 || h.sliceQPY > 51 {
            throw H264Error.invalidValue(field: "slice_qp_delta", value: Int64(h.sliceQpDelta))
        }
        if kind == .sp || kind == .si {
            if kind == .sp {
                h.spForSwitchFlag = try r.readFlag("sp_for_switch_flag")
            }
            // 7.4.3: QSY = 26 + pic_init_qs_minus26 + slice_qs_delta in 0...51.
            h.sliceQsDelta = Int(try r.readSE("slice_qs_delta"))
            let qs = 26 &+ pps.picInitQsMinus26 &+ h.sliceQsDelta
            if qs < 0 || qs > 51 {
                throw H264Error.invalidValue(field: "slice_qs_delta", value: Int64(h.sliceQsDelta))
            }
        }
        if pps.deblockingFilterControlPresentFlag {
            h.disableDeblockingFilterIdc = try r.readUE("disable_deblocking_filter_idc", max: 2)
            if h.disableDeblockingFilterIdc != 1 {
                h.sliceAlphaC0OffsetDiv2 = try r.readSE("slice_alpha_c0_offset_div2", range: -6...6)
                h.sliceBetaOffsetDiv2 = try r.readSE("slice_beta_offset_div2", range: -6...6)
            }
        }
        if pps.numSliceGroupsMinus1 > 0 && (3...5).contains(pps.sliceGroupMapType) {
            // 7.4.3: Ceil(Log2(PicSizeInMapUnits ÷ SliceGroupChangeRate + 1)) bits, value at
            // most Ceil(PicSizeInMapUnits ÷ SliceGroupChangeRate).
            let picSizeInMapUnits = sps.picSizeInMapUnits
            let rate = pps.sliceGroupChangeRate
            let maxCycle = (picSizeInMapUnits &+ rate &- 1) / rate
            var bits = 0
            while (1 << bits) &- 1 < maxCycle { bits &+= 1 }
            h.sliceGroupChangeCycle = try r.readBits(bits, "slice_group_change_cycle", max: maxCycle)
        }
        h.headerBitSize = r.bitPosition
        return h
    }

    /// The body of ref_pic_list_modification() for one list, 7.3.3.1 / 7.4.3.1.
    static func parseModifications(_ r: inout BitReader, maxPicNum: Int) throws(H264Error) -> [RefPicListModification] {
        var list: [RefPicListModification] = []
        while true {
            let idc = try r.readUE("modification_of_pic_nums_idc", max: 3)
            if idc == 3 { break }
            // 7.4.3.1: at most num_ref_idx_lX_active_minus1 + 1 (<= 32) operations.
            guard list.count < 32 else {
                throw H264Error.invalidValue(field: "modification_of_pic_nums_idc", value: Int64(idc))
            }
            let value: Int
            if idc < 2 {
                value = try r.readUE("abs_diff_pic_num_minus1", max: maxPicNum &- 1)
            } else {
                // LongTermPicNum is at most 2 * MaxLongTermFrameIdx + 1 = 31 (fields, 8.2.4.1).
                value = try r.readUE("long_term_pic_num", max: 31)
            }
            list.append(RefPicListModification(modificationOfPicNumsIdc: idc, value: value))
        }
        return list
    }

    /// pred_weight_table(), 7.3.3.2 / 7.4.3.2.
    static func parsePredWeightTable(
        _ r: inout BitReader, header h: SliceHeader, chromaArrayType: Int
    ) throws(H264Error) -> PredWeightTable {
        var table = PredWeightTable()
        table.lumaLog2WeightDenom = try r.readUE("luma_log2_weight_denom", max: 7)
        if chromaArrayType != 0 {
            table.chromaLog2WeightDenom = try r.readUE("chroma_log2_weight_denom", max: 7)
        }
        table.l0 = try parseWeights(
            &r, count: h.numRefIdxL0ActiveMinus1 &+ 1, table: table, chroma: chromaArrayType != 0, list: 0)
        if h.sliceKind == .b {
            table.l1 = try parseWeights(
                &r, count: h.numRefIdxL1ActiveMinus1 &+ 1, table: table, chroma: chromaArrayType != 0, list: 1)
        }
        return table
    }

    static func parseWeights(
        _ r: inout BitReader, count: Int, table: PredWeightTable, chroma: Bool, list: Int
    ) throws(H264Error) -> [PredWeightTable.Entry] {
        let lumaDefault = Int16(1 << table.lumaLog2WeightDenom)
        let chromaDefault = Int16(1 << table.chromaLog2WeightDenom)
        var entries: [PredWeightTable.Entry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            var e = PredWeightTable.Entry()
            e.lumaWeight = lumaDefault
            e.chromaWeightCb = chromaDefault
            e.chromaWeightCr = chromaDefault
            e.lumaWeightFlag = try r.readFlag(list == 0 ? "luma_weight_l0_flag" : "luma_weight_l1_flag")
            if e.lumaWeightFlag {
                e.lumaWeight = Int16(try r.readSE(list == 0 ? "luma_weight_l0" : "luma_weight_l1", range: -128...127))
                e.lumaOffset = Int16(try r.readSE(list == 0 ? "luma_offset_l0" : "luma_offset_l1", range: -128...127))
            }
            if chroma {
                e.chromaWeightFlag = try r.readFlag(list == 0 ? "chroma_weight_l0_flag" : "chroma_weight_l1_flag")
                if e.chromaWeightFlag {
                    let weightName = list == 0 ? "chroma_weight_l0" : "chroma_weight_l1"
                    let offsetName = list == 0 ? "chroma_offset_l0" : "chroma_offset_l1"
                    e.chromaWeightCb = Int16(try r.readSE(weightName, range: -128...127))
                    e.chromaOffsetCb = Int16(try r.readSE(offsetName, range: -128...127))
                    e.chromaWeightCr = Int16(try r.readSE(weightName, range: -128...127))
                    e.chromaOffsetCr = Int16(try r.readSE(offsetName, range: -128...127))
                }
            }
            entries.append(e)
        }
        return entries
    }

    /// dec_ref_pic_marking(), 7.3.3.3 / 7.4.3.3.
    mutating func parseDecRefPicMarking(_ r: inout BitReader, sps: SequenceParameterSet) throws(H264Error) {
        if idrPicFlag {
            noOutputOfPriorPicsFlag = try r.readFlag("no_output_of_prior_pics_flag")
            longTermReferenceFlag = try r.readFlag("long_term_reference_flag")
            return
        }
        adaptiveRefPicMarkingModeFlag = try r.readFlag("adaptive_ref_pic_marking_mode_flag")
        guard adaptiveRefPicMarkingModeFlag else { return }
        while true {
            let operation = try r.readUE("memory_management_control_operation", max: 6)
            if operation == 0 { break }
            // No limit is spelt out; each operation needs a picture or index to act on, so
            // more than 66 (the bound decoders such as FFmpeg use) means a broken stream.
            guard memoryManagementControlOperations.count < 66 else {
                throw H264Error.invalidValue(field: "memory_management_control_operation", value: Int64(operation))
            }
            let mmco: MemoryManagementControlOperation
            switch operation {
            case 1:
                mmco = .markShortTermUnused(
                    differenceOfPicNumsMinus1: try r.readUE("difference_of_pic_nums_minus1", max: maxPicNum &- 1))
            case 2:
                mmco = .markLongTermUnused(longTermPicNum: try r.readUE("long_term_pic_num", max: 31))
            case 3:
                let difference = try r.readUE("difference_of_pic_nums_minus1", max: maxPicNum &- 1)
                // 7.4.3.3: long_term_frame_idx <= MaxLongTermFrameIdx < max_num_ref_frames <= 16.
                let index = try r.readUE("long_term_frame_idx", max: 15)
                mmco = .assignLongTermFrameIdx(differenceOfPicNumsMinus1: difference, longTermFrameIdx: index)
            case 4:
                // 7.4.3.3: 0...max_num_ref_frames.
                mmco = .setMaxLongTermFrameIdx(
                    maxLongTermFrameIdxPlus1: try r.readUE("max_long_term_frame_idx_plus1", max: sps.maxNumRefFrames))
            case 5:
                mmco = .markAllUnused
            default: // 6
                mmco = .markCurrentLongTerm(longTermFrameIdx: try r.readUE("long_term_frame_idx", max: 15))
            }
            memoryManagementControlOperations.append(mmco)
        }
    }
}
