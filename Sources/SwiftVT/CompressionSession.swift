import Glibc
import H264
import MediaCore

/// Compresses pictures into H.264 or HEVC samples: VideoToolbox's `VTCompressionSession`.
///
/// The codec is the `codecType` given at creation (`avc1`, or `hvc1` for HEVC); only the backends
/// of that codec (``EncoderBackendFactory/codecType``) are considered: x264 or VA-API for H.264,
/// x265 for HEVC, which has no hardware backend.
///
/// Encoding is synchronous: ``encode(_:presentationTimeStamp:duration:frameProperties:frameReference:)``
/// hands the picture to the backend on the caller's thread and calls the output handler, on that
/// thread, for every frame that became ready, in decode order, before it returns. The encoder may
/// hold frames (``frameDelay``) for reordering and look-ahead; ``completeFrames(until:)`` outputs
/// them.
///
/// The GOP decisions shared by every backend are made here (an ``H264IDRSchedule``, the H.264
/// layer's one rule for IDR placement): IDR pictures for forced key frames, for
/// ``CompressionProperties/maxKeyFrameIntervalDuration`` and
/// ``CompressionProperties/maxKeyFrameInterval``, and for every frame when temporal compression is
/// off; the backend is told the frame type and decides the rest. The key frames the backend
/// outputs (its own, at scene cuts) are noted, so the time limit counts from them.
///
/// Lock discipline: as in ``DecompressionSession``, one thread at a time owns the backend (taken
/// and given back under the session's lock, used unlocked: ``BackendOwnership``). The output
/// handler runs with no lock held, so it may read ``properties``, call ``setProperties(_:)`` or
/// ``invalidate()``; calls that encode throw ``VTError/Code/reentrantCall`` from there.
/// ``setProperties(_:)`` never waits for the encoder: rate-control changes are picked up by the
/// owner at the next frame.
///
/// Lifetime: ``invalidate()`` (also run at deinit) releases the backend and the handler.
public final class CompressionSession: Sendable {
    public let width: Int
    public let height: Int
    public let sourcePixelFormat: PixelFormat
    /// `avc1` (H.264) or `hvc1` (HEVC), as given at creation.
    public let codecType: FourCharCode
    /// The backend encoding now, e.g. `x264 (software)`; under ``HardwarePolicy/auto`` it
    /// changes when a hardware encoder fails and software takes over (``backendFailure``).
    public var activeBackendName: String { activeName.name }
    /// Why the session left the hardware encoder it started with; nil while it has not.
    public var backendFailure: String? { activeName.failure }
    /// The backend chosen at creation is hardware (it stays true after a fallback; see
    /// ``backendFailure``).
    public let isHardwareAccelerated: Bool
    /// What was tried before the chosen backend, and why each was passed over ("" when the
    /// first candidate was taken).
    public let backendsPassedOver: String
    private let activeName: ActiveBackendName
    private let factory: any EncoderBackendFactory
    let monitor: Monitor<State>

    struct State {
        /// The backend and who uses it now (``BackendOwnership``: its lock discipline).
        var ownership: BackendOwnership<any EncoderBackend>
        var handler: CompressionOutputHandler?
        var properties: CompressionProperties
        /// Properties frozen by prepareToEncodeFrames or the first frame: only rate control may change.
        var propertiesLocked = false
        /// The backend's encoder is open (reset by completeFrames, which may close it).
        var backendPrepared = false
        /// Rate-control values set since the owner last gave them to the backend.
        var pendingRateControl: CompressionProperties?
        var idrSchedule = H264IDRSchedule()
        var formatDescription: FormatDescription?
        var frameDelay = 0
        /// Notices from the backend not yet taken by ``takeNotices()``.
        var notices: [EncoderNotice] = []
        /// Set by ``setMultiPassStorage(_:maximumPasses:)``.
        var multiPass: MultiPassState?

        /// ``invalidate()`` was called.
        var invalidated: Bool { ownership.isInvalidated }
    }

