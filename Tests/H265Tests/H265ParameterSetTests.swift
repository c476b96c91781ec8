import MediaCore
import Testing

@testable import H265

@Suite("H.265 NAL unit header and Table 7-1")
struct H265NALUnitHeaderTests {
    @Test func fieldsAndRoundTrip() throws {
        // 0x40 0x01: VPS_NUT (32), layer 0, nuh_temporal_id_plus1 1. 0x02 0x03: TRAIL_R, TemporalId 2.
        let vps = try H265NALUnitHeader(parsing: [0x40, 0x01])
        #expect(vps.nalUnitType == .videoParameterSet && vps.nuhLayerID == 0 && vps.temporalID == 0)
        let trail = try H265NALUnitHeader(parsing: [0x02, 0x03])
        #expect(trail.nalUnitType == .trailR && trail.temporalID == 2)
        let layered = H265NALUnitHeader(nalUnitType: .cra, nuhLayerID: 37, nuhTemporalIDPlus1: 1)
        #expect(try H265NALUnitHeader(parsing: layered.bytes) == layered)
        for raw in UInt8(0)...63 {
            #expect(H265NALUnitType(sixBits: raw).rawValue == raw)
        }
    }

    @Test func rejectsForbiddenValues() {
        #expect(h265Error { _ = try H265NALUnitHeader(parsing: [0xC0, 0x01]) }?.field == "forbidden_zero_bit")
        #expect(h265Error { _ = try H265NALUnitHeader(parsing: [0x02, 0x00]) }?.field == "nuh_temporal_id_plus1")
        // An IDR picture (and a VPS) in sub-layer 1; a TSA picture in sub-layer 0.
        #expect(h265Error { _ = try H265NALUnitHeader(parsing: [0x26, 0x02]) } != nil)
        #expect(h265Error { _ = try H265NALUnitHeader(parsing: [0x40, 0x02]) } != nil)
        #expect(h265Error { _ = try H265NALUnitHeader(parsing: [0x04, 0x01]) } != nil)
        #expect(h265Error { _ = try H265NALUnitHeader(parsing: [0x40]) } == .truncated(what: "nal_unit_header"))
    }

    @Test func table7_1Predicates() {
        let irap = H265NALUnitType.allCases.filter(\.isIRAP).map(\.rawValue)
        #expect(irap == Array(16...23))
        #expect(H265NALUnitType.allCases.filter(\.isIDR) == [.idrWithRADL, .idrNoLeadingPictures])
        #expect(
            H265NALUnitType.allCases.filter(\.isBLA) == [.blaWithLeadingPictures, .blaWithRADL, .blaNoLeadingPictures])
        #expect(H265NALUnitType.allCases.filter(\.isCRA) == [.cra])
        #expect(H265NALUnitType.allCases.filter(\.isRASL) == [.raslN, .raslR])
        #expect(H265NALUnitType.allCases.filter(\.isRADL) == [.radlN, .radlR])
        #expect(
            H265NALUnitType.allCases.filter(\.isSubLayerNonReference).map(\.rawValue) == [0, 2, 4, 6, 8, 10, 12, 14])
        #expect(H265NALUnitType.allCases.filter(\.isVCL).count == 32)
        #expect(
            H265NALUnitType.allCases.filter(\.startsAccessUnitAfterPicture).map(\.rawValue)
                == [32, 33, 34, 35, 39, 41, 42, 43, 44] + Array(48...55))
        #expect(H265NALUnitType.reservedVCLN10.description == "RSV_VCL_N10")
        #expect(H265NALUnitType.unspecified48.description == "UNSPEC48")
        #expect(H265NALUnitType.cra.description == "CRA_NUT")
    }

    @Test func sharedReaderReportsH265Errors() throws {
        let bytes: [UInt8] = [0x00]
        let error = bytes.withUnsafeBytes { raw in
            h265Error {
                var reader = H265BitReader(raw)
                _ = try reader.readUE("num_short_term_ref_pic_sets")
            }
        }
        #expect(error == .truncated(what: "num_short_term_ref_pic_sets"))
        #expect(error?.description.hasPrefix("H.265 data ends") == true)
    }
}

