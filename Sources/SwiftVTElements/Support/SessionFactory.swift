import CGStreamer
import MediaCore
import NVDECCodecs
import SoftwareCodecs
import SwiftVT
import Synchronization
import VAAPICodecs

/// The hardware backend factories of an element as it uses them: made with a log closure and the
/// device the element may use, asked whether a device here does the work at all.
protocol HardwareBackendFactory: Sendable {
    init(log: @escaping @Sendable (String) -> Void, device: HardwareDeviceChoice)
    /// The device choice the factory was made for.
    var device: HardwareDeviceChoice { get }
    func deviceUnavailableReason() -> String?
}

extension VAH264EncoderFactory: HardwareBackendFactory {
    /// SwiftVT's hardware encoder is VA-API's, on the first device that encodes.
    convenience init(log: @escaping @Sendable (String) -> Void, device: HardwareDeviceChoice) {
        self.init(log: log)
    }
    var device: HardwareDeviceChoice { .auto }
}

/// A decoder's hardware: every device API whose devices `device` allows, VA-API first, then
/// NVDEC (CUDA). Under hardware=auto or require a session tries them in that order, and the
/// element's require check passes when any of them has a device that decodes H.264.
final class HardwareDecoders: HardwareBackendFactory {
    let device: HardwareDeviceChoice
    let factories: [any DecoderBackendFactory & DeviceCheckingFactory]

    init(log: @escaping @Sendable (String) -> Void, device: HardwareDeviceChoice) {
        self.device = device
        var factories: [any DecoderBackendFactory & DeviceCheckingFactory] = []
        if device.allowsVA { factories.append(VAH264DecoderFactory(renderNode: device.renderNode, log: log)) }
        if device.allowsCUDA { factories.append(NVDECH264DecoderFactory(ordinal: device.cudaOrdinal, log: log)) }
        self.factories = factories
    }

    /// nil when some allowed device decodes H.264; else each API's reason, for the one ERROR.
    func deviceUnavailableReason() -> String? {
        var reasons: [String] = []
        for factory in factories {
            guard let reason = factory.deviceUnavailableReason() else { return nil }
            reasons.append("\(factory.apiName): \(reason)")
        }
        return reasons.joined(separator: "; ")
    }

    /// nil when some allowed device decodes this stream; else the first API's reason (each
    /// API's in the text when there are several).
    func unavailableReason(for format: FormatDescription) -> VTError.Reason? {
        var reasons: [(String, VTError.Reason)] = []
        for factory in factories {
            guard let reason = factory.unavailableReason(for: format) else { return nil }
            reasons.append((factory.apiName, reason))
        }
        guard reasons.count > 1 else { return reasons.first?.1 }
        return .other(reasons.map { "\($0.0): \(GStreamerWording.text($0.1))" }.joined(separator: "; "))
    }
}

/// A hardware decoder factory that can say, before any stream, whether a device here decodes
/// H.264 at all.
protocol DeviceCheckingFactory {
    /// "VA-API", "NVDEC".
    var apiName: String { get }
    func deviceUnavailableReason() -> String?
}

extension VAH264DecoderFactory: DeviceCheckingFactory {
    var apiName: String { "VA-API" }
}

extension NVDECH264DecoderFactory: DeviceCheckingFactory {
    var apiName: String { "NVDEC (CUDA)" }
}

/// How an element makes its sessions, the one place for it: the backends in order (the element's
/// hardware factories, VA-API then NVDEC for a decoder, then the software backend), the device
/// probes' log lines in the element's debug category, and the hardware=require check. The
/// hardware factory (and the device it opened) is kept from the check at the state change until
/// the element closes (READY -> NULL), so every session of the element uses one device, and a
/// device that appears later is found at the next open.
final class SessionFactory<Hardware: HardwareBackendFactory>: Sendable {
    private let hardware: HardwareFactoryHolder<Hardware>
    /// The device choice the element asked for last (vtdec's hardware-device).
    private let device = Mutex(HardwareDeviceChoice.auto)