    /// The largest width or height accepted (H.264 level 6.2 allows 8192x4320 but the syntax
    /// allows more; 16384 keeps sizes within every backend's reach).
    public static let maximumDimension = 16384

    /// Creates a session for `width` x `height` pictures in `sourcePixelFormat`.
    ///
    /// - Parameters:
    ///   - backends: the encoders this session may use, in order of preference within each kind.
    ///   - outputHandler: receives every encoded frame (see ``CompressionOutputHandler``).
    ///   - codecType: ``FourCharCode/h264`` (`avc1`) or ``FourCharCode/hevc`` (`hvc1`); the
    ///     samples carry no parameter sets, the format description does.
    /// - Throws: ``VTError/Code/unsupportedFormat`` for another codec, no backend of the codec among
    ///   `backends`, a size out of 1...16384, an odd size with 4:2:0 chroma, or a format no backend takes; ``VTError/Code/invalidProperty``
    ///   naming the property for impossible properties; ``VTError/Code/hardwareUnavailable``
    ///   under ``HardwarePolicy/require`` (always for HEVC); ``VTError/Code/invalidArgument`` for a negative
    ///   thread count; the backend's error when the one that could take the stream failed to start.
    public init(
        width: Int, height: Int, codecType: FourCharCode = .h264, encoderSpecification: EncoderSpecification = .init(),
        sourcePixelFormat: PixelFormat, properties: CompressionProperties = .init(),
        backends allBackends: [any EncoderBackendFactory], outputHandler: @escaping CompressionOutputHandler
    ) throws(VTError) {
        guard codecType == .h264 || codecType == .hevc else {
            throw VTError(
                .unsupportedFormat, "codec '\(codecType)' cannot be encoded; only H.264 ('avc1') and HEVC ('hvc1')")
        }
        for (name, value) in [("width", width), ("height", height)] {
            guard value >= 1, value <= Self.maximumDimension else {
                throw VTError(
                    .unsupportedFormat, "\(name) \(value) is outside 1...\(Self.maximumDimension)")
            }
        }
        // Chroma samples cover two luma columns (4:2:0, 4:2:2) and rows (4:2:0), and the
        // cropping window is counted in whole chroma samples (CropUnitX/CropUnitY, 7-19/7-20):
        // an odd size cannot be coded in these formats (x264 refuses it too).
        let subsampled: [(String, Int)]
        switch sourcePixelFormat.chromaSubsampling {
        case .yuv420?: subsampled = [("width", width), ("height", height)]
        case .yuv422?: subsampled = [("width", width)]
        default: subsampled = []
        }
        for (name, value) in subsampled where value % 2 != 0 {
            throw VTError(
                .unsupportedFormat, reason: .oddDimension(dimension: name, value: value, pixelFormat: sourcePixelFormat)
            )
        }
        guard encoderSpecification.threadCount >= 0 else {
            throw VTError(
                .invalidArgument, "threadCount \(encoderSpecification.threadCount) is negative (0 means automatic)")
        }
        try properties.validate(codecType: codecType)
        let codecName = codecType == .hevc ? "HEVC" : "H.264"
        if codecType == .hevc, encoderSpecification.hardwarePolicy == .require {
            throw VTError(
                .hardwareUnavailable,
                "hardware encoding is required (hardwarePolicy .require) but SwiftVT has no hardware HEVC encoder "
                    + "(its VA-API encoder writes H.264 only). Use hardwarePolicy .auto or .disable to encode HEVC "
                    + "with x265.")
        }
        // Only the backends of this codec; the others are named when none is left.
        let backends = allBackends.filter { $0.codecType == codecType }
        guard !backends.isEmpty || allBackends.isEmpty else {
            let given = allBackends.map { "\($0.name) writes '\($0.codecType)'" }.joined(separator: "; ")
            throw VTError(
                .unsupportedFormat,
                "no \(codecName) ('\(codecType)') encoder among the backends given (\(given)); add one, e.g. "
                    + (codecType == .hevc ? "X265EncoderFactory()" : "X264EncoderFactory()"))
        }
        let configuration = EncoderConfiguration(
            width: width, height: height, pixelFormat: sourcePixelFormat, properties: properties,
            threadCount: encoderSpecification.threadCount, hardwarePolicy: encoderSpecification.hardwarePolicy)
        let selection = BackendSelection<any EncoderBackendFactory, any EncoderBackend>.select(
            policy: encoderSpecification.hardwarePolicy, factories: backends, what: "\(codecName) encoder",
            name: \.name, isHardware: \.isHardware,
            unavailableReason: {
                $0.unavailableReason(
                    width: width, height: height, pixelFormat: sourcePixelFormat, properties: properties)
            }
        ) { (factory) throws(VTError) in try factory.makeBackend(configuration: configuration) }
        let chosen: (any EncoderBackendFactory, any EncoderBackend)
        let passedOver: String
        switch selection {
        case .chosen(let factory, let backend, let tried):
            chosen = (factory, backend)
            passedOver = tried.map(\.description).joined(separator: "; ")
        case .hardwareUnavailable(let tried):
            throw VTError(.hardwareUnavailable, reason: .hardwareRequired(.encoding, tried: tried))
        case .startFailed(var error, let tried, let count):
            if count > 1 { error.backendsTried = tried }
            throw error
        case .unavailable(let tried):
            throw VTError(.unsupportedFormat, reason: .noBackend(.encoding, tried: tried))
        }
        self.width = width
        self.height = height
        self.sourcePixelFormat = sourcePixelFormat
        self.codecType = codecType
        let activeName = ActiveBackendName(chosen.0.name)
        var backend = chosen.1
        if encoderSpecification.hardwarePolicy == .auto, chosen.0.isHardware,
            let software = backends.first(where: {
                !$0.isHardware
                    && $0.unavailableReason(
                        width: width, height: height, pixelFormat: sourcePixelFormat, properties: properties) == nil
            })
        {
            // auto: a hardware encoder that fails hands its frames over to software.
            backend = FallbackEncoderBackend(
                primary: chosen.1, primaryName: chosen.0.name, fallbackFactory: software, configuration: configuration,
                activeName: activeName)
        }
        self.factory = chosen.0
        self.activeName = activeName
        self.backendsPassedOver = passedOver
        self.isHardwareAccelerated = chosen.0.isHardware
        self.monitor = Monitor(
            State(ownership: BackendOwnership(backend), handler: outputHandler, properties: properties))
    }

