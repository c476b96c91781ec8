/// pps_range_extension(), 7.3.2.3.2 / 7.4.3.3.2.
public struct H265PPSRangeExtension: Hashable, Sendable {
    /// log2_max_transform_skip_block_size_minus2 (only with transform_skip_enabled_flag; 0 when
    /// absent), at most MaxTbLog2SizeY - 2.
    public var log2MaxTransformSkipBlockSizeMinus2 = 0
    /// cross_component_prediction_enabled_flag: only with ChromaArrayType 3.
    public var crossComponentPredictionEnabledFlag = false
    public var chromaQpOffsetListEnabledFlag = false
    /// diff_cu_chroma_qp_offset_depth, 0...log2_diff_max_min_luma_coding_block_size.
    public var diffCuChromaQpOffsetDepth = 0
    /// cb_qp_offset_list[i] and cr_qp_offset_list[i], -12...12 each, chroma_qp_offset_list_len_minus1
    /// + 1 (1...6) entries.
    public var cbQpOffsetList: [Int] = []
    public var crQpOffsetList: [Int] = []
    /// log2_sao_offset_scale_luma, 0...Max(0, BitDepthY - 10).
    public var log2SaoOffsetScaleLuma = 0
    /// log2_sao_offset_scale_chroma, 0...Max(0, BitDepthC - 10).
    public var log2SaoOffsetScaleChroma = 0

    public init() {}

    /// 7.3.2.3.2. The bounds that depend on the SPS are checked by `H265PictureParameterSet.validate`.
    static func parse(_ r: inout H265BitReader, transformSkipEnabled: Bool) throws(H265Error) -> H265PPSRangeExtension {
        var ext = H265PPSRangeExtension()
        if transformSkipEnabled {
            // MaxTbLog2SizeY is at most 5 (7.4.3.2.1).
            ext.log2MaxTransformSkipBlockSizeMinus2 = try r.readUE("log2_max_transform_skip_block_size_minus2", max: 3)
        }
        ext.crossComponentPredictionEnabledFlag = try r.readFlag("cross_component_prediction_enabled_flag")
        ext.chromaQpOffsetListEnabledFlag = try r.readFlag("chroma_qp_offset_list_enabled_flag")
        if ext.chromaQpOffsetListEnabledFlag {
            // log2_diff_max_min_luma_coding_block_size is at most 3 (CtbLog2SizeY <= 6, MinCbLog2SizeY >= 3).
            ext.diffCuChromaQpOffsetDepth = try r.readUE("diff_cu_chroma_qp_offset_depth", max: 3)
            // 7.4.3.3.2: 0...5.
            let lengthMinus1 = try r.readUE("chroma_qp_offset_list_len_minus1", max: 5)
            for _ in 0...lengthMinus1 {
                // 7.4.3.3.2: -12...12.
                ext.cbQpOffsetList.append(try r.readSE("cb_qp_offset_list", range: -12...12))
                ext.crQpOffsetList.append(try r.readSE("cr_qp_offset_list", range: -12...12))
            }
        }
        // BitDepth is at most 16 (7.4.3.2.1), so these are at most 6.
        ext.log2SaoOffsetScaleLuma = try r.readUE("log2_sao_offset_scale_luma", max: 6)
        ext.log2SaoOffsetScaleChroma = try r.readUE("log2_sao_offset_scale_chroma", max: 6)
        return ext
    }

    func write(to w: inout BitWriter, transformSkipEnabled: Bool) {
        if transformSkipEnabled { w.writeUE(UInt32(truncatingIfNeeded: log2MaxTransformSkipBlockSizeMinus2)) }
        w.writeFlag(crossComponentPredictionEnabledFlag)
        w.writeFlag(chromaQpOffsetListEnabledFlag)
        if chromaQpOffsetListEnabledFlag {
            w.writeUE(UInt32(truncatingIfNeeded: diffCuChromaQpOffsetDepth))
            w.writeUE(UInt32(truncatingIfNeeded: Swift.max(cbQpOffsetList.count, 1) &- 1))
            for (cb, cr) in zip(cbQpOffsetList, crQpOffsetList) {
                w.writeSE(Int32(truncatingIfNeeded: cb))
                w.writeSE(Int32(truncatingIfNeeded: cr))
            }
        }
        w.writeUE(UInt32(truncatingIfNeeded: log2SaoOffsetScaleLuma))
        w.writeUE(UInt32(truncatingIfNeeded: log2SaoOffsetScaleChroma))
    }
}

