import Glibc
import H264
import H265
import MediaCore

/// Decodes compressed samples into pictures: VideoToolbox's `VTDecompressionSession`.
///
/// The session picks a backend according to the ``HardwarePolicy``, then feeds it samples either
/// on the caller's thread (the output handler runs before ``decode(_:flags:frameReference:)``
/// returns) or, with ``DecodeFrameFlags/enableAsynchronousDecompression``, on a worker thread fed
/// by a queue bounded by ``maximumFramesInFlight`` (``decode(_:flags:frameReference:)`` blocks
/// while it is full). Either way the backend is used by one thread at a time and frames reach the
/// handler in output order.
///
/// Lifetime: the handler is released by ``invalidate()`` (also run when the session is
/// deinitialized), so a handler that captures the session does not keep it alive past that.
public final class DecompressionSession: Sendable {
    public let formatDescription: FormatDescription
    /// The backend decoding now, e.g. `libavcodec (software)`. Under ``HardwarePolicy/auto`` it
    /// changes when the hardware decoder fails mid-stream and the session goes on in software.
    public var activeBackendName: String { activeName.name }
    /// Why the session left the backend it started with (a hardware decoder that failed
    /// mid-stream under ``HardwarePolicy/auto``); nil while it has not.
    public var backendFailure: String? { activeName.failure }
    /// Whether the backend chosen at creation is a hardware decoder.
    public let isHardwareAccelerated: Bool
    private let activeName: ActiveBackendName
    /// The backends tried before the chosen one and why each was not taken ("" when the first
    /// candidate won): under ``HardwarePolicy/auto``, why the session decodes in software.
    public let backendsPassedOver: String
    /// How many asynchronous samples may be accepted and not yet decoded before
    /// ``decode(_:flags:frameReference:)`` blocks (back-pressure): 4 plus the decoder threads.
    public let maximumFramesInFlight: Int
    private let core: SessionCore

    /// Creates a session for `formatDescription`.
    ///
    /// - Parameters:
    ///   - backends: the decoders this session may use, in order of preference within each kind
    ///     (hardware is tried before software under ``HardwarePolicy/auto``).
    ///   - outputHandler: receives every decoded frame (see ``DecompressionOutputHandler``).
    /// - Throws: ``VTError/Code/hardwareUnavailable`` under ``HardwarePolicy/require``
    ///   when no hardware backend can take the stream (the message lists what was tried and why);
    ///   ``VTError/Code/unsupportedFormat`` when no backend can; the backend's error when
    ///   the one that could take the stream failed to start; ``VTError/Code/invalidArgument``
    ///   for a row alignment that is not a power of two in 1...4096 or a negative thread count.
    public init(
        formatDescription: FormatDescription, decoderSpecification: DecoderSpecification = .init(),
        destinationImageBufferAttributes: DestinationImageBufferAttributes = .init(),
        backends: [any DecoderBackendFactory], outputHandler: @escaping DecompressionOutputHandler
    ) throws(VTError) {
        let alignment = destinationImageBufferAttributes.rowAlignment
        guard alignment > 0, alignment <= 4096, alignment & (alignment - 1) == 0 else {
            throw VTError(
                .invalidArgument, "rowAlignment \(alignment) is not a power of two between 1 and 4096")
        }
        guard decoderSpecification.threadCount >= 0 else {
            throw VTError(
                .invalidArgument, "threadCount \(decoderSpecification.threadCount) is negative (0 means automatic)")
        }
        let (factory, chosenBackend, passedOver) = try Self.chooseBackend(
            format: formatDescription, specification: decoderSpecification,
            attributes: destinationImageBufferAttributes, factories: backends)
        let activeName = ActiveBackendName(factory.name)
        var backend = chosenBackend
        if decoderSpecification.hardwarePolicy == .auto, factory.isHardware,
            let software = backends.first(where: {
                !$0.isHardware && $0.unavailableReason(for: formatDescription) == nil
            })
        {
            // auto: a hardware decoder that fails mid-stream hands over to software.
            backend = FallbackDecoderBackend(
                primary: chosenBackend, primaryName: factory.name, fallbackFactory: software, format: formatDescription,
                specification: decoderSpecification, attributes: destinationImageBufferAttributes,
                activeName: activeName)
        }
        let threads = decoderSpecification.effectiveThreadCount
        self.formatDescription = formatDescription
        self.activeName = activeName
        self.backendsPassedOver = passedOver
        self.isHardwareAccelerated = factory.isHardware
        self.maximumFramesInFlight = 4 + threads
        self.core = SessionCore(backend: backend, handler: outputHandler, maximumFramesInFlight: 4 + threads)
    }

