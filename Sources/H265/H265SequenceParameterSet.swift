/// sps_range_extension(), 7.3.2.2.2 / 7.4.3.2.2: the coding tools of the format range extensions
/// profiles (A.3.5).
public struct H265SPSRangeExtension: Hashable, Sendable {
    public var transformSkipRotationEnabledFlag = false
    public var transformSkipContextEnabledFlag = false
    public var implicitRDPCMEnabledFlag = false
    public var explicitRDPCMEnabledFlag = false
    public var extendedPrecisionProcessingFlag = false
    public var intraSmoothingDisabledFlag = false
    public var highPrecisionOffsetsEnabledFlag = false
    public var persistentRiceAdaptationEnabledFlag = false
    public var cabacBypassAlignmentEnabledFlag = false

    public init() {}

    static func parse(_ r: inout H265BitReader) throws(H265Error) -> H265SPSRangeExtension {
        var ext = H265SPSRangeExtension()
        ext.transformSkipRotationEnabledFlag = try r.readFlag("transform_skip_rotation_enabled_flag")
        ext.transformSkipContextEnabledFlag = try r.readFlag("transform_skip_context_enabled_flag")
        ext.implicitRDPCMEnabledFlag = try r.readFlag("implicit_rdpcm_enabled_flag")
        ext.explicitRDPCMEnabledFlag = try r.readFlag("explicit_rdpcm_enabled_flag")
        ext.extendedPrecisionProcessingFlag = try r.readFlag("extended_precision_processing_flag")
        ext.intraSmoothingDisabledFlag = try r.readFlag("intra_smoothing_disabled_flag")
        ext.highPrecisionOffsetsEnabledFlag = try r.readFlag("high_precision_offsets_enabled_flag")
        ext.persistentRiceAdaptationEnabledFlag = try r.readFlag("persistent_rice_adaptation_enabled_flag")
        ext.cabacBypassAlignmentEnabledFlag = try r.readFlag("cabac_bypass_alignment_enabled_flag")
        return ext
    }

    func write(to w: inout BitWriter) {
        for flag in [
            transformSkipRotationEnabledFlag, transformSkipContextEnabledFlag, implicitRDPCMEnabledFlag,
            explicitRDPCMEnabledFlag, extendedPrecisionProcessingFlag, intraSmoothingDisabledFlag,
            highPrecisionOffsetsEnabledFlag, persistentRiceAdaptationEnabledFlag,
            cabacBypassAlignmentEnabledFlag
        ] {
            w.writeFlag(flag)
        }
    }
}

/// A long-term reference picture an SPS lists for slice headers to pick by index (lt_idx_sps).
public struct H265LongTermReferencePictureCandidate: Hashable, Sendable {
    /// lt_ref_pic_poc_lsb_sps[i]: the picture's POC modulo MaxPicOrderCntLsb.
    public var pocLsb: Int
    /// used_by_curr_pic_lt_sps_flag[i].
    public var usedByCurrentPicture: Bool

    public init(pocLsb: Int, usedByCurrentPicture: Bool) {
        self.pocLsb = pocLsb
        self.usedByCurrentPicture = usedByCurrentPicture
    }
}