/// A picture parameter set: pic_parameter_set_rbsp() of 7.3.2.3.1 with the semantics of 7.4.3.3.
///
/// Unlike H.264's, the syntax of an H.265 PPS does not depend on its SPS, so a PPS parses on its
/// own (and may arrive before its SPS). The bounds that 7.4.3.3 states in terms of the SPS (QP
/// range, block depths, tile counts) are checked by `validate(against:)` when a slice activates
/// the pair. Parsing reads pps_range_extension(); pps_multilayer_extension(), pps_3d_extension(),
/// pps_scc_extension() and extension data are not parsed (`hasUnparsedExtensions`).
public struct H265PictureParameterSet: Hashable, Sendable {
    /// pps_pic_parameter_set_id, 0...63.
    public var picParameterSetID = 0
    /// pps_seq_parameter_set_id, 0...15.
    public var seqParameterSetID = 0
    public var dependentSliceSegmentsEnabledFlag = false
    public var outputFlagPresentFlag = false
    /// num_extra_slice_header_bits, u(3).
    public var numExtraSliceHeaderBits = 0
    public var signDataHidingEnabledFlag = false
    public var cabacInitPresentFlag = false
    /// num_ref_idx_l0_default_active_minus1, 0...14.
    public var numRefIdxL0DefaultActiveMinus1 = 0
    /// num_ref_idx_l1_default_active_minus1, 0...14.
    public var numRefIdxL1DefaultActiveMinus1 = 0
    /// init_qp_minus26, -(26 + QpBdOffsetY)...25.
    public var initQpMinus26 = 0
    public var constrainedIntraPredFlag = false
    public var transformSkipEnabledFlag = false
    public var cuQpDeltaEnabledFlag = false
    /// diff_cu_qp_delta_depth, 0...log2_diff_max_min_luma_coding_block_size.
    public var diffCuQpDeltaDepth = 0
    /// pps_cb_qp_offset, -12...12.
    public var cbQpOffset = 0
    /// pps_cr_qp_offset, -12...12.
    public var crQpOffset = 0
    public var sliceChromaQpOffsetsPresentFlag = false
    public var weightedPredFlag = false
    public var weightedBipredFlag = false
    public var transquantBypassEnabledFlag = false
    public var tilesEnabledFlag = false
    public var entropyCodingSyncEnabledFlag = false
    /// num_tile_columns_minus1, 0...PicWidthInCtbsY - 1 (0 without tiles).
    public var numTileColumnsMinus1 = 0
    /// num_tile_rows_minus1, 0...PicHeightInCtbsY - 1 (0 without tiles).
    public var numTileRowsMinus1 = 0
    /// uniform_spacing_flag; inferred 1 when absent.
    public var uniformSpacingFlag = true
    /// column_width_minus1[i], num_tile_columns_minus1 entries when not uniformly spaced (the
    /// last column takes the rest).
    public var columnWidthsMinus1: [Int] = []
    /// row_height_minus1[i], num_tile_rows_minus1 entries when not uniformly spaced.
    public var rowHeightsMinus1: [Int] = []
    /// loop_filter_across_tiles_enabled_flag; inferred 1 when absent.
    public var loopFilterAcrossTilesEnabledFlag = true
    public var loopFilterAcrossSlicesEnabledFlag = false
    public var deblockingFilterControlPresentFlag = false
    public var deblockingFilterOverrideEnabledFlag = false
    public var ppsDeblockingFilterDisabledFlag = false
    /// pps_beta_offset_div2, -6...6.
    public var betaOffsetDiv2 = 0
    /// pps_tc_offset_div2, -6...6.
    public var tcOffsetDiv2 = 0
    public var ppsScalingListDataPresentFlag = false
    /// The PPS's own lists (they replace the SPS's, 7.4.3.3.1); nil when not sent.
    public var scalingList: H265ScalingList?
    public var listsModificationPresentFlag = false
    /// log2_parallel_merge_level_minus2, 0...CtbLog2SizeY - 2.
    public var log2ParallelMergeLevelMinus2 = 0
    public var sliceSegmentHeaderExtensionPresentFlag = false
    public var extensionPresentFlag = false
    public var rangeExtensionFlag = false
    public var multilayerExtensionFlag = false
    public var threeDimensionalExtensionFlag = false
    public var screenContentCodingExtensionFlag = false
    /// pps_extension_4bits, u(4).
    public var extension4Bits = 0
    /// pps_range_extension(); its inferred values (all 0) when absent.
    public var rangeExtension = H265PPSRangeExtension()

