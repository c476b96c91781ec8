import Testing

@testable import H265

@Suite("H.265 slice segment headers")
struct H265SliceSegmentHeaderTests {
    static let sps = H265TestStreams.sequenceParameterSet()
    static let pps = H265TestStreams.pictureParameterSet()

    static func parse(_ nal: [UInt8], pps: H265PictureParameterSet = pps, sps: H265SequenceParameterSet = sps) throws
        -> H265SliceSegmentHeader
    {
        try H265SliceSegmentHeader.parse(
            nalUnit: nal, pictureParameterSet: { $0 == pps.picParameterSetID ? pps : nil },
            sequenceParameterSet: { $0 == sps.seqParameterSetID ? sps : nil })
    }

    @Test func idrAndTrailingSlicesRoundTrip() throws {
        let idr = H265TestStreams.slice(.idrWithRADL)
        let parsedIDR = try Self.parse(H265TestStreams.sliceNALUnit(idr))
        #expect(parsedIDR.firstSliceSegmentInPicFlag && parsedIDR.sliceType == .i && parsedIDR.slicePicOrderCntLsb == 0)
        #expect(parsedIDR.shortTermReferencePictureSet.numDeltaPocs == 0)

        var trail = H265TestStreams.slice(.trailR, lsb: 77, first: false)
        trail.shortTermRefPicSetIdx = 1
        trail.sliceTemporalMVPEnabledFlag = true
        trail.shortTermReferencePictureSet = Self.sps.shortTermReferencePictureSets[1]
        var parsed = try Self.parse(H265TestStreams.sliceNALUnit(trail))
        #expect(parsed.sliceSegmentAddress == 8 && parsed.slicePicOrderCntLsb == 77)
        #expect(parsed.shortTermReferencePictureSet == Self.sps.shortTermReferencePictureSets[1])
        parsed.parsedBitCount = trail.parsedBitCount
        #expect(parsed == trail)
    }

    @Test func inlineRPSAndLongTermPictures() throws {
        var sps = Self.sps
        sps.longTermRefPicsPresentFlag = true
        sps.longTermReferencePictures = [
            .init(pocLsb: 5, usedByCurrentPicture: true), .init(pocLsb: 9, usedByCurrentPicture: false)
        ]
        var slice = H265TestStreams.slice(.trailR, lsb: 40)
        slice.shortTermRefPicSetSPSFlag = false
        // Predicted from SPS set 1 (delta_idx_minus1 0 names the last set): S0 {-1, -2}.
        var prediction = H265ShortTermReferencePictureSet.InterSetPrediction()
        prediction.deltaIdxMinus1 = 0
        prediction.deltaRpsSign = true
        prediction.usedByCurrPicFlags = [true, false]
        prediction.useDeltaFlags = [true, true]
        slice.shortTermReferencePictureSet = H265ShortTermReferencePictureSet.derived(
            from: sps.shortTermReferencePictureSets[1], prediction: prediction)
        slice.numLongTermSps = 1
        slice.numLongTermPics = 1
        slice.longTermPictures = [
            H265SliceLongTermPicture(
                ltIdxSps: 1, pocLsbLt: 9, usedByCurrPicLt: false, deltaPocMsbPresentFlag: true,
                deltaPocMsbCycleLt: 2, accumulatedDeltaPocMsbCycleLt: 2),
            H265SliceLongTermPicture(
                ltIdxSps: nil, pocLsbLt: 250, usedByCurrPicLt: true, deltaPocMsbPresentFlag: true,
                deltaPocMsbCycleLt: 1, accumulatedDeltaPocMsbCycleLt: 1)
        ]
        let parsed = try Self.parse(H265TestStreams.sliceNALUnit(slice, sps: sps), sps: sps)
        #expect(parsed.shortTermReferencePictureSet.deltaPocS0 == [-1, -2])
        #expect(parsed.shortTermReferencePictureSet.usedByCurrPicS0 == [false, true])
        #expect(parsed.shortTermRefPicSetBitCount > 0)
        #expect(parsed.longTermPictures == slice.longTermPictures)
        // 1 short-term and 1 long-term picture are used by the current picture (7-55).
        #expect(parsed.numPicTotalCurr == 2)
    }

