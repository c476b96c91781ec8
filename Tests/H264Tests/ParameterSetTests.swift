import MediaCore
import SwiftVTTestSupport
import Testing

@testable import H264

// MARK: - Test helpers: Annex B splitting and parameter-set writers

/// Splits an Annex B byte stream at 00 00 01 start codes (test helper, independent of the
/// library's scanner). Trailing zero bytes before a start code are dropped.
enum TestNALUnits {
    static func split(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var starts: [Int] = []
        var i = 0
        while i + 2 < bytes.count {
            if bytes[i] == 0 && bytes[i + 1] == 0 && bytes[i + 2] == 1 {
                starts.append(i + 3)
                i += 3
            } else {
                i += 1
            }
        }
        var units: [ArraySlice<UInt8>] = []
        for (index, start) in starts.enumerated() {
            var end = index + 1 < starts.count ? starts[index + 1] - 3 : bytes.count
            while end > start && bytes[end - 1] == 0 { end -= 1 }
            if end > start { units.append(bytes[start..<end]) }
        }
        return units
    }

    static func first(ofType type: UInt8, in bytes: [UInt8]) -> [UInt8]? {
        split(bytes).first { $0.first.map { $0 & 0x1F } == type }.map(Array.init)
    }
}

/// How a test SPS/PPS transmits one scaling list.
enum ScalingListSpec {
    case absent
    case useDefault
    case values([UInt8])
}

func writeScalingLists(_ specs: [ScalingListSpec], into w: inout BitWriter) {
    for spec in specs {
        switch spec {
        case .absent:
            w.writeFlag(false)
        case .useDefault:
            w.writeFlag(true)
            w.writeSE(-8) // nextScale = (8 - 8 + 256) % 256 = 0 at j = 0
        case .values(let list):
            w.writeFlag(true)
            var last = 8
            for value in list {
                var delta = (Int(value) - last) % 256
                if delta > 127 { delta -= 256 }
                if delta < -128 { delta += 256 }
                w.writeSE(Int32(delta))
                last = Int(value)
            }
        }
    }
}

/// Writes seq_parameter_set_data() from the fields of `s` (the writer a future encoder would
/// use); `scaling` gives the transmitted lists when seq_scaling_matrix_present_flag is set.
func writeSPSData(_ s: SequenceParameterSet, scaling: [ScalingListSpec] = [], into w: inout BitWriter) {
    w.writeBits(UInt32(s.profileIdc), count: 8)
    for flag in [
        s.constraintSet0Flag, s.constraintSet1Flag, s.constraintSet2Flag, s.constraintSet3Flag,
        s.constraintSet4Flag, s.constraintSet5Flag
    ] { w.writeFlag(flag) }
    w.writeBits(0, count: 2)
    w.writeBits(UInt32(s.levelIdc), count: 8)
    w.writeUE(UInt32(s.seqParameterSetID))
    if SequenceParameterSet.hasChromaInfo(profileIdc: s.profileIdc) {
        w.writeUE(UInt32(s.chromaFormatIdc))
        if s.chromaFormatIdc == 3 { w.writeFlag(s.separateColourPlaneFlag) }
        w.writeUE(UInt32(s.bitDepthLumaMinus8))
        w.writeUE(UInt32(s.bitDepthChromaMinus8))
        w.writeFlag(s.qpprimeYZeroTransformBypassFlag)
        w.writeFlag(s.seqScalingMatrixPresentFlag)
        if s.seqScalingMatrixPresentFlag { writeScalingLists(scaling, into: &w) }
    }
    w.writeUE(UInt32(s.log2MaxFrameNumMinus4))
    w.writeUE(UInt32(s.picOrderCntType))
    if s.picOrderCntType == 0 {
        w.writeUE(UInt32(s.log2MaxPicOrderCntLsbMinus4))
    } else if s.picOrderCntType == 1 {
        w.writeFlag(s.deltaPicOrderAlwaysZeroFlag)
        w.writeSE(s.offsetForNonRefPic)
        w.writeSE(s.offsetForTopToBottomField)
        w.writeUE(UInt32(s.numRefFramesInPicOrderCntCycle))
        for offset in s.offsetForRefFrame { w.writeSE(offset) }
    }
    w.writeUE(UInt32(s.maxNumRefFrames))
    w.writeFlag(s.gapsInFrameNumValueAllowedFlag)
    w.writeUE(UInt32(s.picWidthInMbsMinus1))
    w.writeUE(UInt32(s.picHeightInMapUnitsMinus1))
    w.writeFlag(s.frameMbsOnlyFlag)
    if !s.frameMbsOnlyFlag { w.writeFlag(s.mbAdaptiveFrameFieldFlag) }
    w.writeFlag(s.direct8x8InferenceFlag)
    w.writeFlag(s.frameCroppingFlag)
    if s.frameCroppingFlag {
        for offset in [s.frameCropLeftOffset, s.frameCropRightOffset, s.frameCropTopOffset, s.frameCropBottomOffset] {
            w.writeUE(UInt32(offset))
        }
    }
    w.writeFlag(s.vuiParametersPresentFlag)
    if let vui = s.vui { writeVUI(vui, into: &w) }
}