    public init() {}

    /// The largest PicWidthInCtbsY any SPS can give (16-sample CTBs over
    /// `H265SequenceParameterSet.maxPictureDimension`): the bound of the tile counts before the
    /// SPS is known.
    static let maxPictureSizeInCtbs = (H265SequenceParameterSet.maxPictureDimension + 15) / 16

    /// The PPS carries extensions this parser skips (multi-layer, 3D, screen content coding,
    /// extension data).
    public var hasUnparsedExtensions: Bool {
        multilayerExtensionFlag || threeDimensionalExtensionFlag || screenContentCodingExtensionFlag
            || extension4Bits != 0
    }

    // MARK: Parsing

    /// Parses a whole PPS NAL unit (nal_unit_type 34): the two-byte header, then the escaped RBSP.
    public static func parse(nalUnit: UnsafeRawBufferPointer) throws(H265Error) -> H265PictureParameterSet {
        // Tile sizes for a thousand columns and rows and a scaling list stay below 16 KiB.
        try H265NALUnitParsing.parse(nalUnit: nalUnit, expecting: .pictureParameterSet, maxBytes: 1 << 16) {
            (r: inout H265BitReader, _: H265NALUnitHeader) throws(H265Error) in try parse(&r)
        }
    }

    /// `parse(nalUnit:)` for an array.
    public static func parse(nalUnit: [UInt8]) throws(H265Error) -> H265PictureParameterSet {
        try H265NALUnitParsing.parse(nalUnit: nalUnit, expecting: .pictureParameterSet, maxBytes: 1 << 16) {
            (r: inout H265BitReader, _: H265NALUnitHeader) throws(H265Error) in try parse(&r)
        }
    }