    /// A B slice written through slice_qp_delta with every optional part present: SAO flags,
    /// overridden list sizes, a list modification (NumPicTotalCurr 3: 2-bit entries), cabac_init,
    /// collocated_ref_idx and a pred_weight_table with luma and chroma weights (7.3.6.1-7.3.6.3).
    @Test func bSliceThroughQuantizer() throws {
        var sps = Self.sps
        sps.sampleAdaptiveOffsetEnabledFlag = true
        var pps = Self.pps
        pps.listsModificationPresentFlag = true
        pps.cabacInitPresentFlag = true
        pps.weightedBipredFlag = true
        pps.initQpMinus26 = 2
        var slice = H265TestStreams.slice(.trailR, lsb: 12, sliceType: .b)
        slice.sliceTemporalMVPEnabledFlag = true
        var w = BitWriter()
        slice.writeParsedPart(to: &w, pps: pps, sps: sps)
        w.writeFlag(true) // slice_sao_luma_flag
        w.writeFlag(false) // slice_sao_chroma_flag
        w.writeFlag(true) // num_ref_idx_active_override_flag
        w.writeUE(1) // num_ref_idx_l0_active_minus1
        w.writeUE(0) // num_ref_idx_l1_active_minus1
        w.writeFlag(true) // ref_pic_list_modification_flag_l0
        w.writeBits(2, count: 2) // list_entry_l0[0]
        w.writeBits(0, count: 2) // list_entry_l0[1]
        w.writeFlag(false) // ref_pic_list_modification_flag_l1
        w.writeFlag(true) // mvd_l1_zero_flag
        w.writeFlag(true) // cabac_init_flag
        w.writeFlag(true) // collocated_from_l0_flag
        w.writeUE(1) // collocated_ref_idx
        w.writeUE(6) // luma_log2_weight_denom
        w.writeSE(-1) // delta_chroma_log2_weight_denom
        w.writeFlag(true) // luma_weight_l0_flag[0]
        w.writeFlag(false) // luma_weight_l0_flag[1]
        w.writeFlag(false) // chroma_weight_l0_flag[0]
        w.writeFlag(true) // chroma_weight_l0_flag[1]
        w.writeSE(3) // delta_luma_weight_l0[0]
        w.writeSE(-4) // luma_offset_l0[0]
        for value: Int32 in [2, -7, -1, 0] { w.writeSE(value) } // Cb and Cr of entry 1
        w.writeFlag(false) // luma_weight_l1_flag[0]
        w.writeFlag(false) // chroma_weight_l1_flag[0]
        w.writeUE(2) // five_minus_max_num_merge_cand
        w.writeSE(-5) // slice_qp_delta
        let end = w.bitCount
        w.writeBits(0x5A, count: 8)
        w.writeRBSPTrailingBits()
        let nal = slice.nalUnitHeader.bytes + RBSP.insertEmulationPrevention(w.bytes)
        let parsed = try H265SliceSegmentHeader.parse(
            nalUnit: nal, pictureParameterSet: { $0 == pps.picParameterSetID ? pps : nil },
            sequenceParameterSet: { $0 == sps.seqParameterSetID ? sps : nil }, extent: .throughQuantizer)
        #expect(parsed.sliceSaoLumaFlag && !parsed.sliceSaoChromaFlag)
        #expect(parsed.numRefIdxL0ActiveMinus1 == 1 && parsed.numRefIdxL1ActiveMinus1 == 0)
        #expect(parsed.listEntryL0 == [2, 0] && parsed.listEntryL1 == [])
        #expect(parsed.mvdL1ZeroFlag && parsed.cabacInitFlag)
        #expect(parsed.collocatedFromL0Flag && parsed.collocatedRefIdx == 1)
        let weights = try #require(parsed.predictionWeights)
        #expect(weights.lumaLog2WeightDenom == 6 && weights.chromaLog2WeightDenom == 5)
        typealias Weight = H265PredictionWeightTable.Weight
        #expect(
            weights.l0 == [
                .init(luma: Weight(deltaWeight: 3, offset: -4), chroma: nil),
                .init(
                    luma: nil,
                    chroma: [Weight(deltaWeight: 2, offset: -7), Weight(deltaWeight: -1, offset: 0)])
            ])
        #expect(weights.l1 == [.init(luma: nil, chroma: nil)])
        #expect(parsed.maxNumMergeCand == 3)
        #expect(parsed.sliceQpDelta == -5 && parsed.sliceQpY == 23, "26 + init_qp_minus26 2 - 5 (7-54)")
        #expect(parsed.parsedBitCount == end)
        // The default extent stops after slice_temporal_mvp_enabled_flag.
        let short = try Self.parse(nal, pps: pps, sps: sps)
        #expect(short.predictionWeights == nil && short.sliceQpY == 26)

