import MediaCore

/// hrd_parameters(), E.1.2 / E.2.2: one set for NAL HRD and one for VCL HRD.
public struct HRDParameters: Hashable, Sendable {
    /// One coded picture buffer specification (SchedSelIdx).
    public struct CPBSpecification: Hashable, Sendable {
        /// bit_rate_value_minus1[SchedSelIdx], 0...2^32 - 2.
        public var bitRateValueMinus1: UInt32
        /// cpb_size_value_minus1[SchedSelIdx], 0...2^32 - 2.
        public var cpbSizeValueMinus1: UInt32
        /// cbr_flag[SchedSelIdx].
        public var cbrFlag: Bool

        /// For an encoder describing its HRD (the writer writes what the parser reads).
        public init(bitRateValueMinus1: UInt32, cpbSizeValueMinus1: UInt32, cbrFlag: Bool) {
            self.bitRateValueMinus1 = bitRateValueMinus1
            self.cpbSizeValueMinus1 = cpbSizeValueMinus1
            self.cbrFlag = cbrFlag
        }
    }

    /// cpb_cnt_minus1, 0...31.
    public var cpbCntMinus1: Int = 0
    /// bit_rate_scale, u(4).
    public var bitRateScale: Int = 0
    /// cpb_size_scale, u(4).
    public var cpbSizeScale: Int = 0
    /// cpb_cnt_minus1 + 1 entries.
    public var cpbSpecifications: [CPBSpecification] = []
    /// initial_cpb_removal_delay_length_minus1, u(5).
    public var initialCpbRemovalDelayLengthMinus1: Int = 23
    /// cpb_removal_delay_length_minus1, u(5).
    public var cpbRemovalDelayLengthMinus1: Int = 23
    /// dpb_output_delay_length_minus1, u(5).
    public var dpbOutputDelayLengthMinus1: Int = 23
    /// time_offset_length, u(5).
    public var timeOffsetLength: Int = 24

    public init() {}

    /// BitRate[SchedSelIdx] in bits/s (E-37).
    public func bitRate(_ schedSelIdx: Int) -> UInt64 {
        guard cpbSpecifications.indices.contains(schedSelIdx) else { return 0 }
        return (UInt64(cpbSpecifications[schedSelIdx].bitRateValueMinus1) &+ 1) << UInt64(6 &+ bitRateScale)
    }

    /// CpbSize[SchedSelIdx] in bits (E-38).
    public func cpbSize(_ schedSelIdx: Int) -> UInt64 {
        guard cpbSpecifications.indices.contains(schedSelIdx) else { return 0 }
        return (UInt64(cpbSpecifications[schedSelIdx].cpbSizeValueMinus1) &+ 1) << UInt64(4 &+ cpbSizeScale)
    }

    static func parse(_ r: inout BitReader) throws(H264Error) -> HRDParameters {
        var hrd = HRDParameters()
        // E.2.2: cpb_cnt_minus1 shall be in the range of 0 to 31.
        hrd.cpbCntMinus1 = try r.readUE("cpb_cnt_minus1", max: 31)
        hrd.bitRateScale = Int(try r.readBits(4, "bit_rate_scale"))
        hrd.cpbSizeScale = Int(try r.readBits(4, "cpb_size_scale"))
        hrd.cpbSpecifications.reserveCapacity(hrd.cpbCntMinus1 &+ 1)
        for _ in 0...hrd.cpbCntMinus1 {
            // E.2.2: both values are in 0...2^32 - 2, which is exactly what readUE accepts.
            let bitRate = try r.readUE("bit_rate_value_minus1")
            let cpbSize = try r.readUE("cpb_size_value_minus1")
            let cbr = try r.readFlag("cbr_flag")
            hrd.cpbSpecifications.append(
                CPBSpecification(bitRateValueMinus1: bitRate, cpbSizeValueMinus1: cpbSize, cbrFlag: cbr))
        }
        hrd.initialCpbRemovalDelayLengthMinus1 = Int(try r.readBits(5, "initial_cpb_removal_delay_length_minus1"))
        hrd.cpbRemovalDelayLengthMinus1 = Int(try r.readBits(5, "cpb_removal_delay_length_minus1"))
        hrd.dpbOutputDelayLengthMinus1 = Int(try r.readBits(5, "dpb_output_delay_length_minus1"))
        hrd.timeOffsetLength = Int(try r.readBits(5, "time_offset_length"))
        return hrd
    }
}

