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

    /// - Parameters:
    ///   - renderNode: only this DRM render node (vtdec's hardware-device); nil: the first device
    ///     that decodes H.264.
    ///   - log: libva's and the probe's messages (vtdec sends them to GStreamer's debug log).
    public init(renderNode: String? = nil, log: @escaping @Sendable (String) -> Void = { _ in }) {
        cachedDevice = CachedVADevice(purpose: .decoding, renderNode: renderNode, log: log)
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
        let sps: SequenceParameterSet
        let ppss: [PictureParameterSet]
        switch H264DeviceStreamCheck.parameterSets(of: format, path: "the VA path") {
        case .success(let sets): (sps, ppss) = sets
        case .failure(let unsupported): return .failure(unsupported)
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
        // The surfaces are NV12; I420 is written while reading back (no extra copy).
        let pixelFormat = try DeviceOutputPictures.outputFormat(for: attributes, path: "the VA path")
        return try VAH264Decoder.make(
            device: chosen.0, profile: chosen.1, format: format, pixelFormat: pixelFormat,
            rowAlignment: attributes.rowAlignment, consumer: attributes.consumer)
    }
}

/// One decoder instance on the VA path: the accelerated H.264 decoder over a VA accelerator
/// (``AcceleratedH264Decoder``), made with its VA config and output reader.
enum VAH264Decoder {
    static func make(
        device: VADevice, profile: VAProfile, format: FormatDescription, pixelFormat: PixelFormat, rowAlignment: Int,
        consumer: PixelBufferConsumer?
    ) throws(VTError) -> AcceleratedH264Decoder<VAH264Accelerator> {
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
        let output = VAOutputReader(
            connection: device.connection,
            pictures: DeviceOutputPictures(
                api: "VA-API", pixelFormat: pixelFormat, rowAlignment: rowAlignment,
                attachments: PixelBufferAttachments(decoding: format, pixelFormat: pixelFormat), consumer: consumer))
        let accelerator = VAH264Accelerator(connection: device.connection, config: config, output: output)
        return AcceleratedH264Decoder(accelerator: accelerator, format: format)
    }

    static func sessionError(_ error: H264DecodingError) -> VTError {
        H264AcceleratorErrors.sessionError(error, api: "VA-API")
    }
}