    init(log: DebugCategory, element: UnsafeMutableRawPointer) {
        // The element's address, for the log lines (an integer, as the closure is Sendable).
        let address = UInt(bitPattern: element)
        hardware = HardwareFactoryHolder { device in
            Hardware(log: { log.debug(UnsafeMutableRawPointer(bitPattern: address), $0) }, device: device)
        }
    }

    /// The element's hardware factory (made on first use, and again when the device choice
    /// changed).
    var hardwareFactory: Hardware {
        hardware.current(for: device.withLock { $0 })
    }

    /// hardware=require at the state change: true when `policy` can be met; otherwise the
    /// element's one ERROR is posted. `device` is the element's device choice from now on.
    func checkHardwarePolicy(
        _ policy: HardwarePolicy, work: HardwareRequirement.Work, device: HardwareDeviceChoice = .auto,
        element: UnsafeMutableRawPointer
    ) -> Bool {
        self.device.withLock { $0 = device }
        let factory = hardwareFactory
        return HardwareRequirement.check(policy, work: work, element: element) { factory.deviceUnavailableReason() }
    }

    /// READY -> NULL: the device is let go.
    func close() { hardware.close() }
}

extension SessionFactory where Hardware == VAH264EncoderFactory {
    /// A compression session for `settings` and the element's other `properties`, prepared to
    /// encode. H.264: the VA-API encoder, then x264. HEVC: x265 alone; the VA-API factory is not
    /// even made (SwiftVT's VA-API encoder writes H.264 only), so vtenc_h265 never opens a device.
    func makeCompressionSession(
        codecType: FourCharCode = .h264, width: Int, height: Int, sourcePixelFormat: PixelFormat,
        settings: EncoderSettings, properties: CompressionProperties,
        outputHandler: @escaping CompressionOutputHandler
    ) throws(VTError) -> CompressionSession {
        var sessionProperties = properties
        settings.apply(to: &sessionProperties)
        let backends: [any EncoderBackendFactory] =
            codecType == .hevc ? [X265EncoderFactory()] : [hardwareFactory, X264EncoderFactory()]
        return try CompressionSession(
            width: width, height: height, codecType: codecType, encoderSpecification: settings.encoderSpecification,
            sourcePixelFormat: sourcePixelFormat, properties: sessionProperties,
            backends: backends, outputHandler: outputHandler)
    }

    /// The ERROR for a compression session that could not be made, in the element's terms.
    static func failure(
        _ error: VTError, width: Int, height: Int, format: PixelFormat
    ) -> ElementMessage {
        if error.code == .hardwareUnavailable {
            return ElementMessage(
                domain: .resource(GST_RESOURCE_ERROR_NOT_FOUND), text: GStreamerWording.message(error),
                debug: error.description)
        }
        let picture = "\(width)x\(height) \(GStreamerWording.name(of: format))"
        guard let property = error.property else {
            return ElementMessage(
                domain: .stream(GST_STREAM_ERROR_FORMAT),
                text: "cannot encode \(picture): \(GStreamerWording.message(error))", debug: error.description)
        }
        return ElementMessage(
            domain: .library(GST_LIBRARY_ERROR_SETTINGS),
            text:
                "cannot encode \(picture) (\(EncoderNotices.propertyName(property))): \(GStreamerWording.problem(error))",
            debug: error.description)
    }
}

extension SessionFactory where Hardware == HardwareDecoders {
    /// A decompression session for `description` with the element's backends.
    func makeDecompressionSession(
        formatDescription description: FormatDescription, hardwarePolicy: HardwarePolicy, threadCount: Int,
        lowDelay: Bool,
        pixelFormats: [PixelFormat], consumer: PixelBufferConsumer, outputHandler: @escaping DecompressionOutputHandler
    ) throws(VTError) -> DecompressionSession {
        try DecompressionSession(
            formatDescription: description,
            decoderSpecification: DecoderSpecification(
                hardwarePolicy: hardwarePolicy, threadCount: threadCount, lowDelay: lowDelay),
            destinationImageBufferAttributes: DestinationImageBufferAttributes(
                pixelFormats: pixelFormats, consumer: consumer),
            backends: hardwareFactory.factories + [LibavcodecDecoderFactory()], outputHandler: outputHandler)
    }
}