/// A sequence parameter set: seq_parameter_set_rbsp() of 7.3.2.2 with the semantics of 7.4.3.2,
/// for the base layer (nuh_layer_id 0). Every element is range-checked; absent elements hold the
/// values the spec infers.
///
/// Parsing reads everything up to and including sps_range_extension() and the one flag of
/// sps_multilayer_extension(). sps_3d_extension() and sps_scc_extension() (Annex I, screen
/// content coding) and sps_extension_4bits data are not parsed: nothing before them depends on
/// them, and their presence is recorded (`hasUnparsedExtensions`).
public struct H265SequenceParameterSet: Hashable, Sendable {
    /// sps_video_parameter_set_id, u(4).
    public var videoParameterSetID = 0
    /// sps_max_sub_layers_minus1, 0...6.
    public var maxSubLayersMinus1 = 0
    public var temporalIDNestingFlag = true
    public var profileTierLevel = H265ProfileTierLevel()
    /// sps_seq_parameter_set_id, 0...15.
    public var seqParameterSetID = 0
    /// chroma_format_idc, 0...3 (monochrome, 4:2:0, 4:2:2, 4:4:4).
    public var chromaFormatIdc = 1
    /// separate_colour_plane_flag: 4:4:4 coded as three monochrome planes (colour_plane_id).
    public var separateColourPlaneFlag = false
    /// pic_width_in_luma_samples: not 0, a multiple of MinCbSizeY, at most `maxPictureDimension`.
    public var picWidthInLumaSamples = 0
    /// pic_height_in_luma_samples: likewise.
    public var picHeightInLumaSamples = 0
    public var conformanceWindowFlag = false
    /// conf_win_*_offset, in chroma sample units (times SubWidthC / SubHeightC in luma samples).
    public var confWinLeftOffset = 0
    public var confWinRightOffset = 0
    public var confWinTopOffset = 0
    public var confWinBottomOffset = 0
    /// bit_depth_luma_minus8, 0...8.
    public var bitDepthLumaMinus8 = 0
    /// bit_depth_chroma_minus8, 0...8.
    public var bitDepthChromaMinus8 = 0
    /// log2_max_pic_order_cnt_lsb_minus4, 0...12.
    public var log2MaxPicOrderCntLsbMinus4 = 0
    public var subLayerOrderingInfoPresentFlag = false
    /// One entry per sub-layer 0...sps_max_sub_layers_minus1 (inferred ones included).
    public var subLayerOrdering: [H265SubLayerOrdering] = []
    /// log2_min_luma_coding_block_size_minus3 (MinCbLog2SizeY - 3).
    public var log2MinLumaCodingBlockSizeMinus3 = 0
    /// log2_diff_max_min_luma_coding_block_size (CtbLog2SizeY - MinCbLog2SizeY).
    public var log2DiffMaxMinLumaCodingBlockSize = 0
    /// log2_min_luma_transform_block_size_minus2 (MinTbLog2SizeY - 2).
    public var log2MinLumaTransformBlockSizeMinus2 = 0
    /// log2_diff_max_min_luma_transform_block_size (MaxTbLog2SizeY - MinTbLog2SizeY).
    public var log2DiffMaxMinLumaTransformBlockSize = 0
    /// max_transform_hierarchy_depth_inter, 0...CtbLog2SizeY - MinTbLog2SizeY.
    public var maxTransformHierarchyDepthInter = 0
    /// max_transform_hierarchy_depth_intra, 0...CtbLog2SizeY - MinTbLog2SizeY.
    public var maxTransformHierarchyDepthIntra = 0
    public var scalingListEnabledFlag = false
    public var spsScalingListDataPresentFlag = false
    /// The SPS's lists: coded, or the defaults when scaling_list_enabled_flag is 1 without data;
    /// nil when scaling_list_enabled_flag is 0 (flat, 7.4.5).
    public var scalingList: H265ScalingList?
    public var ampEnabledFlag = false
    public var sampleAdaptiveOffsetEnabledFlag = false
    public var pcmEnabledFlag = false
    /// pcm_sample_bit_depth_luma_minus1 (PCM samples are at most BitDepthY bits).
    public var pcmSampleBitDepthLumaMinus1 = 0
    /// pcm_sample_bit_depth_chroma_minus1 (at most BitDepthC bits).
    public var pcmSampleBitDepthChromaMinus1 = 0
    /// log2_min_pcm_luma_coding_block_size_minus3.
    public var log2MinPCMLumaCodingBlockSizeMinus3 = 0
    /// log2_diff_max_min_pcm_luma_coding_block_size.
    public var log2DiffMaxMinPCMLumaCodingBlockSize = 0
    public var pcmLoopFilterDisabledFlag = false
    /// The st_ref_pic_set(i) of the SPS, num_short_term_ref_pic_sets (0...64) of them.
    public var shortTermReferencePictureSets: [H265ShortTermReferencePictureSet] = []
    public var longTermRefPicsPresentFlag = false
    /// lt_ref_pic_poc_lsb_sps[i] and used_by_curr_pic_lt_sps_flag[i], num_long_term_ref_pics_sps
    /// (0...32) entries.
    public var longTermReferencePictures: [H265LongTermReferencePictureCandidate] = []
    public var temporalMVPEnabledFlag = false
    public var strongIntraSmoothingEnabledFlag = false
    public var vuiParametersPresentFlag = false
    public var vui: H265VUIParameters?
    public var extensionPresentFlag = false
    public var rangeExtensionFlag = false
    public var multilayerExtensionFlag = false
    public var threeDimensionalExtensionFlag = false
    public var screenContentCodingExtensionFlag = false
    /// sps_extension_4bits, u(4).
    public var extension4Bits = 0
    /// sps_range_extension(), all flags 0 when absent (7.4.3.2.2).
    public var rangeExtension = H265SPSRangeExtension()
    /// inter_view_mv_vert_constraint_flag of sps_multilayer_extension() (F.7.3.2.2.4).
    public var interViewMvVertConstraintFlag = false