    deinit { invalidate() }

    // MARK: Properties

    /// The current properties.
    public var properties: CompressionProperties { monitor.withLock { $0.properties } }

    /// Changes properties. The result is validated as a whole; nothing changes when it throws.
    ///
    /// Before ``prepareToEncodeFrames()`` (and the first frame) every property may change. After,
    /// only ``CompressionPropertyKey/changeableWhileEncoding`` (bit rate, data rate limits,
    /// quality), taking effect from the next frame, from any rate-control mode to any other (a
    /// bit rate set or cleared, data rate limits turned on or off). A backend that cannot change
    /// its encoder's mode in place outputs the frames it holds and starts a new one at that
    /// frame, with an IDR picture (x264 between ABR and CRF or VBV on and off; VA-API between
    /// CQP, CBR and VBR). Never waits for the encoder, so it may be called from the output
    /// handler or while another thread is encoding.
    ///
    /// - Throws: ``VTError/Code/invalidProperty`` naming the property;
    ///   ``VTError/Code/invalidSession`` after ``invalidate()``.
    public func setProperties(_ update: (inout CompressionProperties) -> Void) throws(VTError) {
        try monitor.withLock { (state) throws(VTError) in
            guard !state.invalidated else { throw Self.invalidSession }
            var new = state.properties
            update(&new)
            guard new != state.properties else { return }
            try new.validate(codecType: codecType)
            if state.propertiesLocked {
                let old = state.properties
                for key in CompressionPropertyKey.allCases where new.differs(from: old, in: key) {
                    guard CompressionPropertyKey.changeableWhileEncoding.contains(key) else {
                        throw .invalidProperty(
                            key,
                            "cannot change after prepareToEncodeFrames() or the first frame; only averageBitRate, "
                                + "dataRateLimits and quality can. Set it before, or create a new session")
                    }
                }
                state.pendingRateControl = new
            }
            state.properties = new
        }
    }