/// vui_parameters(), E.1.1 / E.2.1. Fields that are absent hold the values E.2.1 infers.
public struct VUIParameters: Hashable, Sendable {
    public var aspectRatioInfoPresentFlag = false
    /// aspect_ratio_idc, Table E-1 (255 = Extended_SAR); 0 (unspecified) when absent.
    public var aspectRatioIdc = 0
    /// sar_width / sar_height, only for Extended_SAR.
    public var sarWidth = 0
    public var sarHeight = 0
    public var overscanInfoPresentFlag = false
    public var overscanAppropriateFlag = false
    public var videoSignalTypePresentFlag = false
    /// video_format, Table E-2; 5 (unspecified) when absent.
    public var videoFormat = 5
    public var videoFullRangeFlag = false
    public var colourDescriptionPresentFlag = false
    /// colour_primaries, Table E-3; 2 (unspecified) when absent.
    public var colourPrimaries = 2
    /// transfer_characteristics, Table E-4; 2 (unspecified) when absent.
    public var transferCharacteristics = 2
    /// matrix_coefficients, Table E-5; 2 (unspecified) when absent.
    public var matrixCoefficients = 2
    public var chromaLocInfoPresentFlag = false
    /// chroma_sample_loc_type_top_field, 0...5.
    public var chromaSampleLocTypeTopField = 0
    /// chroma_sample_loc_type_bottom_field, 0...5.
    public var chromaSampleLocTypeBottomField = 0
    public var timingInfoPresentFlag = false
    /// num_units_in_tick. E.2.1 requires > 0; 0 is tolerated (seen in the wild) and makes
    /// `frameRate` nil.
    public var numUnitsInTick: UInt32 = 0
    /// time_scale. E.2.1 requires > 0; 0 is tolerated like num_units_in_tick.
    public var timeScale: UInt32 = 0
    public var fixedFrameRateFlag = false
    public var nalHrdParametersPresentFlag = false
    public var nalHrdParameters: HRDParameters?
    public var vclHrdParametersPresentFlag = false
    public var vclHrdParameters: HRDParameters?
    /// low_delay_hrd_flag; only present with HRD parameters (inferred 1 - fixed_frame_rate_flag
    /// otherwise, E.2.1, which only matters with an HRD).
    public var lowDelayHrdFlag = false
    public var picStructPresentFlag = false
    public var bitstreamRestrictionFlag = false
    /// motion_vectors_over_pic_boundaries_flag; inferred 1 when absent.
    public var motionVectorsOverPicBoundariesFlag = true
    /// max_bytes_per_pic_denom, 0...16; inferred 2.
    public var maxBytesPerPicDenom = 2
    /// max_bits_per_mb_denom, 0...16; inferred 1.
    public var maxBitsPerMbDenom = 1
    /// log2_max_mv_length_horizontal, 0...16; inferred 16.
    public var log2MaxMvLengthHorizontal = 16
    /// log2_max_mv_length_vertical, 0...16; inferred 16.
    public var log2MaxMvLengthVertical = 16
    /// max_num_reorder_frames; nil when bitstream_restriction_flag is 0 (then E.2.1 infers
    /// MaxDpbFrames, or 0 for some intra profiles; see `SequenceParameterSet.maxDpbFrames`).
    public var maxNumReorderFrames: Int?
    /// max_dec_frame_buffering; nil when bitstream_restriction_flag is 0.
    public var maxDecFrameBuffering: Int?

    public init() {}

    /// CpbDpbDelaysPresentFlag (C.1 / D.2.2): picture timing SEI carries cpb_removal_delay and
    /// dpb_output_delay when either HRD is present.
    public var cpbDpbDelaysPresentFlag: Bool { nalHrdParametersPresentFlag || vclHrdParametersPresentFlag }

    /// The HRD whose lengths the picture timing SEI uses: NAL HRD first, then VCL HRD (D.2.2:
    /// both must agree when both are present).
    public var primaryHRD: HRDParameters? { nalHrdParameters ?? vclHrdParameters }

    /// The sample aspect ratio (Table E-1), nil for 0 (unspecified), reserved values and an
    /// Extended_SAR with a zero term.
    public var sampleAspectRatio: (width: Int, height: Int)? {
        guard aspectRatioInfoPresentFlag else { return nil }
        return SampleAspectRatioTable.ratio(aspectRatioIdc: aspectRatioIdc, sarWidth: sarWidth, sarHeight: sarHeight)
    }

    /// Frame rate as a fraction, time_scale / (2 * num_units_in_tick): E.2.1 counts ticks per
    /// field, so a frame lasts two ticks (the usual reading, also GStreamer's). nil without
    /// timing info or with a zero term.
    public var frameRate: FrameRate? {
        guard timingInfoPresentFlag, numUnitsInTick > 0, timeScale > 0 else { return nil }
        return FrameRate(Int(timeScale), 2 * Int(numUnitsInTick))
    }

