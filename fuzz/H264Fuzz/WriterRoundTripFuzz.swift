import H264
import MediaCore

// The writer mode: the input is a source of choices (FuzzChoices) for random but valid SPS, PPS
// and slice headers, each element within the range its semantics allow (7.4.2.1.1, E.2.1, E.2.2,
// 7.4.2.2, 7.4.3) and present only where the syntax has it. Each is written with the encoder's
// writers and parsed back with the decoder's parsers: the result must be the same value. Then the
// coding planner plans a random GOP, its pictures are written as a stream and decoded by
// H264PictureDecoder: what the decoder derives (POC, frame_num, DPB, reference lists, output
// order) must be what the planner said.

func exerciseWriters(_ data: UnsafeRawBufferPointer) {
    var choices = FuzzChoices(data)
    // The first choice picks one of the two halves: each input does one, so the fast syntax
    // round trips are not slowed by a planned GOP every time.
    if choices.flag() {
        PlannerChecks.run(&choices)
        return
    }
    var sps = RandomSyntax.sequenceParameterSet(&choices)
    if SequenceParameterSet.hasChromaInfo(profileIdc: sps.profileIdc), choices.value(in: 0...15) == 15 {
        // The writer does not write scaling matrices: it must refuse, not write something else.
        sps.seqScalingMatrixPresentFlag = true
        require((try? sps.writeRBSP()) == nil, "the SPS writer wrote seq_scaling_matrix_present_flag")
        sps.seqScalingMatrixPresentFlag = false
    }
    let spsNAL = WriterChecks.roundTrip(sps)
    let pps = RandomSyntax.pictureParameterSet(&choices, sps: sps)
    if choices.value(in: 0...15) == 15 {
        var grouped = pps
        grouped.numSliceGroupsMinus1 = choices.value(in: 1...7)
        require((try? grouped.writeRBSP()) == nil, "the PPS writer wrote slice groups")
        require(
            (try? SliceHeader().write(sequenceParameterSet: sps, pictureParameterSet: grouped)) == nil,
            "the slice header writer wrote a header for slice groups")
        var scaled = pps
        scaled.picScalingMatrixPresentFlag = true
        require((try? scaled.writeRBSP()) == nil, "the PPS writer wrote pic_scaling_matrix_present_flag")
    }
    let ppsNAL = WriterChecks.roundTrip(pps, sps: sps)
    // A stream of these: the parameter set store and the access-unit assembler read them too.
    var store = ParameterSetStore()
    spsNAL.withUnsafeBytes { _ = try? store.storeSequenceParameterSet($0) }
    ppsNAL.withUnsafeBytes { _ = try? store.storePictureParameterSet($0) }
    require(store.sequenceParameterSet(id: sps.seqParameterSetID) == sps, "the store parsed another SPS")
    require(store.pictureParameterSet(id: pps.picParameterSetID) == pps, "the store parsed another PPS")
    for _ in 0..<choices.smallValue(in: 1...6) {
        let header = RandomSyntax.sliceHeader(&choices, sps: sps, pps: pps)
        _ = WriterChecks.roundTrip(header, sps: sps, pps: pps, sliceData: UInt8(truncatingIfNeeded: choices.bits(8)))
    }
}

// MARK: - Random syntax within the spec's ranges

enum RandomSyntax {
    /// The profile_idc values of Annex A, G and H.
    static let profiles = [66, 77, 88, 100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]
    /// level_idc values of Table A-1 (9 is level 1b in the High profiles).
    static let levels = [9, 10, 11, 12, 13, 20, 21, 22, 30, 31, 32, 40, 41, 42, 50, 51, 52, 60, 61, 62]

