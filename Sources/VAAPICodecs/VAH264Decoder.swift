import CVA
import H264
import MediaCore
import SwiftVT
import Synchronization
import VAPlumbing

/// The hardware H.264 decoder: SwiftVT's own decoding state machine (``H264PictureDecoder``)
/// driving a VA-API device's VLD entrypoint (``VAH264Accelerator``).
public final class VAH264DecoderFactory: DecoderBackendFactory, Sendable {
    let cachedDevice: CachedVADevice

    /// - Parameter log: libva's and the probe's messages (vtdec sends them to GStreamer's debug log).
    public init(log: @escaping @Sendable (String) -> Void = { _ in }) {
        cachedDevice = CachedVADevice(purpose: .decoding, log: log)
    }

    public var name: String { cachedDevice.name }

    public var isHardware: Bool { true }

    private func openDevice() -> Result<VADevice, VADeviceUnavailable> { cachedDevice.open() }

    public func unavailableReason(for format: FormatDescription) -> VTError.Reason? {
        switch chooseProfile(for: format) {
        case .success: return nil
        case .failure(let reason): return reason.reason
        }
    }

    /// The VA profile this device decodes the stream with.
    private func chooseProfile(for format: FormatDescription) -> Result<(VADevice, VAProfile), UnsupportedStream> {
        guard format.codecType == .h264 || format.codecType == .h264InBandParameterSets else {
            return .failure(UnsupportedStream("decodes H.264 only, and this stream's codec is '\(format.codecType)'"))
        }
        guard let spsBytes = format.h264SequenceParameterSets.first,
            let sps = try? SequenceParameterSet.parse(nalUnit: spsBytes)
        else {
            return .failure(UnsupportedStream("the format description has no SPS the VA path could read"))
        }
        let ppss = format.h264PictureParameterSets.compactMap { bytes in
            try? PictureParameterSet.parse(
                nalUnit: bytes, sequenceParameterSets: { $0 == sps.seqParameterSetID ? sps : nil })
        }
        let candidates: [VAProfile]
        switch VAH264Profiles.candidates(for: sps, pictureParameterSets: ppss) {
        case .success(let list): candidates = list
        case .failure(let reason): return .failure(reason)
        }
        let device: VADevice
        switch openDevice() {
        case .success(let opened): device = opened
        case .failure(let unavailable): return .failure(UnsupportedStream(unavailable.reason))
        }
        guard
            let profile = candidates.first(where: {
                device.capabilities.supports(profile: $0, entrypoint: VAEntrypointVLD)
            })
        else {
            let wanted = candidates.map(VAH264Profiles.name).joined(separator: " or ")
            return .failure(
                UnsupportedStream(
                    "\(device.summary) has no H.264 decoder for this stream (\(sps.profile) needs \(wanted) with VAEntrypointVLD; "
                        + "the device offers \(device.capabilities.summary))"))
        }
        if let maximum = device.capabilities.maxPictureSize(profile: profile, entrypoint: VAEntrypointVLD),
            sps.codedWidth > maximum.width || sps.codedHeight > maximum.height
        {
            return .failure(
                UnsupportedStream(
                    "\(sps.codedWidth)x\(sps.codedHeight) is larger than the \(maximum.width)x\(maximum.height) \(device.summary) decodes"
                ))
        }
        return .success((device, profile))
    }

    public func makeBackend(
        format: FormatDescription, specification: DecoderSpecification, attributes: DestinationImageBufferAttributes
    ) throws(VTError) -> any DecoderBackend {
        let chosen: (VADevice, VAProfile)
        switch chooseProfile(for: format) {
        case .success(let value): chosen = value
        case .failure(let unsupported): throw VTError(.unsupportedFormat, reason: unsupported.reason)
        }
        // The surfaces are NV12; I420 is written while reading back (no extra copy). Other
        // formats would need a conversion this backend does not do.
        let wanted = attributes.pixelFormats.isEmpty ? [PixelFormat.i420] : attributes.pixelFormats
        // NV12 when the caller takes it (the surfaces' own layout: a plane copy), else I420 (the
        // chroma de-interleaved while reading back).
        guard
            let pixelFormat = wanted.first(where: { $0 == .nv12VideoRange || $0 == .nv12FullRange })
                ?? wanted.first(where: { $0 == .i420 })
        else {
            throw VTError(
                .unsupportedFormat,
                reason: .outputPixelFormatsNotOffered(
                    backend: "the VA path", requested: wanted, offered: [.nv12VideoRange, .i420]))
        }
        return try VAH264Decoder(
            device: chosen.0, profile: chosen.1, format: format, pixelFormat: pixelFormat,
            rowAlignment: attributes.rowAlignment, consumer: attributes.consumer)
    }
}

