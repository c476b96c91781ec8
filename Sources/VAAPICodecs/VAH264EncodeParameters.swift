import CVA
import H264
import SwiftVT
import VAPlumbing

/// How a session's rate-control properties map to a VA rate-control mode and its values.
struct VAH264RateControl: Equatable {
    enum Mode: String {
        case cqp = "CQP"
        case cbr = "CBR"
        case vbr = "VBR"
        /// Intelligent constant quality: the device's own rate control toward a quality factor
        /// (1 best ... 51), no bit rate: VA's counterpart of x264's CRF.
        case icq = "ICQ"
    }

    var mode: Mode
    /// CQP: the P picture QP (I is 3 lower, B 2 higher: x264's ipratio 1.4 and pbratio 1.3,
    /// unless ``CompressionProperties/constantQuantizers`` names each).
    var quantizer: Int
    /// CQP: the I and B pictures' QP relative to the P pictures'.
    var intraOffset = -3
    var bidirectionalOffset = 2
    /// CBR/VBR: bits_per_second (VBR: the peak) and target_percentage (VBR: target / peak).
    var bitsPerSecond: Int
    var targetPercentage: Int
    /// HRD buffer (bits) and the rate-control window (ms).
    var bufferBits: Int
    var windowMilliseconds: Int
    /// The QPs a picture may have (``CompressionProperties/allowedFrameQPs``): CQP and forced
    /// QPs are clamped into them, CBR/VBR pass them to the device as min_qp and max_qp.
    var allowedQuantizers: ClosedRange<Int> = 0...51

    /// The mode `properties` ask for (see ``VAH264EncoderFactory/supportedProperties``), and
    /// what a device lacking it gets instead. Data rate limits become the HRD buffer and the
    /// peak rate of ``DataRateBuffer`` (SwiftVT's model that holds every window as a hard
    /// limit), also over the average: a hard limit wins.
    static func choose(
        _ properties: CompressionProperties, frameRate: Double, offered modes: UInt32, strict: Bool
    ) throws(VTError) -> (VAH264RateControl, [EncoderNotice]) {
        let quantizer = Int((51 * (1 - (properties.quality ?? (1 - 23.0 / 51)))).rounded())
        if let qps = properties.constantQuantizers {
            var constant = VAH264RateControl(
                mode: .cqp, quantizer: qps.predicted, bitsPerSecond: 0, targetPercentage: 100, bufferBits: 0,
                windowMilliseconds: 1000, allowedQuantizers: properties.allowedFrameQPs)
            constant.intraOffset = qps.intra - qps.predicted
            constant.bidirectionalOffset = qps.bidirectional - qps.predicted
            return (constant, [])
        }
        guard let average = properties.averageBitRate else {
            if properties.quality != nil, modes & UInt32(VA_RC_ICQ) != 0, properties.dataRateLimits.isEmpty,
                properties.hrdBuffer == nil
            {
                // Constant quality on a device that offers ICQ: its quality factor on x264's CRF
                // scale, so the same quality means about the same picture on both backends.
                return (
                    VAH264RateControl(
                        mode: .icq, quantizer: max(1, min(quantizer, 51)), bitsPerSecond: 0, targetPercentage: 100,
                        bufferBits: 0, windowMilliseconds: 1000, allowedQuantizers: properties.allowedFrameQPs), []
                )
            }
            // The factory refused a device without CQP for quality-based encoding. VA's
            // constant QP has no rate to hold a limit with (x264's CRF takes a VBV; VA's CQP
            // takes no HRD parameters), so limits without a bit rate are said to be ignored.
            let ignored =
                properties.dataRateLimits.isEmpty && properties.hrdBuffer == nil
                ? []
                : [
                    EncoderNotice(
                        property: properties.hrdBuffer != nil ? .hrdBuffer : .dataRateLimits,
                        message:
                            "the VA-API encoder holds \(properties.hrdBuffer != nil ? "an HRD buffer" : "data rate limits") only with a bit rate (VBR peak or CBR); without one "
                            + "it codes constant QP and the limits are not applied. Set bitrate, or use hardware=disable (x264 "
                            + "holds them in CRF)")
                ]
            return (
                VAH264RateControl(
                    mode: .cqp, quantizer: min(max(quantizer, 0), 51), bitsPerSecond: 0, targetPercentage: 100,
                    bufferBits: 0, windowMilliseconds: 1000, allowedQuantizers: properties.allowedFrameQPs), ignored
            )
        }
        let limit = properties.strictestDataRateLimit
        let buffer = properties.dataRateBuffer(frameRate: frameRate)
        // A data rate limit at (or below) the average rate makes the average a constant rate, as
        // does a buffer whose rate cannot reach the average.
        let wantsCBR =
            limit.map { $0.bitsPerSecond <= Double(average) * 1.01 } ?? false
            || (buffer.map { $0.bitsPerSecond <= average } ?? false)
        var mode: Mode = wantsCBR ? .cbr : .vbr
        var notices: [EncoderNotice] = []
        let offersCBR = modes & UInt32(VA_RC_CBR) != 0
        let offersVBR = modes & UInt32(VA_RC_VBR) != 0
        if mode == .vbr && !offersVBR && offersCBR {
            if strict {
                throw .invalidProperty(
                    .averageBitRate,
                    "the VA-API encoder has no VBR rate control (it offers CBR); hardware=require, so "
                        + "nothing else is tried. Add a data rate limit equal to the bit rate to encode CBR")
            }
            mode = .cbr
            notices.append(
                EncoderNotice(
                    property: .averageBitRate,
                    message: "the VA-API encoder has no VBR rate control; encoding CBR at \(average) bit/s instead"))
        } else if mode == .cbr && !offersCBR && offersVBR {
            if strict {
                throw .invalidProperty(
                    .dataRateLimits,
                    "the VA-API encoder has no CBR rate control (it offers VBR); hardware=require, so "
                        + "nothing else is tried. Remove the data rate limit to encode VBR")
            }
            mode = .vbr
            notices.append(
                EncoderNotice(
                    property: .dataRateLimits,
                    message:
                        "the VA-API encoder has no CBR rate control; encoding VBR with the limit as its peak instead"))
        }
        // Without limits the average is the peak and one second of it the buffer (as before).
        let peak = buffer?.bitsPerSecond ?? average
        let bitsPerSecond = mode == .cbr ? min(average, peak) : peak
        let bufferBits = buffer?.bufferBits ?? average
        let window = limit.map { Int(($0.seconds * 1000).rounded()) } ?? 1000
        return (
            VAH264RateControl(
                mode: mode, quantizer: 26, bitsPerSecond: bitsPerSecond,
                targetPercentage: mode == .cbr
                    ? 100 : max(1, min(100, Int((Double(average) * 100 / Double(peak)).rounded()))),
                bufferBits: max(bufferBits, 1), windowMilliseconds: max(window, 1),
                allowedQuantizers: properties.allowedFrameQPs), notices
        )
    }