@Suite("H.265 VPS, SPS and PPS")
struct H265ParameterSetTests {
    @Test func sequenceParameterSetRoundTripWithEverything() throws {
        var sps = H265TestStreams.sequenceParameterSet()
        sps.maxSubLayersMinus1 = 2
        sps.temporalIDNestingFlag = false
        var subProfile = H265ProfileTierLevel.Profile()
        subProfile.profileIdc = 1
        sps.profileTierLevel.subLayers = [.init(profile: subProfile, levelIdc: 60), .init(profile: nil, levelIdc: 90)]
        sps.subLayerOrderingInfoPresentFlag = true
        sps.subLayerOrdering = [
            .init(maxDecPicBufferingMinus1: 2, maxNumReorderPics: 0, maxLatencyIncreasePlus1: 0),
            .init(maxDecPicBufferingMinus1: 3, maxNumReorderPics: 1, maxLatencyIncreasePlus1: 3),
            .init(maxDecPicBufferingMinus1: 4, maxNumReorderPics: 2, maxLatencyIncreasePlus1: 5)
        ]
        sps.chromaFormatIdc = 2
        sps.picWidthInLumaSamples = 352
        sps.picHeightInLumaSamples = 288
        sps.conformanceWindowFlag = true
        sps.confWinLeftOffset = 1
        sps.confWinRightOffset = 2
        sps.confWinBottomOffset = 3
        sps.bitDepthLumaMinus8 = 2
        sps.bitDepthChromaMinus8 = 2
        sps.scalingListEnabledFlag = true
        sps.spsScalingListDataPresentFlag = true
        var lists = H265ScalingList.defaults
        lists.coefficients[1][4] = (0..<64).map { UInt8(1 + $0 * 3) }
        lists.dcCoefficients[0][2] = 200
        for matrixID in [1, 2, 4, 5] {
            lists.coefficients[3][matrixID] = lists.coefficients[2][matrixID]
            lists.dcCoefficients[1][matrixID] = lists.dcCoefficients[0][matrixID]
        }
        sps.scalingList = lists
        sps.pcmEnabledFlag = true
        sps.pcmSampleBitDepthLumaMinus1 = 7
        sps.pcmSampleBitDepthChromaMinus1 = 7
        sps.log2MinPCMLumaCodingBlockSizeMinus3 = 0
        sps.log2DiffMaxMinPCMLumaCodingBlockSize = 1
        // A third set predicted from the second (S0 {-1}) with deltaRps -1: S0 {-1, -2}.
        var prediction = H265ShortTermReferencePictureSet.InterSetPrediction()
        prediction.deltaRpsSign = true
        prediction.usedByCurrPicFlags = [true, true]
        prediction.useDeltaFlags = [true, true]
        let third = H265ShortTermReferencePictureSet.derived(
            from: sps.shortTermReferencePictureSets[1], prediction: prediction)
        #expect(third.deltaPocS0 == [-1, -2])
        sps.shortTermReferencePictureSets.append(third)
        sps.longTermRefPicsPresentFlag = true
        sps.longTermReferencePictures = [
            .init(pocLsb: 17, usedByCurrentPicture: true), .init(pocLsb: 200, usedByCurrentPicture: false)
        ]
        sps.vuiParametersPresentFlag = true
        var vui = H265VUIParameters()
        vui.aspectRatioInfoPresentFlag = true
        vui.aspectRatioIdc = 255
        vui.sarWidth = 4
        vui.sarHeight = 3
        vui.videoSignalTypePresentFlag = true
        vui.videoFullRangeFlag = true
        vui.colourDescriptionPresentFlag = true
        vui.colourPrimaries = 9
        vui.transferCharacteristics = 16
        vui.matrixCoeffs = 9
        vui.chromaLocInfoPresentFlag = true
        vui.chromaSampleLocTypeTopField = 2
        vui.chromaSampleLocTypeBottomField = 2
        vui.fieldSeqFlag = true
        vui.frameFieldInfoPresentFlag = true
        vui.defaultDisplayWindowFlag = true
        vui.defaultDisplayWindowTopOffset = 4
        vui.timingInfoPresentFlag = true
        vui.numUnitsInTick = 1001
        vui.timeScale = 60000
        vui.pocProportionalToTimingFlag = true
        vui.numTicksPocDiffOneMinus1 = 0
        vui.hrdParametersPresentFlag = true
        var hrd = H265HRDParameters()
        hrd.nalHrdParametersPresentFlag = true
        hrd.vclHrdParametersPresentFlag = true
        hrd.subPicHrdParamsPresentFlag = true
        hrd.tickDivisorMinus2 = 7
        hrd.bitRateScale = 2
        hrd.cpbSizeScale = 3
        hrd.cpbSizeDuScale = 1
        for index in 0...2 {
            var subLayer = H265HRDParameters.SubLayer()
            subLayer.fixedPicRateGeneralFlag = index == 0
            subLayer.fixedPicRateWithinCvsFlag = index < 2
            subLayer.elementalDurationInTcMinus1 = index < 2 ? index : nil
            subLayer.lowDelayHrdFlag = false
            subLayer.cpbCntMinus1 = 1
            let cpbs = [
                H265HRDParameters.CPBSpecification(
                    bitRateValueMinus1: 1000, cpbSizeValueMinus1: 5000, cpbSizeDuValueMinus1: 10,
                    bitRateDuValueMinus1: 20, cbrFlag: false),
                H265HRDParameters.CPBSpecification(
                    bitRateValueMinus1: 2000, cpbSizeValueMinus1: 4000, cpbSizeDuValueMinus1: 11,
                    bitRateDuValueMinus1: 21, cbrFlag: true)
            ]
            subLayer.nalCPBSpecifications = cpbs
            subLayer.vclCPBSpecifications = cpbs
            hrd.subLayers.append(subLayer)
        }
        vui.hrdParameters = hrd
        vui.bitstreamRestrictionFlag = true
        vui.minSpatialSegmentationIdc = 256
        vui.log2MaxMvLengthVertical = 9
        sps.vui = vui
        sps.extensionPresentFlag = true
        sps.rangeExtensionFlag = true
        sps.rangeExtension.implicitRDPCMEnabledFlag = true
        sps.rangeExtension.cabacBypassAlignmentEnabledFlag = true

        let parsed = try H265SequenceParameterSet.parse(nalUnit: sps.nalUnit())
        #expect(parsed == sps)
        #expect(parsed.conformanceWindow == (2, 0, 352 - 6, 288 - 3))
        #expect(parsed.bitDepthLuma == 10 && parsed.subWidthC == 2 && parsed.subHeightC == 1)
        #expect(parsed.maxPicOrderCntLsb == 256)
        #expect(parsed.picWidthInCtbsY == 22 && parsed.picHeightInCtbsY == 18)
        #expect(parsed.subLayerOrdering[2].maxLatencyPictures == 6)
        #expect(parsed.vui?.frameRate?.numerator == 60000 && parsed.vui?.frameRate?.denominator == 2002)
        #expect(parsed.extensionPresentFlag && !parsed.hasUnparsedExtensions)
    }