func writeHRD(_ h: HRDParameters, into w: inout BitWriter) {
    w.writeUE(UInt32(h.cpbCntMinus1))
    w.writeBits(UInt32(h.bitRateScale), count: 4)
    w.writeBits(UInt32(h.cpbSizeScale), count: 4)
    for spec in h.cpbSpecifications {
        w.writeUE(spec.bitRateValueMinus1)
        w.writeUE(spec.cpbSizeValueMinus1)
        w.writeFlag(spec.cbrFlag)
    }
    w.writeBits(UInt32(h.initialCpbRemovalDelayLengthMinus1), count: 5)
    w.writeBits(UInt32(h.cpbRemovalDelayLengthMinus1), count: 5)
    w.writeBits(UInt32(h.dpbOutputDelayLengthMinus1), count: 5)
    w.writeBits(UInt32(h.timeOffsetLength), count: 5)
}

func writeVUI(_ v: VUIParameters, into w: inout BitWriter) {
    w.writeFlag(v.aspectRatioInfoPresentFlag)
    if v.aspectRatioInfoPresentFlag {
        w.writeBits(UInt32(v.aspectRatioIdc), count: 8)
        if v.aspectRatioIdc == 255 {
            w.writeBits(UInt32(v.sarWidth), count: 16)
            w.writeBits(UInt32(v.sarHeight), count: 16)
        }
    }
    w.writeFlag(v.overscanInfoPresentFlag)
    if v.overscanInfoPresentFlag { w.writeFlag(v.overscanAppropriateFlag) }
    w.writeFlag(v.videoSignalTypePresentFlag)
    if v.videoSignalTypePresentFlag {
        w.writeBits(UInt32(v.videoFormat), count: 3)
        w.writeFlag(v.videoFullRangeFlag)
        w.writeFlag(v.colourDescriptionPresentFlag)
        if v.colourDescriptionPresentFlag {
            w.writeBits(UInt32(v.colourPrimaries), count: 8)
            w.writeBits(UInt32(v.transferCharacteristics), count: 8)
            w.writeBits(UInt32(v.matrixCoefficients), count: 8)
        }
    }
    w.writeFlag(v.chromaLocInfoPresentFlag)
    if v.chromaLocInfoPresentFlag {
        w.writeUE(UInt32(v.chromaSampleLocTypeTopField))
        w.writeUE(UInt32(v.chromaSampleLocTypeBottomField))
    }
    w.writeFlag(v.timingInfoPresentFlag)
    if v.timingInfoPresentFlag {
        w.writeBits(v.numUnitsInTick, count: 32)
        w.writeBits(v.timeScale, count: 32)
        w.writeFlag(v.fixedFrameRateFlag)
    }
    w.writeFlag(v.nalHrdParametersPresentFlag)
    if let h = v.nalHrdParameters { writeHRD(h, into: &w) }
    w.writeFlag(v.vclHrdParametersPresentFlag)
    if let h = v.vclHrdParameters { writeHRD(h, into: &w) }
    if v.nalHrdParametersPresentFlag || v.vclHrdParametersPresentFlag { w.writeFlag(v.lowDelayHrdFlag) }
    w.writeFlag(v.picStructPresentFlag)
    w.writeFlag(v.bitstreamRestrictionFlag)
    if v.bitstreamRestrictionFlag {
        w.writeFlag(v.motionVectorsOverPicBoundariesFlag)
        w.writeUE(UInt32(v.maxBytesPerPicDenom))
        w.writeUE(UInt32(v.maxBitsPerMbDenom))
        w.writeUE(UInt32(v.log2MaxMvLengthHorizontal))
        w.writeUE(UInt32(v.log2MaxMvLengthVertical))
        w.writeUE(UInt32(v.maxNumReorderFrames ?? 0))
        w.writeUE(UInt32(v.maxDecFrameBuffering ?? 0))
    }
}

/// A complete escaped SPS NAL unit for `s`.
func spsNAL(_ s: SequenceParameterSet, scaling: [ScalingListSpec] = [], trailing: [UInt8] = []) -> [UInt8] {
    var w = BitWriter()
    writeSPSData(s, scaling: scaling, into: &w)
    w.writeRBSPTrailingBits()
    return [0x67] + RBSP.insertEmulationPrevention(w.bytes + trailing)
}

