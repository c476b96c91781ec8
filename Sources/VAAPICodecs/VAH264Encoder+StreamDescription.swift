import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

// The stream's description: the GOP structure, SPS (with VUI) and PPS the VA encoder codes with,
// chosen from the session's properties and the device's offer, and the format description made
// from them (or from the device's own SPS/PPS when it writes its own).

extension VAH264Encoder {
    /// The GOP for `properties` (the table in ``VAH264EncoderFactory/supportedProperties``).
    func chooseStructure(_ properties: CompressionProperties, frameRate: Double) throws(VTError) -> H264GOPStructure {
        var idrPeriod = properties.maxKeyFrameInterval > 0 ? properties.maxKeyFrameInterval : 250
        if properties.maxKeyFrameIntervalDuration > 0 {
            idrPeriod = min(
                idrPeriod, max(1, Int(clampingTowardZero: properties.maxKeyFrameIntervalDuration * frameRate)))
        }
        if !properties.allowTemporalCompression { idrPeriod = 1 }
        if let count = properties.suggestedLookAheadFrameCount {
            // A suggestion (VideoToolbox's SuggestedLookAheadFrameCount): said, not refused.
            notices.append(
                EncoderNotice(
                    property: .suggestedLookAheadFrameCount,
                    message:
                        "VA-API encoders take no look-ahead count; \(count) frames suggested, the device's own rate control applies"
                ))
        }
        var bFrames =
            properties.usesBFrames && !properties.realTime && choice.profileName != .constrainedBaseline
            ? (properties.maxConsecutiveBFrames ?? 2) : 0
        if let delay = properties.maxFrameDelayCount { bFrames = min(bFrames, delay) }
        if bFrames > 0 && options.maxList1References == 0 {
            // The device cannot code B pictures: I/P only. Reordering allowed but not asked for
            // is no property the session failed to honour; B-frames asked for by count are.
            if let asked = properties.maxConsecutiveBFrames {
                let text = "the VA-API device codes no B pictures (its list 1 takes no reference); \(asked) asked for"
                if strict {
                    throw .invalidProperty(
                        .maxConsecutiveBFrames, "\(text), and hardware=require tries nothing else; ask for 0")
                }
                notices.append(EncoderNotice(property: .maxConsecutiveBFrames, message: "\(text): coding I and P only"))
            }
            bFrames = 0
        }
        return H264GOPStructure(idrPeriod: idrPeriod, consecutiveBFrames: bFrames)
    }

