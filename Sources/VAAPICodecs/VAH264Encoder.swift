import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

/// The VA objects of one encoding context. Declared in the order they are destroyed in
/// (buffers and context before the surfaces they use, the config last).
final class VAEncodeObjects {
    let codedBuffer: VABufferObject
    let context: VAContext
    let sourceSurfaces: VASurfaceSet
    let reconstructedSurfaces: VASurfaceSet
    let config: VAConfig

    init(
        config: consuming VAConfig, sourceSurfaces: consuming VASurfaceSet, reconstructedSurfaces: consuming VASurfaceSet,
        context: VAContext, codedBuffer: VABufferObject
    ) {
        self.codedBuffer = codedBuffer
        self.context = context
        self.sourceSurfaces = sourceSurfaces
        self.reconstructedSurfaces = reconstructedSurfaces
        self.config = config
    }
}

/// One encoder instance on the VA path (``EncoderBackend``). Synchronous: each picture is
/// submitted, waited for and read back before the next (a device encodes one picture at a time
/// per context anyway; pipelining several in flight is a later optimisation).
///
/// Pictures: a frame is uploaded into one of the context's source surfaces when it arrives
/// (the one copy of the input, into device memory), held there while it waits to be coded as a
/// B picture, and coded when ``H264CodingPlanner`` says so. Reference pictures keep their
/// reconstructed surface while they are in the DPB.
final class VAH264Encoder: EncoderBackend {
    private let choice: VAH264EncodeChoice
    private let configuration: EncoderConfiguration
    private var connection: VADisplayConnection { choice.device.connection }
    private var notices: [EncoderNotice] = []
    private(set) var formatDescription: FormatDescription?
    private(set) var frameDelay = 0

    private struct HeldFrame {
        var sourceSlot: Int
        var presentationTimeStamp: MediaTime
        var duration: MediaTime
        var frameReference: UInt64
        var quantizer: Double?
    }

    // The stream (made by prepare).
    private var structure = H264GOPStructure(idrPeriod: 250, consecutiveBFrames: 0)
    private var sps = SequenceParameterSet()
    private var pps = PictureParameterSet()
    private var rateControl = VAH264RateControl(
        mode: .cqp, quantizer: 23, bitsPerSecond: 0, targetPercentage: 100, bufferBits: 0, windowMilliseconds: 1000)
    private var frameRate = 30.0
    private var properties: CompressionProperties
    /// Whether the device took a CABAC picture (checked once, on the first picture).
    private var entropyChecked = false
    private var sequenceParametersDue = true

    // The device side (made by prepare).
    private var objects: VAEncodeObjects?
    private var planner = H264CodingPlanner<HeldFrame>(structure: H264GOPStructure(idrPeriod: 250, consecutiveBFrames: 0))
    private var timeStamps = DecodeTimeStampSequencer(reorderDelay: 0)
    private var freeSourceSlots: [Int] = []
    private var freeReconstructedSlots: [Int] = []
    /// Reconstructed surface slot of each reference picture still in the DPB, by coding index.
    private var reconstructed: [UInt64: Int] = [:]
    private var picturesSincePrepare = 0
    private var takeover: EncoderTakeover?

    init(choice: VAH264EncodeChoice, configuration: EncoderConfiguration) {
        self.choice = choice
        self.configuration = configuration
        self.properties = configuration.properties
    }

    private var strict: Bool { configuration.hardwarePolicy == .require }
    private var widthInMacroblocks: Int { (configuration.width + 15) / 16 }
    private var heightInMacroblocks: Int { (configuration.height + 15) / 16 }

    func takeNotices() -> [EncoderNotice] {
        defer { notices.removeAll() }
        return notices
    }

    func takeOverAfterFailure() -> EncoderTakeover? {
        defer { takeover = nil }
        return takeover
    }

    // MARK: Preparing

    func prepare(properties: CompressionProperties, frameRate: Double) throws(CompressionError) {
        self.properties = properties
        self.frameRate = frameRate
        let (rateControl, rateNotices) = try VAH264RateControl.choose(
            properties, offered: choice.options.rateControlModes, strict: strict)
        notices += rateNotices
        structure = try chooseStructure(properties, frameRate: frameRate)
        try describeStream(properties, rateControl: rateControl)
        try openObjects(rateControl: rateControl)
        planner = H264CodingPlanner(structure: structure)
        if timeStamps.reorderDelay == structure.maxReorderFrames {
            timeStamps.restart()  // keeps DTS increasing across a restart (a multi-pass range)
        } else {
            timeStamps = DecodeTimeStampSequencer(reorderDelay: structure.maxReorderFrames)
        }
        frameDelay = structure.frameDelay
        picturesSincePrepare = 0
        sequenceParametersDue = true
    }