    /// pic_parameter_set_rbsp(), 7.3.2.3.1, with the bounds 7.4.3.3 states without the SPS (those
    /// in terms of the SPS are taken at their largest here and checked by `validate(against:)`).
    static func parse(_ r: inout H265BitReader) throws(H265Error) -> H265PictureParameterSet {
        var pps = H265PictureParameterSet()
        pps.picParameterSetID = try r.readUE("pps_pic_parameter_set_id", max: 63)
        pps.seqParameterSetID = try r.readUE("pps_seq_parameter_set_id", max: 15)
        pps.dependentSliceSegmentsEnabledFlag = try r.readFlag("dependent_slice_segments_enabled_flag")
        pps.outputFlagPresentFlag = try r.readFlag("output_flag_present_flag")
        pps.numExtraSliceHeaderBits = Int(try r.readBits(3, "num_extra_slice_header_bits"))
        pps.signDataHidingEnabledFlag = try r.readFlag("sign_data_hiding_enabled_flag")
        pps.cabacInitPresentFlag = try r.readFlag("cabac_init_present_flag")
        // 7.4.3.3.1: 0...14 (at most 15 active references per list).
        pps.numRefIdxL0DefaultActiveMinus1 = try r.readUE("num_ref_idx_l0_default_active_minus1", max: 14)
        pps.numRefIdxL1DefaultActiveMinus1 = try r.readUE("num_ref_idx_l1_default_active_minus1", max: 14)
        // 7.4.3.3.1: -(26 + QpBdOffsetY)...25; QpBdOffsetY is at most 48 (16-bit samples).
        pps.initQpMinus26 = try r.readSE("init_qp_minus26", range: -(26 + 48)...25)
        pps.constrainedIntraPredFlag = try r.readFlag("constrained_intra_pred_flag")
        pps.transformSkipEnabledFlag = try r.readFlag("transform_skip_enabled_flag")
        pps.cuQpDeltaEnabledFlag = try r.readFlag("cu_qp_delta_enabled_flag")
        if pps.cuQpDeltaEnabledFlag {
            // log2_diff_max_min_luma_coding_block_size is at most 3.
            pps.diffCuQpDeltaDepth = try r.readUE("diff_cu_qp_delta_depth", max: 3)
        }
        // 7.4.3.3.1: -12...12 each.
        pps.cbQpOffset = try r.readSE("pps_cb_qp_offset", range: -12...12)
        pps.crQpOffset = try r.readSE("pps_cr_qp_offset", range: -12...12)
        pps.sliceChromaQpOffsetsPresentFlag = try r.readFlag("pps_slice_chroma_qp_offsets_present_flag")
        pps.weightedPredFlag = try r.readFlag("weighted_pred_flag")
        pps.weightedBipredFlag = try r.readFlag("weighted_bipred_flag")
        pps.transquantBypassEnabledFlag = try r.readFlag("transquant_bypass_enabled_flag")
        pps.tilesEnabledFlag = try r.readFlag("tiles_enabled_flag")
        pps.entropyCodingSyncEnabledFlag = try r.readFlag("entropy_coding_sync_enabled_flag")
        if pps.tilesEnabledFlag {
            pps.numTileColumnsMinus1 = try r.readUE("num_tile_columns_minus1", max: maxPictureSizeInCtbs &- 1)
            pps.numTileRowsMinus1 = try r.readUE("num_tile_rows_minus1", max: maxPictureSizeInCtbs &- 1)
            // 7.4.3.3.1: with tiles enabled, not both 0 (one tile is what tiles_enabled_flag 0 says).
            if pps.numTileColumnsMinus1 == 0 && pps.numTileRowsMinus1 == 0 {
                throw H265Error.invalidValue(field: "num_tile_rows_minus1 (with num_tile_columns_minus1 0)", value: 0)
            }
            pps.uniformSpacingFlag = try r.readFlag("uniform_spacing_flag")
            if !pps.uniformSpacingFlag {
                for _ in 0..<pps.numTileColumnsMinus1 {
                    pps.columnWidthsMinus1.append(try r.readUE("column_width_minus1", max: maxPictureSizeInCtbs &- 1))
                }
                for _ in 0..<pps.numTileRowsMinus1 {
                    pps.rowHeightsMinus1.append(try r.readUE("row_height_minus1", max: maxPictureSizeInCtbs &- 1))
                }
            }
            pps.loopFilterAcrossTilesEnabledFlag = try r.readFlag("loop_filter_across_tiles_enabled_flag")
        }
        pps.loopFilterAcrossSlicesEnabledFlag = try r.readFlag("pps_loop_filter_across_slices_enabled_flag")
        pps.deblockingFilterControlPresentFlag = try r.readFlag("deblocking_filter_control_present_flag")
        if pps.deblockingFilterControlPresentFlag {
            pps.deblockingFilterOverrideEnabledFlag = try r.readFlag("deblocking_filter_override_enabled_flag")
            pps.ppsDeblockingFilterDisabledFlag = try r.readFlag("pps_deblocking_filter_disabled_flag")
            if !pps.ppsDeblockingFilterDisabledFlag {
                // 7.4.3.3.1: -6...6 each.
                pps.betaOffsetDiv2 = try r.readSE("pps_beta_offset_div2", range: -6...6)
                pps.tcOffsetDiv2 = try r.readSE("pps_tc_offset_div2", range: -6...6)
            }
        }
        pps.ppsScalingListDataPresentFlag = try r.readFlag("pps_scaling_list_data_present_flag")
        if pps.ppsScalingListDataPresentFlag {
            pps.scalingList = try H265ScalingList.parse(&r)
        }
        pps.listsModificationPresentFlag = try r.readFlag("lists_modification_present_flag")
        // CtbLog2SizeY is at most 6.
        pps.log2ParallelMergeLevelMinus2 = try r.readUE("log2_parallel_merge_level_minus2", max: 4)
        pps.sliceSegmentHeaderExtensionPresentFlag = try r.readFlag("slice_segment_header_extension_present_flag")
        pps.extensionPresentFlag = try r.readFlag("pps_extension_present_flag")
        if pps.extensionPresentFlag {
            pps.rangeExtensionFlag = try r.readFlag("pps_range_extension_flag")
            pps.multilayerExtensionFlag = try r.readFlag("pps_multilayer_extension_flag")
            pps.threeDimensionalExtensionFlag = try r.readFlag("pps_3d_extension_flag")
            pps.screenContentCodingExtensionFlag = try r.readFlag("pps_scc_extension_flag")
            pps.extension4Bits = Int(try r.readBits(4, "pps_extension_4bits"))
        }
        if pps.rangeExtensionFlag {
            pps.rangeExtension = try H265PPSRangeExtension.parse(&r, transformSkipEnabled: pps.transformSkipEnabledFlag)
        }
        // The other extensions come last and nothing above depends on them; without them the
        // RBSP must end here.
        if !pps.hasUnparsedExtensions { try r.readRBSPTrailingBits() }
        return pps
    }