    @Test func subLayerOrderingIsInferredForLowerSubLayers() throws {
        var sps = H265TestStreams.sequenceParameterSet()
        sps.maxSubLayersMinus1 = 2
        sps.subLayerOrderingInfoPresentFlag = false
        let parsed = try H265SequenceParameterSet.parse(nalUnit: sps.nalUnit())
        #expect(parsed.subLayerOrdering.count == 3)
        #expect(parsed.subLayerOrdering.allSatisfy { $0 == sps.subLayerOrdering[0] })
    }

    @Test func presentationReorderWindowFollowsTheSubLayerOrdering() throws {
        func window(reorder: Int, buffering: Int, latencyPlus1: UInt32) throws -> Int {
            var sps = H265TestStreams.sequenceParameterSet()
            sps.maxSubLayersMinus1 = 0
            sps.subLayerOrdering = [
                H265SubLayerOrdering(
                    maxDecPicBufferingMinus1: buffering, maxNumReorderPics: reorder,
                    maxLatencyIncreasePlus1: latencyPlus1)
            ]
            return try H265SequenceParameterSet.parse(nalUnit: sps.nalUnit()).presentationReorderWindow
        }
        // 7.4.3.2.1: no reordering at all, whatever the DPB holds.
        #expect(try window(reorder: 0, buffering: 4, latencyPlus1: 0) == 0)
        // SpsMaxLatencyPictures (7-9) = 2 + 5 - 1 = 6 bounds the wait, the DPB size when smaller.
        #expect(try window(reorder: 2, buffering: 4, latencyPlus1: 5) == 6)
        #expect(try window(reorder: 2, buffering: 7, latencyPlus1: 2) == 8)
        // No latency limit: MaxDpbSize's ceiling (A.4.2).
        #expect(try window(reorder: 1, buffering: 3, latencyPlus1: 0) == 16)
    }

