import H264
import MediaCore

/// An H.264 accelerator that keeps decoded pictures on a device and reads them back: what
/// ``AcceleratedH264Decoder`` needs beyond the state machine's calls (VA-API's, NVDEC's).
public protocol H264DeviceAccelerator: H264Accelerator {
    /// "VA-API", "NVDEC": for messages.
    var apiName: String { get }
    /// Decoded pictures that became ready for output (``H264Accelerator/outputPicture(_:)``), in
    /// output order, until the decoder takes them.
    var outputPictures: [H264Picture] { get set }
    /// Pictures started so far: tells the decoder whether a sample produced a picture.
    var startedPictureCount: Int { get }
    /// Output pictures the decoder keeps back before reading the oldest: with pictures in
    /// flight, reading one back overlaps the device decoding the next (0: read at once, the
    /// least latency).
    var readBackDelay: Int { get }
    /// Reads an output picture back into a pixel buffer; `damaged` when the device reported the
    /// picture damaged (and concealed it).
    func readBack(_ picture: H264Picture) throws(VTError) -> (image: PixelBuffer, damaged: Bool)
    /// What the status of a damaged picture says ("the VA-API device decoded this picture with
    /// errors (VA_STATUS_ERROR_DECODING_ERROR) and concealed them...").
    var damagedPictureText: String { get }
    /// A flush (seek): output memory held for the stream may go.
    func flushed()
    /// Set by the decoder; the accelerator calls it first thing in `newSequence`, before it
    /// changes anything: the pictures output so far (the previous sequence's, bumped at the new
    /// IDR picture, C.4.4) are read back while their surfaces, crop and output pool are still
    /// theirs.
    var beforeSequenceChange: (() throws(VTError) -> Void)? { get set }
}

extension H264DeviceAccelerator {
    public var readBackDelay: Int { 0 }
    public func flushed() {}
}

/// The hardware H.264 decoder of every device API: SwiftVT's own decoding state machine
/// (``H264PictureDecoder``: POC, DPB, gaps, damaged streams) driving an accelerator, with
/// AVCC samples in and pixel buffers out (``DecoderBackend``).
public final class AcceleratedH264Decoder<Accelerator: H264DeviceAccelerator>: DecoderBackend {
    private let accelerator: Accelerator
    private let decoder: H264PictureDecoder
    private let nalUnitHeaderLength: Int
    /// Timing of the samples whose pictures have not been output yet, by frame reference.
    private var timings: [UInt64: (presentationTimeStamp: MediaTime, duration: MediaTime)] = [:]
    /// Output pictures kept back (``H264DeviceAccelerator/readBackDelay``), oldest first.
    private var heldBack: [H264Picture] = []
    /// Pictures read back before a sequence change, not yet returned.
    private var readyFrames: [DecodedFrame] = []

    public init(accelerator: Accelerator, format: FormatDescription) {
        self.accelerator = accelerator
        decoder = H264PictureDecoder(accelerator: accelerator)
        nalUnitHeaderLength = format.nalUnitHeaderLength
        for parameterSet in format.parameterSets {
            parameterSet.withUnsafeBytes { bytes in
                // A parameter set that does not parse is reported when a slice needs it.
                try? decoder.storeParameterSet(nalUnit: bytes)
            }
        }
        accelerator.beforeSequenceChange = { [unowned self] () throws(VTError) in
            let pending = heldBack + self.accelerator.outputPictures
            heldBack.removeAll()
            self.accelerator.outputPictures.removeAll()
            readyFrames += try readBack(pending)
        }
    }