    /// What `backend` honours: each key with its range and mapping.
    public static func supportedProperties(for backend: any EncoderBackendFactory) -> [CompressionPropertyKey: String] {
        backend.supportedProperties
    }

    /// What the session's user should hear about since the last call: properties the encoder
    /// could not honour and what it does instead, a hardware encoder that failed. vtenc posts
    /// them as GStreamer warnings.
    public func takeNotices() -> [EncoderNotice] {
        monitor.withLock { state in
            defer { state.notices.removeAll() }
            return state.notices
        }
    }

    /// The SPS/PPS description, known after ``prepareToEncodeFrames()`` or the first frame.
    public var formatDescription: FormatDescription? { monitor.withLock { $0.formatDescription } }

    /// Frames the encoder holds before the first output at most (reordering + look-ahead +
    /// frame threads): the latency in frames. Known after ``prepareToEncodeFrames()``; 0 before.
    public var frameDelay: Int { monitor.withLock { $0.frameDelay } }

    // MARK: Encoding

    /// Starts the encoder now rather than at the first frame; freezes all properties except rate
    /// control. Optional (`VTCompressionSessionPrepareToEncodeFrames`).
    public func prepareToEncodeFrames() throws(VTError) {
        let (backend, properties, alreadyPrepared) = try takeBackend("prepareToEncodeFrames()")
        var failure: VTError?
        if !alreadyPrepared {
            do {
                try backend.prepare(properties: properties, frameRate: properties.expectedFrameRate ?? 30)
            } catch {
                failure = error
            }
        }
        giveBack(prepared: failure == nil ? backend : nil, outputs: [])
        if let failure { throw failure }
    }