/// The parameter sets of a test picture: pic_parameter_set_rbsp() fields from `p`.
func ppsNAL(
    _ p: PictureParameterSet, sps: SequenceParameterSet, scaling: [ScalingListSpec] = [], withTail: Bool = true
) -> [UInt8] {
    var w = BitWriter()
    w.writeUE(UInt32(p.picParameterSetID))
    w.writeUE(UInt32(p.seqParameterSetID))
    w.writeFlag(p.entropyCodingModeFlag)
    w.writeFlag(p.bottomFieldPicOrderInFramePresentFlag)
    w.writeUE(UInt32(p.numSliceGroupsMinus1))
    if p.numSliceGroupsMinus1 > 0 {
        w.writeUE(UInt32(p.sliceGroupMapType))
        switch p.sliceGroupMapType {
        case 0: for run in p.runLengthMinus1 { w.writeUE(UInt32(run)) }
        case 2:
            for (tl, br) in zip(p.topLeft, p.bottomRight) {
                w.writeUE(UInt32(tl))
                w.writeUE(UInt32(br))
            }
        case 3, 4, 5:
            w.writeFlag(p.sliceGroupChangeDirectionFlag)
            w.writeUE(UInt32(p.sliceGroupChangeRateMinus1))
        case 6:
            w.writeUE(UInt32(p.picSizeInMapUnitsMinus1))
            let bits = PictureParameterSet.ceilLog2(p.numSliceGroupsMinus1 + 1)
            for id in p.sliceGroupID { w.writeBits(UInt32(id), count: bits) }
        default: break
        }
    }
    w.writeUE(UInt32(p.numRefIdxL0DefaultActiveMinus1))
    w.writeUE(UInt32(p.numRefIdxL1DefaultActiveMinus1))
    w.writeFlag(p.weightedPredFlag)
    w.writeBits(UInt32(p.weightedBipredIdc), count: 2)
    w.writeSE(Int32(p.picInitQpMinus26))
    w.writeSE(Int32(p.picInitQsMinus26))
    w.writeSE(Int32(p.chromaQpIndexOffset))
    w.writeFlag(p.deblockingFilterControlPresentFlag)
    w.writeFlag(p.constrainedIntraPredFlag)
    w.writeFlag(p.redundantPicCntPresentFlag)
    if withTail {
        w.writeFlag(p.transform8x8ModeFlag)
        w.writeFlag(p.picScalingMatrixPresentFlag)
        if p.picScalingMatrixPresentFlag { writeScalingLists(scaling, into: &w) }
        w.writeSE(Int32(p.secondChromaQpIndexOffset))
    }
    w.writeRBSPTrailingBits()
    return [0x68] + RBSP.insertEmulationPrevention(w.bytes)
}

func baselineSPS() -> SequenceParameterSet {
    var s = SequenceParameterSet()
    s.profileIdc = 66
    s.constraintSet0Flag = true
    s.constraintSet1Flag = true
    s.levelIdc = 30
    s.seqParameterSetID = 0
    s.log2MaxFrameNumMinus4 = 0
    s.picOrderCntType = 2
    s.maxNumRefFrames = 1
    s.picWidthInMbsMinus1 = 21
    s.picHeightInMapUnitsMinus1 = 17
    s.frameMbsOnlyFlag = true
    s.direct8x8InferenceFlag = true
    return s
}

func parsedSPS(_ nal: [UInt8]) throws -> SequenceParameterSet {
    try SequenceParameterSet.parse(nalUnit: nal)
}

// MARK: - Tests

@Suite("ParameterSetTests")
struct ParameterSetTests {
    @Test func constrainedBaselineCIF() throws {
        let s = baselineSPS()
        let parsed = try parsedSPS(spsNAL(s))
        #expect(parsed == s)
        #expect(parsed.codedWidth == 352 && parsed.codedHeight == 288)
        #expect(parsed.displayWidth == 352 && parsed.displayHeight == 288)
        #expect(parsed.profile == .constrainedBaseline)
        #expect(parsed.gstreamerProfileName == "constrained-baseline")
        #expect(parsed.levelName == "3")
        #expect(parsed.maxFrameNum == 16)
        #expect(parsed.chromaArrayType == 1)
        #expect(parsed.subWidthC == 2 && parsed.subHeightC == 2)
        // Level 3: MaxDpbMbs 8100 / 396 = 20 -> 16.
        #expect(parsed.maxDpbFramesFromLevel == 16)
        #expect(parsed.maxDpbFrames == 16)
        var plain = s
        plain.constraintSet1Flag = false
        #expect(try parsedSPS(spsNAL(plain)).gstreamerProfileName == "baseline")
    }

    @Test func levelNamesAndDpbSize() throws {
        var s = baselineSPS()
        s.levelIdc = 11
        s.constraintSet3Flag = true
        #expect(s.levelName == "1b")
        #expect(s.maxDpbMbs == 396)
        s.profileIdc = 100
        #expect(s.levelName == "1.1")
        s.levelIdc = 9
        #expect(s.levelName == "1b")
        s.levelIdc = 31
        #expect(s.levelName == "3.1")
        s.levelIdc = 40
        #expect(s.levelName == "4")
        s.levelIdc = 41
        s.picWidthInMbsMinus1 = 119
        s.picHeightInMapUnitsMinus1 = 67
        // 1920x1088 at level 4.1: 32768 / 8160 = 4.
        #expect(s.maxDpbFramesFromLevel == 4)
        s.maxNumRefFrames = 5
        #expect(s.maxDpbFrames == 5)
        s.vui = VUIParameters()
        s.vui?.bitstreamRestrictionFlag = true
        s.vui?.maxDecFrameBuffering = 2
        #expect(s.maxDpbFrames == 5)
        s.maxNumRefFrames = 1
        #expect(s.maxDpbFrames == 2)
        s.levelIdc = 7
        #expect(s.levelName == nil)
    }