    deinit { core.invalidate() }

    /// Applies the hardware policy (``BackendSelection``) and turns its outcome into an error.
    private static func chooseBackend(
        format: FormatDescription, specification: DecoderSpecification,
        attributes: DestinationImageBufferAttributes, factories: [any DecoderBackendFactory]
    ) throws(VTError) -> (any DecoderBackendFactory, any DecoderBackend, String) {
        let selection = BackendSelection<any DecoderBackendFactory, any DecoderBackend>.select(
            policy: specification.hardwarePolicy, factories: factories, what: "\(format.codecName) decoder",
            name: \.name, isHardware: \.isHardware, unavailableReason: { $0.unavailableReason(for: format) }
        ) { (factory) throws(VTError) in
            try factory.makeBackend(format: format, specification: specification, attributes: attributes)
        }
        switch selection {
        case .chosen(let factory, let backend, let passedOver):
            return (factory, backend, passedOver.map(\.description).joined(separator: "; "))
        case .hardwareUnavailable(let tried):
            throw VTError(.hardwareUnavailable, reason: .hardwareRequired(.decoding, tried: tried))
        case .startFailed(var error, let tried, let count):
            if count > 1 { error.backendsTried = tried }
            throw error
        case .unavailable(let tried):
            throw VTError(.unsupportedFormat, reason: .noBackend(.decoding, tried: tried))
        }
    }

    /// Decodes `sample` (one or more AVCC access units for H.264).
    ///
    /// Synchronously (the default) the handler has been called for every frame that became
    /// ready before this returns, and a decoder failure is thrown. With
    /// ``DecodeFrameFlags/enableAsynchronousDecompression`` the sample is queued (blocking while
    /// ``maximumFramesInFlight`` are waiting) and failures reach the handler as frames with a
    /// status; decoding goes on with the next sample.
    ///
    /// The sample's attachments are honoured: ``SampleBufferAttachments/resetDecoderBeforeDecoding``
    /// flushes first, ``SampleBufferAttachments/drainAfterDecoding`` drains after, and a first
    /// sample marked ``SampleAttachments/doNotDisplay`` is treated as ``DecodeFrameFlags/doNotOutputFrame``.
    ///
    /// - Returns: ``DecodeInfoFlags/asynchronous`` when queued; ``DecodeInfoFlags/frameDropped``
    ///   when no picture will be output for it.
    /// - Throws: ``VTError/Code/invalidSession`` after ``invalidate()``;
    ///   ``VTError/Code/invalidArgument`` for an image sample;
    ///   ``VTError/Code/reentrantCall`` from the output handler when the call would
    ///   have to wait for the decoding the handler is part of; the backend's error (synchronous).
    @discardableResult
    public func decode(
        _ sample: SampleBuffer, flags: DecodeFrameFlags = [], frameReference: UInt64 = 0
    ) throws(VTError) -> DecodeInfoFlags {
        guard sample.dataBuffer != nil else {
            throw VTError(
                .invalidArgument, "decode(_:) needs a sample buffer of compressed data, not an image buffer")
        }
        var flags = flags
        if sample.sampleCount > 0, (try? sample.attachments(forSampleAt: 0))?.doNotDisplay == true {
            flags.insert(.doNotOutputFrame)
        }
        var info: DecodeInfoFlags = flags.contains(.doNotOutputFrame) ? [.frameDropped] : []
        if flags.contains(.enableAsynchronousDecompression) {
            try core.enqueue(sample: sample, flags: flags, reference: frameReference)
            info.insert(.asynchronous)
        } else {
            try core.runSynchronously(.decode(sample, flags: flags, reference: frameReference))
        }
        return info
    }

    /// Outputs every frame the decoder still holds (end of stream), after every queued
    /// asynchronous sample; returns when the handler has seen them all. The session stays usable.
    public func finishDelayedFrames() throws(VTError) {
        try core.runSynchronously(.drain)
    }

    /// Returns when every asynchronous sample queued so far has been decoded and its frames
    /// delivered (frames the decoder holds for reordering stay held: see ``finishDelayedFrames()``).
    public func waitForAsynchronousFrames() throws(VTError) {
        try core.waitForQueue()
    }