    /// seq_parameter_set_data() (7.3.2.1.1) with the ranges of 7.4.2.1.1.
    static func sequenceParameterSet(_ c: inout FuzzChoices) -> SequenceParameterSet {
        var sps = SequenceParameterSet()
        sps.profileIdc = c.element(of: profiles)
        sps.constraintSet0Flag = c.flag()
        sps.constraintSet1Flag = c.flag()
        sps.constraintSet2Flag = c.flag()
        sps.constraintSet3Flag = c.flag()
        sps.constraintSet4Flag = c.flag()
        sps.constraintSet5Flag = c.flag()
        sps.levelIdc = c.element(of: levels)
        sps.seqParameterSetID = c.value(in: 0...31)
        if SequenceParameterSet.hasChromaInfo(profileIdc: sps.profileIdc) {
            sps.chromaFormatIdc = c.value(in: 0...3)
            if sps.chromaFormatIdc == 3 { sps.separateColourPlaneFlag = c.flag() }
            sps.bitDepthLumaMinus8 = c.value(in: 0...6)
            sps.bitDepthChromaMinus8 = c.value(in: 0...6)
            sps.qpprimeYZeroTransformBypassFlag = c.flag()
        }
        sps.log2MaxFrameNumMinus4 = c.value(in: 0...12)
        sps.picOrderCntType = c.value(in: 0...2)
        if sps.picOrderCntType == 0 {
            sps.log2MaxPicOrderCntLsbMinus4 = c.value(in: 0...12)
        } else if sps.picOrderCntType == 1 {
            sps.deltaPicOrderAlwaysZeroFlag = c.flag()
            sps.offsetForNonRefPic = c.signed32()
            sps.offsetForTopToBottomField = c.signed32()
            sps.numRefFramesInPicOrderCntCycle = c.smallValue(in: 0...255)
            sps.offsetForRefFrame = (0..<sps.numRefFramesInPicOrderCntCycle).map { _ in c.signed32() }
        }
        sps.maxNumRefFrames = c.value(in: 0...16)
        sps.gapsInFrameNumValueAllowedFlag = c.flag()
        sps.picWidthInMbsMinus1 = c.smallValue(in: 0...SequenceParameterSet.maxDimensionInMbsMinus1)
        sps.picHeightInMapUnitsMinus1 = c.smallValue(in: 0...SequenceParameterSet.maxDimensionInMbsMinus1)
        sps.frameMbsOnlyFlag = c.flag()
        if !sps.frameMbsOnlyFlag { sps.mbAdaptiveFrameFieldFlag = c.flag() }
        // 7.4.2.1.1: direct_8x8_inference_flag is 1 when frame_mbs_only_flag is 0.
        sps.direct8x8InferenceFlag = sps.frameMbsOnlyFlag ? c.flag() : true
        sps.frameCroppingFlag = c.flag()
        if sps.frameCroppingFlag {
            // 7.4.2.1.1: at least one column and one row remain.
            let columns = sps.codedWidth / sps.cropUnitX
            let rows = sps.codedHeight / sps.cropUnitY
            sps.frameCropLeftOffset = c.smallValue(in: 0...(columns - 1))
            sps.frameCropRightOffset = c.smallValue(in: 0...(columns - 1 - sps.frameCropLeftOffset))
            sps.frameCropTopOffset = c.smallValue(in: 0...(rows - 1))
            sps.frameCropBottomOffset = c.smallValue(in: 0...(rows - 1 - sps.frameCropTopOffset))
        }
        sps.vuiParametersPresentFlag = c.flag()
        if sps.vuiParametersPresentFlag { sps.vui = videoUsabilityInformation(&c, maxNumRefFrames: sps.maxNumRefFrames) }
        return sps
    }

    /// vui_parameters() (E.1.1) with the ranges of E.2.1; absent elements keep their inferred values.
    static func videoUsabilityInformation(_ c: inout FuzzChoices, maxNumRefFrames: Int) -> VUIParameters {
        var vui = VUIParameters()
        vui.aspectRatioInfoPresentFlag = c.flag()
        if vui.aspectRatioInfoPresentFlag {
            vui.aspectRatioIdc = c.flag() ? 255 : c.value(in: 0...16)  // Table E-1; 17...254 reserved
            if vui.aspectRatioIdc == 255 {
                vui.sarWidth = c.value(in: 0...65535)
                vui.sarHeight = c.value(in: 0...65535)
            }
        }
        vui.overscanInfoPresentFlag = c.flag()
        if vui.overscanInfoPresentFlag { vui.overscanAppropriateFlag = c.flag() }
        vui.videoSignalTypePresentFlag = c.flag()
        if vui.videoSignalTypePresentFlag {
            vui.videoFormat = c.value(in: 0...5)  // Table E-2; 6 and 7 reserved
            vui.videoFullRangeFlag = c.flag()
            vui.colourDescriptionPresentFlag = c.flag()
            if vui.colourDescriptionPresentFlag {
                vui.colourPrimaries = c.value(in: 0...255)
                vui.transferCharacteristics = c.value(in: 0...255)
                vui.matrixCoefficients = c.value(in: 0...255)
            }
        }
        vui.chromaLocInfoPresentFlag = c.flag()
        if vui.chromaLocInfoPresentFlag {
            vui.chromaSampleLocTypeTopField = c.value(in: 0...5)
            vui.chromaSampleLocTypeBottomField = c.value(in: 0...5)
        }
        vui.timingInfoPresentFlag = c.flag()
        if vui.timingInfoPresentFlag {
            // E.2.1: both greater than 0.
            vui.numUnitsInTick = UInt32(c.value(in: 1...Int(UInt32.max)))
            vui.timeScale = UInt32(c.value(in: 1...Int(UInt32.max)))
            vui.fixedFrameRateFlag = c.flag()
        }
        vui.nalHrdParametersPresentFlag = c.flag()
        if vui.nalHrdParametersPresentFlag { vui.nalHrdParameters = hypotheticalReferenceDecoder(&c) }
        vui.vclHrdParametersPresentFlag = c.flag()
        if vui.vclHrdParametersPresentFlag { vui.vclHrdParameters = hypotheticalReferenceDecoder(&c) }
        if vui.nalHrdParametersPresentFlag || vui.vclHrdParametersPresentFlag { vui.lowDelayHrdFlag = c.flag() }
        vui.picStructPresentFlag = c.flag()
        vui.bitstreamRestrictionFlag = c.flag()
        if vui.bitstreamRestrictionFlag {
            vui.motionVectorsOverPicBoundariesFlag = c.flag()
            vui.maxBytesPerPicDenom = c.value(in: 0...16)
            vui.maxBitsPerMbDenom = c.value(in: 0...16)
            vui.log2MaxMvLengthHorizontal = c.value(in: 0...15)
            vui.log2MaxMvLengthVertical = c.value(in: 0...15)
            // E.2.1: max_num_ref_frames <= max_dec_frame_buffering <= MaxDpbFrames (<= 16), and
            // max_num_reorder_frames <= max_dec_frame_buffering.
            let buffering = c.value(in: maxNumRefFrames...16)
            vui.maxDecFrameBuffering = buffering
            vui.maxNumReorderFrames = c.value(in: 0...buffering)
        }
        return vui
    }

