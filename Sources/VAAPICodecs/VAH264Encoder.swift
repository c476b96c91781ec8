import CVA
import H264
import MediaCore
import NALBitstream
import SwiftVT
import VAPlumbing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// One encoder instance on the VA path (``EncoderBackend``).
///
/// Pictures: a frame is uploaded into one of the context's source surfaces when it arrives
/// (the one copy of the input, into device memory), held there while it waits to be coded as a
/// B picture, and submitted (vaBeginPicture ... vaEndPicture) when ``H264CodingPlanner`` says
/// so. Up to ``pictureDepth`` submitted pictures are in flight, each with its own coded buffer:
/// the device encodes one while the next is uploaded and submitted, and the oldest is waited for
/// (vaSyncSurface) and read back only when the ring is full or at a flush (FFmpeg's
/// `async_depth`, GStreamer's `preferred_output_delay`, both 4 by default: waiting for each
/// picture before submitting the next left the device idle, 20-30 % of the throughput on
/// Intel). Reference pictures keep their reconstructed surface while they are in the DPB, and
/// while a picture still in flight may read it.
///
/// One file per job: this one prepares, takes frames and codes pictures; the ring of pictures
/// in flight is in +PictureRing, the stream's GOP and SPS/PPS in +StreamDescription, the VA objects
/// and surface copies in +DeviceObjects, a picture's parameter buffers in +PictureBuffers, what
/// happens when the device refuses or ignores what it advertised (an entrypoint, a rate-control
/// mode, CABAC) in +CapabilityFallbacks, and the coded picture is read back in
/// +CodedPictureReadout.
final class VAH264Encoder: EncoderBackend {
    let choice: VAH264EncodeChoice
    let configuration: EncoderConfiguration
    var connection: VADisplayConnection { choice.device.connection }
    var notices: [EncoderNotice] = []
    /// Whether the notice that this device drops captions went out (said once per encoder).
    var reportedCaptionsDropped = false
    /// The SPS/PPS the stream is described with: SwiftVT's own, until a coded picture shows the
    /// device's (VAH264Encoder+StreamDescription).
    var streamDescription: FormatDescription?
    /// Whether a coded picture since prepare confirmed `streamDescription`.
    var parameterSetsConfirmed = false
    /// Only once the first picture is read back: a device may write parameter sets of its own
    /// (Mesa regenerates the SPS, maybe without VUI), and caps announced before that would carry
    /// an avcC the stream does not match.
    var formatDescription: FormatDescription? { parameterSetsConfirmed ? streamDescription : nil }
    private(set) var frameDelay = 0

    struct HeldFrame {
        var sourceSlot: Int
        var presentationTimeStamp: MediaTime
        var duration: MediaTime
        var frameReference: UInt64
        var quantizer: Double?
        var closedCaptions: ClosedCaptionData?
    }

    // The stream (made by prepare).
    var structure = H264GOPStructure(idrPeriod: 250, consecutiveBFrames: 0)
    var sps = SequenceParameterSet()
    var pps = PictureParameterSet()
    /// SwiftVT's own SPS as written (`sps` becomes the device's when the device writes another).
    var ownSPS = SequenceParameterSet()
    var rateControl = VAH264RateControl(
        mode: .cqp, quantizer: 23, bitsPerSecond: 0, targetPercentage: 100, bufferBits: 0, windowMilliseconds: 1000)
    var frameRate = 30.0
    var properties: CompressionProperties
    var sequenceParametersDue = true
    /// Whether the device's slice data was seen to follow the PPS's entropy coding (CABAC
    /// alignment bits after a slice header, 7.3.4), or the PPS says CAVLC. Until the first
    /// picture is verified it is the only one in flight.
    var entropyVerified = false
    /// Set when the device refused or ignored CABAC and the stream went on in CAVLC.
    var entropyRefused = false

