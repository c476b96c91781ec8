import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

/// One encoder instance on the VA path (``EncoderBackend``). Synchronous: each picture is
/// submitted, waited for and read back before the next (a device encodes one picture at a time
/// per context anyway; pipelining several in flight is a later optimisation).
///
/// Pictures: a frame is uploaded into one of the context's source surfaces when it arrives
/// (the one copy of the input, into device memory), held there while it waits to be coded as a
/// B picture, and coded when ``H264CodingPlanner`` says so. Reference pictures keep their
/// reconstructed surface while they are in the DPB.
///
/// One file per job: this one prepares, takes frames and codes pictures; the stream's GOP and
/// SPS/PPS are chosen in VAH264Encoder+StreamDescription, the VA objects and surface copies are in
/// +DeviceObjects, a picture's parameter buffers in +PictureBuffers, what happens when the device
/// refuses CABAC or per-picture QPs in +CapabilityFallbacks, and the coded picture is read back in
/// +CodedPictureReadout.
final class VAH264Encoder: EncoderBackend {
    let choice: VAH264EncodeChoice
    let configuration: EncoderConfiguration
    var connection: VADisplayConnection { choice.device.connection }
    var notices: [EncoderNotice] = []
    var formatDescription: FormatDescription?
    private(set) var frameDelay = 0

    struct HeldFrame {
        var sourceSlot: Int
        var presentationTimeStamp: MediaTime
        var duration: MediaTime
        var frameReference: UInt64
        var quantizer: Double?
    }

    // The stream (made by prepare).
    var structure = H264GOPStructure(idrPeriod: 250, consecutiveBFrames: 0)
    var sps = SequenceParameterSet()
    var pps = PictureParameterSet()
    var rateControl = VAH264RateControl(
        mode: .cqp, quantizer: 23, bitsPerSecond: 0, targetPercentage: 100, bufferBits: 0, windowMilliseconds: 1000)
    var frameRate = 30.0
    var properties: CompressionProperties
    /// Whether the device took a CABAC picture (checked once, on the first picture).
    var entropyChecked = false
    var sequenceParametersDue = true
    /// Set when the device refused CABAC and the stream went on in CAVLC.
    var entropyRefused = false

    // The device side (made by prepare).
    var objects: VAEncodeObjects?
    var planner = H264CodingPlanner<HeldFrame>(structure: H264GOPStructure(idrPeriod: 250, consecutiveBFrames: 0))
    var timeStamps = DecodeTimeStampSequencer(reorderDelay: 0)
    var freeSourceSlots: [Int] = []
    var freeReconstructedSlots: [Int] = []
    /// Reconstructed surface slot of each reference picture still in the DPB, by coding index.
    var reconstructed: [UInt64: Int] = [:]
    var picturesSincePrepare = 0
    var takeover: EncoderTakeover?
    /// The rate-control mode `objects` were made for.
    var openedMode: VAH264RateControl.Mode?

    init(choice: VAH264EncodeChoice, configuration: EncoderConfiguration) {
        self.choice = choice
        self.configuration = configuration
        self.properties = configuration.properties
    }

    var strict: Bool { configuration.hardwarePolicy == .require }
    var widthInMacroblocks: Int { (configuration.width + 15) / 16 }
    var heightInMacroblocks: Int { (configuration.height + 15) / 16 }

    func takeNotices() -> [EncoderNotice] {
        defer { notices.removeAll() }
        return notices
    }

    func takeOverAfterFailure() -> EncoderTakeover? {
        defer { takeover = nil }
        return takeover
    }

    // MARK: Preparing

    func prepare(properties: CompressionProperties, frameRate: Double) throws(VTError) {
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

    // MARK: Encoding

    func encode(_ request: EncoderFrameRequest) throws(VTError) -> [EncodedFrame] {
        guard let objects else {
            throw VTError(.encoderFailed, "the VA-API encoder is not prepared", operation: "vaCreateContext")
        }
        if request.quantizer != nil && rateControl.mode != .cqp {
            // Multi-pass rate control sets each picture's QP, which only constant-QP mode takes.
            try switchToConstantQuantizer()
            return try encode(request)
        }
        guard let slot = freeSourceSlots.popLast() else {
            throw VTError(.encoderFailed, "the VA-API encoder has no free source surface (more frames held than planned)")
        }
        let surface = objects.sourceSurfaces.ids[slot]
        do throws(VAError) {
            try upload(request.image, to: surface)
        } catch {
            freeSourceSlots.append(slot)
            takeover = makeTakeover(encoded: [], failing: [], includesRequest: false)
            throw VTError(
                .encoderFailed, "VA-API: a picture could not be uploaded: \(error)", backendStatus: error.status,
                operation: error.call)
        }
        timeStamps.noteInput(presentationTimeStamp: request.presentationTimeStamp)
        let held = HeldFrame(
            sourceSlot: slot, presentationTimeStamp: request.presentationTimeStamp, duration: request.duration,
            frameReference: request.frameReference, quantizer: request.quantizer)
        return try code(planner.submit(held, forceIDR: request.frameType == .idr), includesRequest: true)
    }

    func flush() throws(VTError) -> [EncodedFrame] {
        guard objects != nil else { return [] }
        let frames = try code(planner.flush(), includesRequest: false)
        planner.reset()
        return frames
    }

    func reconfigureRateControl(_ properties: CompressionProperties) throws(VTError) -> [EncodedFrame] {
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
    func code(_ pictures: [H264CodingPicture<HeldFrame>], includesRequest: Bool) throws(VTError) -> [EncodedFrame] {
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
    func makeTakeover(
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

    /// Encodes one picture and reads its access unit back.
    func encodePicture(
        _ picture: H264CodingPicture<HeldFrame>, keeping live: Set<UInt64>
    ) throws(VTError) -> EncodedFrame {
        guard let objects, let reconstructedSlot = freeReconstructedSlots.popLast() else {
            throw VTError(.encoderFailed, "the VA-API encoder has no free reconstructed surface")
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
            throw VTError(
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
}