    @Test func highProfileWithScalingListsAndFallBack() throws {
        var s = SequenceParameterSet()
        s.profileIdc = 100
        s.levelIdc = 40
        s.seqParameterSetID = 3
        s.chromaFormatIdc = 1
        s.seqScalingMatrixPresentFlag = true
        s.log2MaxFrameNumMinus4 = 5
        s.picOrderCntType = 0
        s.log2MaxPicOrderCntLsbMinus4 = 6
        s.maxNumRefFrames = 4
        s.picWidthInMbsMinus1 = 79
        s.picHeightInMapUnitsMinus1 = 44
        s.direct8x8InferenceFlag = true
        let custom4x4: [UInt8] = (0..<16).map { UInt8(10 + $0 * 3) }
        let custom8x8: [UInt8] = (0..<64).map { UInt8(200 - $0 * 2) }
        let scaling: [ScalingListSpec] = [
            .values(custom4x4), // 0: Intra Y
            .absent, // 1: falls back to list 0
            .useDefault, // 2: Default_4x4_Intra
            .absent, // 3: Default_4x4_Inter (rule A)
            .values(custom4x4.reversed()), // 4
            .absent, // 5: falls back to list 4
            .absent, // 6: Default_8x8_Intra
            .values(custom8x8) // 7: Inter Y 8x8
        ]
        let parsed = try parsedSPS(spsNAL(s, scaling: scaling))
        let m = parsed.scalingMatrix
        #expect(m.scalingList4x4[0] == custom4x4)
        #expect(m.scalingList4x4[1] == custom4x4)
        #expect(m.scalingList4x4[2] == ScalingMatrix.default4x4Intra)
        #expect(m.scalingList4x4[3] == ScalingMatrix.default4x4Inter)
        #expect(m.scalingList4x4[4] == Array(custom4x4.reversed()))
        #expect(m.scalingList4x4[5] == Array(custom4x4.reversed()))
        #expect(m.scalingList8x8[0] == ScalingMatrix.default8x8Intra)
        #expect(m.scalingList8x8[1] == custom8x8)
        // Not transmitted for 4:2:0; fall-back gives the Y lists.
        #expect(m.scalingList8x8[2] == ScalingMatrix.default8x8Intra)
        #expect(m.scalingList8x8[3] == custom8x8)
        #expect(m.listPresentMask == 0b1001_0101)
        #expect(m.useDefaultMask == 0b100)
        var expected = s
        expected.scalingMatrix = m
        #expect(parsed == expected)
        #expect(parsed.gstreamerProfileName == "high")
        #expect(parsed.maxFrameNum == 512)
        #expect(parsed.maxPicOrderCntLsb == 1024)
        #expect(parsed.displayWidth == 1280 && parsed.displayHeight == 720)
        // Raster conversion: zig-zag index 2 is raster position 4.
        #expect(m.rasterOrder4x4(0)[4] == custom4x4[2])
        #expect(m.rasterOrder8x8(1)[8] == custom8x8[2])

        // A list that repeats its last value (nextScale 0 after j > 0).
        var w = BitWriter()
        w.writeSE(4) // 12
        w.writeSE(-12) // nextScale 0 -> repeat 12 for the rest
        try w.bytes.withUnsafeBytes { raw in
            var r = BitReader(raw)
            let (list, useDefault) = try ScalingMatrix.parseList(&r, size: 16)
            #expect(list == [UInt8](repeating: 12, count: 16))
            #expect(!useDefault)
        }
    }

    @Test func high444With12ListsAndHighBitDepth() throws {
        var s = SequenceParameterSet()
        s.profileIdc = 244
        s.levelIdc = 51
        s.chromaFormatIdc = 3
        s.separateColourPlaneFlag = false
        s.bitDepthLumaMinus8 = 2
        s.bitDepthChromaMinus8 = 4
        s.qpprimeYZeroTransformBypassFlag = true
        s.seqScalingMatrixPresentFlag = true
        s.picOrderCntType = 2
        s.picWidthInMbsMinus1 = 39
        s.picHeightInMapUnitsMinus1 = 29
        let listA: [UInt8] = (0..<64).map { UInt8(16 + $0) }
        var scaling = [ScalingListSpec](repeating: .absent, count: 12)
        scaling[8] = .values(listA) // Intra Cb 8x8
        scaling[11] = .useDefault // Inter Cr 8x8
        let parsed = try parsedSPS(spsNAL(s, scaling: scaling))
        let m = parsed.scalingMatrix
        #expect(m.scalingList4x4[0] == ScalingMatrix.default4x4Intra)
        #expect(m.scalingList8x8[2] == listA)
        #expect(m.scalingList8x8[4] == listA) // Intra Cr falls back to Intra Cb
        #expect(m.scalingList8x8[3] == ScalingMatrix.default8x8Inter) // Inter Cb -> Inter Y -> default
        #expect(m.scalingList8x8[5] == ScalingMatrix.default8x8Inter)
        var expected = s
        expected.scalingMatrix = m
        #expect(parsed == expected)
        #expect(parsed.gstreamerProfileName == "high-4:4:4")
        #expect(parsed.subWidthC == 1 && parsed.subHeightC == 1)
        #expect(parsed.bitDepthLuma == 10 && parsed.bitDepthChroma == 12)

        var separate = s
        separate.seqScalingMatrixPresentFlag = false
        separate.separateColourPlaneFlag = true
        separate.frameCroppingFlag = true
        separate.frameCropRightOffset = 3 // CropUnitX = 1 for ChromaArrayType 0
        let parsedSeparate = try parsedSPS(spsNAL(separate))
        #expect(parsedSeparate == separate)
        #expect(parsedSeparate.chromaArrayType == 0)
        #expect(parsedSeparate.displayWidth == 640 - 3)
    }