    /// hrd_parameters() (E.1.2) with the ranges of E.2.2: bit rates increase and CPB sizes do
    /// not grow with SchedSelIdx.
    static func hypotheticalReferenceDecoder(_ c: inout FuzzChoices) -> HRDParameters {
        var hrd = HRDParameters()
        hrd.cpbCntMinus1 = c.smallValue(in: 0...31)
        hrd.bitRateScale = c.value(in: 0...15)
        hrd.cpbSizeScale = c.value(in: 0...15)
        var bitRate = UInt32(c.value(in: 0...(1 << 31)))
        var cpbSize = UInt32(c.value(in: (1 << 31)...(Int(UInt32.max) - 1)))
        for index in 0...hrd.cpbCntMinus1 {
            if index > 0 {
                bitRate += UInt32(c.value(in: 1...(1 << 20)))
                cpbSize -= UInt32(c.value(in: 0...(1 << 20)))
            }
            hrd.cpbSpecifications.append(
                HRDParameters.CPBSpecification(bitRateValueMinus1: bitRate, cpbSizeValueMinus1: cpbSize, cbrFlag: c.flag()))
        }
        hrd.initialCpbRemovalDelayLengthMinus1 = c.value(in: 0...31)
        hrd.cpbRemovalDelayLengthMinus1 = c.value(in: 0...31)
        hrd.dpbOutputDelayLengthMinus1 = c.value(in: 0...31)
        hrd.timeOffsetLength = c.value(in: 0...31)
        return hrd
    }

    /// pic_parameter_set_rbsp() (7.3.2.2) with the ranges of 7.4.2.2, without slice groups or
    /// scaling matrices (what the writer writes).
    static func pictureParameterSet(_ c: inout FuzzChoices, sps: SequenceParameterSet) -> PictureParameterSet {
        var pps = PictureParameterSet()
        pps.picParameterSetID = c.value(in: 0...255)
        pps.seqParameterSetID = sps.seqParameterSetID
        pps.entropyCodingModeFlag = c.flag()
        pps.bottomFieldPicOrderInFramePresentFlag = c.flag()
        pps.numRefIdxL0DefaultActiveMinus1 = c.smallValue(in: 0...31)
        pps.numRefIdxL1DefaultActiveMinus1 = c.smallValue(in: 0...31)
        pps.weightedPredFlag = c.flag()
        pps.weightedBipredIdc = c.value(in: 0...2)
        pps.picInitQpMinus26 = c.value(in: -(26 + 6 * sps.bitDepthLumaMinus8)...25)
        pps.picInitQsMinus26 = c.value(in: -26...25)
        pps.chromaQpIndexOffset = c.value(in: -12...12)
        pps.deblockingFilterControlPresentFlag = c.flag()
        pps.constrainedIntraPredFlag = c.flag()
        pps.redundantPicCntPresentFlag = c.flag()
        pps.transform8x8ModeFlag = c.flag()
        pps.secondChromaQpIndexOffset = c.flag() ? c.value(in: -12...12) : pps.chromaQpIndexOffset
        // 7.4.2.2: without pic_scaling_matrix_present_flag the SPS's lists are in force.
        pps.scalingMatrix = sps.scalingMatrix
        return pps
    }