    @Test func storeTellsRepeatedParameterSetsFromReplacedOnes() throws {
        var store = H265ParameterSetStore()
        let vps = H265TestStreams.videoParameterSet().nalUnit()
        var sps = H265TestStreams.sequenceParameterSet()
        let pps = H265TestStreams.pictureParameterSet().nalUnit()
        func stored(_ bytes: [UInt8], _ kind: Int) throws -> H265ParameterSetStore.Change {
            try bytes.withUnsafeBytes { raw throws(H265Error) in
                switch kind {
                case 0: try store.storeVideoParameterSet(raw).change
                case 1: try store.storeSequenceParameterSet(raw).change
                default: try store.storePictureParameterSet(raw).change
                }
            }
        }
        #expect(try stored(vps, 0) == .added)
        #expect(try stored(sps.nalUnit(), 1) == .added)
        #expect(try stored(pps, 2) == .added)
        // The same bytes again (parameter sets before every IRAP picture): unchanged.
        #expect(try stored(vps, 0) == .unchanged)
        #expect(try stored(sps.nalUnit(), 1) == .unchanged)
        #expect(try stored(pps, 2) == .unchanged)
        #expect(store.activationError(ppsID: 0) == nil)
        // Other bytes with the same id replace the stored set, and its PPS is checked again.
        sps.picWidthInLumaSamples += 8
        #expect(try stored(sps.nalUnit(), 1) == .replaced)
        #expect(
            store.sequenceParameterSet(id: sps.seqParameterSetID)?.picWidthInLumaSamples == sps.picWidthInLumaSamples)
        // Damaged bytes are still parsed (and refused), not taken for a stored set.
        var damaged = pps
        damaged.removeLast()
        #expect(throws: H265Error.self) { try stored(damaged, 2) }
    }

    @Test func sequenceParameterSetRejectsOutOfRangeValues() {
        func rejection(_ change: (inout H265SequenceParameterSet) -> Void) -> String? {
            var sps = H265TestStreams.sequenceParameterSet()
            change(&sps)
            return h265Error { _ = try H265SequenceParameterSet.parse(nalUnit: sps.nalUnit()) }?.field
        }
        #expect(rejection { _ in } == nil)
        #expect(rejection { $0.maxSubLayersMinus1 = 7 } == "sps_max_sub_layers_minus1")
        #expect(rejection { $0.temporalIDNestingFlag = false } == "sps_temporal_id_nesting_flag")
        #expect(rejection { $0.seqParameterSetID = 16 } == "sps_seq_parameter_set_id")
        #expect(rejection { $0.chromaFormatIdc = 4 } == "chroma_format_idc")
        #expect(rejection { $0.picWidthInLumaSamples = 0 } == "pic_width_in_luma_samples")
        #expect(rejection { $0.picWidthInLumaSamples = 68 } == "pic_width_in_luma_samples") // not a multiple of 8
        #expect(rejection { $0.picHeightInLumaSamples = 16896 } == "pic_height_in_luma_samples")
        #expect(
            rejection {
                $0.conformanceWindowFlag = true
                $0.confWinLeftOffset = 16
                $0.confWinRightOffset = 16
            } == "conf_win_right_offset")
        #expect(rejection { $0.bitDepthLumaMinus8 = 9 } == "bit_depth_luma_minus8")
        #expect(rejection { $0.log2MaxPicOrderCntLsbMinus4 = 13 } == "log2_max_pic_order_cnt_lsb_minus4")
        #expect(
            rejection { $0.subLayerOrdering[0].maxDecPicBufferingMinus1 = 16 } == "sps_max_dec_pic_buffering_minus1")
        #expect(rejection { $0.subLayerOrdering[0].maxNumReorderPics = 5 } == "sps_max_num_reorder_pics")
        #expect(rejection { $0.log2DiffMaxMinLumaCodingBlockSize = 4 } == "log2_diff_max_min_luma_coding_block_size")
        #expect(rejection { $0.log2DiffMaxMinLumaCodingBlockSize = 0 } == "CtbLog2SizeY")
        #expect(rejection { $0.log2MinLumaTransformBlockSizeMinus2 = 1 } == "log2_min_luma_transform_block_size_minus2")
        #expect(
            rejection { $0.log2DiffMaxMinLumaTransformBlockSize = 3 } == "log2_diff_max_min_luma_transform_block_size")
        #expect(rejection { $0.maxTransformHierarchyDepthIntra = 3 } == "max_transform_hierarchy_depth_intra")
        #expect(
            rejection {
                $0.pcmEnabledFlag = true
                $0.pcmSampleBitDepthLumaMinus1 = 8
            } == "pcm_sample_bit_depth_luma_minus1")
        #expect(
            rejection {
                $0.shortTermReferencePictureSets = [
                    H265ShortTermReferencePictureSet(
                        negative: [(-1, true), (-2, true), (-3, true)], positive: [(1, true), (2, true)])
                ]
            } == "num_positive_pics")
        #expect(
            rejection {
                $0.shortTermReferencePictureSets = [
                    H265ShortTermReferencePictureSet(negative: [(-40000, true)], positive: [])
                ]
            } == "delta_poc_s0_minus1")
        #expect(
            rejection {
                $0.longTermRefPicsPresentFlag = true
                $0.longTermReferencePictures = Array(repeating: .init(pocLsb: 1, usedByCurrentPicture: true), count: 33)
            } == "num_long_term_ref_pics_sps")
        #expect(
            rejection {
                $0.vuiParametersPresentFlag = true
                var vui = H265VUIParameters()
                vui.fieldSeqFlag = true
                $0.vui = vui
            } == "frame_field_info_present_flag (with field_seq_flag 1)")
        #expect(
            rejection {
                $0.vuiParametersPresentFlag = true
                var vui = H265VUIParameters()
                vui.chromaLocInfoPresentFlag = true
                vui.chromaSampleLocTypeTopField = 6
                $0.vui = vui
            } == "chroma_sample_loc_type_top_field")
        #expect(
            rejection {
                $0.vuiParametersPresentFlag = true
                var vui = H265VUIParameters()
                vui.bitstreamRestrictionFlag = true
                vui.log2MaxMvLengthHorizontal = 16
                $0.vui = vui
            } == "log2_max_mv_length_horizontal")
        #expect(
            rejection {
                var profile = H265ProfileTierLevel.Profile()
                profile.profileSpace = 1
                $0.profileTierLevel.general = profile
            } == "general_profile_space")
    }

    @Test func scalingListPredictionAndZeroCoefficient() throws {
        // sizeId 0 matrixId 0 coded explicitly; every other list predicted: matrixId 1 from 0
        // (delta 1), the rest from the defaults (delta 0).
        let bytes = H265TestStreams.bits { w in
            for sizeID in 0..<4 {
                for matrixID in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                    if sizeID == 0 && matrixID == 0 {
                        w.writeFlag(true)
                        for _ in 0..<16 { w.writeSE(1) } // 9, 10, ..., 24
                    } else if sizeID == 0 && matrixID == 1 {
                        w.writeFlag(false)
                        w.writeUE(1)
                    } else {
                        w.writeFlag(false)
                        w.writeUE(0)
                    }
                }
            }
            w.writeRBSPTrailingBits()
        }
        let lists = try bytes.withUnsafeBytes { raw throws(H265Error) in
            var reader = H265BitReader(raw)
            return try H265ScalingList.parse(&reader)
        }
        #expect(lists.coefficients[0][0] == (9...24).map { UInt8($0) })
        #expect(lists.coefficients[0][1] == lists.coefficients[0][0])
        #expect(lists.coefficients[2][3] == H265ScalingList.defaultInter8x8)
        #expect(lists.coefficients[3][1] == lists.coefficients[2][1])
        #expect(lists.dcCoefficients[1][0] == 16)

        // A coefficient of 0 (8 - 8) is forbidden (7.4.5).
        let zero = H265TestStreams.bits { w in
            w.writeFlag(true)
            w.writeSE(-8)
        }
        let error = zero.withUnsafeBytes { raw in
            h265Error {
                var reader = H265BitReader(raw)
                _ = try H265ScalingList.parse(&reader)
            }
        }
        #expect(error?.field == "ScalingList[0][0]")
    }

    @Test func interRPSPrediction() {
        // 7.4.8, equations 7-61 and 7-62: from S0 {-1, -3}, S1 {2} and deltaRps -1, the set is
        // S0 {-1 (the reference picture itself), -2, -4} and S1 {1}.
        let reference = H265ShortTermReferencePictureSet(negative: [(-1, true), (-3, true)], positive: [(2, true)])
        var prediction = H265ShortTermReferencePictureSet.InterSetPrediction()
        prediction.deltaRpsSign = true
        prediction.absDeltaRpsMinus1 = 0
        prediction.usedByCurrPicFlags = [true, false, true, true]
        prediction.useDeltaFlags = [true, true, true, true]
        let set = H265ShortTermReferencePictureSet.derived(from: reference, prediction: prediction)
        #expect(set.deltaPocS0 == [-1, -2, -4])
        #expect(set.usedByCurrPicS0 == [true, true, false])
        #expect(set.deltaPocS1 == [1])
        // use_delta_flag 0 drops an entry: without the second picture of S0 (-3 - 1).
        prediction.usedByCurrPicFlags = [true, false, true, true]
        prediction.useDeltaFlags = [true, false, true, true]
        let thinned = H265ShortTermReferencePictureSet.derived(from: reference, prediction: prediction)
        #expect(thinned.deltaPocS0 == [-1, -2])
    }

    @Test func videoParameterSetRoundTripAndHRDInheritance() throws {
        var vps = H265TestStreams.videoParameterSet()
        vps.maxLayerID = 3
        vps.numLayerSetsMinus1 = 2
        vps.layerIDIncludedFlags = [0b1011, 0b0001]
        vps.timingInfoPresentFlag = true
        vps.numUnitsInTick = 1
        vps.timeScale = 25
        var hrd = H265HRDParameters()
        hrd.vclHrdParametersPresentFlag = true
        var subLayer = H265HRDParameters.SubLayer()
        subLayer.vclCPBSpecifications = [.init(bitRateValueMinus1: 10, cpbSizeValueMinus1: 20, cbrFlag: false)]
        hrd.subLayers = [subLayer]
        vps.hrdParameters = [
            .init(layerSetIndex: 0, commonParametersPresentFlag: true, parameters: hrd),
            // cprms_present_flag 0: the common part (VCL HRD present) comes from the first.
            .init(layerSetIndex: 2, commonParametersPresentFlag: false, parameters: hrd)
        ]
        let parsed = try H265VideoParameterSet.parse(nalUnit: vps.nalUnit())
        #expect(parsed == vps)

        func rejection(_ change: (inout H265VideoParameterSet) -> Void) -> String? {
            var bad = vps
            change(&bad)
            return h265Error { _ = try H265VideoParameterSet.parse(nalUnit: bad.nalUnit()) }?.field
        }
        #expect(rejection { $0.maxSubLayersMinus1 = 7 } == "vps_max_sub_layers_minus1")
        #expect(rejection { $0.maxLayersMinus1 = 63 } == "vps_max_layers_minus1")
        #expect(rejection { $0.temporalIDNestingFlag = false } == "vps_temporal_id_nesting_flag")
        #expect(rejection { $0.hrdParameters[1].layerSetIndex = 3 } == "hrd_layer_set_idx")
        #expect(rejection { $0.subLayerOrdering[0].maxNumReorderPics = 9 } == "vps_max_num_reorder_pics")
        #expect(
            rejection {
                var cpbs = $0.hrdParameters[0].parameters.subLayers[0]
                cpbs.cpbCntMinus1 = 1
                cpbs.vclCPBSpecifications = [
                    .init(bitRateValueMinus1: 10, cpbSizeValueMinus1: 20, cbrFlag: false),
                    .init(bitRateValueMinus1: 9, cpbSizeValueMinus1: 20, cbrFlag: false)
                ]
                $0.hrdParameters[0].parameters.subLayers = [cpbs]
                $0.hrdParameters.removeLast()
            } == "bit_rate_value_minus1[1]")
    }

    @Test func pictureParameterSetRoundTripAndRanges() throws {
        var pps = H265TestStreams.pictureParameterSet()
        pps.picParameterSetID = 63
        pps.seqParameterSetID = 15
        pps.initQpMinus26 = -30
        pps.cuQpDeltaEnabledFlag = true
        pps.diffCuQpDeltaDepth = 1
        pps.cbQpOffset = -12
        pps.crQpOffset = 12
        pps.tilesEnabledFlag = true
        pps.numTileColumnsMinus1 = 2
        pps.numTileRowsMinus1 = 1
        pps.uniformSpacingFlag = false
        pps.columnWidthsMinus1 = [3, 5]
        pps.rowHeightsMinus1 = [7]
        pps.loopFilterAcrossTilesEnabledFlag = false
        pps.deblockingFilterControlPresentFlag = true
        pps.betaOffsetDiv2 = -6
        pps.tcOffsetDiv2 = 6
        pps.transformSkipEnabledFlag = true
        pps.rangeExtensionFlag = true
        pps.extensionPresentFlag = true
        pps.rangeExtension.log2MaxTransformSkipBlockSizeMinus2 = 2
        pps.rangeExtension.chromaQpOffsetListEnabledFlag = true
        pps.rangeExtension.cbQpOffsetList = [1, -2]
        pps.rangeExtension.crQpOffsetList = [3, -4]
        pps.rangeExtension.log2SaoOffsetScaleLuma = 2
        let parsed = try H265PictureParameterSet.parse(nalUnit: pps.nalUnit())
        #expect(parsed == pps)

        func rejection(_ change: (inout H265PictureParameterSet) -> Void) -> String? {
            var bad = H265TestStreams.pictureParameterSet()
            change(&bad)
            return h265Error { _ = try H265PictureParameterSet.parse(nalUnit: bad.nalUnit()) }?.field
        }
        #expect(rejection { $0.picParameterSetID = 64 } == "pps_pic_parameter_set_id")
        #expect(rejection { $0.seqParameterSetID = 16 } == "pps_seq_parameter_set_id")
        #expect(rejection { $0.numRefIdxL0DefaultActiveMinus1 = 15 } == "num_ref_idx_l0_default_active_minus1")
        #expect(rejection { $0.initQpMinus26 = 26 } == "init_qp_minus26")
        #expect(rejection { $0.cbQpOffset = 13 } == "pps_cb_qp_offset")
        #expect(
            rejection {
                $0.tilesEnabledFlag = true
            } == "num_tile_rows_minus1 (with num_tile_columns_minus1 0)")
        #expect(
            rejection {
                $0.deblockingFilterControlPresentFlag = true
                $0.betaOffsetDiv2 = 7
            } == "pps_beta_offset_div2")
        #expect(rejection { $0.log2ParallelMergeLevelMinus2 = 5 } == "log2_parallel_merge_level_minus2")
        #expect(
            rejection {
                $0.rangeExtensionFlag = true
                $0.rangeExtension.chromaQpOffsetListEnabledFlag = true
                $0.rangeExtension.cbQpOffsetList = Array(repeating: 0, count: 7)
                $0.rangeExtension.crQpOffsetList = Array(repeating: 0, count: 7)
            } == "chroma_qp_offset_list_len_minus1")
    }

    @Test func pictureParameterSetBoundsAgainstItsSPS() throws {
        let sps = H265TestStreams.sequenceParameterSet() // 64x64, 16x16 CTBs: 4x4 CTBs, 8 bits
        func rejection(_ change: (inout H265PictureParameterSet) -> Void) -> String? {
            var pps = H265TestStreams.pictureParameterSet()
            change(&pps)
            return h265Error { try pps.validate(against: sps) }?.field
        }
        #expect(rejection { _ in } == nil)
        #expect(rejection { $0.initQpMinus26 = -27 } == "init_qp_minus26")
        #expect(
            rejection {
                $0.cuQpDeltaEnabledFlag = true
                $0.diffCuQpDeltaDepth = 2
            } == "diff_cu_qp_delta_depth")
        #expect(
            rejection {
                $0.tilesEnabledFlag = true
                $0.numTileColumnsMinus1 = 4
            } == "num_tile_columns_minus1")
        #expect(
            rejection {
                $0.tilesEnabledFlag = true
                $0.numTileColumnsMinus1 = 1
                $0.uniformSpacingFlag = false
                $0.columnWidthsMinus1 = [3]
                $0.rowHeightsMinus1 = []
            } == "column_width_minus1 (sum)")
        #expect(rejection { $0.log2ParallelMergeLevelMinus2 = 3 } == "log2_parallel_merge_level_minus2")
        #expect(
            rejection {
                $0.rangeExtensionFlag = true
                $0.rangeExtension.crossComponentPredictionEnabledFlag = true
            } == "cross_component_prediction_enabled_flag")
        #expect(
            rejection {
                $0.rangeExtensionFlag = true
                $0.rangeExtension.log2SaoOffsetScaleLuma = 1
            } == "log2_sao_offset_scale_luma")
    }

    @Test func truncatedParameterSetsThrowTruncated() throws {
        let sps = H265TestStreams.sequenceParameterSet().nalUnit()
        for length in 0..<sps.count {
            let error = h265Error { _ = try H265SequenceParameterSet.parse(nalUnit: Array(sps.prefix(length))) }
            guard case .truncated? = error else {
                Issue.record("an SPS cut to \(length) bytes gave \(String(describing: error))")
                continue
            }
        }
        let layered =
            [UInt8](H265NALUnitHeader(nalUnitType: .sequenceParameterSet, nuhLayerID: 1).bytes) + sps.dropFirst(2)
        guard case .unsupported? = h265Error({ _ = try H265SequenceParameterSet.parse(nalUnit: layered) }) else {
            Issue.record("a multi-layer SPS was not refused as unsupported")
            return
        }
        #expect(h265Error { _ = try H265PictureParameterSet.parse(nalUnit: sps) }?.field == "nal_unit_type")
    }
}
