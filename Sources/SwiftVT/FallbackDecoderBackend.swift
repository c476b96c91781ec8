import H264
import MediaCore
import Synchronization

/// The name of the backend a session decodes with, which changes when a hardware decoder fails
/// mid-stream and the session goes on in software (``FallbackDecoderBackend``).
final class ActiveBackendName: Sendable {
    private let value: Mutex<(name: String, failure: String?)>
    init(_ name: String) { value = Mutex((name, nil)) }
    var name: String { value.withLock { $0.name } }
    /// Why the session left its first backend, nil while it has not.
    var failure: String? { value.withLock { $0.failure } }
    func set(_ name: String, failure: String) { value.withLock { $0 = (name, failure) } }
}

/// Under ``HardwarePolicy/auto``: decodes with a hardware backend and, when it fails mid-stream
/// (the device is lost, a call fails, the stream turns out to need something it cannot do),
/// goes on with a software backend from the next IDR picture (an IDR picture is the first
/// point from which a fresh decoder can decode everything, 8.2.1 / 8.2.5.1).
///
/// The pictures the hardware decoder finished before the failure are still output. When the
/// failing sample holds an IDR picture, software decodes it at once; otherwise it is reported
/// with a status saying what happened and what the session does about it, and the samples
/// between it and the next IDR picture are dropped (there is no reference picture to decode
/// them from).
final class FallbackDecoderBackend: DecoderBackend {
    private var primary: (any DecoderBackend)?
    private let primaryName: String
    private let fallbackFactory: any DecoderBackendFactory
    private var fallback: (any DecoderBackend)?
    private let format: FormatDescription
    private let specification: DecoderSpecification
    private let attributes: DestinationImageBufferAttributes
    private let activeName: ActiveBackendName

    init(
        primary: any DecoderBackend, primaryName: String, fallbackFactory: any DecoderBackendFactory,
        format: FormatDescription, specification: DecoderSpecification, attributes: DestinationImageBufferAttributes,
        activeName: ActiveBackendName
    ) {
        self.primary = primary
        self.primaryName = primaryName
        self.fallbackFactory = fallbackFactory
        self.format = format
        self.specification = specification
        self.attributes = attributes
        self.activeName = activeName
    }

    func decode(_ sample: SampleBuffer, frameReference: UInt64) throws(VTError) -> [DecodedFrame] {
        if let fallback { return try fallback.decode(sample, frameReference: frameReference) }
        if let primary {
            do {
                return try primary.decode(sample, frameReference: frameReference)
            } catch  where error.code == .flushing {
                // The consumer is flushing, the hardware decoder is fine.
                throw error
            } catch {
                // What the hardware decoder finished before the failure is still good.
                var frames = (try? primary.drain()) ?? []
                self.primary = nil
                activeName.set("\(fallbackFactory.name), after \(primaryName) failed", failure: error.message)
                if Self.containsIDRPicture(sample, format: format) {
                    // The failing sample starts a new sequence (often the very first one, when
                    // the device refuses the stream's parameters): software takes it over at once.
                    // The hardware decoder's report of this sample's picture is dropped: the
                    // sample's picture comes from software instead.
                    frames.removeAll { $0.frameReference == frameReference && $0.imageBuffer == nil }
                    let backend = try fallbackFactory.makeBackend(
                        format: format, specification: specification, attributes: attributes)
                    fallback = backend
                    return frames + (try backend.decode(sample, frameReference: frameReference))
                }
                frames.append(
                    DecodedFrame(
                        status: VTError(
                            error.code,
                            "\(primaryName) failed mid-stream (\(error.message)); decoding goes on with "
                                + "\(fallbackFactory.name) from the next IDR picture",
                            backendStatus: error.backendStatus, operation: error.operation),
                        frameReference: frameReference))
                return frames
            }
        }
        guard Self.containsIDRPicture(sample, format: format) else {
            // No reference picture to decode it from: dropped, without a second report.
            return [DecodedFrame(infoFlags: [.frameDropped], frameReference: frameReference)]
        }
        let backend = try fallbackFactory.makeBackend(
            format: format, specification: specification, attributes: attributes)
        fallback = backend
        return try backend.decode(sample, frameReference: frameReference)
    }

    func drain() throws(VTError) -> [DecodedFrame] {
        if let fallback { return try fallback.drain() }
        return try primary?.drain() ?? []
    }

    func flush() {
        primary?.flush()
        fallback?.flush()
    }

    /// Whether an AVCC sample holds an IDR slice (nal_unit_type 5, 7.4.1.2.4).
    static func containsIDRPicture(_ sample: SampleBuffer, format: FormatDescription) -> Bool {
        guard let data = sample.dataBuffer else { return false }
        let headerLength = format.nalUnitHeaderLength
        var found = false
        data.withContiguousBytes { bytes in
            try? AVCC.forEachNALUnit(in: bytes, nalUnitHeaderLength: headerLength) { range in
                if bytes[range.lowerBound] & 0x1F == 5 { found = true }
            }
        }
        return found
    }
}