    /// The SPS and PPS of the stream, and its format description.
    /// `levelBitRate`: the bit rate the level must allow, when it is not `rateControl`'s (a
    /// multi-pass range coded in constant QP towards a bit rate).
    func describeStream(
        _ properties: CompressionProperties, rateControl: VAH264RateControl, levelBitRate: Int? = nil
    ) throws(VTError) {
        var sps = SequenceParameterSet()
        switch choice.profileName {
        case .constrainedBaseline, .baseline:
            sps.profileIdc = 66
            sps.constraintSet0Flag = true
            sps.constraintSet1Flag = true // A.2.1.1: constrained baseline
        case .main:
            sps.profileIdc = 77
            sps.constraintSet1Flag = true
        // The factory chooses only High of these (no VAProfile for the others).
        case .high, .high10, .high422, .high444Predictive:
            sps.profileIdc = 100
        }
        sps.seqParameterSetID = 0
        sps.chromaFormatIdc = 1
        sps.log2MaxFrameNumMinus4 = structure.log2MaxFrameNum - 4
        sps.picOrderCntType = 0
        sps.log2MaxPicOrderCntLsbMinus4 = structure.log2MaxPicOrderCntLsb - 4
        sps.maxNumRefFrames = structure.maxReferenceFrames
        sps.picWidthInMbsMinus1 = widthInMacroblocks - 1
        sps.picHeightInMapUnitsMinus1 = heightInMacroblocks - 1
        sps.frameMbsOnlyFlag = true
        sps.direct8x8InferenceFlag = true
        // 7.4.2.1.1: the conformance window in chroma units (CropUnitX = CropUnitY = 2 for 4:2:0).
        let right = widthInMacroblocks * 16 - configuration.width
        let bottom = heightInMacroblocks * 16 - configuration.height
        if right > 0 || bottom > 0 {
            sps.frameCroppingFlag = true
            sps.frameCropRightOffset = right / 2
            sps.frameCropBottomOffset = bottom / 2
        }
        var level = properties.profileLevel?.levelIdc
        if level == 9 { level = 11 } // level 1b is written as 1.1 + constraint_set3 for baseline/main
        if properties.profileLevel?.level == "1b", choice.profileName != .high {
            sps.constraintSet3Flag = true
        }
        sps.levelIdc =
            level
            ?? H264LevelLimits.lowestLevel(
                widthInMacroblocks: widthInMacroblocks, heightInMacroblocks: heightInMacroblocks, frameRate: frameRate,
                referenceFrames: structure.maxReferenceFrames,
                bitRate: levelBitRate ?? (rateControl.mode == .cqp ? nil : rateControl.bitsPerSecond),
                high: choice.profileName == .high)
        var vui = VUIParameters()
        let fullRange = properties.fullRange ?? (configuration.pixelFormat == .nv12FullRange)
        let colour =
            properties.colorPrimaries != nil || properties.transferFunction != nil || properties.yCbCrMatrix != nil
        if fullRange || colour {
            vui.videoSignalTypePresentFlag = true
            vui.videoFormat = 5
            vui.videoFullRangeFlag = fullRange
            vui.colourDescriptionPresentFlag = colour
            vui.colourPrimaries = properties.colorPrimaries.map { Int($0.rawValue) } ?? 2
            vui.transferCharacteristics = properties.transferFunction.map { Int($0.rawValue) } ?? 2
            vui.matrixCoefficients = properties.yCbCrMatrix.map { Int($0.rawValue) } ?? 2
        }
        // E.2.1: time_scale / num_units_in_tick is twice the frame rate (two fields per frame).
        let fraction = VAH264EncodeParameters.frameRateFraction(frameRate)
        vui.timingInfoPresentFlag = true
        vui.numUnitsInTick = fraction.denominator
        vui.timeScale = fraction.numerator * 2
        vui.fixedFrameRateFlag = false
        vui.bitstreamRestrictionFlag = true
        vui.motionVectorsOverPicBoundariesFlag = true
        vui.maxBytesPerPicDenom = 0
        vui.maxBitsPerMbDenom = 0
        vui.log2MaxMvLengthHorizontal = 15
        vui.log2MaxMvLengthVertical = 15
        vui.maxNumReorderFrames = structure.maxReorderFrames
        vui.maxDecFrameBuffering = structure.maxReferenceFrames
        sps.vuiParametersPresentFlag = true
        sps.vui = vui

        var pps = PictureParameterSet()
        pps.picParameterSetID = 0
        pps.seqParameterSetID = 0
        let cabacAllowed = choice.profileName == .main || choice.profileName == .high
        pps.entropyCodingModeFlag = cabacAllowed && (properties.entropyMode ?? .cabac) == .cabac && !entropyRefused
        pps.numRefIdxL0DefaultActiveMinus1 = 0
        pps.numRefIdxL1DefaultActiveMinus1 = 0
        // Constant QP: the P pictures' quantizer is the PPS's pic_init_qp (7.4.2.2), I and B
        // pictures differ by slice_qp_delta. Drivers that read only pic_init_qp (older Mesa)
        // then still code at about the QP asked for, not at 26 (FFmpeg's VA encoder does the same).
        pps.picInitQpMinus26 =
            rateControl.mode == .cqp ? rateControl.pictureQuantizer(type: .predicted, forced: nil) - 26 : 0
        pps.deblockingFilterControlPresentFlag = true
        // 8x8 transforms are High profile's main tool (A.2.4).
        pps.transform8x8ModeFlag = choice.profileName == .high
        self.sps = sps
        self.ownSPS = sps
        self.pps = pps
        self.rateControl = rateControl
        try makeFormatDescription()
    }

    func makeFormatDescription() throws(VTError) {
        do {
            streamDescription = try FormatDescription(h264ParameterSets: [sps.writeNALUnit(), pps.writeNALUnit()])
        } catch {
            throw VTError(.encoderFailed, "the SPS/PPS of the VA encoder cannot be written: \(error)")
        }
    }

