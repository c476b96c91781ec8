/// slice_type, Table 7-7.
public enum H265SliceType: Int, Hashable, Sendable, CustomStringConvertible {
    case b = 0
    case p = 1
    case i = 2

    public var description: String {
        switch self {
        case .b: return "B"
        case .p: return "P"
        case .i: return "I"
        }
    }
}

/// One long-term reference picture a slice header names (7.3.6.1, 7.4.7.1).
public struct H265SliceLongTermPicture: Hashable, Sendable {
    /// lt_idx_sps[i] for the pictures picked from the SPS's list; nil for those coded in the header.
    public var ltIdxSps: Int?
    /// PocLsbLt[i] (7-52): from the SPS's list or poc_lsb_lt[i].
    public var pocLsbLt: Int
    /// UsedByCurrPicLt[i].
    public var usedByCurrPicLt: Bool
    public var deltaPocMsbPresentFlag: Bool
    /// delta_poc_msb_cycle_lt[i] as coded (0 when absent).
    public var deltaPocMsbCycleLt: Int
    /// DeltaPocMsbCycleLt[i] (7-52): accumulated within the SPS part and within the header part.
    public var accumulatedDeltaPocMsbCycleLt: Int

    public init(
        ltIdxSps: Int?, pocLsbLt: Int, usedByCurrPicLt: Bool, deltaPocMsbPresentFlag: Bool,
        deltaPocMsbCycleLt: Int, accumulatedDeltaPocMsbCycleLt: Int
    ) {
        self.ltIdxSps = ltIdxSps
        self.pocLsbLt = pocLsbLt
        self.usedByCurrPicLt = usedByCurrPicLt
        self.deltaPocMsbPresentFlag = deltaPocMsbPresentFlag
        self.deltaPocMsbCycleLt = deltaPocMsbCycleLt
        self.accumulatedDeltaPocMsbCycleLt = accumulatedDeltaPocMsbCycleLt
    }
}

/// The beginning of slice_segment_header(), 7.3.6.1 / 7.4.7.1: what tells which picture a slice
/// segment belongs to, the picture's POC and its reference picture set.
///
/// Where parsing stops, and why (``Extent``): by default after slice_temporal_mvp_enabled_flag,
/// the end of the part that non-IDR pictures alone carry. That is everything access-unit assembly
/// (7.4.2.4.4), POC (8.3.1) and the RPS (8.3.2) read. `.throughQuantizer` goes on to
/// slice_qp_delta (SAO flags, reference list sizes and modification, the weighted prediction
/// table): the slice's QP, which an encoder's rate control reads back (``sliceQpY``). Deblocking,
/// entry points and the header extension decide how a slice is reconstructed and belong with the
/// decoder that will need them; `parsedBitCount` says where the rest begins.
///
/// A dependent slice segment (dependent_slice_segment_flag 1) carries none of the fields after
/// slice_segment_address: they are those of the preceding independent slice segment (7.4.7.1),
/// and stay at their defaults here.
public struct H265SliceSegmentHeader: Hashable, Sendable {
    public var nalUnitHeader: H265NALUnitHeader
    public var firstSliceSegmentInPicFlag = false
    /// no_output_of_prior_pics_flag (IRAP pictures only).
    public var noOutputOfPriorPicsFlag = false
    /// slice_pic_parameter_set_id, 0...63.
    public var slicePicParameterSetID = 0
    public var dependentSliceSegmentFlag = false
    /// slice_segment_address, 0...PicSizeInCtbsY - 1 (0 for the first slice segment).
    public var sliceSegmentAddress = 0
    /// slice_reserved_flag[i], num_extra_slice_header_bits of them (bit i = flag i).
    public var sliceReservedFlags: UInt8 = 0
    /// slice_type; `.i` for a dependent slice segment (whose type is its independent segment's).
    public var sliceType = H265SliceType.i
    /// pic_output_flag; inferred 1 when absent (7.4.7.1).
    public var picOutputFlag = true
    /// colour_plane_id, 0...2 (separate_colour_plane_flag only).
    public var colourPlaneID = 0
    /// slice_pic_order_cnt_lsb; 0 for IDR pictures, which do not send it (7.4.7.1).
    public var slicePicOrderCntLsb = 0
    public var shortTermRefPicSetSPSFlag = false
    /// short_term_ref_pic_set_idx, 0...num_short_term_ref_pic_sets - 1.
    public var shortTermRefPicSetIdx = 0
    /// The short-term RPS in use: the SPS's set short_term_ref_pic_set_idx, or the one coded in
    /// the header; empty for IDR pictures (8.3.2: an IDR picture keeps no reference).
    public var shortTermReferencePictureSet = H265ShortTermReferencePictureSet()
    /// Bits the header's own st_ref_pic_set() takes (0 when the SPS's set is used): what VA-API
    /// and other accelerators call st_rps_bits.
    public var shortTermRefPicSetBitCount = 0
    /// num_long_term_sps, 0...num_long_term_ref_pics_sps.
    public var numLongTermSps = 0
    /// num_long_term_pics.
    public var numLongTermPics = 0
    /// num_long_term_sps + num_long_term_pics entries, the SPS-picked ones first.
    public var longTermPictures: [H265SliceLongTermPicture] = []
    /// slice_temporal_mvp_enabled_flag; 0 when absent.
    public var sliceTemporalMVPEnabledFlag = false