    /// slice_header() (7.3.3) with the ranges of 7.4.3, for a picture using `sps` and `pps`.
    static func sliceHeader(_ c: inout FuzzChoices, sps: SequenceParameterSet, pps: PictureParameterSet) -> SliceHeader {
        var h = SliceHeader()
        let idr = c.flag()
        h.nalUnitType = idr ? .codedSliceIDR : .codedSliceNonIDR
        // 7.4.1: an IDR picture is a reference picture.
        h.nalRefIdc = UInt8(c.value(in: idr ? 1...3 : 0...3))
        // 7.4.3: an IDR picture has only I or SI slices.
        h.sliceType = idr ? c.element(of: [2, 4, 7, 9]) : c.value(in: 0...9)
        h.picParameterSetID = pps.picParameterSetID
        h.seqParameterSetID = pps.seqParameterSetID
        if sps.separateColourPlaneFlag { h.colourPlaneID = c.value(in: 0...2) }
        // 7.4.3: frame_num is 0 in an IDR picture.
        h.frameNum = idr ? 0 : c.value(in: 0...(sps.maxFrameNum - 1))
        if !sps.frameMbsOnlyFlag {
            h.fieldPicFlag = c.flag()
            if h.fieldPicFlag { h.bottomFieldFlag = c.flag() }
        }
        h.mbaffFrameFlag = sps.mbAdaptiveFrameFieldFlag && !h.fieldPicFlag
        h.maxPicNum = h.fieldPicFlag ? 2 * sps.maxFrameNum : sps.maxFrameNum
        // 7.4.3: first_mb_in_slice * (1 + MbaffFrameFlag) < PicSizeInMbs.
        let picSizeInMbs = sps.frameSizeInMbs / (h.fieldPicFlag ? 2 : 1)
        h.firstMbInSlice = c.smallValue(in: 0...((picSizeInMbs - 1) / (h.mbaffFrameFlag ? 2 : 1)))
        if idr { h.idrPicID = c.value(in: 0...65535) }
        let bottomPresent = pps.bottomFieldPicOrderInFramePresentFlag && !h.fieldPicFlag
        if sps.picOrderCntType == 0 {
            h.picOrderCntLsb = c.value(in: 0...(sps.maxPicOrderCntLsb - 1))
            if bottomPresent { h.deltaPicOrderCntBottom = Int(c.signed32()) }
        }
        if sps.picOrderCntType == 1 && !sps.deltaPicOrderAlwaysZeroFlag {
            h.deltaPicOrderCnt0 = Int(c.signed32())
            if bottomPresent { h.deltaPicOrderCnt1 = Int(c.signed32()) }
        }
        if pps.redundantPicCntPresentFlag { h.redundantPicCnt = c.value(in: 0...127) }
        let kind = h.sliceKind
        if kind == .b { h.directSpatialMvPredFlag = c.flag() }
        // Absent, the PPS defaults are in force (7.4.3); 0...15 for frames, 0...31 for fields.
        h.numRefIdxL0ActiveMinus1 = pps.numRefIdxL0DefaultActiveMinus1
        h.numRefIdxL1ActiveMinus1 = pps.numRefIdxL1DefaultActiveMinus1
        let limit = h.fieldPicFlag ? 31 : 15
        if kind == .p || kind == .sp || kind == .b {
            let mustOverride = h.numRefIdxL0ActiveMinus1 > limit || (kind == .b && h.numRefIdxL1ActiveMinus1 > limit)
            h.numRefIdxActiveOverrideFlag = mustOverride || c.flag()
            if h.numRefIdxActiveOverrideFlag {
                h.numRefIdxL0ActiveMinus1 = c.smallValue(in: 0...limit)
                if kind == .b { h.numRefIdxL1ActiveMinus1 = c.smallValue(in: 0...limit) }
            }
        }
        if !kind.isIntra {
            h.refPicListModificationFlagL0 = c.flag()
            if h.refPicListModificationFlagL0 {
                h.refPicListModificationL0 = modifications(&c, count: h.numRefIdxL0ActiveMinus1 + 1, header: h, limit: limit)
            }
        }
        if kind == .b {
            h.refPicListModificationFlagL1 = c.flag()
            if h.refPicListModificationFlagL1 {
                h.refPicListModificationL1 = modifications(&c, count: h.numRefIdxL1ActiveMinus1 + 1, header: h, limit: limit)
            }
        }
        if (pps.weightedPredFlag && (kind == .p || kind == .sp)) || (pps.weightedBipredIdc == 1 && kind == .b) {
            h.predWeightTable = predWeightTable(&c, header: h, chromaArrayType: sps.chromaArrayType)
        }
        if h.nalRefIdc != 0 {
            if idr {
                h.noOutputOfPriorPicsFlag = c.flag()
                h.longTermReferenceFlag = c.flag()
            } else {
                h.adaptiveRefPicMarkingModeFlag = c.flag()
                if h.adaptiveRefPicMarkingModeFlag {
                    h.memoryManagementControlOperations = memoryManagementControlOperations(&c, header: h, sps: sps)
                }
            }
        }
        if pps.entropyCodingModeFlag && !kind.isIntra { h.cabacInitIdc = c.value(in: 0...2) }
        // 7.4.3: SliceQPY in -QpBdOffsetY...51.
        let qpBdOffset = 6 * sps.bitDepthLumaMinus8
        h.sliceQpDelta = c.value(in: (-qpBdOffset - 26 - pps.picInitQpMinus26)...(25 - pps.picInitQpMinus26))
        h.sliceQPY = 26 + pps.picInitQpMinus26 + h.sliceQpDelta
        if kind == .sp || kind == .si {
            if kind == .sp { h.spForSwitchFlag = c.flag() }
            // 7.4.3: QSY in 0...51.
            h.sliceQsDelta = c.value(in: (-26 - pps.picInitQsMinus26)...(25 - pps.picInitQsMinus26))
        }
        if pps.deblockingFilterControlPresentFlag {
            h.disableDeblockingFilterIdc = c.value(in: 0...2)
            if h.disableDeblockingFilterIdc != 1 {
                h.sliceAlphaC0OffsetDiv2 = c.value(in: -6...6)
                h.sliceBetaOffsetDiv2 = c.value(in: -6...6)
            }
        }
        return h
    }