    public init() {}

    /// The largest width or height accepted: Sqrt(MaxLumaPs * 8) for the largest MaxLumaPs of
    /// Table A-8 (35 651 584, levels 6 to 6.2), the bound A.4.1 puts on both dimensions. It keeps
    /// every size computation small (and rejects level 8.5's unbounded pictures, which no decoder
    /// SwiftVT drives can take).
    public static let maxPictureDimension = 16888

    // MARK: Parsing

    /// Parses a whole SPS NAL unit (nal_unit_type 33): the two-byte header, then the escaped
    /// RBSP. Bytes after the rbsp_trailing_bits are ignored; a truncated SPS throws.
    public static func parse(nalUnit: UnsafeRawBufferPointer) throws(H265Error) -> H265SequenceParameterSet {
        // An SPS with 64 short-term sets, 32 long-term pictures, scaling lists and an HRD for 7
        // sub-layers of 32 schedules stays well below 64 KiB (the most hvcC can carry).
        try H265NALUnitParsing.parse(nalUnit: nalUnit, expecting: .sequenceParameterSet, maxBytes: 1 << 16) {
            (r: inout H265BitReader, header: H265NALUnitHeader) throws(H265Error) in
            try parse(&r, header: header)
        }
    }

    /// `parse(nalUnit:)` for an array.
    public static func parse(nalUnit: [UInt8]) throws(H265Error) -> H265SequenceParameterSet {
        try H265NALUnitParsing.parse(nalUnit: nalUnit, expecting: .sequenceParameterSet, maxBytes: 1 << 16) {
            (r: inout H265BitReader, header: H265NALUnitHeader) throws(H265Error) in
            try parse(&r, header: header)
        }
    }