    // From here on read only with `Extent.throughQuantizer`.

    /// slice_sao_luma_flag, slice_sao_chroma_flag; 0 when absent.
    public var sliceSaoLumaFlag = false
    public var sliceSaoChromaFlag = false
    /// num_ref_idx_l0_active_minus1 (0...14): the PPS's default unless overridden (7.4.7.1).
    public var numRefIdxL0ActiveMinus1 = 0
    /// num_ref_idx_l1_active_minus1 (B slices).
    public var numRefIdxL1ActiveMinus1 = 0
    /// list_entry_l0[i] when ref_pic_list_modification_flag_l0 is 1 (7.3.6.2); else empty.
    public var listEntryL0: [Int] = []
    /// list_entry_l1[i] (B slices).
    public var listEntryL1: [Int] = []
    public var mvdL1ZeroFlag = false
    public var cabacInitFlag = false
    /// collocated_from_l0_flag; inferred 1 when absent (7.4.7.1).
    public var collocatedFromL0Flag = true
    public var collocatedRefIdx = 0
    /// pred_weight_table() (7.3.6.3) of P slices under weighted_pred_flag and B slices under
    /// weighted_bipred_flag; nil otherwise.
    public var predictionWeights: H265PredictionWeightTable?
    /// MaxNumMergeCand = 5 - five_minus_max_num_merge_cand (7-53); 5 for I slices.
    public var maxNumMergeCand = 5
    /// slice_qp_delta.
    public var sliceQpDelta = 0
    /// SliceQpY = 26 + init_qp_minus26 + slice_qp_delta (7-54): the QP the slice starts from,
    /// before any cu_qp_delta (7.4.9.14). Encoders code their picture-level (rate-control) QP
    /// here and their adaptive quantization as cu_qp_delta.
    public var sliceQpY = 26
    /// Bits of the RBSP (after the NAL unit header) read; the unparsed rest of the header starts
    /// here.
    public var parsedBitCount = 0

    public init(nalUnitHeader: H265NALUnitHeader) {
        self.nalUnitHeader = nalUnitHeader
    }

    /// NumPicTotalCurr (7-55) without the screen content coding term: the pictures the current
    /// one may reference (short-term and long-term "used by current picture" entries).
    public var numPicTotalCurr: Int {
        shortTermReferencePictureSet.usedByCurrentPictureCount &+ longTermPictures.lazy.filter(\.usedByCurrPicLt).count
    }

    /// Reads first_slice_segment_in_pic_flag, the first bit after the NAL unit header, without
    /// any parameter set: enough to find where a picture starts (7.4.2.4.4) even when the rest of
    /// the header cannot be parsed. nil for a NAL unit too short to hold it. (The header's second
    /// byte is never 0, since nuh_temporal_id_plus1 is not, so the third byte cannot be an
    /// emulation prevention byte.)
    public static func firstSliceSegmentInPicFlag(of nalUnit: UnsafeRawBufferPointer) -> Bool? {
        guard nalUnit.count > H265NALUnitHeader.byteCount else { return nil }
        return nalUnit[H265NALUnitHeader.byteCount] & 0x80 != 0
    }

    /// The largest escaped prefix of a slice NAL unit read: the parsed part of a header is at most
    /// a few hundred bytes (an inline RPS of 16 pictures and 32 long-term entries).
    static let maxHeaderBytes = 2048