    /// ref_pic_list_modification() operations of one list (7.4.3.1): at most
    /// num_ref_idx_lX_active_minus1 + 1 of them.
    static func modifications(_ c: inout FuzzChoices, count: Int, header: SliceHeader, limit: Int) -> [RefPicListModification] {
        (0..<c.smallValue(in: 0...count)).map { _ in
            let idc = c.value(in: 0...2)
            // abs_diff_pic_num_minus1: 0...MaxPicNum - 1; long_term_pic_num: a LongTermPicNum,
            // at most 2 * MaxLongTermFrameIdx + 1 for fields (8.2.4.1), MaxLongTermFrameIdx <= 15.
            let value = idc < 2 ? c.value(in: 0...(header.maxPicNum - 1)) : c.value(in: 0...(header.fieldPicFlag ? 31 : 15))
            return RefPicListModification(modificationOfPicNumsIdc: idc, value: value)
        }
    }

    /// pred_weight_table() (7.3.3.2, 7.4.3.2), with the weights the parser infers for absent entries.
    static func predWeightTable(_ c: inout FuzzChoices, header: SliceHeader, chromaArrayType: Int) -> PredWeightTable {
        var table = PredWeightTable()
        table.lumaLog2WeightDenom = c.value(in: 0...7)
        if chromaArrayType != 0 { table.chromaLog2WeightDenom = c.value(in: 0...7) }
        func entries(_ count: Int) -> [PredWeightTable.Entry] {
            (0..<count).map { _ in
                var entry = PredWeightTable.Entry()
                entry.lumaWeight = Int16(1 << table.lumaLog2WeightDenom)
                entry.chromaWeightCb = Int16(1 << table.chromaLog2WeightDenom)
                entry.chromaWeightCr = entry.chromaWeightCb
                entry.lumaWeightFlag = c.flag()
                if entry.lumaWeightFlag {
                    entry.lumaWeight = Int16(c.value(in: -128...127))
                    entry.lumaOffset = Int16(c.value(in: -128...127))
                }
                if chromaArrayType != 0 {
                    entry.chromaWeightFlag = c.flag()
                    if entry.chromaWeightFlag {
                        entry.chromaWeightCb = Int16(c.value(in: -128...127))
                        entry.chromaOffsetCb = Int16(c.value(in: -128...127))
                        entry.chromaWeightCr = Int16(c.value(in: -128...127))
                        entry.chromaOffsetCr = Int16(c.value(in: -128...127))
                    }
                }
                return entry
            }
        }
        table.l0 = entries(header.numRefIdxL0ActiveMinus1 + 1)
        if header.sliceKind == .b { table.l1 = entries(header.numRefIdxL1ActiveMinus1 + 1) }
        return table
    }

    /// dec_ref_pic_marking() operations (7.3.3.3) with the ranges of 7.4.3.3; operations 4 and 5
    /// at most once each.
    static func memoryManagementControlOperations(
        _ c: inout FuzzChoices, header: SliceHeader, sps: SequenceParameterSet
    ) -> [MemoryManagementControlOperation] {
        var operations: [MemoryManagementControlOperation] = []
        let longTermPicNumLimit = header.fieldPicFlag ? 31 : 15
        for _ in 0..<c.smallValue(in: 0...12) {
            switch c.value(in: 1...6) {
            case 1:
                operations.append(.markShortTermUnused(differenceOfPicNumsMinus1: c.value(in: 0...(header.maxPicNum - 1))))
            case 2:
                operations.append(.markLongTermUnused(longTermPicNum: c.value(in: 0...longTermPicNumLimit)))
            case 3:
                operations.append(.assignLongTermFrameIdx(
                    differenceOfPicNumsMinus1: c.value(in: 0...(header.maxPicNum - 1)), longTermFrameIdx: c.value(in: 0...15)))
            case 4:
                if !operations.contains(where: { $0.operation == 4 }) {
                    operations.append(.setMaxLongTermFrameIdx(maxLongTermFrameIdxPlus1: c.value(in: 0...sps.maxNumRefFrames)))
                }
            case 5:
                if !operations.contains(.markAllUnused) { operations.append(.markAllUnused) }
            default:
                operations.append(.markCurrentLongTerm(longTermFrameIdx: c.value(in: 0...15)))
            }
        }
        return operations
    }
}