    @Test func profileNamesFollowGStreamer() {
        func name(_ idc: Int, _ flags: (Bool, Bool, Bool, Bool) = (false, false, false, false)) -> String? {
            H264Profile(
                profileIdc: idc, constraintSet1Flag: flags.0, constraintSet3Flag: flags.1,
                constraintSet4Flag: flags.2, constraintSet5Flag: flags.3
            ).gstreamerName
        }
        #expect(name(77) == "main")
        #expect(name(88) == "extended")
        #expect(name(100, (false, false, true, true)) == "constrained-high")
        #expect(name(100, (false, false, true, false)) == "progressive-high")
        #expect(name(110) == "high-10")
        #expect(name(110, (false, true, false, false)) == "high-10-intra")
        #expect(name(122) == "high-4:2:2")
        #expect(name(122, (false, true, false, false)) == "high-4:2:2-intra")
        #expect(name(244, (false, true, false, false)) == "high-4:4:4-intra")
        #expect(name(44) == "cavlc-4:4:4-intra")
        #expect(name(83) == "scalable-baseline")
        #expect(name(86) == "scalable-high")
        #expect(name(118) == "multiview-high")
        #expect(name(128) == "stereo-high")
        #expect(name(1) == nil)
    }

    @Test func interlacedCroppingAndPOCType1() throws {
        var s = SequenceParameterSet()
        s.profileIdc = 77
        s.levelIdc = 40
        s.seqParameterSetID = 31
        s.log2MaxFrameNumMinus4 = 12
        s.picOrderCntType = 1
        s.deltaPicOrderAlwaysZeroFlag = false
        s.offsetForNonRefPic = -Int32.max
        s.offsetForTopToBottomField = 7
        s.numRefFramesInPicOrderCntCycle = 255
        s.offsetForRefFrame = (0..<255).map { Int32($0 % 2 == 0 ? $0 : -$0) }
        s.maxNumRefFrames = 16
        s.gapsInFrameNumValueAllowedFlag = true
        s.picWidthInMbsMinus1 = 119
        s.picHeightInMapUnitsMinus1 = 33 // 34 map units = 68 MB rows as field pairs
        s.frameMbsOnlyFlag = false
        s.mbAdaptiveFrameFieldFlag = true
        s.direct8x8InferenceFlag = true
        s.frameCroppingFlag = true
        s.frameCropBottomOffset = 2 // CropUnitY = 2 * 2 = 4 -> 8 rows
        s.frameCropLeftOffset = 1
        let parsed = try parsedSPS(spsNAL(s))
        #expect(parsed == s)
        #expect(parsed.frameHeightInMbs == 68)
        #expect(parsed.codedHeight == 1088)
        #expect(parsed.cropUnitX == 2 && parsed.cropUnitY == 4)
        let crop = parsed.cropRect
        #expect(crop.x == 2 && crop.y == 0 && crop.width == 1918 && crop.height == 1080)
        #expect(parsed.maxFrameNum == 65536)
        #expect(parsed.expectedDeltaPerPicOrderCntCycle == s.offsetForRefFrame.reduce(0) { $0 + Int64($1) })
        #expect(parsed.gstreamerProfileName == "main")

        // Cropping everything away is rejected.
        var bad = s
        bad.frameCropTopOffset = 270
        #expect(throws: H264Error.self) { try parsedSPS(spsNAL(bad)) }
        var bad2 = s
        bad2.frameCropRightOffset = 959
        #expect(throws: H264Error.self) { try parsedSPS(spsNAL(bad2)) }
    }

