import CVA
import Glibc

/// Why no VA display could be opened: every place that was tried and what happened there.
public struct VADisplayDiscoveryError: Error, Sendable, CustomStringConvertible {
    /// One line per attempt, e.g. "/dev/dri/renderD128: vaInitialize failed: unknown libva error".
    public var attempts: [String]

    public var description: String {
        "no VA-API display could be opened (tried: \(attempts.joined(separator: "; "))). A VA device is looked for on the "
            + "DRM render nodes /dev/dri/renderD*, then on the X11 display named by DISPLAY; LIBVA_DRIVER_NAME and "
            + "LIBVA_DRIVERS_PATH choose the driver"
    }
}

/// Receives libva's info and error messages (vaSetInfoCallback / vaSetErrorCallback), which
/// libva otherwise prints to stderr.
private final class MessageSink {
    let log: (String) -> Void
    init(log: @escaping (String) -> Void) { self.log = log }
}

private let messageTrampoline: VAMessageCallback = { context, message in
    guard let context, let message else { return }
    let sink = Unmanaged<MessageSink>.fromOpaque(context).takeUnretainedValue()
    var text = String(cString: message)
    while text.hasSuffix("\n") { text.removeLast() }
    sink.log("libva: " + text)
}

/// An initialised VA display (vaInitialize done), on a DRM render node or an X11 display; the
/// display is terminated and its connection closed when this goes away.
///
/// `@unchecked Sendable`: libva allows one display to be used from several threads for
/// different contexts (va.h); SwiftVT's decoders use a display from one thread at a time.
public final class VADisplayConnection: @unchecked Sendable {
    public let display: VADisplay
    /// Where the display is, e.g. "DRM render node /dev/dri/renderD128" or "X11 display :99".
    public let description: String
    /// vaQueryVendorString: the driver, e.g. "Intel iHD driver ...".
    public let vendor: String
    public let apiVersion: (major: Int, minor: Int)
    private let close: () -> Void
    private let sink: MessageSink

    private init(
        display: VADisplay, description: String, vendor: String, apiVersion: (Int, Int), sink: MessageSink,
        close: @escaping () -> Void
    ) {
        self.display = display
        self.description = description
        self.vendor = vendor
        self.apiVersion = apiVersion
        self.sink = sink
        self.close = close
    }

    deinit {
        vaTerminate(display)
        close()
        withExtendedLifetime(sink) {}
    }

    /// Opens the first VA display that initialises: each DRM render node of
    /// `renderNodeDirectory` in name order, then the X11 display `x11DisplayName` (DISPLAY by
    /// default). libva picks the driver (LIBVA_DRIVER_NAME, LIBVA_DRIVERS_PATH).
    ///
    /// - Parameter log: libva's own messages and the discovery's, for a debug log.
    public static func open(
        renderNodeDirectory: String = "/dev/dri", x11DisplayName: String? = getenv("DISPLAY").map { String(cString: $0) },
        log: @escaping (String) -> Void = { _ in }
    ) throws(VADisplayDiscoveryError) -> VADisplayConnection {
        var attempts: [String] = []
        if let problem = cva_load() {
            throw VADisplayDiscoveryError(attempts: ["libva: \(String(cString: problem)) (install libva2)"])
        }
        let sink = MessageSink(log: log)
        let nodes = renderNodes(in: renderNodeDirectory)
        if nodes.isEmpty {
            attempts.append("\(renderNodeDirectory): no render nodes")
        } else if let problem = cva_load_drm() {
            attempts.append("\(renderNodeDirectory): \(String(cString: problem)) (install libva-drm2)")
        } else {
            for node in nodes {
                let fd = Glibc.open(node, O_RDWR | O_CLOEXEC)
                guard fd >= 0 else {
                    attempts.append("\(node): cannot open: \(String(cString: strerror(errno)))")
                    continue
                }
                guard let display = vaGetDisplayDRM(fd) else {
                    attempts.append("\(node): vaGetDisplayDRM gave no display")
                    Glibc.close(fd)
                    continue
                }
                switch initialize(display, sink: sink) {
                case .success(let result):
                    log("VA display: DRM render node \(node), \(result.vendor)")
                    return VADisplayConnection(
                        display: display, description: "DRM render node \(node)", vendor: result.vendor,
                        apiVersion: result.version, sink: sink, close: { Glibc.close(fd) })
                case .failure(let error):
                    attempts.append("\(node): \(error)")
                    Glibc.close(fd)
                }
            }
        }
        if let name = x11DisplayName, !name.isEmpty {
            if let problem = cva_load_x11() {
                attempts.append("X11 display \(name): \(String(cString: problem)) (install libva-x11-2)")
            } else if let x11 = cva_x_open_display(name) {
                if let display = cva_get_display_x11(x11) {
                    switch initialize(display, sink: sink) {
                    case .success(let result):
                        log("VA display: X11 display \(name), \(result.vendor)")
                        return VADisplayConnection(
                            display: display, description: "X11 display \(name)", vendor: result.vendor,
                            apiVersion: result.version, sink: sink, close: { cva_x_close_display(x11) })
                    case .failure(let error):
                        attempts.append("X11 display \(name): \(error)")
                    }
                } else {
                    attempts.append("X11 display \(name): vaGetDisplay gave no display")
                }
                cva_x_close_display(x11)
            } else {
                attempts.append("X11 display \(name): cannot connect to the X server")
            }
        } else {
            attempts.append("X11: DISPLAY is not set")
        }
        throw VADisplayDiscoveryError(attempts: attempts)
    }

    private static func initialize(
        _ display: VADisplay, sink: MessageSink
    ) -> Result<(vendor: String, version: (Int, Int)), VAError> {
        let context = Unmanaged.passUnretained(sink).toOpaque()
        _ = vaSetErrorCallback(display, messageTrampoline, context)
        _ = vaSetInfoCallback(display, messageTrampoline, context)
        var major: Int32 = 0, minor: Int32 = 0
        do throws(VAError) {
            try vaCall("vaInitialize") { vaInitialize(display, &major, &minor) }
        } catch {
            // va.h: vaTerminate also releases a display whose initialisation failed.
            vaTerminate(display)
            return .failure(error)
        }
        let vendor = vaQueryVendorString(display).map { String(cString: $0) } ?? "unknown VA driver"
        return .success((vendor, (Int(major), Int(minor))))
    }

    /// `renderD*` entries of `directory`, sorted.
    private static func renderNodes(in directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var nodes: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name.hasPrefix("renderD") { nodes.append(directory + "/" + name) }
        }
        return nodes.sorted()
    }

    // MARK: - Pictures

    public func beginPicture(context: VAContext, renderTarget: VASurfaceID) throws(VAError) {
        try vaCall("vaBeginPicture") { vaBeginPicture(display, context.id, renderTarget) }
    }

    public func renderPicture(context: VAContext, buffers: [VABufferID]) throws(VAError) {
        var ids = buffers
        try vaCall("vaRenderPicture") { vaRenderPicture(display, context.id, &ids, Int32(ids.count)) }
    }

    public func endPicture(context: VAContext) throws(VAError) {
        try vaCall("vaEndPicture") { vaEndPicture(display, context.id) }
    }

    public func syncSurface(_ surface: VASurfaceID) throws(VAError) {
        try vaCall("vaSyncSurface") { vaSyncSurface(display, surface) }
    }

    public func querySurfaceStatus(_ surface: VASurfaceID) throws(VAError) -> VASurfaceStatus {
        var status = VASurfaceStatus(0)
        try vaCall("vaQuerySurfaceStatus") { vaQuerySurfaceStatus(display, surface, &status) }
        return status
    }
}