    var vaMode: UInt32 { Self.vaMode(mode) }

    static func vaMode(_ mode: Mode) -> UInt32 {
        switch mode {
        case .cqp: UInt32(VA_RC_CQP)
        case .cbr: UInt32(VA_RC_CBR)
        case .vbr: UInt32(VA_RC_VBR)
        case .icq: UInt32(VA_RC_ICQ)
        }
    }

    /// The QP of a picture: the one the multi-pass rate control chose (rounded: VA takes one QP
    /// per picture in CQP), else the CQP value with the I/B offsets.
    func pictureQuantizer(type: H264CodingType, forced: Double?) -> Int {
        let (low, high) = (allowedQuantizers.lowerBound, allowedQuantizers.upperBound)
        if let forced { return min(max(Int(forced.rounded()), low), high) }
        let offset: Int
        switch type {
        case .idr, .intra: offset = intraOffset
        case .predicted: offset = 0
        case .bidirectional: offset = bidirectionalOffset
        }
        return min(max(quantizer + offset, low), high)
    }
}

/// Filling the VA encode parameter buffers (va_enc_h264.h) from SwiftVT's SPS, PPS and
/// coding decisions, so the device's view and the packed headers agree.
enum VAH264EncodeParameters {
    static func sequence(
        _ sps: SequenceParameterSet, structure: H264GOPStructure, rateControl: VAH264RateControl
    ) -> VAEncSequenceParameterBufferH264 {
        var p = VAEncSequenceParameterBufferH264()
        p.seq_parameter_set_id = UInt8(truncatingIfNeeded: sps.seqParameterSetID)
        p.level_idc = UInt8(truncatingIfNeeded: sps.levelIdc)
        p.intra_period = UInt32(structure.idrPeriod)
        p.intra_idr_period = UInt32(structure.idrPeriod)
        p.ip_period = UInt32(structure.consecutiveBFrames + 1)
        p.bits_per_second =
            rateControl.mode == .cqp || rateControl.mode == .icq ? 0 : UInt32(clamping: rateControl.bitsPerSecond)
        p.max_num_ref_frames = UInt32(sps.maxNumRefFrames)
        p.picture_width_in_mbs = UInt16(truncatingIfNeeded: sps.widthInMbs)
        p.picture_height_in_mbs = UInt16(truncatingIfNeeded: sps.frameHeightInMbs)
        p.seq_fields.bits.chroma_format_idc = UInt32(truncatingIfNeeded: sps.chromaFormatIdc)
        p.seq_fields.bits.frame_mbs_only_flag = sps.frameMbsOnlyFlag ? 1 : 0
        p.seq_fields.bits.direct_8x8_inference_flag = sps.direct8x8InferenceFlag ? 1 : 0
        p.seq_fields.bits.log2_max_frame_num_minus4 = UInt32(truncatingIfNeeded: sps.log2MaxFrameNumMinus4)
        p.seq_fields.bits.pic_order_cnt_type = UInt32(truncatingIfNeeded: sps.picOrderCntType)
        p.seq_fields.bits.log2_max_pic_order_cnt_lsb_minus4 = UInt32(
            truncatingIfNeeded: sps.log2MaxPicOrderCntLsbMinus4)
        p.frame_cropping_flag = sps.frameCroppingFlag ? 1 : 0
        p.frame_crop_left_offset = UInt32(sps.frameCropLeftOffset)
        p.frame_crop_right_offset = UInt32(sps.frameCropRightOffset)
        p.frame_crop_top_offset = UInt32(sps.frameCropTopOffset)
        p.frame_crop_bottom_offset = UInt32(sps.frameCropBottomOffset)
        if let vui = sps.vui, sps.vuiParametersPresentFlag {
            p.vui_parameters_present_flag = 1
            p.vui_fields.bits.timing_info_present_flag = vui.timingInfoPresentFlag ? 1 : 0
            p.vui_fields.bits.fixed_frame_rate_flag = vui.fixedFrameRateFlag ? 1 : 0
            p.vui_fields.bits.bitstream_restriction_flag = vui.bitstreamRestrictionFlag ? 1 : 0
            p.vui_fields.bits.motion_vectors_over_pic_boundaries_flag = vui.motionVectorsOverPicBoundariesFlag ? 1 : 0
            p.vui_fields.bits.log2_max_mv_length_horizontal = UInt32(truncatingIfNeeded: vui.log2MaxMvLengthHorizontal)
            p.vui_fields.bits.log2_max_mv_length_vertical = UInt32(truncatingIfNeeded: vui.log2MaxMvLengthVertical)
            p.num_units_in_tick = vui.numUnitsInTick
            p.time_scale = vui.timeScale
        }
        return p
    }