// MARK: - Write, parse back, compare

enum WriterChecks {
    /// Writes the SPS, parses it back (alone and in a byte stream) and requires the same value.
    static func roundTrip(_ sps: SequenceParameterSet) -> [UInt8] {
        let nal: [UInt8]
        do {
            nal = try sps.writeNALUnit()
        } catch {
            fail("a valid SPS could not be written: \(error)")
        }
        checkEscaping(nal)
        let parsed = Result { () throws(H264Error) -> SequenceParameterSet in try SequenceParameterSet.parse(nalUnit: nal) }
        guard case .success(let again) = parsed else { fail("a written SPS does not parse: \(parsed)") }
        require(again == sps, "SPS write -> parse changed it:\n  \(sps)\n  \(again)")
        return nal
    }

    static func roundTrip(_ pps: PictureParameterSet, sps: SequenceParameterSet) -> [UInt8] {
        let nal: [UInt8]
        do {
            nal = try pps.writeNALUnit()
        } catch {
            fail("a valid PPS could not be written: \(error)")
        }
        checkEscaping(nal)
        let parsed = Result { () throws(H264Error) -> PictureParameterSet in
            try PictureParameterSet.parse(nalUnit: nal, sequenceParameterSets: { $0 == sps.seqParameterSetID ? sps : nil })
        }
        guard case .success(let again) = parsed else { fail("a written PPS does not parse: \(parsed)") }
        require(again == pps, "PPS write -> parse changed it:\n  \(pps)\n  \(again)")
        return nal
    }

    /// Writes the slice header, follows it with one byte of stand-in slice data, parses the NAL
    /// unit back and requires the same header, with the sizes VA-API's slice_data_bit_offset
    /// comes from. Returns the NAL unit.
    static func roundTrip(_ header: SliceHeader, sps: SequenceParameterSet, pps: PictureParameterSet, sliceData: UInt8) -> [UInt8] {
        var bits: BitWriter
        do {
            bits = try header.write(sequenceParameterSet: sps, pictureParameterSet: pps)
        } catch {
            fail("a valid slice header could not be written: \(error)")
        }
        var expected = header
        expected.headerBitSize = bits.bitCount
        bits.writeBits(UInt32(sliceData), count: 8)
        bits.writeRBSPTrailingBits()
        let rbsp = bits.bytes
        let nal = H264NALUnitWriter.nalUnit(type: header.nalUnitType, nalRefIdc: header.nalRefIdc, rbsp: rbsp)
        checkEscaping(nal)
        expected.escapedHeaderBitSize = escapedBitOffset(of: expected.headerBitSize, in: rbsp)
        let parsed = Result { () throws(H264Error) -> SliceHeader in
            try SliceHeader.parse(
                nalUnit: nal, pictureParameterSets: { $0 == pps.picParameterSetID ? pps : nil },
                sequenceParameterSets: { $0 == sps.seqParameterSetID ? sps : nil })
        }
        guard case .success(let again) = parsed else { fail("a written slice header does not parse: \(parsed)\n  \(header)") }
        require(again == expected, "slice header write -> parse changed it:\n  \(expected)\n  \(again)")
        return nal
    }

    /// Where RBSP bit `bit` lands in the escaped NAL unit payload (7.4.1: an
    /// emulation_prevention_three_byte before each byte 0...3 that follows two zero bytes),
    /// counted here independently of RBSP.escapedBitOffset.
    static func escapedBitOffset(of bit: Int, in rbsp: [UInt8]) -> Int {
        var inserted = 0
        var zeros = 0
        for (index, byte) in rbsp.enumerated() {
            if zeros >= 2 && byte <= 3 {
                inserted += 1
                zeros = 0
            }
            if index == bit / 8 { break }
            zeros = byte == 0 ? zeros + 1 : 0
        }
        return bit + 8 * inserted
    }

    /// A written NAL unit contains no start code prefix (00 00 0x, x <= 2) and does not end in
    /// 00 (7.4.1, B.1): behind a start code it is one NAL unit, unchanged.
    static func checkEscaping(_ nal: [UInt8]) {
        require(nal.last != 0, "a written NAL unit ends in 00")
        for index in 2..<max(nal.count, 2) where nal[index - 2] == 0 && nal[index - 1] == 0 {
            require(nal[index] >= 3, "a written NAL unit holds the start code prefix 00 00 \(nal[index])")
        }
        let stream: [UInt8] = [0, 0, 0, 1] + nal
        let units = AnnexB.nalUnits(in: stream)
        require(
            units.count == 1 && stream[units[0].payloadRange].elementsEqual(nal), "a written NAL unit is not one NAL unit in a byte stream")
    }
}

// MARK: - The coding planner, decoded