    /// The parameter sets the device wrote into a coded picture, against the ones the stream is
    /// described with. A device that writes its own (no packed sequence or picture headers), or
    /// regenerates SwiftVT's from the sequence parameters (Mesa, which may leave out the VUI), is
    /// believed: its SPS/PPS become the format description (so avcC and the in-band sets never
    /// disagree), the slice headers it writes are read with them, and what SwiftVT's own had that
    /// the device's lacks is said once.
    func reconcileDeviceParameterSets(_ sets: [[UInt8]]) throws(VTError) {
        let described = streamDescription?.parameterSets ?? []
        var spsBytes = described.first { NALUnitType(rawValue: $0.first ?? 0) == .sequenceParameterSet }
        var ppsBytes = described.first { NALUnitType(rawValue: $0.first ?? 0) == .pictureParameterSet }
        for set in sets {
            switch NALUnitType(rawValue: set.first ?? 0) {
            case .sequenceParameterSet: spsBytes = set
            case .pictureParameterSet: ppsBytes = set
            default: break
            }
        }
        guard let spsBytes, let ppsBytes, [spsBytes, ppsBytes] != described else { return }
        let deviceSPS: SequenceParameterSet
        let devicePPS: PictureParameterSet
        do {
            deviceSPS = try SequenceParameterSet.parse(nalUnit: spsBytes)
            devicePPS = try PictureParameterSet.parse(nalUnit: ppsBytes, sequenceParameterSets: { _ in deviceSPS })
            streamDescription = try FormatDescription(h264ParameterSets: [spsBytes, ppsBytes])
        } catch {
            throw VTError(.encoderFailed, "VA-API: the device's own SPS/PPS cannot be read: \(error)")
        }
        sps = deviceSPS
        pps = devicePPS
        // Said once (the device's sets come again at every IDR picture, and after every
        // prepare, the same).
        let lost = Self.lostSequenceParameters(own: ownSPS, device: deviceSPS)
        guard !lost.isEmpty, lost != reportedLosses else { return }
        reportedLosses = lost
        let colourAsked =
            properties.colorPrimaries != nil || properties.transferFunction != nil
            || properties.yCbCrMatrix != nil || properties.fullRange != nil
            || configuration.pixelFormat == .nv12FullRange
        let colourLost = lost.contains { $0.hasPrefix("video signal type") || $0.hasPrefix("colour description") }
        let property: CompressionPropertyKey? = colourAsked && colourLost ? .colorPrimaries : .expectedFrameRate
        notices.append(
            EncoderNotice(
                property: property,
                message:
                    "the VA-API device wrote its own SPS without \(lost.joined(separator: ", ")); the stream is described by "
                    + "the device's SPS, in the format description and in band alike"))
    }

    /// What SwiftVT's SPS says that the device's does not (or says differently), for people.
    static func lostSequenceParameters(own: SequenceParameterSet, device: SequenceParameterSet) -> [String] {
        var lost: [String] = []
        let ownVUI = own.vuiParametersPresentFlag ? own.vui : nil
        let deviceVUI = device.vuiParametersPresentFlag ? device.vui : nil
        if let ownVUI {
            let vui = deviceVUI ?? VUIParameters()
            if ownVUI.videoSignalTypePresentFlag
                && (!vui.videoSignalTypePresentFlag || vui.videoFullRangeFlag != ownVUI.videoFullRangeFlag)
            {
                lost.append("video signal type (video_full_range_flag \(ownVUI.videoFullRangeFlag ? 1 : 0))")
            }
            if ownVUI.colourDescriptionPresentFlag
                && (!vui.colourDescriptionPresentFlag || vui.colourPrimaries != ownVUI.colourPrimaries
                    || vui.transferCharacteristics != ownVUI.transferCharacteristics
                    || vui.matrixCoefficients != ownVUI.matrixCoefficients)
            {
                lost.append(
                    "colour description (primaries \(ownVUI.colourPrimaries), transfer \(ownVUI.transferCharacteristics), matrix \(ownVUI.matrixCoefficients))"
                )
            }
            if ownVUI.timingInfoPresentFlag
                && (!vui.timingInfoPresentFlag || vui.numUnitsInTick != ownVUI.numUnitsInTick
                    || vui.timeScale != ownVUI.timeScale)
            {
                lost.append("timing (\(ownVUI.numUnitsInTick)/\(ownVUI.timeScale))")
            }
            if ownVUI.bitstreamRestrictionFlag
                && (!vui.bitstreamRestrictionFlag || vui.maxNumReorderFrames != ownVUI.maxNumReorderFrames
                    || vui.maxDecFrameBuffering != ownVUI.maxDecFrameBuffering)
            {
                lost.append(
                    "bitstream restriction (max_num_reorder_frames \(ownVUI.maxNumReorderFrames ?? 0), max_dec_frame_buffering \(ownVUI.maxDecFrameBuffering ?? 0))"
                )
            }
        }
        if device.levelIdc != own.levelIdc {
            lost.append("level_idc \(own.levelIdc) (the device's: \(device.levelIdc))")
        }
        if device.profileIdc != own.profileIdc {
            lost.append("profile_idc \(own.profileIdc) (the device's: \(device.profileIdc))")
        }
        return lost
    }
}
