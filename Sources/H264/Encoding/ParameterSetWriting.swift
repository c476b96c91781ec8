// Writers for what an encoder puts in front of its slices: the SPS (7.3.2.1.1) with its VUI
// (E.1.1, E.1.2), the PPS (7.3.2.2) and the NAL unit around them (7.3.1). They are the inverse
// of the parsers in this module: writing a parsed set gives its RBSP back (the round trip is
// tested), so a backend describes its stream with the same structs the decoder reads.
//
// Not written (the writers refuse rather than write something else): scaling matrices
// (seq_/pic_scaling_matrix_present_flag), slice groups (FMO, num_slice_groups_minus1 > 0).

/// Why a parameter set or slice header cannot be written.
public struct H264WritingError: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

extension SequenceParameterSet {
    /// The SPS's RBSP (seq_parameter_set_data + rbsp_trailing_bits, 7.3.2.1.1), unescaped.
    public func writeRBSP() throws(H264WritingError) -> [UInt8] {
        guard !seqScalingMatrixPresentFlag else {
            throw H264WritingError("SPS writing does not write scaling matrices (seq_scaling_matrix_present_flag)")
        }
        var w = BitWriter()
        w.writeBits(UInt32(clamping: profileIdc), count: 8)
        for flag in [
            constraintSet0Flag, constraintSet1Flag, constraintSet2Flag, constraintSet3Flag, constraintSet4Flag,
            constraintSet5Flag
        ] {
            w.writeFlag(flag)
        }
        w.writeBits(0, count: 2) // reserved_zero_2bits
        w.writeBits(UInt32(clamping: levelIdc), count: 8)
        w.writeUE(UInt32(clamping: seqParameterSetID))
        if Self.hasChromaInfo(profileIdc: profileIdc) {
            w.writeUE(UInt32(clamping: chromaFormatIdc))
            if chromaFormatIdc == 3 { w.writeFlag(separateColourPlaneFlag) }
            w.writeUE(UInt32(clamping: bitDepthLumaMinus8))
            w.writeUE(UInt32(clamping: bitDepthChromaMinus8))
            w.writeFlag(qpprimeYZeroTransformBypassFlag)
            w.writeFlag(false) // seq_scaling_matrix_present_flag
        }
        w.writeUE(UInt32(clamping: log2MaxFrameNumMinus4))
        w.writeUE(UInt32(clamping: picOrderCntType))
        switch picOrderCntType {
        case 0:
            w.writeUE(UInt32(clamping: log2MaxPicOrderCntLsbMinus4))
        case 1:
            w.writeFlag(deltaPicOrderAlwaysZeroFlag)
            w.writeSE(offsetForNonRefPic)
            w.writeSE(offsetForTopToBottomField)
            w.writeUE(UInt32(clamping: offsetForRefFrame.count))
            for offset in offsetForRefFrame { w.writeSE(offset) }
        default:
            break
        }
        w.writeUE(UInt32(clamping: maxNumRefFrames))
        w.writeFlag(gapsInFrameNumValueAllowedFlag)
        w.writeUE(UInt32(clamping: picWidthInMbsMinus1))
        w.writeUE(UInt32(clamping: picHeightInMapUnitsMinus1))
        w.writeFlag(frameMbsOnlyFlag)
        if !frameMbsOnlyFlag { w.writeFlag(mbAdaptiveFrameFieldFlag) }
        w.writeFlag(direct8x8InferenceFlag)
        w.writeFlag(frameCroppingFlag)
        if frameCroppingFlag {
            for offset in [frameCropLeftOffset, frameCropRightOffset, frameCropTopOffset, frameCropBottomOffset] {
                w.writeUE(UInt32(clamping: offset))
            }
        }
        let vuiToWrite = vuiParametersPresentFlag ? vui : nil
        w.writeFlag(vuiToWrite != nil)
        if let vuiToWrite { vuiToWrite.write(to: &w) }
        w.writeRBSPTrailingBits()
        return w.bytes
    }