    /// Parses the beginning of a coded slice segment NAL unit (nal_unit_type 0...9 or 16...21).
    ///
    /// - Parameters:
    ///   - pictureParameterSet: the PPS stored under an id, if any.
    ///   - sequenceParameterSet: the SPS stored under an id, if any.
    ///   - extent: how much of the header to read (``Extent``).
    public static func parse(
        nalUnit: UnsafeRawBufferPointer,
        pictureParameterSet: (Int) -> H265PictureParameterSet?,
        sequenceParameterSet: (Int) -> H265SequenceParameterSet?,
        extent: Extent = .throughTemporalMVP
    ) throws(H265Error) -> H265SliceSegmentHeader {
        let header = try H265NALUnitHeader(parsing: nalUnit)
        guard header.nalUnitType.isVCL, !header.nalUnitType.isReservedOrUnspecified else {
            throw H265Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        return try RBSP.withUnescapedPayload(
            of: nalUnit, from: H265NALUnitHeader.byteCount,
            maxBytes: extent == .throughPictureOrderCount ? maxPictureFieldBytes : maxHeaderBytes
        ) { rbsp in
            Result { () throws(H265Error) -> H265SliceSegmentHeader in
                var r = H265BitReader(rbsp)
                return try parse(
                    &r, header: header, pictureParameterSet: pictureParameterSet,
                    sequenceParameterSet: sequenceParameterSet, extent: extent)
            }
        }.get()
    }

    /// How much of slice_segment_header() `parse` reads.
    public enum Extent: Sendable {
        /// Up to slice_temporal_mvp_enabled_flag: the reference picture set and the long-term
        /// pictures included (what a decoder needs before the reference lists).
        case throughTemporalMVP
        /// Up to slice_qp_delta: also the SAO flags, the reference list sizes and modification,
        /// the weighted prediction table and the merge candidates (``sliceQpY``).
        case throughQuantizer
        /// Up to slice_pic_order_cnt_lsb: everything that places the slice in its picture and the
        /// picture in its access unit and in output order (7.4.2.4.4, 8.3.1), read from at most
        /// `maxPictureFieldBytes` bytes. A parser that only finds access units reads no more: the
        /// reference picture set costs most of a header's parse.
        case throughPictureOrderCount
    }

    /// The escaped bytes that hold a header up to slice_pic_order_cnt_lsb: at most 1 + 1 + 13
    /// (PPS id) + 1 + 18 (segment address of a 16888-sample square picture in 16x16 CTBs) + 7 +
    /// 5 (slice_type) + 1 + 2 + 16 bits, and one emulation prevention byte per two bytes.
    static let maxPictureFieldBytes = 24

    /// `parse(nalUnit:pictureParameterSet:sequenceParameterSet:extent:)` for an array.
    public static func parse(
        nalUnit: [UInt8],
        pictureParameterSet: (Int) -> H265PictureParameterSet?,
        sequenceParameterSet: (Int) -> H265SequenceParameterSet?,
        extent: Extent = .throughTemporalMVP
    ) throws(H265Error) -> H265SliceSegmentHeader {
        try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H265Error) -> H265SliceSegmentHeader in
                try parse(
                    nalUnit: bytes, pictureParameterSet: pictureParameterSet,
                    sequenceParameterSet: sequenceParameterSet,
                    extent: extent)
            }
        }.get()
    }

    /// slice_segment_header(), 7.3.6.1, up to slice_temporal_mvp_enabled_flag.
    static func parse(
        _ r: inout H265BitReader, header: H265NALUnitHeader,
        pictureParameterSet: (Int) -> H265PictureParameterSet?,
        sequenceParameterSet: (Int) -> H265SequenceParameterSet?,
        extent: Extent = .throughTemporalMVP
    ) throws(H265Error) -> H265SliceSegmentHeader {
        var slice = H265SliceSegmentHeader(nalUnitHeader: header)
        let type = header.nalUnitType
        slice.firstSliceSegmentInPicFlag = try r.readFlag("first_slice_segment_in_pic_flag")
        if type.isIRAP {
            slice.noOutputOfPriorPicsFlag = try r.readFlag("no_output_of_prior_pics_flag")
        }
        slice.slicePicParameterSetID = try r.readUE("slice_pic_parameter_set_id", max: 63)
        guard let pps = pictureParameterSet(slice.slicePicParameterSetID) else {
            throw H265Error.missingParameterSet(kind: "PPS", id: slice.slicePicParameterSetID)
        }
        guard let sps = sequenceParameterSet(pps.seqParameterSetID) else {
            throw H265Error.missingParameterSet(kind: "SPS", id: pps.seqParameterSetID)
        }
        let context = H265SlicePictureContext(pps: pps, sps: nil)
        let sequence = H265SlicePictureContext.Sequence(
            videoParameterSetID: sps.videoParameterSetID, separateColourPlaneFlag: sps.separateColourPlaneFlag,
            picSizeInCtbsY: sps.picSizeInCtbsY, log2MaxPicOrderCntLsb: sps.log2MaxPicOrderCntLsb, failsValidation: false
        )
        guard try parsePictureFields(&r, into: &slice, context: context, sequence: sequence) else {
            slice.parsedBitCount = r.bitPosition
            return slice
        }
        if extent == .throughPictureOrderCount {
            slice.parsedBitCount = r.bitPosition
            return slice
        }
        if !type.isIDR {
            slice.shortTermRefPicSetSPSFlag = try r.readFlag("short_term_ref_pic_set_sps_flag")
            let setCount = sps.shortTermReferencePictureSets.count
            if !slice.shortTermRefPicSetSPSFlag {
                let start = r.bitPosition
                slice.shortTermReferencePictureSet = try H265ShortTermReferencePictureSet.parse(
                    &r, index: setCount, candidates: sps.shortTermReferencePictureSets,
                    numShortTermRefPicSets: setCount, maxDecPicBufferingMinus1: sps.maxDecPicBufferingMinus1)
                slice.shortTermRefPicSetBitCount = r.bitPosition &- start
            } else {
                // 7.4.7.1: the index names one of the SPS's sets, so there must be one.
                guard setCount > 0 else {
                    throw H265Error.invalidValue(field: "short_term_ref_pic_set_sps_flag (no set in the SPS)", value: 1)
                }
                if setCount > 1 {
                    slice.shortTermRefPicSetIdx = try r.readBits(
                        ceilLog2(setCount), "short_term_ref_pic_set_idx", max: setCount &- 1)
                }
                slice.shortTermReferencePictureSet = sps.shortTermReferencePictureSets[slice.shortTermRefPicSetIdx]
            }
            if sps.longTermRefPicsPresentFlag {
                try parseLongTermPictures(&r, into: &slice, sps: sps)
            }
            if sps.temporalMVPEnabledFlag {
                slice.sliceTemporalMVPEnabledFlag = try r.readFlag("slice_temporal_mvp_enabled_flag")
            }
        }
        if extent == .throughQuantizer {
            try parseThroughQuantizer(&r, into: &slice, pps: pps, sps: sps)
        }
        slice.parsedBitCount = r.bitPosition
        return slice
    }

    /// 7.3.6.1 from the SAO flags through slice_qp_delta, with the semantics of 7.4.7.1.
    static func parseThroughQuantizer(
        _ r: inout H265BitReader, into slice: inout H265SliceSegmentHeader, pps: H265PictureParameterSet,
        sps: H265SequenceParameterSet
    ) throws(H265Error) {
        // The screen content extension can put the current picture in its own lists, which
        // changes pred_weight_table's presence conditions and adds use_integer_mv_flag.
        guard !pps.screenContentCodingExtensionFlag else {
            throw H265Error.unsupported("slice headers of pictures with the screen content coding extension")
        }
        let chroma = sps.chromaArrayType != 0
        if sps.sampleAdaptiveOffsetEnabledFlag {
            slice.sliceSaoLumaFlag = try r.readFlag("slice_sao_luma_flag")
            if chroma { slice.sliceSaoChromaFlag = try r.readFlag("slice_sao_chroma_flag") }
        }
        let isB = slice.sliceType == .b
        if slice.sliceType == .p || isB {
            slice.numRefIdxL0ActiveMinus1 = pps.numRefIdxL0DefaultActiveMinus1
            slice.numRefIdxL1ActiveMinus1 = pps.numRefIdxL1DefaultActiveMinus1
            if try r.readFlag("num_ref_idx_active_override_flag") {
                slice.numRefIdxL0ActiveMinus1 = try r.readUE("num_ref_idx_l0_active_minus1", max: 14)
                if isB { slice.numRefIdxL1ActiveMinus1 = try r.readUE("num_ref_idx_l1_active_minus1", max: 14) }
            }
            let pictures = slice.numPicTotalCurr
            if pps.listsModificationPresentFlag && pictures > 1 {
                // 7.3.6.2: each entry is Ceil(Log2(NumPicTotalCurr)) bits, 0...NumPicTotalCurr - 1.
                if try r.readFlag("ref_pic_list_modification_flag_l0") {
                    for _ in 0...slice.numRefIdxL0ActiveMinus1 {
                        slice.listEntryL0.append(
                            try r.readBits(ceilLog2(pictures), "list_entry_l0", max: pictures &- 1))
                    }
                }
                if isB, try r.readFlag("ref_pic_list_modification_flag_l1") {
                    for _ in 0...slice.numRefIdxL1ActiveMinus1 {
                        slice.listEntryL1.append(
                            try r.readBits(ceilLog2(pictures), "list_entry_l1", max: pictures &- 1))
                    }
                }
            }
            if isB { slice.mvdL1ZeroFlag = try r.readFlag("mvd_l1_zero_flag") }
            if pps.cabacInitPresentFlag { slice.cabacInitFlag = try r.readFlag("cabac_init_flag") }
            if slice.sliceTemporalMVPEnabledFlag {
                if isB { slice.collocatedFromL0Flag = try r.readFlag("collocated_from_l0_flag") }
                let listSizeMinus1 =
                    slice.collocatedFromL0Flag ? slice.numRefIdxL0ActiveMinus1 : slice.numRefIdxL1ActiveMinus1
                if listSizeMinus1 > 0 {
                    slice.collocatedRefIdx = try r.readUE("collocated_ref_idx", max: listSizeMinus1)
                }
            }
            if (pps.weightedPredFlag && slice.sliceType == .p) || (pps.weightedBipredFlag && isB) {
                slice.predictionWeights = try H265PredictionWeightTable.parse(
                    &r, l0Count: slice.numRefIdxL0ActiveMinus1 &+ 1,
                    l1Count: isB ? slice.numRefIdxL1ActiveMinus1 &+ 1 : 0, chroma: chroma)
            }
            slice.maxNumMergeCand = 5 &- (try r.readUE("five_minus_max_num_merge_cand", max: 4))
        }
        // 7.4.7.1: SliceQpY in -QpBdOffsetY...+51, QpBdOffsetY = 6 * bit_depth_luma_minus8.
        let base = 26 &+ pps.initQpMinus26
        let lowest = -6 &* sps.bitDepthLumaMinus8
        slice.sliceQpDelta = try r.readSE("slice_qp_delta", range: (lowest &- base)...(51 &- base))
        slice.sliceQpY = base &+ slice.sliceQpDelta
    }

    /// slice_segment_header() from dependent_slice_segment_flag through slice_pic_order_cnt_lsb
    /// (7.3.6.1), with what it depends on of the PPS and SPS; false for a dependent slice
    /// segment, whose header ends after slice_segment_address.
    static func parsePictureFields(
        _ r: inout H265BitReader, into slice: inout H265SliceSegmentHeader, context: H265SlicePictureContext,
        sequence: H265SlicePictureContext.Sequence
    ) throws(H265Error) -> Bool {
        let type = slice.nalUnitHeader.nalUnitType
        let header = slice.nalUnitHeader
        if !slice.firstSliceSegmentInPicFlag {
            if context.dependentSliceSegmentsEnabledFlag {
                slice.dependentSliceSegmentFlag = try r.readFlag("dependent_slice_segment_flag")
            }
            // 7.4.7.1: Ceil(Log2(PicSizeInCtbsY)) bits, 0...PicSizeInCtbsY - 1.
            slice.sliceSegmentAddress = try r.readBits(
                ceilLog2(sequence.picSizeInCtbsY), "slice_segment_address", max: sequence.picSizeInCtbsY &- 1)
        }
        guard !slice.dependentSliceSegmentFlag else { return false }
        for index in 0..<context.numExtraSliceHeaderBits {
            if try r.readFlag("slice_reserved_flag") { slice.sliceReservedFlags |= UInt8(1) << UInt8(index) }
        }
        let sliceTypeValue = try r.readUE("slice_type", max: 2)
        slice.sliceType = H265SliceType(rawValue: sliceTypeValue) ?? .i
        // 7.4.7.1: the slices of an IRAP picture of the base layer are I slices (unless the
        // screen content extension lets the picture refer to itself, which is not parsed here).
        if type.isIRAP && header.nuhLayerID == 0 && !context.screenContentCodingExtensionFlag && slice.sliceType != .i {
            throw H265Error.invalidValue(field: "slice_type (IRAP picture)", value: Int64(sliceTypeValue))
        }
        if context.outputFlagPresentFlag {
            slice.picOutputFlag = try r.readFlag("pic_output_flag")
        }
        if sequence.separateColourPlaneFlag {
            // 7.4.7.1: 0...2 (Y, Cb, Cr).
            slice.colourPlaneID = try r.readBits(2, "colour_plane_id", max: 2)
        }
        if !type.isIDR {
            slice.slicePicOrderCntLsb = Int(try r.readBits(sequence.log2MaxPicOrderCntLsb, "slice_pic_order_cnt_lsb"))
        }
        return true
    }

    /// The header of a slice segment up to slice_pic_order_cnt_lsb
    /// (`Extent.throughPictureOrderCount`), with the parameter sets' fields from `contexts`
    /// (``H265ParameterSetStore/slicePictureContext(ppsID:)``) instead of whole parameter sets:
    /// the same fields and the same errors as `parse(nalUnit:...extent: .throughPictureOrderCount)`,
    /// without copying a PPS or SPS per slice.
    public static func parseThroughPictureOrderCount(
        nalUnit: UnsafeRawBufferPointer, contexts: (Int) -> H265SlicePictureContext?
    ) throws(H265Error) -> H265SliceSegmentHeader {
        let header = try H265NALUnitHeader(parsing: nalUnit)
        guard header.nalUnitType.isVCL, !header.nalUnitType.isReservedOrUnspecified else {
            throw H265Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        return try RBSP.withUnescapedPayload(
            of: nalUnit, from: H265NALUnitHeader.byteCount, maxBytes: maxPictureFieldBytes
        ) { rbsp in
            Result { () throws(H265Error) -> H265SliceSegmentHeader in
                var r = H265BitReader(rbsp)
                var slice = H265SliceSegmentHeader(nalUnitHeader: header)
                slice.firstSliceSegmentInPicFlag = try r.readFlag("first_slice_segment_in_pic_flag")
                if header.nalUnitType.isIRAP {
                    slice.noOutputOfPriorPicsFlag = try r.readFlag("no_output_of_prior_pics_flag")
                }
                slice.slicePicParameterSetID = try r.readUE("slice_pic_parameter_set_id", max: 63)
                guard let context = contexts(slice.slicePicParameterSetID) else {
                    throw H265Error.missingParameterSet(kind: "PPS", id: slice.slicePicParameterSetID)
                }
                guard let sequence = context.sequence else {
                    throw H265Error.missingParameterSet(kind: "SPS", id: context.seqParameterSetID)
                }
                _ = try parsePictureFields(&r, into: &slice, context: context, sequence: sequence)
                slice.parsedBitCount = r.bitPosition
                return slice
            }
        }.get()
    }

    /// The long-term part of 7.3.6.1 with the semantics of 7.4.7.1.
    static func parseLongTermPictures(
        _ r: inout H265BitReader, into slice: inout H265SliceSegmentHeader, sps: H265SequenceParameterSet
    ) throws(H265Error) {
        let candidates = sps.longTermReferencePictures
        if !candidates.isEmpty {
            slice.numLongTermSps = try r.readUE("num_long_term_sps", max: candidates.count)
        }
        // 7.4.7.1: NumNegativePics + NumPositivePics + num_long_term_sps + num_long_term_pics
        // <= sps_max_dec_pic_buffering_minus1[sps_max_sub_layers_minus1]: the whole RPS fits
        // the DPB.
        let room =
            sps.maxDecPicBufferingMinus1 &- slice.shortTermReferencePictureSet.numDeltaPocs &- slice.numLongTermSps
        if room < 0 {
            throw H265Error.invalidValue(field: "num_long_term_sps", value: Int64(slice.numLongTermSps))
        }
        slice.numLongTermPics = try r.readUE("num_long_term_pics", max: room)
        // 7.4.7.1: delta_poc_msb_cycle_lt in 0...2^(32 - log2_max_pic_order_cnt_lsb_minus4 - 4).
        let maxMsbCycle = 1 << (32 &- sps.log2MaxPicOrderCntLsb)
        var accumulated = 0
        for index in 0..<(slice.numLongTermSps &+ slice.numLongTermPics) {
            var ltIdxSps: Int?
            var pocLsb: Int
            var used: Bool
            if index < slice.numLongTermSps {
                var pick = 0
                if candidates.count > 1 {
                    pick = try r.readBits(ceilLog2(candidates.count), "lt_idx_sps", max: candidates.count &- 1)
                }
                ltIdxSps = pick
                pocLsb = candidates[pick].pocLsb
                used = candidates[pick].usedByCurrentPicture
            } else {
                pocLsb = Int(try r.readBits(sps.log2MaxPicOrderCntLsb, "poc_lsb_lt"))
                used = try r.readFlag("used_by_curr_pic_lt_flag")
            }
            let msbPresent = try r.readFlag("delta_poc_msb_present_flag")
            var cycle = 0
            if msbPresent {
                cycle = Int(try r.readUE("delta_poc_msb_cycle_lt"))
                guard cycle <= maxMsbCycle else {
                    throw H265Error.invalidValue(field: "delta_poc_msb_cycle_lt", value: Int64(cycle))
                }
            }
            // 7-52: the cycles accumulate within the SPS-picked entries and within the coded ones.
            accumulated = (index == 0 || index == slice.numLongTermSps) ? cycle : accumulated &+ cycle
            slice.longTermPictures.append(
                H265SliceLongTermPicture(
                    ltIdxSps: ltIdxSps, pocLsbLt: pocLsb, usedByCurrPicLt: used, deltaPocMsbPresentFlag: msbPresent,
                    deltaPocMsbCycleLt: cycle, accumulatedDeltaPocMsbCycleLt: accumulated))
        }
    }

    /// Writes the header's parsed part (through slice_temporal_mvp_enabled_flag) as RBSP bits,
    /// for tests and encoders that append the rest themselves.
    public func writeParsedPart(
        to w: inout BitWriter, pps: H265PictureParameterSet, sps: H265SequenceParameterSet
    ) {
        let type = nalUnitHeader.nalUnitType
        w.writeFlag(firstSliceSegmentInPicFlag)
        if type.isIRAP { w.writeFlag(noOutputOfPriorPicsFlag) }
        w.writeUE(UInt32(truncatingIfNeeded: slicePicParameterSetID))
        if !firstSliceSegmentInPicFlag {
            if pps.dependentSliceSegmentsEnabledFlag { w.writeFlag(dependentSliceSegmentFlag) }
            w.writeBits(UInt32(truncatingIfNeeded: sliceSegmentAddress), count: ceilLog2(sps.picSizeInCtbsY))
        }
        guard !dependentSliceSegmentFlag else { return }
        for index in 0..<pps.numExtraSliceHeaderBits { w.writeFlag(sliceReservedFlags & (1 << UInt8(index)) != 0) }
        w.writeUE(UInt32(truncatingIfNeeded: sliceType.rawValue))
        if pps.outputFlagPresentFlag { w.writeFlag(picOutputFlag) }
        if sps.separateColourPlaneFlag { w.writeBits(UInt32(truncatingIfNeeded: colourPlaneID), count: 2) }
        guard !type.isIDR else { return }
        w.writeBits(UInt32(truncatingIfNeeded: slicePicOrderCntLsb), count: sps.log2MaxPicOrderCntLsb)
        w.writeFlag(shortTermRefPicSetSPSFlag)
        let setCount = sps.shortTermReferencePictureSets.count
        if !shortTermRefPicSetSPSFlag {
            shortTermReferencePictureSet.write(to: &w, index: setCount, numShortTermRefPicSets: setCount)
        } else if setCount > 1 {
            w.writeBits(UInt32(truncatingIfNeeded: shortTermRefPicSetIdx), count: ceilLog2(setCount))
        }
        if sps.longTermRefPicsPresentFlag {
            let candidates = sps.longTermReferencePictures.count
            if candidates > 0 { w.writeUE(UInt32(truncatingIfNeeded: numLongTermSps)) }
            w.writeUE(UInt32(truncatingIfNeeded: numLongTermPics))
            for picture in longTermPictures {
                if let pick = picture.ltIdxSps {
                    if candidates > 1 { w.writeBits(UInt32(truncatingIfNeeded: pick), count: ceilLog2(candidates)) }
                } else {
                    w.writeBits(UInt32(truncatingIfNeeded: picture.pocLsbLt), count: sps.log2MaxPicOrderCntLsb)
                    w.writeFlag(picture.usedByCurrPicLt)
                }
                w.writeFlag(picture.deltaPocMsbPresentFlag)
                if picture.deltaPocMsbPresentFlag { w.writeUE(UInt32(truncatingIfNeeded: picture.deltaPocMsbCycleLt)) }
            }
        }
        if sps.temporalMVPEnabledFlag { w.writeFlag(sliceTemporalMVPEnabledFlag) }
    }
}