    /// Drops queued samples and every frame the decoder holds, without output (a seek). The
    /// session stays usable; the next sample should be a random access point.
    public func flush() {
        core.flush()
    }

    /// Whether samples described by `formatDescription` can be decoded by this session without
    /// making a new one (`VTDecompressionSessionCanAcceptFormatDescription`).
    public func canAccept(_ formatDescription: FormatDescription) -> Bool {
        switch self.formatDescription.codecType {
        case .hevc, .hevcInBandParameterSets: self.formatDescription.hevcSessionCanAccept(formatDescription)
        default: self.formatDescription.h264SessionCanAccept(formatDescription)
        }
    }

    /// Stops the session: queued samples are dropped, the worker thread ends, the decoder and the
    /// output handler are released. Idempotent; later calls throw
    /// ``VTError/Code/invalidSession``. Safe to call from the output handler.
    public func invalidate() {
        core.invalidate()
    }
}

/// The session's mutable part: the backend, the queue and the worker, all behind one monitor.
///
/// Lock discipline: the monitor is never held while the backend or the output handler runs.
/// Instead one thread at a time is the backend's *owner* (`State.ownership`, a
/// ``BackendOwnership``): it takes the backend under the lock, uses it unlocked, and gives it back
/// under the lock. Anyone else who needs the backend waits until it is free; the owner itself
/// (i.e. the output handler calling back) either acts directly (flush, invalidate) or gets
/// `.reentrantCall` rather than waiting for itself.
final class SessionCore: Sendable {
    enum Job {
        case decode(SampleBuffer, flags: DecodeFrameFlags, reference: UInt64)
        case drain

        /// The session call that runs the job, for errors.
        var callName: String {
            switch self {
            case .decode: "decode(_:flags:frameReference:)"
            case .drain: "finishDelayedFrames()"
            }
        }
    }

    /// What the session remembers about a sample while the backend works on it. The backend sees
    /// a session-assigned token as the frame reference, so flags travel with the frame through
    /// reordering whatever references the caller uses.
    struct Pending {
        var reference: UInt64
        var flags: DecodeFrameFlags
        var presentationTimeStamp: MediaTime
        var duration: MediaTime
    }

    struct QueuedSample {
        var sample: SampleBuffer
        var token: UInt64
    }

    struct State {
        /// The backend (nil once invalidated and given back) and who uses it now.
        var ownership: BackendOwnership<any DecoderBackend>
        var handler: DecompressionOutputHandler?
        var queue: [QueuedSample] = []
        var worker: pthread_t?
        var pending: [UInt64: Pending] = [:]
        var nextToken: UInt64 = 1

        /// ``invalidate()`` was called.
        var invalidated: Bool { ownership.isInvalidated }
    }

    private let monitor: Monitor<State>
    private let maximumFramesInFlight: Int

    init(backend: any DecoderBackend, handler: @escaping DecompressionOutputHandler, maximumFramesInFlight: Int) {
        monitor = Monitor(State(ownership: BackendOwnership(backend), handler: handler))
        self.maximumFramesInFlight = maximumFramesInFlight
    }

    private static var invalidSession: VTError {
        VTError(.invalidSession, "the decompression session was invalidated; create a new one")
    }

    private static func reentrant(_ what: String) -> VTError {
        VTError(
            .reentrantCall,
            "\(what) was called from the output handler while the session is delivering frames, and would wait "
                + "for itself; call it after the handler returns")
    }

    // MARK: Asynchronous path

    func enqueue(sample: SampleBuffer, flags: DecodeFrameFlags, reference: UInt64) throws(VTError) {
        let me = pthread_self()
        let timing = (try? sample.timingInfo(at: 0)) ?? .invalid
        try monitor.withLock(waitingUntil: { state in
            // Back-pressure: everything accepted and not yet finished counts, queued or decoding.
            state.invalidated || state.ownership.isOwned(by: me)
                || state.queue.count + (state.worker.map { state.ownership.isOwned(by: $0) } == true ? 1 : 0)
                    < self.maximumFramesInFlight
        }) { (state) throws(VTError) in
            try state.ownership.checkAvailable(
                to: me, invalidated: Self.invalidSession, reentrant: Self.reentrant("decode(_:flags:frameReference:)"))
            let token = state.nextToken
            state.nextToken &+= 1
            state.pending[token] = Pending(
                reference: reference, flags: flags.union(.enableAsynchronousDecompression),
                presentationTimeStamp: timing.presentationTimeStamp, duration: timing.duration)
            state.queue.append(QueuedSample(sample: sample, token: token))
            if state.worker == nil {
                // Started under the lock so two callers cannot both start one; the new thread
                // simply blocks on the lock until this returns.
                guard let thread = startThread({ [self] in self.workerLoop() }) else {
                    state.queue.removeLast()
                    state.pending[token] = nil
                    throw VTError(
                        .allocationFailed, "could not start the session's decoding thread (pthread_create failed)")
                }
                state.worker = thread
            }
        }
    }