    static func reference(_ reference: H264CodingReference, surface: VASurfaceID) -> VAPictureH264 {
        var entry = VAPictureH264()
        entry.picture_id = surface
        entry.frame_idx = UInt32(reference.frameNum)
        entry.flags = UInt32(VA_PICTURE_H264_SHORT_TERM_REFERENCE)
        entry.TopFieldOrderCnt = Int32(reference.pictureOrderCount)
        entry.BottomFieldOrderCnt = Int32(reference.pictureOrderCount)
        return entry
    }

    static var invalidPicture: VAPictureH264 {
        var entry = VAPictureH264()
        entry.picture_id = cva_invalid_surface()
        entry.flags = UInt32(VA_PICTURE_H264_INVALID)
        return entry
    }

    static func picture<Frame>(
        _ picture: H264CodingPicture<Frame>, pps: PictureParameterSet, reconstructed: VASurfaceID,
        references: (UInt64) -> VASurfaceID?, codedBuffer: VABufferID
    ) -> VAEncPictureParameterBufferH264 {
        var p = VAEncPictureParameterBufferH264()
        p.CurrPic.picture_id = reconstructed
        p.CurrPic.frame_idx = UInt32(picture.frameNum)
        p.CurrPic.flags = 0
        p.CurrPic.TopFieldOrderCnt = Int32(picture.pictureOrderCount)
        p.CurrPic.BottomFieldOrderCnt = Int32(picture.pictureOrderCount)
        withUnsafeMutableBytes(of: &p.ReferenceFrames) { raw in
            let slots = raw.bindMemory(to: VAPictureH264.self)
            for index in slots.indices { slots[index] = invalidPicture }
            var next = 0
            for reference in picture.referenceFrames where next < slots.count {
                guard let surface = references(reference.codingIndex) else { continue }
                slots[next] = Self.reference(reference, surface: surface)
                next += 1
            }
        }
        p.coded_buf = codedBuffer
        p.pic_parameter_set_id = UInt8(truncatingIfNeeded: pps.picParameterSetID)
        p.seq_parameter_set_id = UInt8(truncatingIfNeeded: pps.seqParameterSetID)
        p.frame_num = UInt16(truncatingIfNeeded: picture.frameNum)
        p.pic_init_qp = UInt8(truncatingIfNeeded: 26 + pps.picInitQpMinus26)
        p.num_ref_idx_l0_active_minus1 = UInt8(truncatingIfNeeded: pps.numRefIdxL0DefaultActiveMinus1)
        p.num_ref_idx_l1_active_minus1 = UInt8(truncatingIfNeeded: pps.numRefIdxL1DefaultActiveMinus1)
        p.chroma_qp_index_offset = Int8(truncatingIfNeeded: pps.chromaQpIndexOffset)
        p.second_chroma_qp_index_offset = Int8(truncatingIfNeeded: pps.secondChromaQpIndexOffset)
        p.pic_fields.bits.idr_pic_flag = picture.type == .idr ? 1 : 0
        p.pic_fields.bits.reference_pic_flag = picture.isReference ? 1 : 0
        p.pic_fields.bits.entropy_coding_mode_flag = pps.entropyCodingModeFlag ? 1 : 0
        p.pic_fields.bits.transform_8x8_mode_flag = pps.transform8x8ModeFlag ? 1 : 0
        p.pic_fields.bits.deblocking_filter_control_present_flag = pps.deblockingFilterControlPresentFlag ? 1 : 0
        return p
    }