/// pred_weight_table() (7.3.6.3, 7.4.7.3): explicit weighted prediction of a slice. Each list
/// entry is there for every reference index: without the screen content extension no reference
/// picture has the current picture's POC, so every luma_weight_lX_flag is coded.
public struct H265PredictionWeightTable: Sendable, Hashable {
    /// One component's coded weight: delta_luma_weight_lX[i] and luma_offset_lX[i], or
    /// delta_chroma_weight_lX[i][j] and delta_chroma_offset_lX[i][j].
    public struct Weight: Sendable, Hashable {
        public var deltaWeight: Int
        public var offset: Int

        public init(deltaWeight: Int, offset: Int) {
            self.deltaWeight = deltaWeight
            self.offset = offset
        }
    }

    /// One reference index's weights; nil where its flag is 0 (the default weight
    /// 2^denominator, offset 0).
    public struct Entry: Sendable, Hashable {
        public var luma: Weight?
        /// Cb and Cr.
        public var chroma: [Weight]?

        public init(luma: Weight? = nil, chroma: [Weight]? = nil) {
            self.luma = luma
            self.chroma = chroma
        }
    }

    /// luma_log2_weight_denom, 0...7.
    public var lumaLog2WeightDenom = 0
    /// ChromaLog2WeightDenom = luma_log2_weight_denom + delta_chroma_log2_weight_denom, 0...7.
    public var chromaLog2WeightDenom = 0
    public var l0: [Entry] = []
    public var l1: [Entry] = []