    // The device side (made by prepare).
    /// Which of `choice.endpoints` the objects are made on.
    var endpointIndex = 0
    /// (endpoint, mode) pairs whose context the device refused although it advertised them.
    var refusedModes: Set<VAH264RefusedMode> = []
    /// The last such refusal, for the messages.
    var lastRefusal: VAError?
    /// What the device's SPS lacked of SwiftVT's when that was last said (said again only when
    /// it changes).
    var reportedLosses: [String] = []
    var objects: VAEncodeObjects?
    var planner = H264CodingPlanner<HeldFrame>(structure: H264GOPStructure(idrPeriod: 250, consecutiveBFrames: 0))
    var timeStamps = DecodeTimeStampSequencer(reorderDelay: 0)
    var freeSourceSlots: [Int] = []
    var freeReconstructedSlots: [Int] = []
    var freeCodedBufferSlots: [Int] = []
    /// Reconstructed surface slot of each reference picture still in the DPB, by coding index.
    var reconstructed: [UInt64: Int] = [:]
    /// Pictures submitted and not yet read back, in coding order.
    var inFlight: [InFlightPicture] = []
    /// Pictures read back whose group (an anchor and its B pictures) is not complete yet: their
    /// frames wait, and their source surfaces stay, so that a failure can still hand the whole
    /// group to another encoder.
    var readBackGroup: [ReadBackPicture] = []
    /// How many pictures may be in flight (chosen by prepare).
    var pictureDepth = 1
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
    var endpoint: VAH264EncodeEndpoint { choice.endpoints[endpointIndex] }
    var options: VAH264EncodeOptions { endpoint.options }

    /// Pictures in flight unless the properties say otherwise: `SWIFTVT_VA_ASYNC_DEPTH` (1...16,
    /// for measuring: bench/va-encode-depth.sh), else 4 as FFmpeg and GStreamer.
    static let configuredPictureDepth: Int = {
        guard let text = getenv("SWIFTVT_VA_ASYNC_DEPTH").map({ String(cString: $0) }), let value = Int(text) else {
            return 4
        }
        return min(max(value, 1), 16)
    }()

