import MediaCore

/// Under ``HardwarePolicy/auto``: encodes with a hardware backend and, when it fails (its
/// device refuses a context, a picture fails, the coded buffer overflows), goes on with a
/// software backend without losing frames.
///
/// The hardware encoder hands over (``EncoderTakeover``) what it finished up to its last
/// complete group of pictures and the frames it had accepted but not output (read back from
/// its surfaces); software starts a new coded video sequence with an IDR picture at the first
/// of them. The stream's SPS/PPS change there (their format description travels with every
/// sample). Decode time stamps stay increasing across the switch.
final class FallbackEncoderBackend: EncoderBackend {
    private var primary: (any EncoderBackend)?
    private let primaryName: String
    private let fallbackFactory: any EncoderBackendFactory
    private var fallback: (any EncoderBackend)?
    private let configuration: EncoderConfiguration
    private let activeName: ActiveBackendName
    private var notices: [EncoderNotice] = []
    private var properties: CompressionProperties
    private var frameRate = 30.0
    private var lastDecodeTimeStamp: MediaTime?

    init(
        primary: any EncoderBackend, primaryName: String, fallbackFactory: any EncoderBackendFactory,
        configuration: EncoderConfiguration, activeName: ActiveBackendName
    ) {
        self.primary = primary
        self.primaryName = primaryName
        self.fallbackFactory = fallbackFactory
        self.configuration = configuration
        self.activeName = activeName
        self.properties = configuration.properties
    }

    private var current: (any EncoderBackend)? { fallback ?? primary }

    var formatDescription: FormatDescription? { current?.formatDescription }
    var frameDelay: Int { current?.frameDelay ?? 0 }

    func takeNotices() -> [EncoderNotice] {
        var all = notices + (primary?.takeNotices() ?? [])
        all += fallback?.takeNotices() ?? []
        notices.removeAll()
        return all
    }

    func prepare(properties: CompressionProperties, frameRate: Double) throws(VTError) {
        self.properties = properties
        self.frameRate = frameRate
        if let fallback { return try fallback.prepare(properties: properties, frameRate: frameRate) }
        guard let primary else { return }
        do {
            try primary.prepare(properties: properties, frameRate: frameRate)
        } catch {
            try switchToFallback(after: error).prepare(properties: properties, frameRate: frameRate)
        }
    }

    func encode(_ request: EncoderFrameRequest) throws(VTError) -> [EncodedFrame] {
        if let fallback { return keepDecodeOrder(try fallback.encode(request)) }
        guard let primary else { return [] }
        do {
            return keepDecodeOrder(try primary.encode(request))
        } catch {
            let (software, takeover, frames) = try takeOver(from: primary, after: error)
            guard takeover?.includesFailingRequest != true else { return frames }
            var first = request
            if takeover?.unencodedFrames.isEmpty != false { first.frameType = .idr }
            return frames + keepDecodeOrder(try software.encode(first))
        }
    }

    func flush() throws(VTError) -> [EncodedFrame] {
        if let fallback { return keepDecodeOrder(try fallback.flush()) }
        guard let primary else { return [] }
        do {
            return keepDecodeOrder(try primary.flush())
        } catch {
            let (software, _, frames) = try takeOver(from: primary, after: error)
            return frames + keepDecodeOrder(try software.flush())
        }
    }

    func reconfigureRateControl(_ properties: CompressionProperties) throws(VTError) -> [EncodedFrame] {
        self.properties = properties
        if let fallback { return keepDecodeOrder(try fallback.reconfigureRateControl(properties)) }
        guard let primary else { return [] }
        do {
            return keepDecodeOrder(try primary.reconfigureRateControl(properties))
        } catch {
            return try takeOver(from: primary, after: error).frames
        }
    }

    /// Leaves the hardware encoder: the software one is made, the change is noted.
    private func switchToFallback(after error: VTError) throws(VTError) -> any EncoderBackend {
        notices += primary?.takeNotices() ?? []
        primary = nil
        let backend = try fallbackFactory.makeBackend(configuration: configuration)
        fallback = backend
        activeName.set("\(fallbackFactory.name), after \(primaryName) failed", failure: error.message)
        notices.append(
            EncoderNotice(
                property: nil,
                message: "\(primaryName) failed (\(error.message)); hardware policy auto, so encoding goes on with "
                    + "\(fallbackFactory.name) from the next frame, starting with an IDR picture"))
        return backend
    }

    /// After the hardware encoder failed: the software encoder, prepared, and the frames that
    /// are ready (what the hardware finished, then the frames it held, encoded in software).
    private func takeOver(
        from primary: any EncoderBackend, after error: VTError
    ) throws(VTError) -> (software: any EncoderBackend, takeover: EncoderTakeover?, frames: [EncodedFrame]) {
        let takeover = primary.takeOverAfterFailure()
        let software = try switchToFallback(after: error)
        try software.prepare(properties: properties, frameRate: frameRate)
        let frames = keepDecodeOrder(takeover?.encodedBeforeFailure ?? []) + (try resume(takeover, on: software))
        return (software, takeover, frames)
    }

    /// The taken-over frames through the software encoder, the first as an IDR picture.
    private func resume(_ takeover: EncoderTakeover?, on software: any EncoderBackend) throws(VTError) -> [EncodedFrame]
    {
        guard let takeover else { return [] }
        var frames = takeover.lostFrames.map { reference in
            EncodedFrame(
                status: VTError(
                    .encoderFailed,
                    "\(primaryName) failed and this frame's picture could not be read back from the device"),
                frameReference: reference)
        }
        for (index, var request) in takeover.unencodedFrames.enumerated() {
            if index == 0 { request.frameType = .idr }
            frames += keepDecodeOrder(try software.encode(request))
        }
        return frames
    }

    /// Decode time stamps increase strictly over the switch of encoders (a new encoder
    /// extrapolates its first DTS before its first PTS), without passing a sample's PTS.
    private func keepDecodeOrder(_ frames: [EncodedFrame]) -> [EncodedFrame] {
        frames.map { frame in
            guard let sample = frame.sampleBuffer, let timing = try? sample.timingInfo(at: 0),
                timing.decodeTimeStamp.isNumeric
            else { return frame }
            var dts = timing.decodeTimeStamp
            if let last = lastDecodeTimeStamp, dts <= last {
                let nudged = last + MediaTime(value: 1, timescale: 90_000)
                if nudged <= timing.presentationTimeStamp || !timing.presentationTimeStamp.isNumeric {
                    dts = nudged
                }
            }
            lastDecodeTimeStamp = dts
            guard dts != timing.decodeTimeStamp, let data = sample.dataBuffer else { return frame }
            var retimed = timing
            retimed.decodeTimeStamp = dts
            var adjusted = frame
            adjusted.sampleBuffer =
                (try? SampleBuffer(
                    dataBuffer: data, formatDescription: sample.formatDescription, sampleCount: 1,
                    timings: .uniform(retimed),
                    sizes: sample.sizes, sampleAttachments: sample.sampleAttachments, attachments: sample.attachments))
                ?? sample
            return adjusted
        }
    }
}