    /// The whole SPS NAL unit: header byte (nal_ref_idc 3, type 7) + escaped RBSP.
    public func writeNALUnit() throws(H264WritingError) -> [UInt8] {
        H264NALUnitWriter.nalUnit(type: .sequenceParameterSet, nalRefIdc: 3, rbsp: try writeRBSP())
    }
}

extension VUIParameters {
    /// vui_parameters() (E.1.1).
    func write(to w: inout BitWriter) {
        w.writeFlag(aspectRatioInfoPresentFlag)
        if aspectRatioInfoPresentFlag {
            w.writeBits(UInt32(clamping: aspectRatioIdc), count: 8)
            if aspectRatioIdc == SampleAspectRatioTable.extendedSAR {
                w.writeBits(UInt32(clamping: sarWidth), count: 16)
                w.writeBits(UInt32(clamping: sarHeight), count: 16)
            }
        }
        w.writeFlag(overscanInfoPresentFlag)
        if overscanInfoPresentFlag { w.writeFlag(overscanAppropriateFlag) }
        w.writeFlag(videoSignalTypePresentFlag)
        if videoSignalTypePresentFlag {
            w.writeBits(UInt32(clamping: videoFormat), count: 3)
            w.writeFlag(videoFullRangeFlag)
            w.writeFlag(colourDescriptionPresentFlag)
            if colourDescriptionPresentFlag {
                w.writeBits(UInt32(clamping: colourPrimaries), count: 8)
                w.writeBits(UInt32(clamping: transferCharacteristics), count: 8)
                w.writeBits(UInt32(clamping: matrixCoefficients), count: 8)
            }
        }
        w.writeFlag(chromaLocInfoPresentFlag)
        if chromaLocInfoPresentFlag {
            w.writeUE(UInt32(clamping: chromaSampleLocTypeTopField))
            w.writeUE(UInt32(clamping: chromaSampleLocTypeBottomField))
        }
        w.writeFlag(timingInfoPresentFlag)
        if timingInfoPresentFlag {
            w.writeBits(numUnitsInTick, count: 32)
            w.writeBits(timeScale, count: 32)
            w.writeFlag(fixedFrameRateFlag)
        }
        let nal = nalHrdParametersPresentFlag ? nalHrdParameters : nil
        let vcl = vclHrdParametersPresentFlag ? vclHrdParameters : nil
        w.writeFlag(nal != nil)
        if let nal { nal.write(to: &w) }
        w.writeFlag(vcl != nil)
        if let vcl { vcl.write(to: &w) }
        if nal != nil || vcl != nil { w.writeFlag(lowDelayHrdFlag) }
        w.writeFlag(picStructPresentFlag)
        w.writeFlag(bitstreamRestrictionFlag)
        if bitstreamRestrictionFlag {
            w.writeFlag(motionVectorsOverPicBoundariesFlag)
            w.writeUE(UInt32(clamping: maxBytesPerPicDenom))
            w.writeUE(UInt32(clamping: maxBitsPerMbDenom))
            w.writeUE(UInt32(clamping: log2MaxMvLengthHorizontal))
            w.writeUE(UInt32(clamping: log2MaxMvLengthVertical))
            w.writeUE(UInt32(clamping: maxNumReorderFrames ?? 0))
            w.writeUE(UInt32(clamping: maxDecFrameBuffering ?? 0))
        }
    }
}