    /// Pictures in flight for `properties`: one in real time (each frame out as soon as the
    /// device has it, as GStreamer's VA encoders do for live sources), and never more than the
    /// frame delay allowed leaves after the B pictures.
    static func pictureDepth(_ properties: CompressionProperties, bFrames: Int) -> Int {
        var depth = properties.realTime ? 1 : configuredPictureDepth
        if let allowed = properties.maxFrameDelayCount { depth = min(depth, allowed - bFrames + 1) }
        return max(depth, 1)
    }

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
        try openStream(properties)
        planner = H264CodingPlanner(structure: structure)
        if timeStamps.reorderDelay == structure.maxReorderFrames {
            timeStamps.restart() // keeps DTS increasing across a restart (a multi-pass range)
        } else {
            timeStamps = DecodeTimeStampSequencer(reorderDelay: structure.maxReorderFrames)
        }
        // A picture in flight is a frame held too: it comes out when the ring is full.
        frameDelay = structure.frameDelay + pictureDepth - 1
        picturesSincePrepare = 0
        sequenceParametersDue = true
        parameterSetsConfirmed = false
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
            throw VTError(
                .encoderFailed, "the VA-API encoder has no free source surface (more frames held than planned)")
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
        var captions = request.closedCaptions
        if captions != nil, options.packedHeaders & UInt32(VA_ENC_PACKED_HEADER_RAW_DATA) == 0 {
            // The SEI would go in as a raw packed header, which this device does not take.
            captions = nil
            if !reportedCaptionsDropped {
                reportedCaptionsDropped = true
                notices.append(
                    EncoderNotice(
                        property: nil,
                        message:
                            "closed captions are dropped: the VA-API device takes no raw packed headers "
                            + "(VA_ENC_PACKED_HEADER_RAW_DATA), which carry their SEI; hardware=disable writes them "
                            + "with x264"))
            }
        }
        let held = HeldFrame(
            sourceSlot: slot, presentationTimeStamp: request.presentationTimeStamp, duration: request.duration,
            frameReference: request.frameReference, quantizer: request.quantizer, closedCaptions: captions)
        let pictures = planner.submit(held, forceIDR: request.frameType == .idr)
        return try code(pictures, includesRequest: true, drain: false)
    }

    func flush() throws(VTError) -> [EncodedFrame] {
        guard objects != nil else { return [] }
        let frames = try code(planner.flush(), includesRequest: false, drain: true)
        planner.reset()
        return frames
    }

    func reconfigureRateControl(_ properties: CompressionProperties) throws(VTError) -> [EncodedFrame] {
        let (updated, rateNotices) = try VAH264RateControl.choose(
            properties, frameRate: frameRate, offered: offeredModes(endpointIndex), strict: strict)
        notices += rateNotices
        guard updated != rateControl else { return [] }
        // The mode is unchanged: new misc parameters go with the next picture, as va.h allows at
        // any frame. A new mode (a bit rate set or cleared while encoding: CQP <-> VBR/CBR)
        // needs a config and context made for it (VAConfigAttribRateControl is fixed at
        // vaCreateConfig): the pictures in flight are read back and the stream goes on from an
        // IDR picture on the new context.
        if updated.mode == rateControl.mode {
            rateControl = updated
            sequenceParametersDue = true
            return []
        }
        let frames = try flush()
        try prepare(properties: properties, frameRate: frameRate)
        return frames
    }

    /// Submits `pictures` (coding order), reads back what the ring gives (all of it when
    /// `drain`), and returns the frames of the groups completed. On a failure, the frames of
    /// the groups completed go to the takeover with the rest read back from their source surfaces.
    func code(
        _ pictures: [H264CodingPicture<HeldFrame>], includesRequest: Bool, drain: Bool
    ) throws(VTError) -> [EncodedFrame] {
        var submitted = 0
        var frames: [EncodedFrame] = []
        do throws(VTError) {
            for (index, picture) in pictures.enumerated() {
                // The reconstructions to keep after this picture: what the rest of this batch and
                // the planner's DPB refer to (the planner has already planned the whole batch).
                var live = Set(planner.referenceFrames.map(\.codingIndex))
                for later in pictures[(index + 1)...] { live.formUnion(later.referenceFrames.map(\.codingIndex)) }
                // B pictures follow their anchor in the same batch: a group ends before the next
                // anchor or with the batch.
                let endsGroup = index == pictures.count - 1 || pictures[index + 1].type != .bidirectional
                try submit(picture, keeping: live, endsGroup: endsGroup, output: &frames)
                submitted += 1
                while inFlight.count >= pictureDepth || (!entropyVerified && !inFlight.isEmpty) {
                    try retireOldest(into: &frames)
                }
            }
            while drain && !inFlight.isEmpty { try retireOldest(into: &frames) }
        } catch {
            takeover = makeTakeover(
                encoded: frames, failing: Array(pictures[submitted...]), includesRequest: includesRequest)
            throw error
        }
        return frames
    }

    /// What another encoder needs after a failure: `encoded` (whole groups), and every frame not
    /// output yet (read back, in flight, `failing`, held by the planner), read back from its source
    /// surface in display order.
    func makeTakeover(
        encoded: [EncodedFrame], failing: [H264CodingPicture<HeldFrame>], includesRequest: Bool
    ) -> EncoderTakeover {
        // The device may still be reading the sources of pictures in flight.
        for picture in inFlight { _ = try? syncSource(of: picture.picture) }
        var held = readBackGroup.map(\.picture.frame) + inFlight.map(\.picture.frame) + failing.map(\.frame)
        held += planner.flush().map(\.frame)
        held.sort { $0.presentationTimeStamp < $1.presentationTimeStamp }
        planner.reset()
        readBackGroup.removeAll()
        inFlight.removeAll()
        var requests: [EncoderFrameRequest] = []
        var lost: [UInt64] = []
        for frame in held {
            if let image = readBack(sourceSlot: frame.sourceSlot) {
                requests.append(
                    EncoderFrameRequest(
                        image: image, presentationTimeStamp: frame.presentationTimeStamp, duration: frame.duration,
                        frameType: .automatic, frameReference: frame.frameReference, quantizer: frame.quantizer,
                        closedCaptions: frame.closedCaptions))
            } else {
                lost.append(frame.frameReference)
            }
        }
        return EncoderTakeover(
            encodedBeforeFailure: encoded, unencodedFrames: requests, includesFailingRequest: includesRequest,
            lostFrames: lost)
    }
}