        // An I slice (IDR) has only the SAO flags and the QP; SliceQpY stays within 51 (7.4.7.1).
        var idr = H265TestStreams.slice(.idrWithRADL)
        idr.sliceType = .i
        func idrNAL(qpDelta: Int32) -> [UInt8] {
            var w = BitWriter()
            idr.writeParsedPart(to: &w, pps: pps, sps: sps)
            w.writeFlag(false)
            w.writeFlag(true)
            w.writeSE(qpDelta)
            w.writeRBSPTrailingBits()
            return idr.nalUnitHeader.bytes + RBSP.insertEmulationPrevention(w.bytes)
        }
        func parseIDR(_ nal: [UInt8]) throws -> H265SliceSegmentHeader {
            try H265SliceSegmentHeader.parse(
                nalUnit: nal, pictureParameterSet: { _ in pps }, sequenceParameterSet: { _ in sps },
                extent: .throughQuantizer)
        }
        #expect(try parseIDR(idrNAL(qpDelta: 23)).sliceQpY == 51)
        #expect(h265Error { _ = try parseIDR(idrNAL(qpDelta: 24)) }?.field == "slice_qp_delta")
        #expect(h265Error { _ = try parseIDR(idrNAL(qpDelta: -29)) }?.field == "slice_qp_delta")
    }

    @Test func rejectsOutOfRangeValues() throws {
        func rejection(
            _ type: H265NALUnitType = .trailR, sps: H265SequenceParameterSet = Self.sps,
            pps: H265PictureParameterSet = Self.pps,
            _ change: (inout H265SliceSegmentHeader) -> Void
        ) -> H265Error? {
            var slice = H265TestStreams.slice(type, lsb: 3)
            change(&slice)
            return h265Error {
                _ = try Self.parse(H265TestStreams.sliceNALUnit(slice, pps: pps, sps: sps), pps: pps, sps: sps)
            }
        }
        #expect(rejection { _ in } == nil)
        // 48x64 in 16x16 CTBs is 12 CTBs: slice_segment_address has 4 bits, and 12 names none.
        var twelveCTBs = Self.sps
        twelveCTBs.picWidthInLumaSamples = 48
        #expect(
            rejection(sps: twelveCTBs) {
                $0.firstSliceSegmentInPicFlag = false
                $0.sliceSegmentAddress = 11
            } == nil)
        #expect(
            rejection(sps: twelveCTBs) {
                $0.firstSliceSegmentInPicFlag = false
                $0.sliceSegmentAddress = 12
            }?.field == "slice_segment_address")
        #expect(rejection { $0.sliceType = .b } == nil)
        #expect(rejection(.cra) { $0.sliceType = .p }?.field == "slice_type (IRAP picture)")
        #expect(rejection { $0.slicePicParameterSetID = 64 }?.field == "slice_pic_parameter_set_id")
        #expect(rejection { $0.slicePicParameterSetID = 5 } == .missingParameterSet(kind: "PPS", id: 5))
        var threeSets = Self.sps
        threeSets.shortTermReferencePictureSets.append(threeSets.shortTermReferencePictureSets[1])
        #expect(rejection(sps: threeSets) { $0.shortTermRefPicSetIdx = 3 }?.field == "short_term_ref_pic_set_idx")
        var noSets = Self.sps
        noSets.shortTermReferencePictureSets = []
        #expect(rejection(sps: noSets) { _ in }?.field == "short_term_ref_pic_set_sps_flag (no set in the SPS)")
        var planes = Self.sps
        planes.chromaFormatIdc = 3
        planes.separateColourPlaneFlag = true
        #expect(rejection(sps: planes) { $0.colourPlaneID = 3 }?.field == "colour_plane_id")
        var longTerm = Self.sps
        longTerm.longTermRefPicsPresentFlag = true
        // Set 0 holds 3 pictures and the DPB 5 (minus1 4): room for 1 long-term picture.
        #expect(
            rejection(sps: longTerm) {
                $0.numLongTermPics = 2
                $0.longTermPictures = Array(
                    repeating: H265SliceLongTermPicture(
                        ltIdxSps: nil, pocLsbLt: 1, usedByCurrPicLt: true, deltaPocMsbPresentFlag: false,
                        deltaPocMsbCycleLt: 0,
                        accumulatedDeltaPocMsbCycleLt: 0), count: 2)
            }?.field == "num_long_term_pics")
        // A slice too short for its header.
        let cut = Array(H265TestStreams.sliceNALUnit(H265TestStreams.slice(.trailR, lsb: 3)).prefix(3))
        guard case .truncated? = h265Error({ _ = try Self.parse(cut) }) else {
            Issue.record("a cut slice header did not throw truncated")
            return
        }
    }

    @Test func firstSliceSegmentFlagWithoutParameterSets() {
        let first = H265TestStreams.sliceNALUnit(H265TestStreams.slice(.idrNoLeadingPictures))
        let next = H265TestStreams.sliceNALUnit(H265TestStreams.slice(.trailN, lsb: 1, first: false))
        first.withUnsafeBytes { #expect(H265SliceSegmentHeader.firstSliceSegmentInPicFlag(of: $0) == true) }
        next.withUnsafeBytes { #expect(H265SliceSegmentHeader.firstSliceSegmentInPicFlag(of: $0) == false) }
        [UInt8]([0x02, 0x01]).withUnsafeBytes {
            #expect(H265SliceSegmentHeader.firstSliceSegmentInPicFlag(of: $0) == nil)
        }
    }
}

@Suite("H.265 SEI messages")
struct H265SEITests {
    /// An SPS whose VUI has frame_field_info_present_flag and a NAL HRD with 8-bit delays.
    static func timingSPS(chromaFormatIdc: Int = 1) -> H265SequenceParameterSet {
        var sps = H265TestStreams.sequenceParameterSet()
        sps.chromaFormatIdc = chromaFormatIdc
        sps.vuiParametersPresentFlag = true
        var vui = H265VUIParameters()
        vui.fieldSeqFlag = true
        vui.frameFieldInfoPresentFlag = true
        vui.timingInfoPresentFlag = true
        vui.numUnitsInTick = 1
        vui.timeScale = 50
        vui.hrdParametersPresentFlag = true
        var hrd = H265HRDParameters()
        hrd.nalHrdParametersPresentFlag = true
        hrd.auCpbRemovalDelayLengthMinus1 = 7
        hrd.dpbOutputDelayLengthMinus1 = 7
        var subLayer = H265HRDParameters.SubLayer()
        subLayer.nalCPBSpecifications = [.init(bitRateValueMinus1: 1, cpbSizeValueMinus1: 1, cbrFlag: false)]
        hrd.subLayers = [subLayer]
        vui.hrdParameters = hrd
        sps.vui = vui
        return sps
    }

    @Test func pictureTimingWithFieldInfoAndHRDDelays() throws {
        let payload = H265TestStreams.bits { w in
            w.writeBits(2, count: 4) // pic_struct: bottom field
            w.writeBits(0, count: 2) // source_scan_type: interlaced
            w.writeFlag(false) // duplicate_flag
            w.writeBits(41, count: 8) // au_cpb_removal_delay_minus1
            w.writeBits(3, count: 8) // pic_dpb_output_delay
            w.writeRBSPTrailingBits()
        }
        let sei = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit([(1, payload)]), activeSequenceParameterSet: Self.timingSPS())
        #expect(sei.error == nil)
        guard case .pictureTiming(let timing)? = sei.messages.first else {
            Issue.record("no picture timing in \(sei.messages)")
            return
        }
        #expect(timing.picStruct == 2 && timing.isBottomField && timing.isField && !timing.isTopField)
        #expect(timing.sourceScanType == 0 && timing.duplicateFlag == false)
        #expect(timing.auCpbRemovalDelayMinus1 == 41 && timing.picDpbOutputDelay == 3)

        // pic_struct 13 is reserved (Table D.2): the message is kept undecoded, with the error.
        let reserved = H265TestStreams.bits { w in
            w.writeBits(13, count: 4)
            w.writeBits(0, count: 20)
        }
        let bad = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit([(1, reserved)]), activeSequenceParameterSet: Self.timingSPS())
        #expect(bad.error?.field == "pic_struct")
        #expect(bad.messages.first?.payloadType == 1)
        // Without an SPS the timing cannot be read.
        let noSPS = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit([(1, payload)]), activeSequenceParameterSet: nil)
        guard case .missingParameterSet? = noSPS.error else {
            Issue.record("picture timing without an SPS gave \(String(describing: noSPS.error))")
            return
        }
    }

    @Test func decodedPictureHashes() throws {
        let md5 = [UInt8(0)] + (0..<48).map { UInt8($0) }
        let crc: [UInt8] = [1, 0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC]
        let checksumMonochrome: [UInt8] = [2, 0xDE, 0xAD, 0xBE, 0xEF]
        let sei = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit(suffix: true, [(132, md5), (132, crc)]),
            activeSequenceParameterSet: H265TestStreams.sequenceParameterSet())
        #expect(sei.isSuffix && sei.error == nil)
        #expect(
            sei.messages == [
                .decodedPictureHash(.md5([Array(0..<16), Array(16..<32), Array(32..<48)])),
                .decodedPictureHash(.crc([0x1234, 0x5678, 0x9ABC]))
            ])
        var monochrome = H265TestStreams.sequenceParameterSet()
        monochrome.chromaFormatIdc = 0
        let mono = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit(suffix: true, [(132, checksumMonochrome)]),
            activeSequenceParameterSet: monochrome)
        #expect(mono.messages == [.decodedPictureHash(.checksum([0xDEAD_BEEF]))])
        // In a prefix SEI, payloadType 132 is not a decoded picture hash (D.2.1).
        let prefix = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit([(132, md5)]), activeSequenceParameterSet: monochrome)
        #expect(prefix.messages == [.other(payloadType: 132, bytes: md5)])
        // A truncated MD5.
        let cut = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit(suffix: true, [(132, Array(md5.prefix(20)))]),
            activeSequenceParameterSet: H265TestStreams.sequenceParameterSet())
        #expect(cut.error?.field == "picture_md5")
    }

    @Test func hdrMetadataAndUserData() throws {
        var mastering = H265TestStreams.bits { w in
            for value in [13250, 34500, 7500, 3000, 34000, 16000] as [UInt32] { w.writeBits(value, count: 16) }
            w.writeBits(15635, count: 16)
            w.writeBits(16450, count: 16)
            w.writeBits(10_000_000, count: 32)
            w.writeBits(50, count: 32)
        }
        let light: [UInt8] = [0x03, 0xE8, 0x01, 0x90]
        let registered: [UInt8] = [0xB5, 0x00, 0x3C, 0x00, 0x01]
        let extended: [UInt8] = [0xFF, 0x01, 0xAA]
        let uuid = Array(UInt8(0)..<16)
        let sei = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit([
                (137, mastering), (144, light), (4, registered), (4, extended), (5, uuid + [9, 9]), (6, [0xC0])
            ]),
            activeSequenceParameterSet: H265TestStreams.sequenceParameterSet())
        #expect(sei.error == nil)
        var volume = H265MasteringDisplayColourVolume()
        volume.displayPrimariesX = [13250, 7500, 34000]
        volume.displayPrimariesY = [34500, 3000, 16000]
        volume.whitePointX = 15635
        volume.whitePointY = 16450
        volume.maxDisplayMasteringLuminance = 10_000_000
        volume.minDisplayMasteringLuminance = 50
        var level = H265ContentLightLevel()
        level.maxContentLightLevel = 1000
        level.maxPicAverageLightLevel = 400
        var recovery = H265RecoveryPoint()
        recovery.recoveryPocCnt = 0
        recovery.exactMatchFlag = true
        #expect(
            sei.messages == [
                .masteringDisplayColourVolume(volume), .contentLightLevel(level),
                .userDataRegistered(
                    H265UserDataRegistered(
                        countryCode: 0xB5, countryCodeExtension: nil, payload: [0x00, 0x3C, 0x00, 0x01])),
                .userDataRegistered(
                    H265UserDataRegistered(countryCode: 0xFF, countryCodeExtension: 0x01, payload: [0xAA])),
                .userDataUnregistered(H265UserDataUnregistered(uuid: uuid, payload: [9, 9])),
                .recoveryPoint(recovery)
            ])
        // A primary beyond 50000 (D.3.28) is an error; the message after it is still read.
        mastering[0] = 0xFF
        let bad = try H265SEI.parse(
            nalUnit: H265TestStreams.seiNALUnit([(137, mastering), (144, light)]), activeSequenceParameterSet: nil)
        #expect(bad.error?.field == "display_primaries_x")
        #expect(bad.messages.count == 2 && bad.messages[1] == .contentLightLevel(level))
    }

    @Test func brokenFramingEndsParsing() throws {
        // A payloadSize of 200 in a 4-byte NAL unit: the messages before it are kept.
        var nal = H265TestStreams.seiNALUnit([(144, [0, 1, 0, 2])])
        nal.removeLast() // the stop bit
        nal += [5, 200, 1, 2, 0x80]
        let sei = try H265SEI.parse(nalUnit: nal, activeSequenceParameterSet: nil)
        #expect(sei.messages.count == 1)
        #expect(sei.error?.field?.hasPrefix("sei_payload") == true)
        // Not an SEI NAL unit at all.
        #expect(
            h265Error { _ = try H265SEI.parse(nalUnit: [0x40, 0x01, 0x80], activeSequenceParameterSet: nil) }?.field
                == "nal_unit_type")
    }
}
