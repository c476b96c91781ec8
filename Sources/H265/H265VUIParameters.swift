import MediaCore

/// vui_parameters(), E.2.1 / E.3.1. Fields that are absent hold the values E.3.1 infers.
public struct H265VUIParameters: Hashable, Sendable {
    public var aspectRatioInfoPresentFlag = false
    /// aspect_ratio_idc, Table E-1 (255 = EXTENDED_SAR); 0 (unspecified) when absent.
    public var aspectRatioIdc = 0
    /// sar_width / sar_height, only for EXTENDED_SAR.
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
    /// matrix_coeffs, Table E-5; 2 (unspecified) when absent.
    public var matrixCoeffs = 2
    public var chromaLocInfoPresentFlag = false
    /// chroma_sample_loc_type_top_field, 0...5.
    public var chromaSampleLocTypeTopField = 0
    /// chroma_sample_loc_type_bottom_field, 0...5.
    public var chromaSampleLocTypeBottomField = 0
    public var neutralChromaIndicationFlag = false
    /// field_seq_flag: every picture is a field (so a frame is two pictures), E.3.1.
    public var fieldSeqFlag = false
    /// frame_field_info_present_flag: picture timing SEI messages carry pic_struct,
    /// source_scan_type and duplicate_flag (D.2.3). E.3.1 requires it with field_seq_flag.
    public var frameFieldInfoPresentFlag = false
    public var defaultDisplayWindowFlag = false
    /// def_disp_win_*_offset, in the units of the conformance window (SubWidthC, SubHeightC).
    public var defaultDisplayWindowLeftOffset = 0
    public var defaultDisplayWindowRightOffset = 0
    public var defaultDisplayWindowTopOffset = 0
    public var defaultDisplayWindowBottomOffset = 0
    public var timingInfoPresentFlag = false
    /// vui_num_units_in_tick (E.3.1: greater than 0 when present; 0 is tolerated, as seen in the
    /// wild, and makes `pictureRate` nil).
    public var numUnitsInTick: UInt32 = 0
    /// vui_time_scale (greater than 0 when present; 0 is tolerated like num_units_in_tick).
    public var timeScale: UInt32 = 0
    public var pocProportionalToTimingFlag = false
    /// vui_num_ticks_poc_diff_one_minus1, 0...2^32 - 2; nil unless
    /// vui_poc_proportional_to_timing_flag.
    public var numTicksPocDiffOneMinus1: UInt32?
    public var hrdParametersPresentFlag = false
    public var hrdParameters: H265HRDParameters?
    public var bitstreamRestrictionFlag = false
    public var tilesFixedStructureFlag = false
    /// motion_vectors_over_pic_boundaries_flag; inferred 1 when absent.
    public var motionVectorsOverPicBoundariesFlag = true
    public var restrictedRefPicListsFlag = false
    /// min_spatial_segmentation_idc, 0...4095; 0 (no limit stated) when absent.
    public var minSpatialSegmentationIdc = 0
    /// max_bytes_per_pic_denom, 0...16; inferred 2.
    public var maxBytesPerPicDenom = 2
    /// max_bits_per_min_cu_denom, 0...16; inferred 1.
    public var maxBitsPerMinCuDenom = 1
    /// log2_max_mv_length_horizontal, 0...15; inferred 15.
    public var log2MaxMvLengthHorizontal = 15
    /// log2_max_mv_length_vertical, 0...15; inferred 15.
    public var log2MaxMvLengthVertical = 15

    public init() {}

    /// The sample aspect ratio (Table E-1), nil for 0 (unspecified), reserved values and an
    /// EXTENDED_SAR with a zero term.
    public var sampleAspectRatio: (width: Int, height: Int)? {
        guard aspectRatioInfoPresentFlag else { return nil }
        return SampleAspectRatioTable.ratio(aspectRatioIdc: aspectRatioIdc, sarWidth: sarWidth, sarHeight: sarHeight)
    }

    /// Pictures per second as a fraction, vui_time_scale / vui_num_units_in_tick. Unlike H.264's
    /// VUI (which counts ticks per field), a clock tick in H.265 is the duration of one picture
    /// of a fixed-rate stream (E.3.1, with elemental_duration_in_tc_minus1 0); with field_seq_flag
    /// a picture is a field, so frames come at half this rate. nil without timing info or with a
    /// zero term.
    public var pictureRate: FrameRate? {
        guard timingInfoPresentFlag, numUnitsInTick > 0, timeScale > 0 else { return nil }
        return FrameRate(Int(timeScale), Int(numUnitsInTick))
    }