    /// The GOP for `properties` (the table in ``VAH264EncoderFactory/supportedProperties``).
    private func chooseStructure(_ properties: CompressionProperties, frameRate: Double) throws(CompressionError) -> H264GOPStructure {
        var idrPeriod = properties.maxKeyFrameInterval > 0 ? properties.maxKeyFrameInterval : 250
        if properties.maxKeyFrameIntervalDuration > 0 {
            idrPeriod = min(idrPeriod, max(1, Int(properties.maxKeyFrameIntervalDuration * frameRate)))
        }
        if !properties.allowTemporalCompression { idrPeriod = 1 }
        var bFrames = properties.usesBFrames && !properties.realTime && choice.profileName != .constrainedBaseline ? 2 : 0
        if let delay = properties.maxFrameDelayCount { bFrames = min(bFrames, delay) }
        if bFrames > 0 && choice.options.maxList1References == 0 {
            // The device cannot code B pictures: I/P only. Reordering is allowed, not asked for,
            // so this is not a property the session failed to honour.
            bFrames = 0
        }
        return H264GOPStructure(idrPeriod: idrPeriod, consecutiveBFrames: bFrames)
    }

    /// The SPS and PPS of the stream, and its format description.
    private func describeStream(_ properties: CompressionProperties, rateControl: VAH264RateControl) throws(CompressionError) {
        var sps = SequenceParameterSet()
        switch choice.profileName {
        case .constrainedBaseline, .baseline:
            sps.profileIdc = 66
            sps.constraintSet0Flag = true
            sps.constraintSet1Flag = true  // A.2.1.1: constrained baseline
        case .main:
            sps.profileIdc = 77
            sps.constraintSet1Flag = true
        case .high, .high444Predictive:  // the factory never chooses 4:4:4 (no VAProfile for it)
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
        if level == 9 { level = 11 }  // level 1b is written as 1.1 + constraint_set3 for baseline/main
        if properties.profileLevel?.level == "1b", choice.profileName != .high {
            sps.constraintSet3Flag = true
        }
        sps.levelIdc = level ?? H264LevelLimits.lowestLevel(
            widthInMacroblocks: widthInMacroblocks, heightInMacroblocks: heightInMacroblocks, frameRate: frameRate,
            referenceFrames: structure.maxReferenceFrames,
            bitRate: rateControl.mode == .cqp ? nil : rateControl.bitsPerSecond, high: choice.profileName == .high)
        var vui = VUIParameters()
        let fullRange = properties.fullRange ?? (configuration.pixelFormat == .nv12FullRange)
        let colour = properties.colorPrimaries != nil || properties.transferFunction != nil || properties.yCbCrMatrix != nil
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
        pps.picInitQpMinus26 = 0
        pps.deblockingFilterControlPresentFlag = true
        // 8x8 transforms are High profile's main tool (A.2.4).
        pps.transform8x8ModeFlag = choice.profileName == .high
        self.sps = sps
        self.pps = pps
        self.rateControl = rateControl
        try makeFormatDescription()
    }

    /// Set when the device refused CABAC and the stream went on in CAVLC.
    private var entropyRefused = false

    private func makeFormatDescription() throws(CompressionError) {
        do {
            formatDescription = try FormatDescription(h264ParameterSets: [sps.writeNALUnit(), pps.writeNALUnit()])
        } catch {
            throw CompressionError(.encoderFailed, "the SPS/PPS of the VA encoder cannot be written: \(error)")
        }
    }

    /// Config, surfaces, context and coded buffer for `rateControl`'s mode (kept when it is the
    /// mode they were made for).
    private func openObjects(rateControl: VAH264RateControl) throws(CompressionError) {
        let sourceCount = structure.consecutiveBFrames + 2
        let reconstructedCount = structure.maxReferenceFrames + 1
        if let objects, objects.sourceSurfaces.ids.count == sourceCount,
            objects.reconstructedSurfaces.ids.count == reconstructedCount, openedMode == rateControl.mode
        {
            freeSourceSlots = Array(0..<sourceCount)
            freeReconstructedSlots = Array(0..<reconstructedCount)
            reconstructed.removeAll()
            return
        }
        objects = nil
        let codedWidth = widthInMacroblocks * 16
        let codedHeight = heightInMacroblocks * 16
        do throws(VAError) {
            var attributes = [
                VAConfigAttrib(type: VAConfigAttribRTFormat, value: UInt32(VA_RT_FORMAT_YUV420)),
                VAConfigAttrib(type: VAConfigAttribRateControl, value: rateControl.vaMode),
            ]
            let packed = choice.options.packedHeaders
                & UInt32(VA_ENC_PACKED_HEADER_SEQUENCE | VA_ENC_PACKED_HEADER_PICTURE | VA_ENC_PACKED_HEADER_SLICE)
            if packed != 0 { attributes.append(VAConfigAttrib(type: VAConfigAttribEncPackedHeaders, value: packed)) }
            let config = try VAConfig(
                connection: connection, profile: choice.profile, entrypoint: choice.entrypoint, attributes: attributes)
            let nv12 = UInt32(VA_FOURCC_NV12)
            let sources = try VASurfaceSet(
                connection: connection, rtFormat: UInt32(VA_RT_FORMAT_YUV420), width: codedWidth, height: codedHeight,
                count: sourceCount, fourcc: nv12)
            let reconstructedSurfaces = try VASurfaceSet(
                connection: connection, rtFormat: UInt32(VA_RT_FORMAT_YUV420), width: codedWidth, height: codedHeight,
                count: reconstructedCount, fourcc: nv12)
            let context = try VAContext(
                connection: connection, config: config, width: codedWidth, height: codedHeight,
                renderTargets: sources.ids + reconstructedSurfaces.ids)
            // The worst case of a coded picture: every macroblock as I_PCM (384 bytes + a few
            // bits of macroblock header, 7.3.5), plus headers. A device writing more reports
            // an overflow, which is checked.
            let macroblocks = widthInMacroblocks * heightInMacroblocks
            let codedBuffer = try VABufferObject(
                connection: connection, context: context, type: VAEncCodedBufferType,
                elementSize: macroblocks * 400 + 64 * 1024)
            objects = VAEncodeObjects(
                config: config, sourceSurfaces: sources, reconstructedSurfaces: reconstructedSurfaces, context: context,
                codedBuffer: codedBuffer)
        } catch {
            throw CompressionError(
                .encoderFailed, "the VA-API encoder could not be set up: \(error)", backendStatus: error.status,
                operation: error.call)
        }
        openedMode = rateControl.mode
        freeSourceSlots = Array(0..<sourceCount)
        freeReconstructedSlots = Array(0..<reconstructedCount)
        reconstructed.removeAll()
    }

    private var openedMode: VAH264RateControl.Mode?

    // MARK: Encoding

    func encode(_ request: EncoderFrameRequest) throws(CompressionError) -> [EncodedFrame] {
        guard let objects else {
            throw CompressionError(.encoderFailed, "the VA-API encoder is not prepared", operation: "vaCreateContext")
        }
        if request.quantizer != nil && rateControl.mode != .cqp {
            // Multi-pass rate control sets each picture's QP, which only constant-QP mode takes.
            guard picturesSincePrepare == 0 && planner.heldFrameCount == 0 else {
                throw CompressionError(
                    .encoderFailed, "the VA-API encoder was asked for a per-frame QP in the middle of a \(rateControl.mode.rawValue) sequence")
            }
            guard choice.options.rateControlModes & UInt32(VA_RC_CQP) != 0 else {
                throw .invalidProperty(
                    .averageBitRate, "multi-pass encoding sets a QP per frame, and this VA-API device has no constant-QP rate control")
            }
            var constant = rateControl
            constant.mode = .cqp
            try openObjects(rateControl: constant)
            rateControl = constant
            sequenceParametersDue = true
            return try encode(request)
        }
        guard let slot = freeSourceSlots.popLast() else {
            throw CompressionError(.encoderFailed, "the VA-API encoder has no free source surface (more frames held than planned)")
        }
        let surface = objects.sourceSurfaces.ids[slot]
        do throws(VAError) {
            try upload(request.image, to: surface)
        } catch {
            freeSourceSlots.append(slot)
            takeover = makeTakeover(encoded: [], failing: [], includesRequest: false)
            throw CompressionError(
                .encoderFailed, "VA-API: a picture could not be uploaded: \(error)", backendStatus: error.status,
                operation: error.call)
        }
        timeStamps.noteInput(presentationTimeStamp: request.presentationTimeStamp)
        let held = HeldFrame(
            sourceSlot: slot, presentationTimeStamp: request.presentationTimeStamp, duration: request.duration,
            frameReference: request.frameReference, quantizer: request.quantizer)
        return try code(planner.submit(held, forceIDR: request.frameType == .idr), includesRequest: true)
    }

    func flush() throws(CompressionError) -> [EncodedFrame] {
        guard objects != nil else { return [] }
        let frames = try code(planner.flush(), includesRequest: false)
        planner.reset()
        return frames
    }

    func reconfigureRateControl(_ properties: CompressionProperties) throws(CompressionError) -> [EncodedFrame] {
        let (updated, rateNotices) = try VAH264RateControl.choose(
            properties, offered: choice.options.rateControlModes, strict: strict)
        notices += rateNotices
        guard updated != rateControl else { return [] }
        // The mode is unchanged (the session allows only values to change): new misc parameters
        // go with the next picture, as va.h allows at any frame.
        if updated.mode == rateControl.mode {
            rateControl = updated
            sequenceParametersDue = true
            return []
        }
        let frames = try flush()
        try prepare(properties: properties, frameRate: frameRate)
        return frames
    }

    /// Codes `pictures` (coding order) and returns their frames. On a failure the frames of the
    /// groups finished before it are kept for the takeover, and the rest are read back.
    private func code(_ pictures: [H264CodingPicture<HeldFrame>], includesRequest: Bool) throws(CompressionError) -> [EncodedFrame] {
        var frames: [EncodedFrame] = []
        /// frames.count at the start of the current group (an anchor and its B pictures).
        var groupStart = 0
        for (index, picture) in pictures.enumerated() {
            if picture.type != .bidirectional { groupStart = frames.count }
            // The reconstructions to keep after this picture: what the rest of this batch and
            // the planner's DPB refer to (the planner has already planned the whole batch).
            var live = Set(planner.referenceFrames.map(\.codingIndex))
            for later in pictures[(index + 1)...] { live.formUnion(later.referenceFrames.map(\.codingIndex)) }
            do {
                frames.append(try encodePicture(picture, keeping: live))
            } catch {
                let groupPictures = pictures[(index - (frames.count - groupStart))...]
                takeover = makeTakeover(
                    encoded: Array(frames[..<groupStart]), failing: Array(groupPictures), includesRequest: includesRequest)
                throw error
            }
        }
        return frames
    }

    /// The pictures of a failed group plus the frames still held, read back in display order.
    private func makeTakeover(
        encoded: [EncodedFrame], failing: [H264CodingPicture<HeldFrame>], includesRequest: Bool
    ) -> EncoderTakeover {
        var held = failing.map(\.frame) + planner.flush().map(\.frame)
        held.sort { $0.presentationTimeStamp < $1.presentationTimeStamp }
        planner.reset()
        var requests: [EncoderFrameRequest] = []
        var lost: [UInt64] = []
        for frame in held {
            if let image = readBack(sourceSlot: frame.sourceSlot) {
                requests.append(EncoderFrameRequest(
                    image: image, presentationTimeStamp: frame.presentationTimeStamp, duration: frame.duration,
                    frameType: .automatic, frameReference: frame.frameReference, quantizer: frame.quantizer))
            } else {
                lost.append(frame.frameReference)
            }
        }
        return EncoderTakeover(
            encodedBeforeFailure: encoded, unencodedFrames: requests, includesFailingRequest: includesRequest, lostFrames: lost)
    }

    /// A held frame's picture, copied out of its source surface (only after a failure, so that
    /// another encoder can code it: the caller's picture is gone by then).
    private func readBack(sourceSlot: Int) -> PixelBuffer? {
        guard let objects else { return nil }
        let reader = VAOutputReader(
            connection: connection, pixelFormat: configuration.pixelFormat, rowAlignment: 64,
            attachments: PixelBufferAttachments())
        do {
            try reader.startSequence(sps)
            return try reader.read(
                surface: objects.sourceSurfaces.ids[sourceSlot],
                codedSize: (widthInMacroblocks * 16, heightInMacroblocks * 16))
        } catch {
            return nil
        }
    }

    /// Writes `image` into an NV12 surface, replicating the last column and row into the
    /// macroblock padding (so the edge macroblocks predict from real picture content).
    private func upload(_ image: PixelBuffer, to surface: VASurfaceID) throws(VAError) {
        let codedWidth = widthInMacroblocks * 16
        let codedHeight = heightInMacroblocks * 16
        let width = configuration.width
        let height = configuration.height
        let interleaved = configuration.pixelFormat != .i420
        try connection.writeSurface(surface, fourcc: UInt32(VA_FOURCC_NV12), width: codedWidth, height: codedHeight) { memory, layout in
            guard let base = memory.baseAddress, image.planes.count >= (interleaved ? 2 : 3) else { return }
            // This upload is the input's one copy: the device reads its own surfaces, not our memory.
            let lumaPitch = Int(layout.pitches.0)
            let chromaPitch = Int(layout.pitches.1)
            let luma = base + Int(layout.offsets.0)
            let chroma = base + Int(layout.offsets.1)
            let sourceLuma = image.planes[0]
            for row in 0..<codedHeight {
                let source = sourceLuma.baseAddress + min(row, height - 1) * sourceLuma.bytesPerRow
                let destination = luma + row * lumaPitch
                destination.copyMemory(from: source, byteCount: width)
                if codedWidth > width {
                    let last = source.load(fromByteOffset: width - 1, as: UInt8.self)
                    (destination + width).initializeMemory(as: UInt8.self, repeating: last, count: codedWidth - width)
                }
            }
            let chromaWidth = width / 2
            for row in 0..<(codedHeight / 2) {
                let sourceRow = min(row, height / 2 - 1)
                let destination = (chroma + row * chromaPitch).assumingMemoryBound(to: UInt8.self)
                if interleaved {
                    let plane = image.planes[1]
                    destination.update(
                        from: (plane.baseAddress + sourceRow * plane.bytesPerRow).assumingMemoryBound(to: UInt8.self),
                        count: chromaWidth * 2)
                } else {
                    // I420 to NV12: Cb and Cr interleaved in the same pass as the copy.
                    let cb = (image.planes[1].baseAddress + sourceRow * image.planes[1].bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    let cr = (image.planes[2].baseAddress + sourceRow * image.planes[2].bytesPerRow).assumingMemoryBound(to: UInt8.self)
                    for x in 0..<chromaWidth {
                        destination[2 * x] = cb[x]
                        destination[2 * x + 1] = cr[x]
                    }
                }
                if codedWidth / 2 > chromaWidth, chromaWidth > 0 {
                    let cb = destination[2 * chromaWidth - 2]
                    let cr = destination[2 * chromaWidth - 1]
                    for x in chromaWidth..<(codedWidth / 2) {
                        destination[2 * x] = cb
                        destination[2 * x + 1] = cr
                    }
                }
            }
        }
    }

    /// Encodes one picture and reads its access unit back.
    private func encodePicture(
        _ picture: H264CodingPicture<HeldFrame>, keeping live: Set<UInt64>
    ) throws(CompressionError) -> EncodedFrame {
        guard let objects, let reconstructedSlot = freeReconstructedSlots.popLast() else {
            throw CompressionError(.encoderFailed, "the VA-API encoder has no free reconstructed surface")
        }
        let held = picture.frame
        let qp = rateControl.pictureQuantizer(type: picture.type, forced: held.quantizer)
        let source = objects.sourceSurfaces.ids[held.sourceSlot]
        do throws(VAError) {
            try connection.beginPicture(context: objects.context, renderTarget: source)
            if !entropyChecked {
                try checkEntropyMode(picture, reconstructedSlot: reconstructedSlot, objects: objects)
            }
            let buffers = try makeBuffers(picture, qp: qp, reconstructedSlot: reconstructedSlot, objects: objects)
            // The buffers must outlive vaEndPicture (va.h: it consumes them), not just the
            // expression reading their ids: Swift may release an object after its last use.
            try withExtendedLifetime(buffers) { () throws(VAError) in
                try connection.renderPicture(context: objects.context, buffers: buffers.map(\.id))
                try connection.endPicture(context: objects.context)
            }
            try connection.syncSurface(source)
        } catch {
            freeReconstructedSlots.append(reconstructedSlot)
            throw CompressionError(
                .encoderFailed, "VA-API: picture \(picture.codingIndex) (\(picture.type.rawValue)) failed: \(error)",
                backendStatus: error.status, operation: error.call)
        }
        picturesSincePrepare += 1
        sequenceParametersDue = false
        // The source surface is free again; the reconstruction stays while the picture is a
        // reference (the planner's DPB), every other one is free.
        freeSourceSlots.append(held.sourceSlot)
        if picture.isReference { reconstructed[picture.codingIndex] = reconstructedSlot }
        else { freeReconstructedSlots.append(reconstructedSlot) }
        for (index, slot) in reconstructed where !live.contains(index) {
            reconstructed[index] = nil
            freeReconstructedSlots.append(slot)
        }
        return try readCodedPicture(picture, qp: qp, objects: objects)
    }

    /// CABAC: the first picture's parameters go alone, so a device that refuses CABAC says so
    /// before anything else of the picture was submitted. Then CAVLC, with a notice when CABAC
    /// was asked for by name (under hardware=require that is an error).
    private func checkEntropyMode(
        _ picture: H264CodingPicture<HeldFrame>, reconstructedSlot: Int, objects: VAEncodeObjects
    ) throws(VAError) {
        entropyChecked = true
        guard pps.entropyCodingModeFlag else { return }
        var parameters = VAH264EncodeParameters.picture(
            picture, pps: pps, reconstructed: objects.reconstructedSurfaces.ids[reconstructedSlot],
            references: surface(for:), codedBuffer: objects.codedBuffer.id)
        let probe = try VABufferObject.holding(
            &parameters, connection: connection, context: objects.context, type: VAEncPictureParameterBufferType)
        do throws(VAError) {
            try withExtendedLifetime(probe) { () throws(VAError) in
                try connection.renderPicture(context: objects.context, buffers: [probe.id])
            }
        } catch {
            guard error.status == VAStatus(VA_STATUS_ERROR_INVALID_PARAMETER)
                || error.status == VAStatus(VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT)
                || error.status == VAStatus(VA_STATUS_ERROR_UNIMPLEMENTED)
            else { throw error }
            let explicit = properties.entropyMode == .cabac
            if explicit && strict {
                throw VAError(
                    call: error.call, status: error.status,
                    context: "entropyMode (vtenc: entropy-mode) is cabac, and the VA-API encoder refused CABAC; "
                        + "hardware=require, so nothing else is tried. Use entropy-mode=cavlc or auto")
            }
            // The refused picture is ended (a driver may keep refusing everything else of it)
            // and begun again in CAVLC; nothing of it was coded.
            _ = try? connection.endPicture(context: objects.context)
            try connection.beginPicture(context: objects.context, renderTarget: objects.sourceSurfaces.ids[picture.frame.sourceSlot])
            entropyRefused = true
            pps.entropyCodingModeFlag = false
            do throws(CompressionError) {
                try makeFormatDescription()
            } catch {
                throw VAError(call: "vaRenderPicture", status: VAStatus(VA_STATUS_ERROR_OPERATION_FAILED), context: error.message)
            }
            if explicit {
                notices.append(EncoderNotice(
                    property: .entropyMode,
                    message: "the VA-API encoder refused CABAC (\(error)); encoding CAVLC instead"))
            }
        }
    }

    private func surface(for codingIndex: UInt64) -> VASurfaceID? {
        guard let objects, let slot = reconstructed[codingIndex] else { return nil }
        return objects.reconstructedSurfaces.ids[slot]
    }

    /// Every parameter buffer of a picture, in the order the device gets them.
    private func makeBuffers(
        _ picture: H264CodingPicture<HeldFrame>, qp: Int, reconstructedSlot: Int, objects: VAEncodeObjects
    ) throws(VAError) -> [VABufferObject] {
        var buffers: [VABufferObject] = []
        let context = objects.context
        let packed = choice.options.packedHeaders
        if picture.type == .idr || sequenceParametersDue {
            var sequence = VAH264EncodeParameters.sequence(sps, structure: structure, rateControl: rateControl)
            buffers.append(try .holding(&sequence, connection: connection, context: context, type: VAEncSequenceParameterBufferType))
            let qualityLevel: Int? = choice.options.qualityRange > 1
                ? (properties.realTime ? choice.options.qualityRange : (choice.options.qualityRange + 1) / 2) : nil
            for (_, bytes) in VAH264EncodeParameters.miscParameters(
                rateControl: rateControl, frameRate: VAH264EncodeParameters.frameRateFraction(frameRate),
                qualityLevel: qualityLevel)
            {
                try bytes.withUnsafeBytes { raw in
                    Result { () throws(VAError) in
                        buffers.append(try VABufferObject(
                            connection: connection, context: context, type: VAEncMiscParameterBufferType, bytes: raw))
                    }
                }.get()
            }
        }
        var pictureParameters = VAH264EncodeParameters.picture(
            picture, pps: pps, reconstructed: objects.reconstructedSurfaces.ids[reconstructedSlot],
            references: surface(for:), codedBuffer: objects.codedBuffer.id)
        buffers.append(try .holding(&pictureParameters, connection: connection, context: context, type: VAEncPictureParameterBufferType))
        if picture.type == .idr {
            if packed & UInt32(VA_ENC_PACKED_HEADER_SEQUENCE) != 0 {
                buffers += try packedHeader(VAEncPackedHeaderSequence, nalUnit: try written { () throws(H264WritingError) in try sps.writeNALUnit() }, context: context)
            }
            if packed & UInt32(VA_ENC_PACKED_HEADER_PICTURE) != 0 {
                buffers += try packedHeader(VAEncPackedHeaderPicture, nalUnit: try written { () throws(H264WritingError) in try pps.writeNALUnit() }, context: context)
            }
        }
        let header = picture.sliceHeader(structure: structure, pictureParameterSet: pps, sliceQpDelta: qp - 26 - pps.picInitQpMinus26)
        var slice = VAH264EncodeParameters.slice(
            picture, header: header, macroblocks: widthInMacroblocks * heightInMacroblocks, references: surface(for:))
        if packed & UInt32(VA_ENC_PACKED_HEADER_SLICE) != 0 {
            let (sps, pps) = (self.sps, self.pps)
            let bits = try written { () throws(H264WritingError) in try header.write(sequenceParameterSet: sps, pictureParameterSet: pps) }
            // The header as RBSP bits after a start code and the NAL unit header byte; the
            // device appends slice_data() and applies emulation prevention over the whole NAL
            // unit (has_emulation_bytes 0).
            var data: [UInt8] = [0, 0, 0, 1, H264NALUnitWriter.headerByte(type: header.nalUnitType, nalRefIdc: header.nalRefIdc)]
            data += bits.bytes
            buffers += try packedHeader(
                VAEncPackedHeaderSlice, data: data, bitLength: 40 + bits.bitCount, hasEmulationBytes: false, context: context)
        }
        buffers.append(try .holding(&slice, connection: connection, context: context, type: VAEncSliceParameterBufferType))
        return buffers
    }

    /// A header writer's result, its failure as the VAError of the picture it was for.
    private func written<T>(_ body: () throws(H264WritingError) -> T) throws(VAError) -> T {
        do {
            return try body()
        } catch {
            throw VAError(call: "vaCreateBuffer", status: VAStatus(VA_STATUS_ERROR_OPERATION_FAILED), context: error.description)
        }
    }

    /// A complete NAL unit (escaped) as a packed header: start code + NAL unit, has_emulation_bytes 1.
    private func packedHeader(
        _ type: VAEncPackedHeaderType, nalUnit: [UInt8], context: VAContext
    ) throws(VAError) -> [VABufferObject] {
        let data = [0, 0, 0, 1] + nalUnit
        return try packedHeader(type, data: data, bitLength: data.count * 8, hasEmulationBytes: true, context: context)
    }

    private func packedHeader(
        _ type: VAEncPackedHeaderType, data: [UInt8], bitLength: Int, hasEmulationBytes: Bool, context: VAContext
    ) throws(VAError) -> [VABufferObject] {
        var parameters = VAEncPackedHeaderParameterBuffer()
        parameters.type = UInt32(type.rawValue)
        parameters.bit_length = UInt32(bitLength)
        parameters.has_emulation_bytes = hasEmulationBytes ? 1 : 0
        let parameterBuffer = try VABufferObject.holding(
            &parameters, connection: connection, context: context, type: VAEncPackedHeaderParameterBufferType)
        let dataBuffer = try data.withUnsafeBytes { raw in
            Result { () throws(VAError) -> VABufferObject in
                try VABufferObject(connection: connection, context: context, type: VAEncPackedHeaderDataBufferType, bytes: raw)
            }
        }.get()
        return [parameterBuffer, dataBuffer]
    }

    /// A device that writes its own SPS/PPS (no packed sequence or picture headers) describes
    /// the stream with them: they become the format description, and the slice headers it
    /// writes are read with them. With packed headers the device's copies are SwiftVT's own.
    private func adoptDeviceParameterSets(_ sets: [[UInt8]]) throws(CompressionError) {
        let packed = choice.options.packedHeaders
        let ownSequence = packed & UInt32(VA_ENC_PACKED_HEADER_SEQUENCE) != 0
        let ownPicture = packed & UInt32(VA_ENC_PACKED_HEADER_PICTURE) != 0
        guard !(ownSequence && ownPicture), sets != formatDescription?.parameterSets else { return }
        do {
            var deviceSPS = sps
            for set in sets where NALUnitType(rawValue: set[0]) == .sequenceParameterSet {
                deviceSPS = try SequenceParameterSet.parse(nalUnit: set)
            }
            var devicePPS = pps
            for set in sets where NALUnitType(rawValue: set[0]) == .pictureParameterSet {
                let spsForPPS = deviceSPS
                devicePPS = try PictureParameterSet.parse(nalUnit: set, sequenceParameterSets: { _ in spsForPPS })
            }
            formatDescription = try FormatDescription(h264ParameterSets: sets)
            sps = deviceSPS
            pps = devicePPS
        } catch {
            throw CompressionError(.encoderFailed, "VA-API: the device's own SPS/PPS cannot be read: \(error)")
        }
    }

    /// The coded buffer's Annex B access unit as an AVCC sample (parameter sets go to the
    /// format description, which SwiftVT wrote itself).
    private func readCodedPicture(
        _ picture: H264CodingPicture<HeldFrame>, qp: Int, objects: VAEncodeObjects
    ) throws(CompressionError) -> EncodedFrame {
        let held = picture.frame
        var annexB: [UInt8] = []
        var problem: String?
        do throws(VAError) {
            try objects.codedBuffer.withCodedBufferSegments { segments in
                for segment in segments {
                    if segment.overflowed {
                        problem = "the coded picture did not fit in the \(objects.codedBuffer.elementSize)-byte coded buffer (VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK)"
                    } else if segment.badBitstream {
                        problem = "the device reports a bad bitstream (VA_CODED_BUF_STATUS_BAD_BITSTREAM)"
                    }
                    // Copied: the coded buffer is written again by the next picture, and the
                    // sample outlives it. (The same pass turns Annex B into AVCC below.)
                    annexB += segment.bytes
                }
            }
        } catch {
            throw CompressionError(
                .encoderFailed, "VA-API: the coded picture could not be read: \(error)", backendStatus: error.status,
                operation: error.call)
        }
        if let problem {
            throw CompressionError(.encoderFailed, "VA-API: picture \(picture.codingIndex) (\(picture.type.rawValue)): \(problem)")
        }
        var sample: [UInt8] = []
        sample.reserveCapacity(annexB.count + 16)
        var deviceParameterSets: [[UInt8]] = []
        var firstSlice: Range<Int>?
        // One pass: slices (and SEI) become length-prefixed NAL units of the sample; parameter
        // sets go to the format description; the first slice's header is read for its QP below.
        annexB.withUnsafeBytes { bytes in
            AnnexB.forEachNALUnit(in: bytes) { unit in
                let range = unit.payloadRange
                switch NALUnitType(rawValue: bytes[range.lowerBound]) {
                case .sequenceParameterSet, .pictureParameterSet:
                    deviceParameterSets.append(Array(bytes[range]))
                    return
                case .accessUnitDelimiter:
                    return
                case .codedSliceIDR, .codedSliceNonIDR:
                    if firstSlice == nil { firstSlice = range }
                default:
                    break
                }
                let length = UInt32(range.count)
                sample += [UInt8(length >> 24), UInt8((length >> 16) & 0xFF), UInt8((length >> 8) & 0xFF), UInt8(length & 0xFF)]
                sample += bytes[range]
            }
        }
        if !deviceParameterSets.isEmpty {
            try adoptDeviceParameterSets(deviceParameterSets)
        }
        // The QP as the device wrote it (a device in CBR/VBR chooses it).
        var sliceQP: Int?
        if let firstSlice {
            let (sps, pps) = (self.sps, self.pps)
            sliceQP = annexB.withUnsafeBytes { bytes in
                (try? SliceHeader.parse(
                    nalUnit: UnsafeRawBufferPointer(rebasing: bytes[firstSlice]),
                    pictureParameterSets: { $0 == pps.picParameterSetID ? pps : nil },
                    sequenceParameterSets: { $0 == sps.seqParameterSetID ? sps : nil }))?.sliceQPY
            }
        }
        guard !sample.isEmpty else {
            throw CompressionError(.encoderFailed, "VA-API: picture \(picture.codingIndex) came back with no slice data")
        }
        let decodeTimeStamp = timeStamps.next(presentationTimeStamp: held.presentationTimeStamp, frameDuration: held.duration)
        let timing = SampleTimingInfo(
            duration: held.duration, presentationTimeStamp: held.presentationTimeStamp, decodeTimeStamp: decodeTimeStamp)
        let intra = picture.type == .idr || picture.type == .intra
        let attachments = SampleAttachments(
            notSync: picture.type != .idr, dependsOnOthers: !intra, isDependedOnByOthers: picture.isReference,
            earlierDisplayTimesAllowed: structure.consecutiveBFrames > 0)
        let analysisType: AnalysisFrameType
        switch picture.type {
        case .idr: analysisType = .idr
        case .intra: analysisType = .intra
        case .predicted: analysisType = .predicted
        case .bidirectional: analysisType = .bidirectional
        }
        return .accessUnit(
            sample, formatDescription: formatDescription, timing: timing, attachments: attachments,
            frameReference: held.frameReference,
            // A forced QP is coded as the whole QP asked for (one QP per picture).
            analysis: EncodedFrameAnalysis(
                frameType: analysisType, quantizer: Double(held.quantizer != nil ? qp : (sliceQP ?? qp))),
            encoderName: "the VA-API encoder")
    }
}