    // MARK: Bounds that depend on the SPS

    /// Checks the bounds 7.4.3.3 gives in terms of the SPS this PPS refers to (a slice activates
    /// them together, 7.4.2.4.2).
    public func validate(against sps: H265SequenceParameterSet) throws(H265Error) {
        guard sps.seqParameterSetID == seqParameterSetID else {
            throw H265Error.invalidValue(field: "pps_seq_parameter_set_id", value: Int64(seqParameterSetID))
        }
        // 7.4.3.3.1: init_qp_minus26 in -(26 + QpBdOffsetY)...25.
        if initQpMinus26 < -(26 &+ sps.qpBdOffsetY) {
            throw H265Error.invalidValue(field: "init_qp_minus26", value: Int64(initQpMinus26))
        }
        // 7.4.3.3.1: diff_cu_qp_delta_depth in 0...log2_diff_max_min_luma_coding_block_size.
        if diffCuQpDeltaDepth > sps.log2DiffMaxMinLumaCodingBlockSize {
            throw H265Error.invalidValue(field: "diff_cu_qp_delta_depth", value: Int64(diffCuQpDeltaDepth))
        }
        if tilesEnabledFlag {
            // 7.4.3.3.1: num_tile_columns_minus1 < PicWidthInCtbsY, num_tile_rows_minus1 <
            // PicHeightInCtbsY, and explicit sizes leave at least one CTB for the last tile.
            if numTileColumnsMinus1 >= sps.picWidthInCtbsY {
                throw H265Error.invalidValue(field: "num_tile_columns_minus1", value: Int64(numTileColumnsMinus1))
            }
            if numTileRowsMinus1 >= sps.picHeightInCtbsY {
                throw H265Error.invalidValue(field: "num_tile_rows_minus1", value: Int64(numTileRowsMinus1))
            }
            if !uniformSpacingFlag {
                let columns = columnWidthsMinus1.reduce(0) { $0 &+ $1 &+ 1 }
                if columns >= sps.picWidthInCtbsY {
                    throw H265Error.invalidValue(field: "column_width_minus1 (sum)", value: Int64(columns))
                }
                let rows = rowHeightsMinus1.reduce(0) { $0 &+ $1 &+ 1 }
                if rows >= sps.picHeightInCtbsY {
                    throw H265Error.invalidValue(field: "row_height_minus1 (sum)", value: Int64(rows))
                }
            }
        }
        // 7.4.3.3.1: Log2ParMrgLevel = log2_parallel_merge_level_minus2 + 2 <= CtbLog2SizeY.
        if log2ParallelMergeLevelMinus2 &+ 2 > sps.ctbLog2SizeY {
            throw H265Error.invalidValue(
                field: "log2_parallel_merge_level_minus2", value: Int64(log2ParallelMergeLevelMinus2))
        }
        if rangeExtensionFlag {
            // 7.4.3.3.2: Log2MaxTransformSkipSize <= MaxTbLog2SizeY.
            if rangeExtension.log2MaxTransformSkipBlockSizeMinus2 &+ 2 > sps.maxTbLog2SizeY {
                throw H265Error.invalidValue(
                    field: "log2_max_transform_skip_block_size_minus2",
                    value: Int64(rangeExtension.log2MaxTransformSkipBlockSizeMinus2))
            }
            // 7.4.3.3.2: cross-component prediction predicts chroma residuals from luma at the
            // same resolution, so ChromaArrayType must be 3.
            if rangeExtension.crossComponentPredictionEnabledFlag && sps.chromaArrayType != 3 {
                throw H265Error.invalidValue(field: "cross_component_prediction_enabled_flag", value: 1)
            }
            if rangeExtension.diffCuChromaQpOffsetDepth > sps.log2DiffMaxMinLumaCodingBlockSize {
                throw H265Error.invalidValue(
                    field: "diff_cu_chroma_qp_offset_depth", value: Int64(rangeExtension.diffCuChromaQpOffsetDepth))
            }
            if rangeExtension.log2SaoOffsetScaleLuma > Swift.max(0, sps.bitDepthLuma &- 10) {
                throw H265Error.invalidValue(
                    field: "log2_sao_offset_scale_luma", value: Int64(rangeExtension.log2SaoOffsetScaleLuma))
            }
            if rangeExtension.log2SaoOffsetScaleChroma > Swift.max(0, sps.bitDepthChroma &- 10) {
                throw H265Error.invalidValue(
                    field: "log2_sao_offset_scale_chroma", value: Int64(rangeExtension.log2SaoOffsetScaleChroma))
            }
        }
    }