    /// Encodes one picture. The picture is only read during this call (the backend copies what it
    /// keeps), so the caller may reuse it afterwards.
    ///
    /// - Throws: ``VTError/Code/invalidSession`` after ``invalidate()``;
    ///   ``VTError/Code/invalidArgument`` for a picture of another size or format, or an
    ///   invalid time stamp; ``VTError/Code/reentrantCall`` from the output handler; the
    ///   backend's error.
    public func encode(
        _ image: PixelBuffer, presentationTimeStamp: MediaTime, duration: MediaTime,
        frameProperties: FrameProperties = .init(), frameReference: UInt64 = 0
    ) throws(VTError) {
        guard image.width == width, image.height == height, image.pixelFormat == sourcePixelFormat else {
            throw VTError(
                .invalidArgument,
                reason: .pictureMismatch(
                    width: image.width, height: image.height, pixelFormat: image.pixelFormat, sessionWidth: width,
                    sessionHeight: height, sessionPixelFormat: sourcePixelFormat))
        }
        guard presentationTimeStamp.isNumeric else {
            // GStreamer's clock times above 2^63 ns arrive as +infinity (MediaTime's range is
            // CMTime's: a signed 64-bit value).
            if presentationTimeStamp.isPositiveInfinity {
                throw VTError(
                    .invalidArgument,
                    "the frame's presentation time stamp is beyond the largest time a session handles "
                        + "(2^63 - 1 ns, about 292 years); the time stamps upstream are out of range")
            }
            throw VTError(.invalidArgument, "the presentation time stamp is not a number")
        }
        let me = pthread_self()
        let taken = try monitor.withLock(waitingUntil: { $0.ownership.takeWouldNotWait(by: me) }) {
            (state) throws(VTError) -> EncodeDecision in
            let call = "encode(_:presentationTimeStamp:duration:frameProperties:frameReference:)"
            try state.ownership.checkAvailable(
                to: me, invalidated: Self.invalidSession, reentrant: Self.reentrant(call))
            // Multi-pass: which range the frame belongs to and its quantizer (throws before
            // taking ownership, so a refused frame leaves the session as it was).
            let passDecision = try state.multiPass?.decide(presentationTimeStamp: presentationTimeStamp)
            let backend = try state.ownership.take(
                by: me, invalidated: Self.invalidSession, reentrant: Self.reentrant(call))
            state.propertiesLocked = true
            let rateControl = state.backendPrepared ? state.pendingRateControl : nil
            state.pendingRateControl = nil
            if passDecision?.startsRange == true { state.idrSchedule.reset() }
            let idr = state.idrSchedule.nextFrameIsIDR(
                presentationTimeStamp: presentationTimeStamp, forced: frameProperties.forceKeyFrame,
                limits: state.properties.idrLimits)
            var type: EncoderFrameType = idr ? .idr : .automatic
            if passDecision?.keyFrame == true { type = .idr }
            return EncodeDecision(
                backend: backend, properties: state.properties, prepared: state.backendPrepared,
                rateControl: rateControl, frameType: type, quantizer: passDecision?.quantizer,
                restart: passDecision?.startsRange == true && state.backendPrepared,
                recordingPass: state.multiPass?.passInProgress == true ? state.multiPass?.currentPass : nil)
        }
        let backend = taken.backend
        let properties = taken.properties
        var prepared = taken.prepared
        var frames: [EncodedFrame] = []
        var failure: VTError?
        do {
            if taken.restart {
                // A new range of a multi-pass pass: what the encoder holds from the previous
                // range goes out, and the range starts a new closed GOP with a fresh encoder.
                frames = try backend.flush()
                prepared = false
            }
            if !prepared {
                let rate =
                    properties.expectedFrameRate
                    ?? (duration.isNumeric && duration.seconds > 0 ? 1 / duration.seconds : 30)
                try backend.prepare(properties: properties, frameRate: min(max(rate, 0.01), 1000))
            } else if let rateControl = taken.rateControl {
                frames += try backend.reconfigureRateControl(rateControl)
            }
            frames += try backend.encode(
                EncoderFrameRequest(
                    image: image, presentationTimeStamp: presentationTimeStamp, duration: duration,
                    frameType: taken.frameType, frameReference: frameReference, quantizer: taken.quantizer,
                    closedCaptions: frameProperties.closedCaptions?.isEmpty == false
                        ? frameProperties.closedCaptions : nil))
        } catch {
            failure = error
        }
        record(frames, pass: taken.recordingPass)
        deliver(frames)
        giveBack(prepared: failure == nil || prepared ? backend : nil, outputs: frames)
        if let failure { throw failure }
    }

    /// Outputs every frame the encoder holds, then returns (`VTCompressionSessionCompleteFrames`).
    /// The x264 backend cannot stop part-way, so every held frame is output whatever
    /// `presentationTimeStamp` says (VideoToolbox also allows emitting more). The session stays
    /// usable; the next frame starts a new GOP with an IDR picture.
    public func completeFrames(until presentationTimeStamp: MediaTime = .invalid) throws(VTError) {
        try drain("completeFrames(until:)")
    }

    /// Outputs every frame the backend holds; the next frame starts a new GOP.
    func drain(_ what: String) throws(VTError) {
        let (backend, _, prepared) = try takeBackend(what)
        guard prepared else {
            giveBack(prepared: nil, outputs: [])
            return
        }
        let pass = monitor.withLock { $0.multiPass?.passInProgress == true ? $0.multiPass?.currentPass : nil }
        var frames: [EncodedFrame] = []
        var failure: VTError?
        do {
            frames = try backend.flush()
        } catch {
            failure = error
        }
        record(frames, pass: pass)
        deliver(frames)
        giveBack(prepared: nil, outputs: frames, flushed: true)
        if let failure { throw failure }
    }

