import CGStreamer
import MediaCore
import SoftwareCodecs
import SwiftVT
import VAAPICodecs

/// A VA-API backend factory as the elements use it: made with a log closure, asked whether a
/// device here does the work at all.
protocol HardwareBackendFactory: Sendable {
    init(log: @escaping @Sendable (String) -> Void)
    func deviceUnavailableReason() -> String?
}

extension VAH264DecoderFactory: HardwareBackendFactory {}
extension VAH264EncoderFactory: HardwareBackendFactory {}

/// How an element makes its sessions, the one place for it: the backends in order (the element's
/// VA-API factory, then the software backend), VA-API log lines in the element's debug category,
/// and the hardware=require check. The VA-API factory (and the device it opened) is kept from the
/// check at the state change until the element closes (READY -> NULL), so every session of the
/// element uses one display, and a device that appears later is found at the next open.
final class SessionFactory<Hardware: HardwareBackendFactory>: Sendable {
    private let hardware: HardwareFactoryHolder<Hardware>

    init(log: DebugCategory, element: UnsafeMutableRawPointer) {
        // The element's address, for the log lines (an integer, as the closure is Sendable).
        let address = UInt(bitPattern: element)
        hardware = HardwareFactoryHolder {
            Hardware(log: { log.debug(UnsafeMutableRawPointer(bitPattern: address), $0) })
        }
    }

    /// The element's VA-API factory (made on first use).
    var hardwareFactory: Hardware { hardware.current }

    /// hardware=require at the state change: true when `policy` can be met; otherwise the
    /// element's one ERROR is posted.
    func checkHardwarePolicy(_ policy: HardwarePolicy, work: HardwareRequirement.Work, element: UnsafeMutableRawPointer)
        -> Bool
    {
        let factory = hardware.current
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
            codecType == .hevc ? [X265EncoderFactory()] : [hardware.current, X264EncoderFactory()]
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

extension SessionFactory where Hardware == VAH264DecoderFactory {
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
            backends: [hardware.current, LibavcodecDecoderFactory()], outputHandler: outputHandler)
    }
}