    @Test func vuiWithTimingHRDAndBitstreamRestriction() throws {
        var s = baselineSPS()
        s.profileIdc = 100
        s.constraintSet1Flag = false
        s.vuiParametersPresentFlag = true
        var vui = VUIParameters()
        vui.aspectRatioInfoPresentFlag = true
        vui.aspectRatioIdc = 255
        vui.sarWidth = 64
        vui.sarHeight = 45
        vui.overscanInfoPresentFlag = true
        vui.overscanAppropriateFlag = true
        vui.videoSignalTypePresentFlag = true
        vui.videoFormat = 2
        vui.videoFullRangeFlag = true
        vui.colourDescriptionPresentFlag = true
        vui.colourPrimaries = 1
        vui.transferCharacteristics = 1
        vui.matrixCoefficients = 1
        vui.chromaLocInfoPresentFlag = true
        vui.chromaSampleLocTypeTopField = 2
        vui.chromaSampleLocTypeBottomField = 5
        vui.timingInfoPresentFlag = true
        vui.numUnitsInTick = 1001
        vui.timeScale = 60000
        vui.fixedFrameRateFlag = true
        var nal = HRDParameters()
        nal.cpbCntMinus1 = 31
        nal.bitRateScale = 4
        nal.cpbSizeScale = 3
        nal.cpbSpecifications = (0..<32).map {
            .init(bitRateValueMinus1: UInt32($0 * 1000), cpbSizeValueMinus1: UInt32.max - 1, cbrFlag: $0 % 3 == 0)
        }
        nal.initialCpbRemovalDelayLengthMinus1 = 17
        nal.cpbRemovalDelayLengthMinus1 = 9
        nal.dpbOutputDelayLengthMinus1 = 4
        nal.timeOffsetLength = 0
        vui.nalHrdParametersPresentFlag = true
        vui.nalHrdParameters = nal
        var vcl = HRDParameters()
        vcl.cpbSpecifications = [.init(bitRateValueMinus1: 5, cpbSizeValueMinus1: 6, cbrFlag: true)]
        vui.vclHrdParametersPresentFlag = true
        vui.vclHrdParameters = vcl
        vui.lowDelayHrdFlag = true
        vui.picStructPresentFlag = true
        vui.bitstreamRestrictionFlag = true
        vui.motionVectorsOverPicBoundariesFlag = false
        vui.maxBytesPerPicDenom = 0
        vui.maxBitsPerMbDenom = 16
        vui.log2MaxMvLengthHorizontal = 15
        vui.log2MaxMvLengthVertical = 13
        vui.maxNumReorderFrames = 2
        vui.maxDecFrameBuffering = 4
        s.vui = vui
        let parsed = try parsedSPS(spsNAL(s))
        #expect(parsed == s)
        let pv = try #require(parsed.vui)
        #expect(pv.sampleAspectRatio! == (64, 45))
        #expect(pv.frameRate == FrameRate(60000, 2002))
        #expect(pv.frameRate?.reduced == FrameRate(30000, 1001))
        #expect(abs(pv.framesPerSecond! - 29.97) < 0.01)
        #expect(pv.cpbDpbDelaysPresentFlag)
        #expect(pv.nalHrdParameters?.bitRate(1) == 1001 << 10)
        #expect(parsed.maxDpbFrames == 4)

        var table = VUIParameters()
        table.aspectRatioInfoPresentFlag = true
        table.aspectRatioIdc = 14
        #expect(table.sampleAspectRatio! == (4, 3))
        table.aspectRatioIdc = 17
        #expect(table.sampleAspectRatio == nil)
    }