    /// seq_parameter_set_rbsp(), 7.3.2.2.1.
    static func parse(_ r: inout H265BitReader, header: H265NALUnitHeader) throws(H265Error) -> H265SequenceParameterSet
    {
        // F.7.3.2.2.1: an SPS of another layer may start with sps_ext_or_max_sub_layers_minus1
        // and omit the profile_tier_level; this parser is for the base layer.
        guard header.nuhLayerID == 0 else {
            throw H265Error.unsupported("an SPS with nuh_layer_id \(header.nuhLayerID) (multi-layer, Annex F)")
        }
        var sps = H265SequenceParameterSet()
        sps.videoParameterSetID = Int(try r.readBits(4, "sps_video_parameter_set_id"))
        // 7.4.3.2.1: 0...6.
        sps.maxSubLayersMinus1 = try r.readBits(3, "sps_max_sub_layers_minus1", max: 6)
        sps.temporalIDNestingFlag = try r.readFlag("sps_temporal_id_nesting_flag")
        // 7.4.3.2.1: with a single sub-layer the flag shall be 1.
        if sps.maxSubLayersMinus1 == 0 && !sps.temporalIDNestingFlag {
            throw H265Error.invalidValue(field: "sps_temporal_id_nesting_flag", value: 0)
        }
        sps.profileTierLevel = try H265ProfileTierLevel.parse(
            &r, profilePresent: true, maxNumSubLayersMinus1: sps.maxSubLayersMinus1)
        sps.seqParameterSetID = try r.readUE("sps_seq_parameter_set_id", max: 15)
        sps.chromaFormatIdc = try r.readUE("chroma_format_idc", max: 3)
        if sps.chromaFormatIdc == 3 {
            sps.separateColourPlaneFlag = try r.readFlag("separate_colour_plane_flag")
        }
        sps.picWidthInLumaSamples = try r.readUE("pic_width_in_luma_samples", max: maxPictureDimension)
        sps.picHeightInLumaSamples = try r.readUE("pic_height_in_luma_samples", max: maxPictureDimension)
        // 7.4.3.2.1: neither shall be 0 (the multiple-of-MinCbSizeY check follows once that is known).
        if sps.picWidthInLumaSamples == 0 {
            throw H265Error.invalidValue(field: "pic_width_in_luma_samples", value: 0)
        }
        if sps.picHeightInLumaSamples == 0 {
            throw H265Error.invalidValue(field: "pic_height_in_luma_samples", value: 0)
        }
        sps.conformanceWindowFlag = try r.readFlag("conformance_window_flag")
        if sps.conformanceWindowFlag {
            // Bounded by the picture size below; the ue(v) range alone would allow 2^32 - 2.
            sps.confWinLeftOffset = try r.readUE("conf_win_left_offset", max: maxPictureDimension)
            sps.confWinRightOffset = try r.readUE("conf_win_right_offset", max: maxPictureDimension)
            sps.confWinTopOffset = try r.readUE("conf_win_top_offset", max: maxPictureDimension)
            sps.confWinBottomOffset = try r.readUE("conf_win_bottom_offset", max: maxPictureDimension)
            // 7.4.3.2.1: SubWidthC * (left + right) < pic_width_in_luma_samples and
            // SubHeightC * (top + bottom) < pic_height_in_luma_samples: at least one column and
            // one row remain.
            if sps.subWidthC &* (sps.confWinLeftOffset &+ sps.confWinRightOffset) >= sps.picWidthInLumaSamples {
                throw H265Error.invalidValue(field: "conf_win_right_offset", value: Int64(sps.confWinRightOffset))
            }
            if sps.subHeightC &* (sps.confWinTopOffset &+ sps.confWinBottomOffset) >= sps.picHeightInLumaSamples {
                throw H265Error.invalidValue(field: "conf_win_bottom_offset", value: Int64(sps.confWinBottomOffset))
            }
        }
        // 7.4.3.2.1: 0...8 (up to 16-bit samples).
        sps.bitDepthLumaMinus8 = try r.readUE("bit_depth_luma_minus8", max: 8)
        sps.bitDepthChromaMinus8 = try r.readUE("bit_depth_chroma_minus8", max: 8)
        // 7.4.3.2.1: 0...12 (MaxPicOrderCntLsb up to 2^16).
        sps.log2MaxPicOrderCntLsbMinus4 = try r.readUE("log2_max_pic_order_cnt_lsb_minus4", max: 12)
        sps.subLayerOrderingInfoPresentFlag = try r.readFlag("sps_sub_layer_ordering_info_present_flag")
        sps.subLayerOrdering = try H265SubLayerOrdering.parseList(
            &r, prefix: "sps", maxSubLayersMinus1: sps.maxSubLayersMinus1,
            infoPresentForEachSubLayer: sps.subLayerOrderingInfoPresentFlag)

        // Block sizes. Every profile of Annex A limits CtbLog2SizeY to 4...6 (A.3); MinCbLog2SizeY
        // is at least 3 by its _minus3 coding, and at most CtbLog2SizeY by the difference coding.
        sps.log2MinLumaCodingBlockSizeMinus3 = try r.readUE("log2_min_luma_coding_block_size_minus3", max: 3)
        sps.log2DiffMaxMinLumaCodingBlockSize = try r.readUE(
            "log2_diff_max_min_luma_coding_block_size", max: 6 &- sps.minCbLog2SizeY)
        if !(4...6).contains(sps.ctbLog2SizeY) {
            throw H265Error.invalidValue(field: "CtbLog2SizeY", value: Int64(sps.ctbLog2SizeY))
        }
        // 7.4.3.2.1: pic_width/height_in_luma_samples shall be integer multiples of MinCbSizeY.
        if sps.picWidthInLumaSamples % sps.minCbSizeY != 0 {
            throw H265Error.invalidValue(field: "pic_width_in_luma_samples", value: Int64(sps.picWidthInLumaSamples))
        }
        if sps.picHeightInLumaSamples % sps.minCbSizeY != 0 {
            throw H265Error.invalidValue(field: "pic_height_in_luma_samples", value: Int64(sps.picHeightInLumaSamples))
        }
        // 7.4.3.2.1: MinTbLog2SizeY < MinCbLog2SizeY; MaxTbLog2SizeY <= Min(CtbLog2SizeY, 5).
        sps.log2MinLumaTransformBlockSizeMinus2 = try r.readUE(
            "log2_min_luma_transform_block_size_minus2", max: sps.minCbLog2SizeY &- 3)
        sps.log2DiffMaxMinLumaTransformBlockSize = try r.readUE(
            "log2_diff_max_min_luma_transform_block_size", max: Swift.min(sps.ctbLog2SizeY, 5) &- sps.minTbLog2SizeY)
        // 7.4.3.2.1: both depths in 0...CtbLog2SizeY - MinTbLog2SizeY.
        sps.maxTransformHierarchyDepthInter = try r.readUE(
            "max_transform_hierarchy_depth_inter", max: sps.ctbLog2SizeY &- sps.minTbLog2SizeY)
        sps.maxTransformHierarchyDepthIntra = try r.readUE(
            "max_transform_hierarchy_depth_intra", max: sps.ctbLog2SizeY &- sps.minTbLog2SizeY)
        sps.scalingListEnabledFlag = try r.readFlag("scaling_list_enabled_flag")
        if sps.scalingListEnabledFlag {
            sps.spsScalingListDataPresentFlag = try r.readFlag("sps_scaling_list_data_present_flag")
            sps.scalingList = sps.spsScalingListDataPresentFlag ? try H265ScalingList.parse(&r) : .defaults
        }
        sps.ampEnabledFlag = try r.readFlag("amp_enabled_flag")
        sps.sampleAdaptiveOffsetEnabledFlag = try r.readFlag("sample_adaptive_offset_enabled_flag")
        sps.pcmEnabledFlag = try r.readFlag("pcm_enabled_flag")
        if sps.pcmEnabledFlag {
            // 7.4.3.2.1: PcmBitDepthY <= BitDepthY and PcmBitDepthC <= BitDepthC.
            sps.pcmSampleBitDepthLumaMinus1 = try r.readBits(
                4, "pcm_sample_bit_depth_luma_minus1", max: sps.bitDepthLuma &- 1)
            sps.pcmSampleBitDepthChromaMinus1 = try r.readBits(
                4, "pcm_sample_bit_depth_chroma_minus1", max: sps.bitDepthChroma &- 1)
            // 7.4.3.2.1: Log2MinIpcmCbSizeY in Min(MinCbLog2SizeY, 5)...Min(CtbLog2SizeY, 5),
            // Log2MaxIpcmCbSizeY <= Min(CtbLog2SizeY, 5).
            sps.log2MinPCMLumaCodingBlockSizeMinus3 = try r.readUE(
                "log2_min_pcm_luma_coding_block_size_minus3", max: Swift.min(sps.ctbLog2SizeY, 5) &- 3)
            if sps.log2MinIpcmCbSizeY < Swift.min(sps.minCbLog2SizeY, 5) {
                throw H265Error.invalidValue(
                    field: "log2_min_pcm_luma_coding_block_size_minus3",
                    value: Int64(sps.log2MinPCMLumaCodingBlockSizeMinus3))
            }
            sps.log2DiffMaxMinPCMLumaCodingBlockSize = try r.readUE(
                "log2_diff_max_min_pcm_luma_coding_block_size",
                max: Swift.min(sps.ctbLog2SizeY, 5) &- sps.log2MinIpcmCbSizeY)
            sps.pcmLoopFilterDisabledFlag = try r.readFlag("pcm_loop_filter_disabled_flag")
        }
        // 7.4.3.2.1: 0...64.
        let setCount = try r.readUE("num_short_term_ref_pic_sets", max: 64)
        sps.shortTermReferencePictureSets.reserveCapacity(setCount)
        for index in 0..<setCount {
            sps.shortTermReferencePictureSets.append(
                try H265ShortTermReferencePictureSet.parse(
                    &r, index: index, candidates: sps.shortTermReferencePictureSets, numShortTermRefPicSets: setCount,
                    maxDecPicBufferingMinus1: sps.maxDecPicBufferingMinus1))
        }
        sps.longTermRefPicsPresentFlag = try r.readFlag("long_term_ref_pics_present_flag")
        if sps.longTermRefPicsPresentFlag {
            // 7.4.3.2.1: 0...32.
            let count = try r.readUE("num_long_term_ref_pics_sps", max: 32)
            for _ in 0..<count {
                let lsb = Int(try r.readBits(sps.log2MaxPicOrderCntLsb, "lt_ref_pic_poc_lsb_sps"))
                let used = try r.readFlag("used_by_curr_pic_lt_sps_flag")
                sps.longTermReferencePictures.append(
                    H265LongTermReferencePictureCandidate(pocLsb: lsb, usedByCurrentPicture: used))
            }
        }
        sps.temporalMVPEnabledFlag = try r.readFlag("sps_temporal_mvp_enabled_flag")
        sps.strongIntraSmoothingEnabledFlag = try r.readFlag("strong_intra_smoothing_enabled_flag")
        sps.vuiParametersPresentFlag = try r.readFlag("vui_parameters_present_flag")
        if sps.vuiParametersPresentFlag {
            sps.vui = try H265VUIParameters.parse(&r, maxSubLayersMinus1: sps.maxSubLayersMinus1)
        }
        sps.extensionPresentFlag = try r.readFlag("sps_extension_present_flag")
        if sps.extensionPresentFlag {
            sps.rangeExtensionFlag = try r.readFlag("sps_range_extension_flag")
            sps.multilayerExtensionFlag = try r.readFlag("sps_multilayer_extension_flag")
            sps.threeDimensionalExtensionFlag = try r.readFlag("sps_3d_extension_flag")
            sps.screenContentCodingExtensionFlag = try r.readFlag("sps_scc_extension_flag")
            sps.extension4Bits = Int(try r.readBits(4, "sps_extension_4bits"))
        }
        if sps.rangeExtensionFlag {
            sps.rangeExtension = try H265SPSRangeExtension.parse(&r)
        }
        if sps.multilayerExtensionFlag {
            sps.interViewMvVertConstraintFlag = try r.readFlag("inter_view_mv_vert_constraint_flag")
        }
        // The 3D and screen content extensions (and extension data) are last in the SPS and
        // nothing read above depends on them; without them the RBSP must end here.
        if !sps.hasUnparsedExtensions { try r.readRBSPTrailingBits() }
        return sps
    }