    /// Frames per second as a fraction: `pictureRate`, halved when the pictures are fields.
    public var frameRate: FrameRate? {
        guard let rate = pictureRate else { return nil }
        return fieldSeqFlag ? FrameRate(rate.numerator, 2 * rate.denominator) : rate
    }

    /// vui_parameters(), E.2.1. `maxSubLayersMinus1` is the SPS's sps_max_sub_layers_minus1,
    /// which sizes the HRD's per-sub-layer part.
    static func parse(_ r: inout H265BitReader, maxSubLayersMinus1: Int) throws(H265Error) -> H265VUIParameters {
        var vui = H265VUIParameters()
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
                vui.matrixCoeffs = Int(try r.readBits(8, "matrix_coeffs"))
            }
        }
        vui.chromaLocInfoPresentFlag = try r.readFlag("chroma_loc_info_present_flag")
        if vui.chromaLocInfoPresentFlag {
            // E.3.1: both in the range 0 to 5.
            vui.chromaSampleLocTypeTopField = try r.readUE("chroma_sample_loc_type_top_field", max: 5)
            vui.chromaSampleLocTypeBottomField = try r.readUE("chroma_sample_loc_type_bottom_field", max: 5)
        }
        vui.neutralChromaIndicationFlag = try r.readFlag("neutral_chroma_indication_flag")
        vui.fieldSeqFlag = try r.readFlag("field_seq_flag")
        vui.frameFieldInfoPresentFlag = try r.readFlag("frame_field_info_present_flag")
        // E.3.1: "When field_seq_flag is equal to 1, frame_field_info_present_flag shall be
        // equal to 1": field pictures must say which field they are.
        if vui.fieldSeqFlag && !vui.frameFieldInfoPresentFlag {
            throw H265Error.invalidValue(field: "frame_field_info_present_flag (with field_seq_flag 1)", value: 0)
        }
        vui.defaultDisplayWindowFlag = try r.readFlag("default_display_window_flag")
        if vui.defaultDisplayWindowFlag {
            vui.defaultDisplayWindowLeftOffset = Int(try r.readUE("def_disp_win_left_offset"))
            vui.defaultDisplayWindowRightOffset = Int(try r.readUE("def_disp_win_right_offset"))
            vui.defaultDisplayWindowTopOffset = Int(try r.readUE("def_disp_win_top_offset"))
            vui.defaultDisplayWindowBottomOffset = Int(try r.readUE("def_disp_win_bottom_offset"))
        }
        vui.timingInfoPresentFlag = try r.readFlag("vui_timing_info_present_flag")
        if vui.timingInfoPresentFlag {
            vui.numUnitsInTick = try r.readBits(32, "vui_num_units_in_tick")
            vui.timeScale = try r.readBits(32, "vui_time_scale")
            vui.pocProportionalToTimingFlag = try r.readFlag("vui_poc_proportional_to_timing_flag")
            if vui.pocProportionalToTimingFlag {
                vui.numTicksPocDiffOneMinus1 = try r.readUE("vui_num_ticks_poc_diff_one_minus1")
            }
            vui.hrdParametersPresentFlag = try r.readFlag("vui_hrd_parameters_present_flag")
            if vui.hrdParametersPresentFlag {
                vui.hrdParameters = try H265HRDParameters.parse(
                    &r, commonInfoPresent: true, maxNumSubLayersMinus1: maxSubLayersMinus1)
            }
        }
        vui.bitstreamRestrictionFlag = try r.readFlag("bitstream_restriction_flag")
        if vui.bitstreamRestrictionFlag {
            vui.tilesFixedStructureFlag = try r.readFlag("tiles_fixed_structure_flag")
            vui.motionVectorsOverPicBoundariesFlag = try r.readFlag("motion_vectors_over_pic_boundaries_flag")
            vui.restrictedRefPicListsFlag = try r.readFlag("restricted_ref_pic_lists_flag")
            // E.3.1: min_spatial_segmentation_idc shall be less than 4096.
            vui.minSpatialSegmentationIdc = try r.readUE("min_spatial_segmentation_idc", max: 4095)
            vui.maxBytesPerPicDenom = try r.readUE("max_bytes_per_pic_denom", max: 16)
            vui.maxBitsPerMinCuDenom = try r.readUE("max_bits_per_min_cu_denom", max: 16)
            vui.log2MaxMvLengthHorizontal = try r.readUE("log2_max_mv_length_horizontal", max: 15)
            vui.log2MaxMvLengthVertical = try r.readUE("log2_max_mv_length_vertical", max: 15)
        }
        return vui
    }

    /// Writes vui_parameters() back (the counterpart of `parse`, for encoders and tests).
    public func write(to w: inout BitWriter) {
        w.writeFlag(aspectRatioInfoPresentFlag)
        if aspectRatioInfoPresentFlag {
            w.writeBits(UInt32(truncatingIfNeeded: aspectRatioIdc), count: 8)
            if aspectRatioIdc == SampleAspectRatioTable.extendedSAR {
                w.writeBits(UInt32(truncatingIfNeeded: sarWidth), count: 16)
                w.writeBits(UInt32(truncatingIfNeeded: sarHeight), count: 16)
            }
        }
        w.writeFlag(overscanInfoPresentFlag)
        if overscanInfoPresentFlag { w.writeFlag(overscanAppropriateFlag) }
        w.writeFlag(videoSignalTypePresentFlag)
        if videoSignalTypePresentFlag {
            w.writeBits(UInt32(truncatingIfNeeded: videoFormat), count: 3)
            w.writeFlag(videoFullRangeFlag)
            w.writeFlag(colourDescriptionPresentFlag)
            if colourDescriptionPresentFlag {
                w.writeBits(UInt32(truncatingIfNeeded: colourPrimaries), count: 8)
                w.writeBits(UInt32(truncatingIfNeeded: transferCharacteristics), count: 8)
                w.writeBits(UInt32(truncatingIfNeeded: matrixCoeffs), count: 8)
            }
        }
        w.writeFlag(chromaLocInfoPresentFlag)
        if chromaLocInfoPresentFlag {
            w.writeUE(UInt32(truncatingIfNeeded: chromaSampleLocTypeTopField))
            w.writeUE(UInt32(truncatingIfNeeded: chromaSampleLocTypeBottomField))
        }
        w.writeFlag(neutralChromaIndicationFlag)
        w.writeFlag(fieldSeqFlag)
        w.writeFlag(frameFieldInfoPresentFlag)
        w.writeFlag(defaultDisplayWindowFlag)
        if defaultDisplayWindowFlag {
            for offset in [
                defaultDisplayWindowLeftOffset, defaultDisplayWindowRightOffset,
                defaultDisplayWindowTopOffset, defaultDisplayWindowBottomOffset
            ] {
                w.writeUE(UInt32(truncatingIfNeeded: offset))
            }
        }
        w.writeFlag(timingInfoPresentFlag)
        if timingInfoPresentFlag {
            w.writeBits(numUnitsInTick, count: 32)
            w.writeBits(timeScale, count: 32)
            w.writeFlag(pocProportionalToTimingFlag)
            if pocProportionalToTimingFlag { w.writeUE(numTicksPocDiffOneMinus1 ?? 0) }
            w.writeFlag(hrdParametersPresentFlag)
            if hrdParametersPresentFlag {
                (hrdParameters ?? H265HRDParameters()).write(to: &w, commonInfoPresent: true)
            }
        }
        w.writeFlag(bitstreamRestrictionFlag)
        if bitstreamRestrictionFlag {
            w.writeFlag(tilesFixedStructureFlag)
            w.writeFlag(motionVectorsOverPicBoundariesFlag)
            w.writeFlag(restrictedRefPicListsFlag)
            w.writeUE(UInt32(truncatingIfNeeded: minSpatialSegmentationIdc))
            w.writeUE(UInt32(truncatingIfNeeded: maxBytesPerPicDenom))
            w.writeUE(UInt32(truncatingIfNeeded: maxBitsPerMinCuDenom))
            w.writeUE(UInt32(truncatingIfNeeded: log2MaxMvLengthHorizontal))
            w.writeUE(UInt32(truncatingIfNeeded: log2MaxMvLengthVertical))
        }
    }
}
