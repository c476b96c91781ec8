import CCUDA
import CUDAPlumbing
import H264
import MediaCore
import SwiftVT
import Synchronization

/// A CUDA device that decodes H.264 with NVDEC, with the process's context on it.
final class NVDECDevice: Sendable {
    let info: CUDADeviceInfo
    let context: CUDAContext
    /// What NVDEC decodes of 8-bit 4:2:0 H.264 here.
    let capabilities: NVDECCapabilities

    init(info: CUDADeviceInfo, context: CUDAContext, capabilities: NVDECCapabilities) {
        self.info = info
        self.context = context
        self.capabilities = capabilities
    }

    /// The first CUDA device (or the one with `ordinal`) whose NVDEC decodes 8-bit 4:2:0 H.264,
    /// or why there is none.
    static func open(ordinal: Int?, log: @Sendable (String) -> Void) -> Result<NVDECDevice, CUDAUnavailable> {
        let devices: [CUDADeviceInfo]
        switch CUDADriver.devices() {
        case .failure(let unavailable): return .failure(unavailable)
        case .success(let found): devices = found
        }
        let candidates = ordinal.map { wanted in devices.filter { $0.ordinal == wanted } } ?? devices
        guard !candidates.isEmpty else {
            let listed = devices.map(\.summary).joined(separator: ", ")
            return .failure(
                CUDAUnavailable(
                    "there is no CUDA device \(ordinal.map { "cuda:\($0)" } ?? "") (the driver lists \(listed))"))
        }
        var refusals: [String] = []
        for info in candidates {
            do throws(CUDAError) {
                let context = try CUDASharedContexts.context(on: info)
                let capabilities = try NVDECCapabilities.query(
                    codec: cudaVideoCodec_H264, chroma: cudaVideoChromaFormat_420, bitDepthMinus8: 0, context: context)
                log(
                    "CUDA device \(info.summary): NVDEC H.264 8-bit 4:2:0 \(capabilities.isSupported ? "up to \(capabilities.maxWidth)x\(capabilities.maxHeight)" : "not supported")"
                )
                guard capabilities.isSupported, capabilities.outputs(cudaVideoSurfaceFormat_NV12) else {
                    refusals.append("\(info.summary): NVDEC decodes no 8-bit 4:2:0 H.264 to NV12")
                    continue
                }
                return .success(NVDECDevice(info: info, context: context, capabilities: capabilities))
            } catch {
                refusals.append("\(info.summary): \(error)")
            }
        }
        return .failure(CUDAUnavailable(refusals.joined(separator: "; ")))
    }
}

/// The hardware H.264 decoder on NVIDIA GPUs: SwiftVT's own decoding state machine
/// (``H264PictureDecoder``) driving NVDEC (``NVDECH264Accelerator``), beside the VA-API one.
public final class NVDECH264DecoderFactory: DecoderBackendFactory, Sendable {
    private let ordinal: Int?
    private let log: @Sendable (String) -> Void
    private let device = Mutex<NVDECDevice?>(nil)

    /// - Parameters:
    ///   - ordinal: only this CUDA device (hardware-device=cuda:N); nil: the first that decodes.
    ///   - log: the device probe's messages (vtdec sends them to GStreamer's debug log).
    public init(ordinal: Int? = nil, log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.ordinal = ordinal
        self.log = log
    }

    /// "NVDEC (hardware: cuda:0 (NVIDIA H100 80GB HBM3))" once a device was found.
    public var name: String {
        device.withLock({ $0 }).map { "NVDEC (hardware: \($0.info.summary))" } ?? "NVDEC (hardware)"
    }

    public var isHardware: Bool { true }

    private func openDevice() -> Result<NVDECDevice, CUDAUnavailable> {
        device.withLock { cached in
            if let cached { return .success(cached) }
            let result = NVDECDevice.open(ordinal: ordinal, log: log)
            if case .success(let found) = result { cached = found }
            return result
        }
    }

    /// Why no CUDA device here decodes H.264, or nil when one does (opens and keeps it).
    public func deviceUnavailableReason() -> String? {
        switch openDevice() {
        case .success: return nil
        case .failure(let unavailable): return unavailable.reason
        }
    }

    /// The GStreamer caps profiles NVDEC decodes on the first device that decodes H.264; empty
    /// when none does (vtdec_hw's sink caps at plugin load).
    public static func decodableProfiles(log: @escaping @Sendable (String) -> Void = { _ in }) -> (
        profiles: [String], summary: String
    ) {
        switch NVDECDevice.open(ordinal: nil, log: log) {
        case .failure(let unavailable): return ([], unavailable.reason)
        case .success(let device):
            // NVDEC's H.264 decoder is a High profile decoder (Video Codec SDK: H.264 Baseline,
            // Main, High), which decodes the profiles below it (A.2.4).
            return (
                H264DeviceStreamCheck.capsProfiles(constrainedBaseline: true, main: true, high: true),
                "NVDEC on \(device.info.summary)"
            )
        }
    }

    public func unavailableReason(for format: FormatDescription) -> VTError.Reason? {
        switch check(format) {
        case .success: return nil
        case .failure(let unsupported): return unsupported.reason
        }
    }

    /// The device that decodes this stream, or why none does.
    private func check(_ format: FormatDescription) -> Result<NVDECDevice, UnsupportedDeviceStream> {
        let sps: SequenceParameterSet
        let ppss: [PictureParameterSet]
        switch H264DeviceStreamCheck.parameterSets(of: format, path: "the NVDEC path") {
        case .success(let sets): (sps, ppss) = sets
        case .failure(let unsupported): return .failure(unsupported)
        }
        // No device first: on a machine without one, that is the reason, not the stream.
        let device: NVDECDevice
        switch openDevice() {
        case .success(let opened): device = opened
        case .failure(let unavailable): return .failure(.init(unavailable.reason))
        }
        if case .failure(let unsupported) = H264DeviceStreamCheck.requiredProfile(
            for: sps, pictureParameterSets: ppss, path: "the NVDEC path")
        {
            return .failure(unsupported)
        }
        if let problem = device.capabilities.sizeProblem(width: sps.codedWidth, height: sps.codedHeight) {
            return .failure(.init("\(problem) on \(device.info.summary)"))
        }
        return .success(device)
    }

    public func makeBackend(
        format: FormatDescription, specification: DecoderSpecification, attributes: DestinationImageBufferAttributes
    ) throws(VTError) -> any DecoderBackend {
        let device: NVDECDevice
        switch check(format) {
        case .success(let value): device = value
        case .failure(let unsupported): throw VTError(.unsupportedFormat, reason: unsupported.reason)
        }
        // NVDEC outputs NV12; I420 is split while reading back.
        let pixelFormat = try DeviceOutputPictures.outputFormat(for: attributes, path: "the NVDEC path")
        let pictures = DeviceOutputPictures(
            api: "NVDEC", pixelFormat: pixelFormat, rowAlignment: attributes.rowAlignment,
            attachments: PixelBufferAttachments(decoding: format, pixelFormat: pixelFormat),
            consumer: attributes.consumer)
        do throws(CUDAError) {
            // Two pictures held back (unless low delay): reading one back overlaps the device
            // decoding the next two.
            let accelerator = try NVDECH264Accelerator(
                context: device.context, pictures: pictures, readBackDelay: specification.lowDelay ? 0 : 2)
            return AcceleratedH264Decoder(accelerator: accelerator, format: format)
        } catch {
            throw VTError(
                .decoderFailed, "the NVDEC decoder could not be set up: \(error)", backendStatus: error.result,
                operation: error.call)
        }
    }
}
