import CVA
import MediaCore
import Synchronization
import VAPlumbing

// The VA devices the decoder and the encoder factories use: found once, shared while held, looked
// for again after a failure. Apart from VAH264Decoder.swift because the encoder
// (VAH264EncoderFactory) uses them too.

/// The VA device a factory uses, found at its first probe and kept for the factory's life
/// (opening a display is slow). A device found is shared: every factory of the process that needs
/// the same work (decoding, encoding) gets the same display while one holds it
/// (``VASharedDevices``), so vtdec and vtenc in one pipeline use one display, as GStreamer's va
/// elements share theirs. A failure is not kept: the next session looks again (a device may have
/// appeared, or its permissions been fixed).
final class CachedVADevice: Sendable {
    private let device = Mutex<VADevice?>(nil)
    private let log: @Sendable (String) -> Void
    let purpose: VADevicePurpose
    /// Only this DRM render node (hardware-device=/dev/dri/renderD129); nil: any device.
    let renderNode: String?

    init(purpose: VADevicePurpose, renderNode: String? = nil, log: @escaping @Sendable (String) -> Void) {
        self.purpose = purpose
        self.renderNode = renderNode
        self.log = log
    }

    /// "VA-API (hardware: <vendor> on <display>)" once a device was found.
    var name: String {
        device.withLock({ $0 }).map { "VA-API (hardware: \($0.summary))" } ?? "VA-API (hardware)"
    }

    func open() -> Result<VADevice, VADeviceUnavailable> {
        device.withLock { cached in
            if let cached { return .success(cached) }
            let result = VASharedDevices.device(for: purpose, renderNode: renderNode, log: log)
            if case .success(let found) = result { cached = found }
            return result
        }
    }
}

/// A VA display with its capabilities.
final class VADevice: @unchecked Sendable {
    // @unchecked: libva display handles may be shared between threads for distinct contexts
    // (each session makes its own context); the connection and capabilities are immutable.
    let connection: VADisplayConnection
    let capabilities: VACapabilities

    init(connection: VADisplayConnection, capabilities: VACapabilities) {
        self.connection = connection
        self.capabilities = capabilities
    }

    /// "swiftvt software VA driver on X11 display :99", for names and messages.
    var summary: String { "\(connection.vendor) on \(connection.description)" }

    /// The first display (render nodes in order, then X11) that offers H.264 for `purpose`
    /// (any H.264 entrypoint when nil); displays that do not are passed over and closed.
    static func open(
        for purpose: VADevicePurpose?, renderNode: String? = nil, log: @escaping @Sendable (String) -> Void,
        renderNodeDirectory: String = "/dev/dri", x11DisplayNames: [String] = VADisplayConnection.defaultX11DisplayNames
    ) -> Result<VADevice, VADeviceUnavailable> {
        var probed: VACapabilities?
        do {
            let connection = try VADisplayConnection.open(
                renderNodeDirectory: renderNodeDirectory, x11DisplayNames: x11DisplayNames, log: log
            ) { connection in
                if let renderNode, connection.description != VADevice.description(ofRenderNode: renderNode) {
                    return "not the device asked for (\(renderNode))"
                }
                let capabilities: VACapabilities
                do throws(VAError) {
                    capabilities = try connection.probeCapabilities()
                } catch {
                    return "its capabilities cannot be read: \(error)"
                }
                log("VA-API device \(connection.vendor) on \(connection.description): \(capabilities.summary)")
                if let missing = purpose.flatMap({ $0.missing(in: capabilities) }) ?? Self.noH264(capabilities) {
                    return missing
                }
                probed = capabilities
                return nil
            }
            guard let capabilities = probed else {
                return .failure(
                    VADeviceUnavailable(reason: "the VA-API device on \(connection.description) cannot be probed"))
            }
            return .success(VADevice(connection: connection, capabilities: capabilities))
        } catch {
            return .failure(VADeviceUnavailable(reason: "no VA-API device: \(error)"))
        }
    }

    /// How a connection on a DRM render node describes itself.
    static func description(ofRenderNode node: String) -> String { "DRM render node \(node)" }

    /// Why a device without any H.264 entrypoint serves none of SwiftVT's work.
    private static func noH264(_ capabilities: VACapabilities) -> String? {
        VADevicePurpose.decoding.missing(in: capabilities) != nil
            && VADevicePurpose.encoding.missing(in: capabilities) != nil
            ? "no H.264 entrypoint (it offers \(capabilities.summary))" : nil
    }
}

/// The work a VA device is opened for.
enum VADevicePurpose: Sendable, CaseIterable {
    case decoding, encoding

    /// Why `capabilities` cannot do this work with H.264, or nil when they can.
    func missing(in capabilities: VACapabilities) -> String? {
        switch self {
        case .decoding:
            return VAH264DeviceOffer.decodableProfiles(capabilities).isEmpty
                ? "no H.264 decoder (VAEntrypointVLD; it offers \(capabilities.summary))" : nil
        case .encoding:
            return VAH264DeviceOffer.encodingEntrypoint(capabilities) == nil
                ? "no H.264 encoder (VAEntrypointEncSlice or EncSliceLP; it offers \(capabilities.summary))" : nil
        }
    }
}

/// The devices this process has open, so that factories share them: a device is held by the
/// factories using it (and their sessions) and closed when the last lets go; this registry only
/// looks them up (weak references).
enum VASharedDevices {
    private final class WeakDevice: @unchecked Sendable {
        // Written once at creation; read under `open`'s lock.
        weak var device: VADevice?
        init(_ device: VADevice) { self.device = device }
    }

    private static let open = Mutex<[WeakDevice]>([])

    /// A device of the process that serves `purpose`, or a newly discovered one.
    static func device(
        for purpose: VADevicePurpose, renderNode: String? = nil, log: @escaping @Sendable (String) -> Void
    ) -> Result<
        VADevice, VADeviceUnavailable
    > {
        open.withLock { devices in
            devices.removeAll { $0.device == nil }
            if let shared = devices.lazy.compactMap(\.device).first(where: { device in
                purpose.missing(in: device.capabilities) == nil
                    && (renderNode.map { device.connection.description == VADevice.description(ofRenderNode: $0) }
                        ?? true)
            }) {
                log("VA-API device \(shared.summary): shared with the other SwiftVT elements of this process")
                return .success(shared)
            }
            let result = VADevice.open(for: purpose, renderNode: renderNode, log: log)
            if case .success(let device) = result { devices.append(WeakDevice(device)) }
            return result
        }
    }
}

struct VADeviceUnavailable: Error {
    var reason: String
}