/// Plans a random GOP with H264CodingPlanner, writes its pictures' slice headers with the SPS/PPS
/// the VA encoder would write for the structure (VAH264Encoder.describeStream), decodes them with
/// H264PictureDecoder, and requires the decoder to find what the planner planned.
enum PlannerChecks {
    static func run(_ c: inout FuzzChoices) {
        let structure = H264GOPStructure(
            idrPeriod: c.smallValue(in: 0...40), consecutiveBFrames: c.smallValue(in: 0...7),
            log2MaxFrameNum: c.value(in: 4...16), log2MaxPicOrderCntLsb: c.value(in: 4...16))
        var sps = SequenceParameterSet()
        sps.profileIdc = structure.consecutiveBFrames > 0 ? c.element(of: [77, 100]) : c.element(of: [66, 77, 100])
        sps.levelIdc = c.element(of: RandomSyntax.levels)
        sps.log2MaxFrameNumMinus4 = structure.log2MaxFrameNum - 4
        sps.picOrderCntType = 0
        sps.log2MaxPicOrderCntLsbMinus4 = structure.log2MaxPicOrderCntLsb - 4
        sps.maxNumRefFrames = structure.maxReferenceFrames
        sps.picWidthInMbsMinus1 = c.smallValue(in: 0...119)
        sps.picHeightInMapUnitsMinus1 = c.smallValue(in: 0...67)
        sps.frameMbsOnlyFlag = true
        sps.direct8x8InferenceFlag = true
        var vui = VUIParameters()
        vui.timingInfoPresentFlag = true
        vui.numUnitsInTick = 1
        vui.timeScale = 60
        vui.bitstreamRestrictionFlag = true
        vui.maxNumReorderFrames = structure.maxReorderFrames
        vui.maxDecFrameBuffering = structure.maxReferenceFrames
        sps.vuiParametersPresentFlag = true
        sps.vui = vui
        var pps = PictureParameterSet()
        pps.entropyCodingModeFlag = sps.profileIdc != 66 && c.flag()
        pps.numRefIdxL0DefaultActiveMinus1 = c.smallValue(in: 0...2)
        pps.numRefIdxL1DefaultActiveMinus1 = c.smallValue(in: 0...2)
        pps.picInitQpMinus26 = c.value(in: -26...25)
        pps.deblockingFilterControlPresentFlag = true
        pps.transform8x8ModeFlag = sps.profileIdc == 100 && c.flag()
        let parameterSets = [WriterChecks.roundTrip(sps), WriterChecks.roundTrip(pps, sps: sps)]

        let accelerator = CheckingAccelerator()
        accelerator.recordsCalls = true
        let dropped = accelerator.dropped
        decodePlan(&c, structure: structure, sps: sps, pps: pps, parameterSets: parameterSets, accelerator: accelerator)
        require(dropped.unexplained.isEmpty, "planned pictures never output: \(dropped.unexplained)")
    }