    /// `frameRate` as a Double.
    public var framesPerSecond: Double? { frameRate?.framesPerSecond }

    static func parse(_ r: inout BitReader) throws(H264Error) -> VUIParameters {
        var vui = VUIParameters()
        vui.aspectRatioInfoPresentFlag = try r.readFlag("aspect_ratio_info_present_flag")
        if vui.aspectRatioInfoPresentFlag {
            vui.aspectRatioIdc = Int(try r.readBits(8, "aspect_ratio_idc"))
            if vui.aspectRatioIdc == SampleAspectRatioTable.extendedSAR {
                vui.sarWidth = Int(try r.readBits(16, "sar_width"))
                vui.sarHeight = Int(try r.readBits(16, "sar_height"))
            }
        }
        vui.overscanInfoPresentFlag = try r.readFlag("overscan_info_present_flag")
        if vui.overscanInfoPresentFlag {
            vui.overscanAppropriateFlag = try r.readFlag("overscan_appropriate_flag")
        }
        vui.videoSignalTypePresentFlag = try r.readFlag("video_signal_type_present_flag")
        if vui.videoSignalTypePresentFlag {
            vui.videoFormat = Int(try r.readBits(3, "video_format"))
            vui.videoFullRangeFlag = try r.readFlag("video_full_range_flag")
            vui.colourDescriptionPresentFlag = try r.readFlag("colour_description_present_flag")
            if vui.colourDescriptionPresentFlag {
                vui.colourPrimaries = Int(try r.readBits(8, "colour_primaries"))
                vui.transferCharacteristics = Int(try r.readBits(8, "transfer_characteristics"))
                vui.matrixCoefficients = Int(try r.readBits(8, "matrix_coefficients"))
            }
        }
        vui.chromaLocInfoPresentFlag = try r.readFlag("chroma_loc_info_present_flag")
        if vui.chromaLocInfoPresentFlag {
            // E.2.1: both in the range 0 to 5.
            vui.chromaSampleLocTypeTopField = try r.readUE("chroma_sample_loc_type_top_field", max: 5)
            vui.chromaSampleLocTypeBottomField = try r.readUE("chroma_sample_loc_type_bottom_field", max: 5)
        }
        vui.timingInfoPresentFlag = try r.readFlag("timing_info_present_flag")
        if vui.timingInfoPresentFlag {
            vui.numUnitsInTick = try r.readBits(32, "num_units_in_tick")
            vui.timeScale = try r.readBits(32, "time_scale")
            vui.fixedFrameRateFlag = try r.readFlag("fixed_frame_rate_flag")
        }
        vui.nalHrdParametersPresentFlag = try r.readFlag("nal_hrd_parameters_present_flag")
        if vui.nalHrdParametersPresentFlag {
            vui.nalHrdParameters = try HRDParameters.parse(&r)
        }
        vui.vclHrdParametersPresentFlag = try r.readFlag("vcl_hrd_parameters_present_flag")
        if vui.vclHrdParametersPresentFlag {
            vui.vclHrdParameters = try HRDParameters.parse(&r)
        }
        if vui.nalHrdParametersPresentFlag || vui.vclHrdParametersPresentFlag {
            vui.lowDelayHrdFlag = try r.readFlag("low_delay_hrd_flag")
        }
        vui.picStructPresentFlag = try r.readFlag("pic_struct_present_flag")
        vui.bitstreamRestrictionFlag = try r.readFlag("bitstream_restriction_flag")
        if vui.bitstreamRestrictionFlag {
            vui.motionVectorsOverPicBoundariesFlag = try r.readFlag("motion_vectors_over_pic_boundaries_flag")
            vui.maxBytesPerPicDenom = try r.readUE("max_bytes_per_pic_denom", max: 16)
            vui.maxBitsPerMbDenom = try r.readUE("max_bits_per_mb_denom", max: 16)
            vui.log2MaxMvLengthHorizontal = try r.readUE("log2_max_mv_length_horizontal", max: 16)
            vui.log2MaxMvLengthVertical = try r.readUE("log2_max_mv_length_vertical", max: 16)
            // E.2.1 bounds both by MaxDpbFrames, itself at most 16 (A.3.1); the relation to the
            // level is not enforced here since encoders get it wrong in harmless ways.
            vui.maxNumReorderFrames = try r.readUE("max_num_reorder_frames", max: 16)
            vui.maxDecFrameBuffering = try r.readUE("max_dec_frame_buffering", max: 16)
        }
        return vui
    }
}