    // MARK: Derived values (6.2, 7.4.3.2.1)

    /// The SPS carries extensions this parser skips (3D, screen content coding, extension data).
    public var hasUnparsedExtensions: Bool {
        threeDimensionalExtensionFlag || screenContentCodingExtensionFlag || extension4Bits != 0
    }

    /// ChromaArrayType (7.4.3.2.1): 0 for monochrome or separately coded colour planes, else
    /// chroma_format_idc.
    public var chromaArrayType: Int { separateColourPlaneFlag ? 0 : chromaFormatIdc }

    /// SubWidthC (Table 6-1): 2 for 4:2:0 and 4:2:2, else 1 (monochrome, 4:4:4, separate planes).
    public var subWidthC: Int { (chromaFormatIdc == 1 || chromaFormatIdc == 2) && !separateColourPlaneFlag ? 2 : 1 }
    /// SubHeightC (Table 6-1): 2 for 4:2:0, else 1.
    public var subHeightC: Int { chromaFormatIdc == 1 && !separateColourPlaneFlag ? 2 : 1 }

    /// BitDepthY = 8 + bit_depth_luma_minus8 (7-4).
    public var bitDepthLuma: Int { 8 &+ bitDepthLumaMinus8 }
    /// BitDepthC = 8 + bit_depth_chroma_minus8 (7-6).
    public var bitDepthChroma: Int { 8 &+ bitDepthChromaMinus8 }
    /// QpBdOffsetY = 6 * bit_depth_luma_minus8 (7-5).
    public var qpBdOffsetY: Int { 6 &* bitDepthLumaMinus8 }