    private static func decodePlan(
        _ c: inout FuzzChoices, structure: H264GOPStructure, sps: SequenceParameterSet, pps: PictureParameterSet,
        parameterSets: [[UInt8]], accelerator: CheckingAccelerator
    ) {
        let decoder = H264PictureDecoder(accelerator: accelerator)
        accelerator.decoder = decoder
        for set in parameterSets {
            set.withUnsafeBytes { bytes in
                do throws(H264DecodingError) {
                    try decoder.storeParameterSet(nalUnit: bytes)
                } catch {
                    fail("the decoder refused a written parameter set: \(error)")
                }
            }
        }
        var planner = H264CodingPlanner<Int>(structure: structure)
        var timeStamps = DecodeTimeStampSequencer(reorderDelay: structure.maxReorderFrames)
        let frameDuration = MediaTime(value: 1, timescale: 30)
        var presentationTimes: [MediaTime] = []
        var lastDecodeTime: MediaTime?
        var codedFrames = Set<Int>()
        var outputFrames: [Int] = []
        var framesByCodingIndex: [UInt64: Int] = [:]
        var lastIDRFrame: Int?
        /// idr_pic_id of the previous picture in coding order when it was an IDR picture.
        var previousIDRPicID: Int?
        var forcedIDRFrames = Set<Int>()

        func code(_ pictures: [H264CodingPicture<Int>]) {
            for picture in pictures {
                require(codedFrames.insert(picture.frame).inserted, "frame \(picture.frame) coded twice")
                framesByCodingIndex[picture.codingIndex] = picture.frame
                require(picture.isReference == (picture.type != .bidirectional), "B pictures, and only they, are not references")
                if picture.type == .idr {
                    require(picture.frameNum == 0 && picture.pictureOrderCount == 0, "an IDR picture with frame_num or POC not 0")
                    // 7.4.3: two IDR access units in a row have different idr_pic_id (else
                    // they are one picture to a decoder, 7.4.1.2.4).
                    if let previousIDRPicID {
                        require(picture.idrPicID != previousIDRPicID, "consecutive IDR pictures share idr_pic_id \(previousIDRPicID)")
                    }
                    if let lastIDRFrame {
                        require(
                            structure.idrPeriod == 0 || picture.frame - lastIDRFrame <= structure.idrPeriod,
                            "IDR pictures \(picture.frame - lastIDRFrame) frames apart, the period is \(structure.idrPeriod)")
                    }
                    lastIDRFrame = picture.frame
                    previousIDRPicID = picture.idrPicID
                } else {
                    require(!forcedIDRFrames.contains(picture.frame), "a forced IDR frame is coded as \(picture.type)")
                    previousIDRPicID = nil
                }
                // Decode time stamps (VAH264Encoder: noteInput at submit, next at read-out).
                let presentationTime = presentationTimes[picture.frame]
                let decodeTime = timeStamps.next(presentationTimeStamp: presentationTime, frameDuration: frameDuration)
                require(decodeTime <= presentationTime, "DTS after PTS")
                if let lastDecodeTime { require(decodeTime > lastDecodeTime, "DTS not increasing") }
                lastDecodeTime = decodeTime

                let header = picture.sliceHeader(
                    structure: structure, pictureParameterSet: pps,
                    sliceQpDelta: c.value(in: (-26 - pps.picInitQpMinus26)...(25 - pps.picInitQpMinus26)))
                let nal = WriterChecks.roundTrip(header, sps: sps, pps: pps, sliceData: UInt8(truncatingIfNeeded: c.bits(8)))
                nal.withUnsafeBytes { bytes in
                    do throws(H264DecodingError) {
                        try decoder.decode(nalUnit: bytes, frameReference: picture.codingIndex)
                        try decoder.finishAccessUnit()
                    } catch {
                        fail("a planned picture does not decode: \(error)")
                    }
                }
                outputFrames += accelerator.takeOutputs().compactMap { framesByCodingIndex[$0.frameReference] }
                accelerator.checkAfterCall("planned picture \(picture.codingIndex)")

                // What the decoder found is what the planner planned.
                guard let begun = accelerator.begunPictures.last, let slice = accelerator.decodedSlices.last,
                    begun.frameReference == picture.codingIndex, slice.frameReference == picture.codingIndex
                else { fail("planned picture \(picture.codingIndex) was not decoded") }
                require(
                    begun.picOrderCnt == picture.pictureOrderCount && begun.frameNum == picture.frameNum,
                    "the decoder derived POC \(begun.picOrderCnt), frame_num \(begun.frameNum) for a picture planned with \(picture.pictureOrderCount), \(picture.frameNum)")
                require(
                    Set(begun.referenceFrames) == Set(picture.referenceFrames.map(\.codingIndex)),
                    "the decoder's reference frames \(begun.referenceFrames) are not the planned \(picture.referenceFrames.map(\.codingIndex))")
                require(
                    slice.list0 == picture.list0.map(\.codingIndex) && slice.list1 == picture.list1.map(\.codingIndex),
                    "the decoder's lists \(slice.list0) / \(slice.list1) are not the planned \(picture.list0.map(\.codingIndex)) / \(picture.list1.map(\.codingIndex))")
            }
            // The planner's DPB is the decoder's after the same pictures (after a reset, the
            // decoder learns of the new sequence with its first picture).
            guard !pictures.isEmpty else { return }
            let decoded = Set(decoder.decodedPictureBuffer.shortTermReferences.map(\.frameReference))
            require(
                decoded == Set(planner.referenceFrames.map(\.codingIndex)),
                "the decoder's short-term references \(decoded) are not the planner's \(planner.referenceFrames.map(\.codingIndex))")
        }

        // Enough for several GOPs of up to 7 B pictures, a forced IDR picture and a flush;
        // longer plans slow the fuzzer more than they find.
        let frameCount = c.value(in: 1...24)
        var presentationTime = MediaTime.zero
        for frame in 0..<frameCount {
            presentationTimes.append(presentationTime)
            presentationTime = presentationTime + MediaTime(value: Int64(c.value(in: 1...3)), timescale: 30)
            let forced = c.value(in: 0...15) == 15
            if forced { forcedIDRFrames.insert(frame) }
            timeStamps.noteInput(presentationTimeStamp: presentationTimes[frame])
            code(planner.submit(frame, forceIDR: forced))
            require(planner.heldFrameCount <= structure.consecutiveBFrames, "the planner holds more frames than B pictures")
            if c.value(in: 0...31) == 31 {
                // The encoder is flushed (VAH264Encoder.flush): the next frame starts a new sequence.
                code(planner.flush())
                planner.reset()
            }
        }
        code(planner.flush())
        do throws(H264DecodingError) {
            try decoder.drain()
        } catch {
            fail("draining a planned stream failed: \(error)")
        }
        outputFrames += accelerator.takeOutputs().compactMap { framesByCodingIndex[$0.frameReference] }
        accelerator.checkAfterCall("drain of a planned stream")
        require(codedFrames.count == frameCount, "\(frameCount - codedFrames.count) frames never coded")
        require(outputFrames == Array(0..<frameCount), "decoded output order \(outputFrames) is not the display order")
    }
}