    private func workerLoop() {
        let me = pthread_self()
        while true {
            let next: (QueuedSample, any DecoderBackend, DecompressionOutputHandler?)? = monitor.withLock(
                waitingUntil: { $0.invalidated || (!$0.queue.isEmpty && $0.ownership.isFree) }
            ) { state in
                // The worker owns nothing while it waits: it takes the backend, or the session
                // was invalidated.
                guard case .taken(let backend) = state.ownership.claim(by: me) else { return nil }
                return (state.queue.removeFirst(), backend, state.handler)
            }
            guard let (queued, backend, handler) = next else { return }
            var frames: [DecodedFrame]
            do {
                frames = try Self.decode(queued.sample, token: queued.token, with: backend)
            } catch {
                // Reported through the handler; the next sample is decoded as usual.
                frames = [DecodedFrame(status: error, frameReference: queued.token)]
            }
            let resolved = resolve(frames)
            if let handler { for frame in resolved { handler(frame) } }
            giveBackBackend()
        }
    }

    // MARK: Synchronous path

    func runSynchronously(_ job: Job) throws(VTError) {
        let me = pthread_self()
        let (backend, handler, token, drainBoundary) = try monitor.withLock(waitingUntil: { state in
            state.invalidated || state.ownership.isOwned(by: me) || (state.queue.isEmpty && state.ownership.isFree)
        }) { (state) throws(VTError) -> (any DecoderBackend, DecompressionOutputHandler?, UInt64, UInt64) in
            let backend = try state.ownership.take(
                by: me, invalidated: Self.invalidSession, reentrant: Self.reentrant(job.callName))
            let token = state.nextToken
            state.nextToken &+= 1
            if case .decode(let sample, let flags, let reference) = job {
                let timing = (try? sample.timingInfo(at: 0)) ?? .invalid
                state.pending[token] = Pending(
                    reference: reference, flags: flags, presentationTimeStamp: timing.presentationTimeStamp,
                    duration: timing.duration)
            }
            return (backend, state.handler, token, state.nextToken)
        }
        var frames: [DecodedFrame] = []
        var failure: VTError?
        do {
            switch job {
            case .decode(let sample, _, _):
                frames = try Self.decode(sample, token: token, with: backend)
            case .drain:
                frames = try backend.drain()
            }
        } catch {
            failure = error
        }
        let resolved = resolve(frames)
        if let handler { for frame in resolved { handler(frame) } }
        if case .drain = job {
            // Everything submitted before the drain has been output or will never be.
            giveBackBackend(forgetPendingBelow: drainBoundary)
        } else {
            // A thrown failure reached the caller, not the handler: nothing will claim the entry.
            giveBackBackend(forgetting: failure == nil ? nil : token)
        }
        if let failure { throw failure }
    }

    private static func decode(
        _ sample: SampleBuffer, token: UInt64, with backend: any DecoderBackend
    ) throws(VTError) -> [DecodedFrame] {
        var frames: [DecodedFrame] = []
        if sample.attachments.resetDecoderBeforeDecoding { backend.flush() }
        frames += try backend.decode(sample, frameReference: token)
        if sample.attachments.drainAfterDecoding { frames += try backend.drain() }
        return frames
    }