    /// Stops the session: the encoder and the output handler are released; held frames are
    /// dropped. Idempotent; later calls throw ``VTError/Code/invalidSession``. Safe to
    /// call from the output handler.
    public func invalidate() {
        let me = pthread_self()
        let (dropped, handler): ((any EncoderBackend)?, CompressionOutputHandler?) = monitor.withLock(
            waitingUntil: { $0.ownership.takeWouldNotWait(by: me) }
        ) { state in
            guard !state.invalidated else { return (nil, nil) }
            // The owner (this thread, inside the handler) drops the backend when it gives it back.
            let dropped = state.ownership.invalidate()
            let handler = state.handler
            state.handler = nil
            return (dropped, handler)
        }
        // Released outside the lock: closing an encoder joins its threads.
        withExtendedLifetime((dropped, handler)) {}
    }

    // MARK: Ownership

    static var invalidSession: VTError {
        VTError(.invalidSession, "the compression session was invalidated; create a new one")
    }

    private static func reentrant(_ what: String) -> VTError {
        VTError(
            .reentrantCall,
            "\(what) was called from the output handler, which runs inside encoding and would wait for itself; "
                + "call it after the handler returns")
    }

    /// Becomes the backend's owner; freezes the properties.
    private func takeBackend(_ what: String) throws(VTError) -> (any EncoderBackend, CompressionProperties, Bool) {
        let me = pthread_self()
        return try monitor.withLock(waitingUntil: { $0.ownership.takeWouldNotWait(by: me) }) {
            (state) throws(VTError) in
            let backend = try state.ownership.take(
                by: me, invalidated: Self.invalidSession, reentrant: Self.reentrant(what))
            state.propertiesLocked = true
            return (backend, state.properties, state.backendPrepared)
        }
    }

    /// Calls the handler for each frame, unlocked (the handler may call back).
    private func deliver(_ frames: [EncodedFrame]) {
        guard !frames.isEmpty, let handler = monitor.withLock({ $0.handler }) else { return }
        for frame in frames { handler(frame) }
    }

    /// Ends ownership, recording what the backend now knows. `prepared` is the backend when its
    /// encoder is open, nil when it is not (failure, or closed by a flush).
    private func giveBack(prepared: (any EncoderBackend)?, outputs: [EncodedFrame], flushed: Bool = false) {
        let dropped: (any EncoderBackend)? = monitor.withLock { state in
            // The owner is giving the backend back, so nothing else uses it now.
            state.notices += state.ownership.backend?.takeNotices() ?? []
            if let prepared {
                state.backendPrepared = true
                if let description = prepared.formatDescription { state.formatDescription = description }
                state.frameDelay = prepared.frameDelay
            } else {
                state.backendPrepared = false
            }
            if flushed { state.idrSchedule.reset() }
            for frame in outputs {
                if let sample = frame.sampleBuffer, sample.isSync {
                    state.idrSchedule.noteKeyFrame(at: sample.presentationTimeStamp)
                }
            }
            return state.ownership.giveBack()
        }
        withExtendedLifetime(dropped) {}
    }
}

/// What ``CompressionSession/encode(_:presentationTimeStamp:duration:frameProperties:frameReference:)``
/// decided under the lock.
private struct EncodeDecision {
    var backend: any EncoderBackend
    var properties: CompressionProperties
    var prepared: Bool
    var rateControl: CompressionProperties?
    var frameType: EncoderFrameType
    var quantizer: Double?
    /// Flush and reopen the encoder before this frame (a new multi-pass range).
    var restart: Bool
    /// The pass whose analysis the outputs belong to (nil: not multi-pass).
    var recordingPass: Int?
}

extension CompressionProperties {
    /// The key-frame properties as limits for the session's ``H264IDRSchedule``.
    var idrLimits: H264IDRLimits {
        // Under intra refresh the key-frame interval is the refresh period, which the encoder
        // keeps: no IDR picture is forced after it.
        H264IDRLimits(
            maxFrameInterval: intraRefresh ? 0 : maxKeyFrameInterval,
            maxDuration: intraRefresh ? 0 : maxKeyFrameIntervalDuration, everyFrame: !allowTemporalCompression)
    }
}