extension HRDParameters {
    /// hrd_parameters() (E.1.2).
    func write(to w: inout BitWriter) {
        let specifications =
            cpbSpecifications.isEmpty
            ? [CPBSpecification(bitRateValueMinus1: 0, cpbSizeValueMinus1: 0, cbrFlag: false)] : cpbSpecifications
        w.writeUE(UInt32(clamping: specifications.count - 1))
        w.writeBits(UInt32(clamping: bitRateScale), count: 4)
        w.writeBits(UInt32(clamping: cpbSizeScale), count: 4)
        for specification in specifications {
            w.writeUE(specification.bitRateValueMinus1)
            w.writeUE(specification.cpbSizeValueMinus1)
            w.writeFlag(specification.cbrFlag)
        }
        w.writeBits(UInt32(clamping: initialCpbRemovalDelayLengthMinus1), count: 5)
        w.writeBits(UInt32(clamping: cpbRemovalDelayLengthMinus1), count: 5)
        w.writeBits(UInt32(clamping: dpbOutputDelayLengthMinus1), count: 5)
        w.writeBits(UInt32(clamping: timeOffsetLength), count: 5)
    }
}

extension PictureParameterSet {
    /// The PPS's RBSP (7.3.2.2), unescaped.
    public func writeRBSP() throws(H264WritingError) -> [UInt8] {
        guard numSliceGroupsMinus1 == 0 else {
            throw H264WritingError(
                "PPS writing does not write slice groups (num_slice_groups_minus1 \(numSliceGroupsMinus1))")
        }
        guard !picScalingMatrixPresentFlag else {
            throw H264WritingError("PPS writing does not write scaling matrices (pic_scaling_matrix_present_flag)")
        }
        var w = BitWriter()
        w.writeUE(UInt32(clamping: picParameterSetID))
        w.writeUE(UInt32(clamping: seqParameterSetID))
        w.writeFlag(entropyCodingModeFlag)
        w.writeFlag(bottomFieldPicOrderInFramePresentFlag)
        w.writeUE(0) // num_slice_groups_minus1
        w.writeUE(UInt32(clamping: numRefIdxL0DefaultActiveMinus1))
        w.writeUE(UInt32(clamping: numRefIdxL1DefaultActiveMinus1))
        w.writeFlag(weightedPredFlag)
        w.writeBits(UInt32(clamping: weightedBipredIdc), count: 2)
        w.writeSE(Int32(clamping: picInitQpMinus26))
        w.writeSE(Int32(clamping: picInitQsMinus26))
        w.writeSE(Int32(clamping: chromaQpIndexOffset))
        w.writeFlag(deblockingFilterControlPresentFlag)
        w.writeFlag(constrainedIntraPredFlag)
        w.writeFlag(redundantPicCntPresentFlag)
        // The optional tail (more_rbsp_data()) only when it says something the defaults do not.
        if transform8x8ModeFlag || secondChromaQpIndexOffset != chromaQpIndexOffset {
            w.writeFlag(transform8x8ModeFlag)
            w.writeFlag(false) // pic_scaling_matrix_present_flag
            w.writeSE(Int32(clamping: secondChromaQpIndexOffset))
        }
        w.writeRBSPTrailingBits()
        return w.bytes
    }

    /// The whole PPS NAL unit: header byte (nal_ref_idc 3, type 8) + escaped RBSP.
    public func writeNALUnit() throws(H264WritingError) -> [UInt8] {
        H264NALUnitWriter.nalUnit(type: .pictureParameterSet, nalRefIdc: 3, rbsp: try writeRBSP())
    }
}

/// nal_unit() around an RBSP (7.3.1).
public enum H264NALUnitWriter {
    /// The NAL unit header byte: forbidden_zero_bit 0, nal_ref_idc, nal_unit_type.
    public static func headerByte(type: NALUnitType, nalRefIdc: UInt8) -> UInt8 {
        (min(nalRefIdc, 3) << 5) | type.rawValue
    }

    /// Header byte + the RBSP with emulation prevention (7.4.1).
    public static func nalUnit(type: NALUnitType, nalRefIdc: UInt8, rbsp: [UInt8]) -> [UInt8] {
        [headerByte(type: type, nalRefIdc: nalRefIdc)] + RBSP.insertEmulationPrevention(rbsp)
    }
}