    /// Replaces tokens by the caller's references and applies the per-sample flags.
    private func resolve(_ frames: [DecodedFrame]) -> [DecodedFrame] {
        guard !frames.isEmpty else { return frames }
        return monitor.withLock { state in
            frames.map { frame in
                var frame = frame
                let token = frame.frameReference
                // A failure report without a picture leaves the entry: libavcodec may still
                // output a (concealed) picture for the same sample.
                let isReportOnly = frame.imageBuffer == nil && frame.status != nil
                guard let pending = isReportOnly ? state.pending[token] : state.pending.removeValue(forKey: token)
                else {
                    frame.frameReference = 0
                    return frame
                }
                frame.frameReference = pending.reference
                if pending.flags.contains(.enableAsynchronousDecompression) { frame.infoFlags.insert(.asynchronous) }
                if pending.flags.contains(.doNotOutputFrame) {
                    frame.imageBuffer = nil
                    frame.infoFlags.insert(.frameDropped)
                    frame.infoFlags.remove(.imageBufferModifiable)
                }
                if frame.imageBuffer == nil && !frame.presentationTimeStamp.isValid {
                    // A failure report: give it the sample's times.
                    frame.presentationTimeStamp = pending.presentationTimeStamp
                    frame.duration = pending.duration
                }
                // A sample that never produces a frame (the first field of a pair, a sample the
                // decoder swallowed) leaves its entry behind; forget entries far behind the
                // frames now coming out. Reordering spans at most the DPB (16 frames) plus the
                // frame threads' delay, well under the margin.
                if state.pending.count > 256 {
                    state.pending = state.pending.filter { $0.key &+ 128 >= token }
                }
                return frame
            }
        }
    }

    /// Ends ownership. When the session was invalidated meanwhile the backend is dropped here,
    /// after the lock is released (its deinit may take time: a decoder joins its threads).
    private func giveBackBackend(forgetting token: UInt64? = nil, forgetPendingBelow boundary: UInt64? = nil) {
        let dropped: (any DecoderBackend)? = monitor.withLock { state in
            if let token { state.pending[token] = nil }
            if let boundary { state.pending = state.pending.filter { $0.key >= boundary } }
            return state.ownership.giveBack()
        }
        withExtendedLifetime(dropped) {}
    }

    // MARK: Waiting, flushing, invalidation

    func waitForQueue() throws(VTError) {
        let me = pthread_self()
        try monitor.withLock(waitingUntil: { state in
            state.invalidated || state.ownership.isOwned(by: me)
                || (state.queue.isEmpty && !(state.worker.map { state.ownership.isOwned(by: $0) } ?? false))
        }) { (state) throws(VTError) in
            try state.ownership.checkAvailable(
                to: me, invalidated: Self.invalidSession, reentrant: Self.reentrant("waitForAsynchronousFrames()"))
        }
    }

    func flush() {
        let me = pthread_self()
        let (backend, ownedAlready): ((any DecoderBackend)?, Bool) = monitor.withLock(
            waitingUntil: { $0.ownership.takeWouldNotWait(by: me) }
        ) { state in
            // Queued samples are dropped without output, like the frames the decoder holds.
            state.queue.removeAll()
            switch state.ownership.claim(by: me) {
            case .taken(let backend):
                return (backend, false)
            case .ownedAlready(let backend):
                // Called from the output handler: this thread already owns the backend, which is
                // idle while frames are delivered.
                return (backend, true)
            case .invalidated:
                return (nil, false)
            }
        }
        guard let backend else { return }
        backend.flush()
        if ownedAlready {
            monitor.withLock { $0.pending.removeAll() }
        } else {
            giveBackBackend(forgetPendingBelow: .max)
        }
    }

    func invalidate() {
        let me = pthread_self()
        let (dropped, handler, worker): ((any DecoderBackend)?, DecompressionOutputHandler?, pthread_t?) =
            monitor.withLock(waitingUntil: { $0.ownership.takeWouldNotWait(by: me) }) { state in
                guard !state.invalidated else { return (nil, nil, nil) }
                // The owner (this thread, inside the handler) drops the backend when it gives it back.
                let dropped = state.ownership.invalidate()
                state.queue.removeAll()
                state.pending.removeAll()
                let handler = state.handler
                state.handler = nil
                let worker = state.worker
                state.worker = nil
                return (dropped, handler, worker)
            }
        if let worker {
            if pthread_equal(worker, me) != 0 {
                // Invalidated from the output handler on the worker: it ends by itself.
                pthread_detach(worker)
            } else {
                pthread_join(worker, nil)
            }
        }
        // Released outside the lock: the handler may hold the last reference to things whose
        // deinit calls back into the session.
        withExtendedLifetime((dropped, handler)) {}
    }
}

extension FormatDescription {
    /// The codec as people name it, for messages: "H.265" for `hvc1`/`hev1`, else "H.264".
    public var codecName: String {
        codecType.isHEVC ? "H.265" : "H.264"
    }
}