    /// log2_max_pic_order_cnt_lsb_minus4 + 4: the length of slice_pic_order_cnt_lsb.
    public var log2MaxPicOrderCntLsb: Int { log2MaxPicOrderCntLsbMinus4 &+ 4 }
    /// MaxPicOrderCntLsb = 2^(log2_max_pic_order_cnt_lsb_minus4 + 4) (7-8).
    public var maxPicOrderCntLsb: Int { 1 << log2MaxPicOrderCntLsb }

    /// MinCbLog2SizeY (7-10).
    public var minCbLog2SizeY: Int { log2MinLumaCodingBlockSizeMinus3 &+ 3 }
    /// CtbLog2SizeY (7-11).
    public var ctbLog2SizeY: Int { minCbLog2SizeY &+ log2DiffMaxMinLumaCodingBlockSize }
    /// MinCbSizeY (7-12).
    public var minCbSizeY: Int { 1 << minCbLog2SizeY }
    /// CtbSizeY (7-13).
    public var ctbSizeY: Int { 1 << ctbLog2SizeY }
    /// PicWidthInCtbsY = Ceil(pic_width_in_luma_samples / CtbSizeY) (7-15).
    public var picWidthInCtbsY: Int { (picWidthInLumaSamples &+ ctbSizeY &- 1) >> ctbLog2SizeY }
    /// PicHeightInCtbsY (7-17).
    public var picHeightInCtbsY: Int { (picHeightInLumaSamples &+ ctbSizeY &- 1) >> ctbLog2SizeY }
    /// PicSizeInCtbsY (7-19).
    public var picSizeInCtbsY: Int { picWidthInCtbsY &* picHeightInCtbsY }
    /// MinTbLog2SizeY = log2_min_luma_transform_block_size_minus2 + 2.
    public var minTbLog2SizeY: Int { log2MinLumaTransformBlockSizeMinus2 &+ 2 }
    /// MaxTbLog2SizeY = MinTbLog2SizeY + log2_diff_max_min_luma_transform_block_size.
    public var maxTbLog2SizeY: Int { minTbLog2SizeY &+ log2DiffMaxMinLumaTransformBlockSize }
    /// Log2MinIpcmCbSizeY (7-27).
    public var log2MinIpcmCbSizeY: Int { log2MinPCMLumaCodingBlockSizeMinus3 &+ 3 }