/// One decoder instance on the VA path (``DecoderBackend``).
final class VAH264Decoder: DecoderBackend {
    private let accelerator: VAH264Accelerator
    private let output: VAOutputReader
    private let decoder: H264PictureDecoder
    private let nalUnitHeaderLength: Int
    /// Timing of the samples whose pictures have not been output yet, by frame reference.
    private var timings: [UInt64: (presentationTimeStamp: MediaTime, duration: MediaTime)] = [:]
    private var startedPictures = 0

    init(
        device: VADevice, profile: VAProfile, format: FormatDescription, pixelFormat: PixelFormat, rowAlignment: Int,
        consumer: PixelBufferConsumer?
    ) throws(VTError) {
        let config: VAConfig
        do {
            config = try VAConfig(
                connection: device.connection, profile: profile, entrypoint: VAEntrypointVLD,
                attributes: [VAConfigAttrib(type: VAConfigAttribRTFormat, value: UInt32(VA_RT_FORMAT_YUV420))])
        } catch {
            throw VTError(
                .decoderFailed, "the VA-API decoder could not be set up: \(error)", backendStatus: error.status,
                operation: error.call)
        }
        var attachments = PixelBufferAttachments()
        attachments.colorPrimaries = format.extensions.colorPrimaries
        attachments.transferFunction = format.extensions.transferFunction
        attachments.yCbCrMatrix = format.extensions.yCbCrMatrix
        attachments.fullRange = format.extensions.fullRange ?? (pixelFormat == .nv12FullRange ? true : nil)
        attachments.chromaLocation = format.extensions.chromaLocationTopField
        attachments.pixelAspectRatio = format.extensions.pixelAspectRatio
        let output = VAOutputReader(
            connection: device.connection, pixelFormat: pixelFormat, rowAlignment: rowAlignment,
            attachments: attachments,
            consumer: consumer)
        self.output = output
        accelerator = VAH264Accelerator(connection: device.connection, config: config, output: output)
        decoder = H264PictureDecoder(accelerator: accelerator)
        nalUnitHeaderLength = format.nalUnitHeaderLength
        for parameterSet in format.parameterSets {
            parameterSet.withUnsafeBytes { bytes in
                // A parameter set that does not parse is reported when a slice needs it.
                try? decoder.storeParameterSet(nalUnit: bytes)
            }
        }
    }

    func decode(_ sample: SampleBuffer, frameReference: UInt64) throws(VTError) -> [DecodedFrame] {
        var frames: [DecodedFrame] = []
        guard let data = sample.dataBuffer else { return frames }
        let timing = (try? sample.timingInfo(at: 0)) ?? .invalid
        timings[frameReference] = (timing.presentationTimeStamp, timing.duration)
        let startedBefore = accelerator.startedPictureCount
        var damage: H264DecodingError?
        var fatal: H264DecodingError?
        let headerLength = nalUnitHeaderLength
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
        frames += try collectOutput()
        if let fatal { throw Self.sessionError(fatal) }
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

    static func sessionError(_ error: H264DecodingError) -> VTError {
        switch error {
        case .unsupported(let what):
            return VTError(.unsupportedFormat, "\(what) (not supported by the VA path)")
        case .acceleratorFailed(let message, let status, let operation):
            return VTError(.decoderFailed, message, backendStatus: status, operation: operation)
        case .bitstream(let problem):
            return VTError(.badData, "damaged H.264 data: \(problem)")
        }
    }

    /// The pictures the state machine output, read back, in output order.
    private func collectOutput() throws(VTError) -> [DecodedFrame] {
        var frames: [DecodedFrame] = []
        let pictures = accelerator.outputPictures
        accelerator.outputPictures.removeAll()
        for picture in pictures {
            let timing = timings.removeValue(forKey: picture.frameReference)
            var frame = DecodedFrame(
                presentationTimeStamp: timing?.presentationTimeStamp ?? .invalid,
                duration: timing?.duration ?? .invalid,
                frameReference: picture.frameReference)
            if picture.decodingFailed {
                frame.status = VTError(.decoderFailed, "the VA-API device failed to decode this picture")
            } else {
                let read = try accelerator.readBack(picture)
                frame.imageBuffer = read.image
                frame.infoFlags.insert(.imageBufferModifiable)
                if read.damaged {
                    // As libavcodec's concealed pictures: output, with the damage reported.
                    frame.status = VTError(
                        .badData,
                        "the VA-API device decoded this picture with errors (VA_STATUS_ERROR_DECODING_ERROR) "
                            + "and concealed them; it is output as the device left it")
                }
            }
            frames.append(frame)
        }
        return frames
    }

    func drain() throws(VTError) -> [DecodedFrame] {
        do throws(H264DecodingError) {
            try decoder.drain()
        } catch {
            let frames = (try? collectOutput()) ?? []
            if case .bitstream = error { return frames + [DecodedFrame(status: Self.sessionError(error))] }
            throw Self.sessionError(error)
        }
        return try collectOutput()
    }

    func flush() {
        decoder.flush()
        accelerator.outputPictures.removeAll()
        timings.removeAll()
        output.trimIdle()
    }
}