    static func slice<Frame>(
        _ picture: H264CodingPicture<Frame>, header: SliceHeader, macroblocks: Int, references: (UInt64) -> VASurfaceID?
    ) -> VAEncSliceParameterBufferH264 {
        var p = VAEncSliceParameterBufferH264()
        p.macroblock_address = 0
        p.num_macroblocks = UInt32(macroblocks)
        p.macroblock_info = VABufferID(cva_invalid_id())
        p.slice_type = UInt8(header.sliceType % 5)
        p.pic_parameter_set_id = UInt8(truncatingIfNeeded: header.picParameterSetID)
        p.idr_pic_id = UInt16(truncatingIfNeeded: header.idrPicID)
        p.pic_order_cnt_lsb = UInt16(truncatingIfNeeded: header.picOrderCntLsb)
        p.direct_spatial_mv_pred_flag = header.directSpatialMvPredFlag ? 1 : 0
        p.num_ref_idx_active_override_flag = header.numRefIdxActiveOverrideFlag ? 1 : 0
        p.num_ref_idx_l0_active_minus1 = UInt8(truncatingIfNeeded: header.numRefIdxL0ActiveMinus1)
        p.num_ref_idx_l1_active_minus1 = UInt8(truncatingIfNeeded: header.numRefIdxL1ActiveMinus1)
        fill(&p.RefPicList0, with: picture.list0, references: references)
        fill(&p.RefPicList1, with: picture.list1, references: references)
        p.cabac_init_idc = UInt8(truncatingIfNeeded: header.cabacInitIdc)
        p.slice_qp_delta = Int8(truncatingIfNeeded: header.sliceQpDelta)
        p.disable_deblocking_filter_idc = UInt8(truncatingIfNeeded: header.disableDeblockingFilterIdc)
        p.slice_alpha_c0_offset_div2 = Int8(truncatingIfNeeded: header.sliceAlphaC0OffsetDiv2)
        p.slice_beta_offset_div2 = Int8(truncatingIfNeeded: header.sliceBetaOffsetDiv2)
        return p
    }