    @Test func trailingDataAcceptedTruncationRejected() throws {
        var s = baselineSPS()
        s.vuiParametersPresentFlag = true
        var vui = VUIParameters()
        vui.timingInfoPresentFlag = true
        vui.numUnitsInTick = 1
        vui.timeScale = 50
        s.vui = vui
        let nal = spsNAL(s)
        #expect(try parsedSPS(spsNAL(s, trailing: [0, 0, 0, 0x12, 0x34])) == s)
        for length in 0..<nal.count {
            #expect(throws: H264Error.self) { try parsedSPS(Array(nal[0..<length])) }
        }
        // Not an SPS.
        #expect(throws: H264Error.invalidValue(field: "nal_unit_type", value: 8)) {
            try parsedSPS([0x68] + nal.dropFirst())
        }
    }

    @Test func outOfRangeFieldsAreRejected() throws {
        func rejects(_ field: String, _ change: (inout SequenceParameterSet) -> Void) {
            var s = baselineSPS()
            change(&s)
            #expect(throws: H264Error.self, "\(field)") { try parsedSPS(spsNAL(s)) }
        }
        rejects("seq_parameter_set_id") { $0.seqParameterSetID = 32 }
        rejects("log2_max_frame_num_minus4") { $0.log2MaxFrameNumMinus4 = 13 }
        rejects("pic_order_cnt_type") { $0.picOrderCntType = 3 }
        rejects("max_num_ref_frames") { $0.maxNumRefFrames = 17 }
        rejects("pic_width_in_mbs_minus1") { $0.picWidthInMbsMinus1 = 1 << 30 }
        rejects("pic_height_in_map_units_minus1") { $0.picHeightInMapUnitsMinus1 = 1 << 30 }
        rejects("bit_depth_luma_minus8") {
            $0.profileIdc = 110
            $0.bitDepthLumaMinus8 = 7
        }
        rejects("chroma_format_idc") {
            $0.profileIdc = 100
            $0.chromaFormatIdc = 4
        }
        rejects("num_ref_frames_in_pic_order_cnt_cycle") {
            $0.picOrderCntType = 1
            $0.numRefFramesInPicOrderCntCycle = 256
            $0.offsetForRefFrame = Array(repeating: 1, count: 256)
        }
    }

    @Test func randomBytesNeverTrap() {
        var generator = SeededGenerator(seed: 99)
        let base = spsNAL(baselineSPS())
        var parsedCount = 0
        for _ in 0..<3000 {
            var bytes = base
            // Flip bits, or use pure noise.
            if Bool.random(using: &generator) {
                for _ in 0..<Int.random(in: 1...4, using: &generator) {
                    let i = Int.random(in: 1..<bytes.count, using: &generator)
                    bytes[i] ^= UInt8(1) << UInt8.random(in: 0...7, using: &generator)
                }
            } else {
                bytes =
                    [0x67]
                    + (0..<Int.random(in: 0...64, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }
            }
            if let sps = try? parsedSPS(bytes) {
                parsedCount += 1
                _ = (sps.displayWidth, sps.displayHeight, sps.maxDpbFrames, sps.levelName)
                let pps = PictureParameterSet()
                var ppsBytes = ppsNAL(pps, sps: sps)
                ppsBytes[1] ^= UInt8.random(in: 0...255, using: &generator)
                _ = try? PictureParameterSet.parse(nalUnit: ppsBytes, sequenceParameterSets: { _ in sps })
            }
            _ = try? SubsetSequenceParameterSet.parse(nalUnit: [0x6F] + bytes.dropFirst())
            _ = try? PictureParameterSet.parse(
                nalUnit: [0x68] + bytes.dropFirst(), sequenceParameterSets: { _ in baselineSPS() })
        }
        #expect(parsedCount > 0)
    }

    // MARK: PPS

    @Test func ppsWithTransform8x8AndScalingFallBackRuleB() throws {
        var s = baselineSPS()
        s.profileIdc = 100
        s.seqParameterSetID = 2
        s.seqScalingMatrixPresentFlag = true
        let sequence4x4: [UInt8] = (0..<16).map { UInt8(20 + $0) }
        let spsNal = spsNAL(
            s, scaling: [.values(sequence4x4), .absent, .absent, .absent, .absent, .absent, .useDefault, .absent])
        let sps = try parsedSPS(spsNal)
        var p = PictureParameterSet()
        p.picParameterSetID = 255
        p.seqParameterSetID = 2
        p.entropyCodingModeFlag = true
        p.bottomFieldPicOrderInFramePresentFlag = true
        p.numRefIdxL0DefaultActiveMinus1 = 31
        p.numRefIdxL1DefaultActiveMinus1 = 3
        p.weightedPredFlag = true
        p.weightedBipredIdc = 2
        p.picInitQpMinus26 = -26
        p.picInitQsMinus26 = 25
        p.chromaQpIndexOffset = -12
        p.deblockingFilterControlPresentFlag = true
        p.constrainedIntraPredFlag = true
        p.redundantPicCntPresentFlag = true
        p.transform8x8ModeFlag = true
        p.picScalingMatrixPresentFlag = true
        p.secondChromaQpIndexOffset = 12
        let own8x8: [UInt8] = (0..<64).map { UInt8(30 + $0) }
        let nal = ppsNAL(
            p, sps: sps, scaling: [.absent, .absent, .absent, .useDefault, .absent, .absent, .absent, .values(own8x8)])
        let parsed = try PictureParameterSet.parse(nalUnit: nal, sequenceParameterSets: { $0 == 2 ? sps : nil })
        // Rule B: list 0 falls back to the SPS list 0, list 6 to the SPS list 6.
        #expect(parsed.scalingMatrix.scalingList4x4[0] == sequence4x4)
        #expect(parsed.scalingMatrix.scalingList4x4[2] == sequence4x4)
        #expect(parsed.scalingMatrix.scalingList4x4[3] == ScalingMatrix.default4x4Inter)
        #expect(parsed.scalingMatrix.scalingList8x8[0] == ScalingMatrix.default8x8Intra)
        #expect(parsed.scalingMatrix.scalingList8x8[1] == own8x8)
        var expected = p
        expected.scalingMatrix = parsed.scalingMatrix
        #expect(parsed == expected)

        let ids = try nal.withUnsafeBytes { try PictureParameterSet.peekIDs(nalUnit: $0) }
        #expect(ids.ppsID == 255 && ids.spsID == 2)

        #expect(throws: H264Error.missingParameterSet(kind: "SPS", id: 2)) {
            try PictureParameterSet.parse(nalUnit: nal, sequenceParameterSets: { _ in nil })
        }
    }

    @Test func ppsWithoutTailDefaults() throws {
        let sps = baselineSPS()
        var p = PictureParameterSet()
        p.chromaQpIndexOffset = 5
        p.secondChromaQpIndexOffset = 5
        let parsed = try PictureParameterSet.parse(
            nalUnit: ppsNAL(p, sps: sps, withTail: false), sequenceParameterSets: { _ in sps })
        #expect(parsed == p)
        #expect(!parsed.transform8x8ModeFlag)
        #expect(parsed.scalingMatrix == .flat)
    }

    @Test func ppsSliceGroupsAllMapTypes() throws {
        let sps = baselineSPS() // 22 x 18 = 396 map units
        var p = PictureParameterSet()
        p.numSliceGroupsMinus1 = 2
        for type in 0...6 {
            var q = p
            q.sliceGroupMapType = type
            switch type {
            case 0: q.runLengthMinus1 = [10, 20, 395]
            case 2:
                q.topLeft = [0, 23]
                q.bottomRight = [45, 100]
            case 3, 4, 5:
                q.sliceGroupChangeDirectionFlag = true
                q.sliceGroupChangeRateMinus1 = 395
            case 6:
                q.picSizeInMapUnitsMinus1 = 395
                q.sliceGroupID = (0..<396).map { UInt8($0 % 3) }
            default: break
            }
            let parsed = try PictureParameterSet.parse(
                nalUnit: ppsNAL(q, sps: sps), sequenceParameterSets: { _ in sps })
            #expect(parsed == q, "slice_group_map_type \(type)")
        }
        var bad = p
        bad.sliceGroupMapType = 0
        bad.runLengthMinus1 = [10, 396, 1]
        #expect(throws: H264Error.invalidValue(field: "run_length_minus1", value: 396)) {
            try PictureParameterSet.parse(nalUnit: ppsNAL(bad, sps: sps), sequenceParameterSets: { _ in sps })
        }
        bad = p
        bad.sliceGroupMapType = 2
        bad.topLeft = [50, 0]
        bad.bottomRight = [45, 1]
        #expect(throws: H264Error.self) {
            try PictureParameterSet.parse(nalUnit: ppsNAL(bad, sps: sps), sequenceParameterSets: { _ in sps })
        }
        bad = p
        bad.sliceGroupMapType = 6
        bad.picSizeInMapUnitsMinus1 = 1_000_000
        bad.sliceGroupID = [0]
        #expect(throws: H264Error.self) {
            try PictureParameterSet.parse(nalUnit: ppsNAL(bad, sps: sps), sequenceParameterSets: { _ in sps })
        }
        bad = p
        bad.numSliceGroupsMinus1 = 8
        #expect(throws: H264Error.invalidValue(field: "num_slice_groups_minus1", value: 8)) {
            try PictureParameterSet.parse(nalUnit: ppsNAL(bad, sps: sps), sequenceParameterSets: { _ in sps })
        }
    }

    // MARK: Corpus

    @Test(.requiresCorpus) func corpusSequenceParameterSetsMatchManifest() throws {
        guard let manifest = Corpus.manifest() else { return }
        #expect(manifest.count >= 20)
        for entry in manifest {
            let bytes = try #require(Corpus.bytes(of: entry), "cannot read \(entry.file)")
            if entry.file == "sps_subsetsps_bothVUI.264" {
                let subsetNAL = try #require(
                    TestNALUnits.first(ofType: 15, in: bytes), "no subset SPS in \(entry.file)")
                let subset = try SubsetSequenceParameterSet.parse(nalUnit: subsetNAL)
                #expect(subset.isScalable)
                #expect(!subset.isMultiview)
                #expect(subset.profileIdc == 83 || subset.profileIdc == 86)
                #expect(subset.sequenceParameterSetData.gstreamerProfileName == entry.profile)
                #expect(subset.sequenceParameterSetData.displayWidth == entry.width)
                #expect(subset.sequenceParameterSetData.displayHeight == entry.height)
                continue
            }
            let spsNAL = try #require(TestNALUnits.first(ofType: 7, in: bytes), "no SPS in \(entry.file)")
            let sps = try SequenceParameterSet.parse(nalUnit: spsNAL)
            #expect(sps.displayWidth == entry.width, "\(entry.file)")
            #expect(sps.displayHeight == entry.height, "\(entry.file)")
            #expect(sps.gstreamerProfileName == entry.profile, "\(entry.file)")
            #expect(sps.levelName != nil, "\(entry.file)")
            // Every SPS and PPS of the file parses.
            var spsByID: [Int: SequenceParameterSet] = [:]
            for nal in TestNALUnits.split(bytes) {
                let type = nal.first.map { $0 & 0x1F } ?? 0
                if type == 7 {
                    let parsed = try SequenceParameterSet.parse(nalUnit: Array(nal))
                    spsByID[parsed.seqParameterSetID] = parsed
                } else if type == 8 {
                    let pps = try PictureParameterSet.parse(nalUnit: Array(nal), sequenceParameterSets: { spsByID[$0] })
                    #expect(pps.picParameterSetID <= 255)
                }
            }
        }
    }
}