    static func parse(_ r: inout H265BitReader, l0Count: Int, l1Count: Int, chroma: Bool) throws(H265Error)
        -> H265PredictionWeightTable
    {
        var table = H265PredictionWeightTable()
        table.lumaLog2WeightDenom = try r.readUE("luma_log2_weight_denom", max: 7)
        table.chromaLog2WeightDenom = table.lumaLog2WeightDenom
        if chroma {
            let delta = try r.readSE(
                "delta_chroma_log2_weight_denom", range: (-table.lumaLog2WeightDenom)...(7 &- table.lumaLog2WeightDenom)
            )
            table.chromaLog2WeightDenom = table.lumaLog2WeightDenom &+ delta
        }
        table.l0 = try parseList(&r, count: l0Count, chroma: chroma)
        if l1Count > 0 { table.l1 = try parseList(&r, count: l1Count, chroma: chroma) }
        return table
    }

    /// One list: the luma flags, the chroma flags, then each index's values (7.3.6.3). The
    /// offsets' ranges depend on high_precision_offsets_enabled_flag and are not checked here;
    /// the deltas of the weights are -128...127 (7.4.7.3).
    private static func parseList(_ r: inout H265BitReader, count: Int, chroma: Bool) throws(H265Error) -> [Entry] {
        var lumaFlags: [Bool] = []
        for _ in 0..<count { lumaFlags.append(try r.readFlag("luma_weight_lX_flag")) }
        var chromaFlags = [Bool](repeating: false, count: count)
        if chroma {
            for index in 0..<count { chromaFlags[index] = try r.readFlag("chroma_weight_lX_flag") }
        }
        var entries: [Entry] = []
        for index in 0..<count {
            var entry = Entry()
            if lumaFlags[index] {
                let weight = try r.readSE("delta_luma_weight_lX", range: -128...127)
                let offset = Int(try r.readSE("luma_offset_lX"))
                entry.luma = Weight(deltaWeight: weight, offset: offset)
            }
            if chromaFlags[index] {
                var planes: [Weight] = []
                for _ in 0..<2 {
                    let weight = try r.readSE("delta_chroma_weight_lX", range: -128...127)
                    let offset = Int(try r.readSE("delta_chroma_offset_lX"))
                    planes.append(Weight(deltaWeight: weight, offset: offset))
                }
                entry.chroma = planes
            }
            entries.append(entry)
        }
        return entries
    }
}