    /// A reference list of the slice parameters (a C array of VAPictureH264, imported as a
    /// tuple): `list`'s entries, the rest invalid.
    private static func fill<Tuple>(
        _ tuple: inout Tuple, with list: [H264CodingReference], references: (UInt64) -> VASurfaceID?
    ) {
        withUnsafeMutableBytes(of: &tuple) { raw in
            let slots = raw.bindMemory(to: VAPictureH264.self)
            for index in slots.indices { slots[index] = invalidPicture }
            for (index, reference) in list.enumerated() where index < slots.count {
                if let surface = references(reference.codingIndex) {
                    slots[index] = Self.reference(reference, surface: surface)
                }
            }
        }
    }

    /// A VAEncMiscParameterBuffer: the type word followed by `payload` (va.h's flexible array).
    static func misc<Payload>(_ type: VAEncMiscParameterType, _ payload: Payload) -> [UInt8] {
        var bytes: [UInt8] = []
        withUnsafeBytes(of: UInt32(type.rawValue)) { bytes += $0 }
        withUnsafeBytes(of: payload) { bytes += $0 }
        return bytes
    }

    /// The misc parameters for a sequence: rate control (CBR/VBR), frame rate, HRD, quality level.
    static func miscParameters(
        rateControl: VAH264RateControl, frameRate: (numerator: UInt32, denominator: UInt32), qualityLevel: Int?
    ) -> [(String, [UInt8])] {
        var result: [(String, [UInt8])] = []
        if rateControl.mode == .icq {
            var rc = VAEncMiscParameterRateControl()
            rc.ICQ_quality_factor = UInt32(clamping: rateControl.quantizer)
            rc.initial_qp = UInt32(clamping: rateControl.quantizer)
            rc.min_qp = UInt32(max(rateControl.allowedQuantizers.lowerBound, 1))
            rc.max_qp = UInt32(rateControl.allowedQuantizers.upperBound)
            result.append(("rate control", misc(VAEncMiscParameterTypeRateControl, rc)))
        } else if rateControl.mode != .cqp {
            var rc = VAEncMiscParameterRateControl()
            rc.bits_per_second = UInt32(clamping: rateControl.bitsPerSecond)
            rc.target_percentage = UInt32(clamping: rateControl.targetPercentage)
            rc.window_size = UInt32(clamping: rateControl.windowMilliseconds)
            rc.initial_qp = 26
            // 1 unless bounded: QP 0 only where asked for (min_qp 0 means "the driver's own").
            rc.min_qp = UInt32(max(rateControl.allowedQuantizers.lowerBound, 1))
            rc.max_qp = UInt32(rateControl.allowedQuantizers.upperBound)
            result.append(("rate control", misc(VAEncMiscParameterTypeRateControl, rc)))
            var hrd = VAEncMiscParameterHRD()
            hrd.buffer_size = UInt32(clamping: rateControl.bufferBits)
            hrd.initial_buffer_fullness = UInt32(clamping: rateControl.bufferBits * 3 / 4)
            result.append(("HRD", misc(VAEncMiscParameterTypeHRD, hrd)))
        }
        var rate = VAEncMiscParameterFrameRate()
        // va.h: numerator in the low 16 bits, denominator in the high 16 bits.
        rate.framerate = (frameRate.numerator & 0xFFFF) | ((frameRate.denominator & 0xFFFF) << 16)
        result.append(("frame rate", misc(VAEncMiscParameterTypeFrameRate, rate)))
        if let qualityLevel {
            var quality = VAEncMiscParameterBufferQualityLevel()
            quality.quality_level = UInt32(qualityLevel)
            result.append(("quality level", misc(VAEncMiscParameterTypeQualityLevel, quality)))
        }
        return result
    }

    /// A frame rate as a 16-bit fraction: whole rates over 1, NTSC rates over 1001 (29.97 as
    /// 30000/1001), others over 1000.
    static func frameRateFraction(_ rate: Double) -> (numerator: UInt32, denominator: UInt32) {
        let fps = rate.isFinite && rate > 0 ? min(rate, 1000) : 30
        for denominator in [1.0, 1001, 1000] {
            let numerator = (fps * denominator).rounded()
            if abs(numerator / denominator - fps) < 1e-6 * fps, numerator <= 65535, numerator >= 1 {
                return (UInt32(numerator), UInt32(denominator))
            }
        }
        return (UInt32(min(65535, max(1, (fps * 60).rounded()))), 60)
    }
}