    // MARK: Writing

    /// The PPS as a NAL unit (header, escaped RBSP), for encoders and tests; fields are written as
    /// they are (unchecked), the unparsed extensions are not written.
    public func nalUnit() -> [UInt8] {
        var w = BitWriter()
        w.writeUE(UInt32(truncatingIfNeeded: picParameterSetID))
        w.writeUE(UInt32(truncatingIfNeeded: seqParameterSetID))
        w.writeFlag(dependentSliceSegmentsEnabledFlag)
        w.writeFlag(outputFlagPresentFlag)
        w.writeBits(UInt32(truncatingIfNeeded: numExtraSliceHeaderBits), count: 3)
        w.writeFlag(signDataHidingEnabledFlag)
        w.writeFlag(cabacInitPresentFlag)
        w.writeUE(UInt32(truncatingIfNeeded: numRefIdxL0DefaultActiveMinus1))
        w.writeUE(UInt32(truncatingIfNeeded: numRefIdxL1DefaultActiveMinus1))
        w.writeSE(Int32(truncatingIfNeeded: initQpMinus26))
        w.writeFlag(constrainedIntraPredFlag)
        w.writeFlag(transformSkipEnabledFlag)
        w.writeFlag(cuQpDeltaEnabledFlag)
        if cuQpDeltaEnabledFlag { w.writeUE(UInt32(truncatingIfNeeded: diffCuQpDeltaDepth)) }
        w.writeSE(Int32(truncatingIfNeeded: cbQpOffset))
        w.writeSE(Int32(truncatingIfNeeded: crQpOffset))
        w.writeFlag(sliceChromaQpOffsetsPresentFlag)
        w.writeFlag(weightedPredFlag)
        w.writeFlag(weightedBipredFlag)
        w.writeFlag(transquantBypassEnabledFlag)
        w.writeFlag(tilesEnabledFlag)
        w.writeFlag(entropyCodingSyncEnabledFlag)
        if tilesEnabledFlag {
            w.writeUE(UInt32(truncatingIfNeeded: numTileColumnsMinus1))
            w.writeUE(UInt32(truncatingIfNeeded: numTileRowsMinus1))
            w.writeFlag(uniformSpacingFlag)
            if !uniformSpacingFlag {
                for width in columnWidthsMinus1 { w.writeUE(UInt32(truncatingIfNeeded: width)) }
                for height in rowHeightsMinus1 { w.writeUE(UInt32(truncatingIfNeeded: height)) }
            }
            w.writeFlag(loopFilterAcrossTilesEnabledFlag)
        }
        w.writeFlag(loopFilterAcrossSlicesEnabledFlag)
        w.writeFlag(deblockingFilterControlPresentFlag)
        if deblockingFilterControlPresentFlag {
            w.writeFlag(deblockingFilterOverrideEnabledFlag)
            w.writeFlag(ppsDeblockingFilterDisabledFlag)
            if !ppsDeblockingFilterDisabledFlag {
                w.writeSE(Int32(truncatingIfNeeded: betaOffsetDiv2))
                w.writeSE(Int32(truncatingIfNeeded: tcOffsetDiv2))
            }
        }
        w.writeFlag(ppsScalingListDataPresentFlag)
        if ppsScalingListDataPresentFlag { (scalingList ?? .defaults).write(to: &w) }
        w.writeFlag(listsModificationPresentFlag)
        w.writeUE(UInt32(truncatingIfNeeded: log2ParallelMergeLevelMinus2))
        w.writeFlag(sliceSegmentHeaderExtensionPresentFlag)
        let writesExtensions = extensionPresentFlag || rangeExtensionFlag
        w.writeFlag(writesExtensions)
        if writesExtensions {
            w.writeFlag(rangeExtensionFlag)
            w.writeBits(0, count: 7) // multilayer, 3D, SCC flags and pps_extension_4bits
            if rangeExtensionFlag { rangeExtension.write(to: &w, transformSkipEnabled: transformSkipEnabledFlag) }
        }
        w.writeRBSPTrailingBits()
        return H265NALUnitHeader(nalUnitType: .pictureParameterSet).bytes + RBSP.insertEmulationPrevention(w.bytes)
    }
}