    /// sps_max_dec_pic_buffering_minus1[sps_max_sub_layers_minus1]: the DPB size of the whole
    /// stream, minus one; it bounds the reference picture sets (7.4.8, 7.4.7.1).
    public var maxDecPicBufferingMinus1: Int { subLayerOrdering.last?.maxDecPicBufferingMinus1 ?? 0 }

    /// sps_max_num_reorder_pics[sps_max_sub_layers_minus1]: how many pictures a decoder holds
    /// back for output order (libavcodec's has_b_frames, GStreamer's latency).
    public var outputReorderDepth: Int { subLayerOrdering.last?.maxNumReorderPics ?? 0 }

    /// How many pictures may follow a picture in decoding order and precede it in output order,
    /// for deriving presentation times from the POC (a parser without a decoder); 0 when output
    /// order is decoding order.
    ///
    /// sps_max_num_reorder_pics bounds the other direction: at most that many pictures precede a
    /// picture in decoding order and follow it in output order (7.4.3.2.1), so 0 means no
    /// picture is reordered (the bumping process, C.5.2.2, then outputs each picture as it is
    /// decoded). Otherwise the DPB size does not bound the window either: non-reference
    /// pictures pass through the DPB while an earlier picture waits (a B-pyramid's P picture
    /// waits for all its B pictures). SpsMaxLatencyPictures does (C.5.2.2: a picture is output
    /// once that many pictures follow it) when the SPS states it (7-9); otherwise only the GOP
    /// structure bounds it, and 16, MaxDpbSize's ceiling (A.4.2) and x265's longest run of B
    /// pictures, covers what encoders write.
    public var presentationReorderWindow: Int {
        guard let ordering = subLayerOrdering.last, ordering.maxNumReorderPics > 0 else { return 0 }
        return Swift.max(
            ordering.maxDecPicBufferingMinus1 + 1, ordering.maxLatencyPictures ?? H265SubLayerOrdering.maxDpbSize)
    }

    /// The conformance cropping window in luma samples (7.4.3.2.1): the part of the decoded
    /// picture that is output. Parsing guarantees it is non-empty and inside the picture.
    public var conformanceWindow: (x: Int, y: Int, width: Int, height: Int) {
        let x = subWidthC &* confWinLeftOffset
        let y = subHeightC &* confWinTopOffset
        let width = picWidthInLumaSamples &- subWidthC &* (confWinLeftOffset &+ confWinRightOffset)
        let height = picHeightInLumaSamples &- subHeightC &* (confWinTopOffset &+ confWinBottomOffset)
        return (x, y, width, height)
    }

    /// Width of the output pictures (after the conformance window) in luma samples.
    public var displayWidth: Int { conformanceWindow.width }
    /// Height of the output pictures (after the conformance window) in luma samples. With
    /// field_seq_flag each picture is one field, so a frame is twice as high.
    public var displayHeight: Int { conformanceWindow.height }

    /// Whether the coded pictures are fields (VUI field_seq_flag).
    public var picturesAreFields: Bool { vui?.fieldSeqFlag ?? false }

    // MARK: Writing