    public func decode(_ sample: SampleBuffer, frameReference: UInt64) throws(VTError) -> [DecodedFrame] {
        var frames: [DecodedFrame] = []
        guard let data = sample.dataBuffer else { return frames }
        let timing = (try? sample.timingInfo(at: 0)) ?? .invalid
        timings[frameReference] = (timing.presentationTimeStamp, timing.duration)
        let startedBefore = accelerator.startedPictureCount
        var damage: H264DecodingError?
        var fatal: H264DecodingError?
        let headerLength = nalUnitHeaderLength
        let decoder = self.decoder
        data.withContiguousBytes { bytes in
            do {
                try AVCC.forEachNALUnit(in: bytes, nalUnitHeaderLength: headerLength) { range in
                    do throws(H264DecodingError) {
                        try decoder.decode(
                            nalUnit: UnsafeRawBufferPointer(rebasing: bytes[range]), frameReference: frameReference)
                    } catch {
                        if case .bitstream = error { damage = damage ?? error } else { fatal = fatal ?? error }
                    }
                }
            } catch {
                damage = damage ?? .bitstream(.malformedFraming("\(error)"))
            }
        }
        if fatal == nil {
            do throws(H264DecodingError) {
                try decoder.finishAccessUnit()
            } catch {
                if case .bitstream = error { damage = damage ?? error } else { fatal = error }
            }
        }
        // After a failure the pictures output so far stay for drain(), which the fallback (or the
        // session's end) calls: thrown away with the error, they would be lost.
        if let fatal { throw sessionError(fatal) }
        frames += try collectOutput(draining: false)
        if let damage {
            frames.append(
                DecodedFrame(
                    status: VTError(.badData, "damaged H.264 data: \(damage)"), frameReference: frameReference))
        } else if accelerator.startedPictureCount == startedBefore {
            // No picture came of this sample (decoding waits for an IDR or I picture): say so,
            // so the caller does not wait for it.
            timings[frameReference] = nil
            frames.append(DecodedFrame(infoFlags: [.frameDropped], frameReference: frameReference))
        }
        return frames
    }

    /// The session's error for a failure of the state machine or the accelerator.
    public func sessionError(_ error: H264DecodingError) -> VTError {
        H264AcceleratorErrors.sessionError(error, api: accelerator.apiName)
    }

    /// The pictures the state machine output, read back in output order, but for the last
    /// ``H264DeviceAccelerator/readBackDelay`` of them unless `draining`.
    private func collectOutput(draining: Bool) throws(VTError) -> [DecodedFrame] {
        var frames = readyFrames
        readyFrames.removeAll()
        heldBack += accelerator.outputPictures
        accelerator.outputPictures.removeAll()
        let readable = draining ? heldBack.count : max(0, heldBack.count - accelerator.readBackDelay)
        guard readable > 0 else { return frames }
        let pictures = Array(heldBack.prefix(readable))
        heldBack.removeFirst(readable)
        return frames + (try readBack(pictures))
    }

    /// Output pictures read back into frames, in order, with their samples' timing.
    private func readBack(_ pictures: [H264Picture]) throws(VTError) -> [DecodedFrame] {
        var frames: [DecodedFrame] = []
        for picture in pictures {
            let timing = timings.removeValue(forKey: picture.frameReference)
            var frame = DecodedFrame(
                presentationTimeStamp: timing?.presentationTimeStamp ?? .invalid,
                duration: timing?.duration ?? .invalid,
                frameReference: picture.frameReference)
            if picture.decodingFailed {
                frame.status = VTError(
                    .decoderFailed, "the \(accelerator.apiName) device failed to decode this picture")
            } else {
                let read = try accelerator.readBack(picture)
                frame.imageBuffer = read.image
                frame.infoFlags.insert(.imageBufferModifiable)
                if read.damaged {
                    // As libavcodec's concealed pictures: output, with the damage reported.
                    frame.status = VTError(.badData, accelerator.damagedPictureText)
                }
            }
            frames.append(frame)
        }
        return frames
    }

    public func drain() throws(VTError) -> [DecodedFrame] {
        do throws(H264DecodingError) {
            try decoder.drain()
        } catch {
            let frames = (try? collectOutput(draining: true)) ?? []
            if case .bitstream = error { return frames + [DecodedFrame(status: sessionError(error))] }
            throw sessionError(error)
        }
        return try collectOutput(draining: true)
    }

    public func flush() {
        decoder.flush()
        accelerator.outputPictures.removeAll()
        heldBack.removeAll()
        readyFrames.removeAll()
        timings.removeAll()
        accelerator.flushed()
    }
}

/// What a failure of the H.264 state machine or its accelerator means for a session.
public enum H264AcceleratorErrors {
    /// - Parameter api: "VA-API", "NVDEC": the path named in the message.
    public static func sessionError(_ error: H264DecodingError, api: String) -> VTError {
        switch error {
        case .unsupported(let what):
            return VTError(.unsupportedFormat, "\(what) (not supported by the \(api) path)")
        case .acceleratorFailed(let message, let status, let operation):
            return VTError(.decoderFailed, message, backendStatus: status, operation: operation)
        case .bitstream(let problem):
            return VTError(.badData, "damaged H.264 data: \(problem)")
        }
    }
}