    /// The SPS as a NAL unit (header, escaped RBSP), for encoders and tests. Writes the fields as
    /// they are, without checking them, so that tests can make invalid ones; scaling lists are
    /// written explicitly, and the 3D/SCC extensions (never parsed) are not written.
    public func nalUnit() -> [UInt8] {
        var w = BitWriter()
        w.writeBits(UInt32(truncatingIfNeeded: videoParameterSetID), count: 4)
        w.writeBits(UInt32(truncatingIfNeeded: maxSubLayersMinus1), count: 3)
        w.writeFlag(temporalIDNestingFlag)
        profileTierLevel.write(to: &w, maxNumSubLayersMinus1: maxSubLayersMinus1)
        w.writeUE(UInt32(truncatingIfNeeded: seqParameterSetID))
        w.writeUE(UInt32(truncatingIfNeeded: chromaFormatIdc))
        if chromaFormatIdc == 3 { w.writeFlag(separateColourPlaneFlag) }
        w.writeUE(UInt32(truncatingIfNeeded: picWidthInLumaSamples))
        w.writeUE(UInt32(truncatingIfNeeded: picHeightInLumaSamples))
        w.writeFlag(conformanceWindowFlag)
        if conformanceWindowFlag {
            for offset in [confWinLeftOffset, confWinRightOffset, confWinTopOffset, confWinBottomOffset] {
                w.writeUE(UInt32(truncatingIfNeeded: offset))
            }
        }
        w.writeUE(UInt32(truncatingIfNeeded: bitDepthLumaMinus8))
        w.writeUE(UInt32(truncatingIfNeeded: bitDepthChromaMinus8))
        w.writeUE(UInt32(truncatingIfNeeded: log2MaxPicOrderCntLsbMinus4))
        w.writeFlag(subLayerOrderingInfoPresentFlag)
        H265SubLayerOrdering.writeList(
            subLayerOrdering, to: &w, infoPresentForEachSubLayer: subLayerOrderingInfoPresentFlag)
        w.writeUE(UInt32(truncatingIfNeeded: log2MinLumaCodingBlockSizeMinus3))
        w.writeUE(UInt32(truncatingIfNeeded: log2DiffMaxMinLumaCodingBlockSize))
        w.writeUE(UInt32(truncatingIfNeeded: log2MinLumaTransformBlockSizeMinus2))
        w.writeUE(UInt32(truncatingIfNeeded: log2DiffMaxMinLumaTransformBlockSize))
        w.writeUE(UInt32(truncatingIfNeeded: maxTransformHierarchyDepthInter))
        w.writeUE(UInt32(truncatingIfNeeded: maxTransformHierarchyDepthIntra))
        w.writeFlag(scalingListEnabledFlag)
        if scalingListEnabledFlag {
            w.writeFlag(spsScalingListDataPresentFlag)
            if spsScalingListDataPresentFlag { (scalingList ?? .defaults).write(to: &w) }
        }
        w.writeFlag(ampEnabledFlag)
        w.writeFlag(sampleAdaptiveOffsetEnabledFlag)
        w.writeFlag(pcmEnabledFlag)
        if pcmEnabledFlag {
            w.writeBits(UInt32(truncatingIfNeeded: pcmSampleBitDepthLumaMinus1), count: 4)
            w.writeBits(UInt32(truncatingIfNeeded: pcmSampleBitDepthChromaMinus1), count: 4)
            w.writeUE(UInt32(truncatingIfNeeded: log2MinPCMLumaCodingBlockSizeMinus3))
            w.writeUE(UInt32(truncatingIfNeeded: log2DiffMaxMinPCMLumaCodingBlockSize))
            w.writeFlag(pcmLoopFilterDisabledFlag)
        }
        w.writeUE(UInt32(truncatingIfNeeded: shortTermReferencePictureSets.count))
        for (index, set) in shortTermReferencePictureSets.enumerated() {
            set.write(to: &w, index: index, numShortTermRefPicSets: shortTermReferencePictureSets.count)
        }
        w.writeFlag(longTermRefPicsPresentFlag)
        if longTermRefPicsPresentFlag {
            w.writeUE(UInt32(truncatingIfNeeded: longTermReferencePictures.count))
            for picture in longTermReferencePictures {
                w.writeBits(UInt32(truncatingIfNeeded: picture.pocLsb), count: log2MaxPicOrderCntLsb)
                w.writeFlag(picture.usedByCurrentPicture)
            }
        }
        w.writeFlag(temporalMVPEnabledFlag)
        w.writeFlag(strongIntraSmoothingEnabledFlag)
        w.writeFlag(vuiParametersPresentFlag)
        if vuiParametersPresentFlag { (vui ?? H265VUIParameters()).write(to: &w) }
        let writesExtensions = extensionPresentFlag || rangeExtensionFlag || multilayerExtensionFlag
        w.writeFlag(writesExtensions)
        if writesExtensions {
            w.writeFlag(rangeExtensionFlag)
            w.writeFlag(multilayerExtensionFlag)
            w.writeBits(0, count: 6) // sps_3d_extension_flag, sps_scc_extension_flag, sps_extension_4bits
            if rangeExtensionFlag { rangeExtension.write(to: &w) }
            if multilayerExtensionFlag { w.writeFlag(interViewMvVertConstraintFlag) }
        }
        w.writeRBSPTrailingBits()
        return H265NALUnitHeader(nalUnitType: .sequenceParameterSet).bytes + RBSP.insertEmulationPrevention(w.bytes)
    }
}
