import CVA
import Glibc

/// Why no VA display could be opened: every place that was tried and what happened there.
public struct VADisplayDiscoveryError: Error, Sendable, CustomStringConvertible {
    /// One line per attempt, in the order tried, e.g. "/dev/dri: no render nodes" or "X11 display
    /// :99: vaInitialize failed: HW busy now (VAStatus 0x22) (driver swiftvt_sw from
    /// LIBVA_DRIVERS_PATH=/x)".
    public var attempts: [String]
    /// Displays that opened but were passed over (they lack what was asked for).
    public var displaysPassedOver: Int

    public init(attempts: [String], displaysPassedOver: Int = 0) {
        self.attempts = attempts
        self.displaysPassedOver = displaysPassedOver
    }

    public var description: String {
        (displaysPassedOver > 0 ? "no VA-API display offers what is needed" : "no VA-API display could be opened")
            + " (tried: \(attempts.joined(separator: "; "))). A VA device is looked for on the "
            + "DRM render nodes /dev/dri/renderD*, then on the X11 display named by DISPLAY; LIBVA_DRIVER_NAME and "
            + "LIBVA_DRIVERS_PATH choose the driver"
    }
}

/// Receives libva's info and error messages (vaSetInfoCallback / vaSetErrorCallback), which
/// libva otherwise prints to stderr, and the plumbing's own (failed destroy calls in deinits).
final class MessageSink {
    let log: (String) -> Void
    init(log: @escaping (String) -> Void) { self.log = log }
}

/// The C callback (va.h: `void (*)(void *user_context, const char *message)`). The context is an
/// unretained MessageSink: the connection holds the sink for as long as the display exists (it
/// is released after vaTerminate, the display's last call), and a display whose vaInitialize
/// failed is terminated while `open` still holds it.
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
/// `@unchecked Sendable`: the stored properties never change after `open`, and one VA display may
/// be used from several threads for distinct contexts (VA drivers guard their display-wide
/// object tables; GStreamer's and FFmpeg's VA clients share a display the same way). Calls on
/// one context (begin/render/end picture on one VAContext, its buffers) must be serialised by
/// the caller, which SwiftVT's decoders do by using a context from one thread at a time. The
/// `log` closure may be called from whichever thread is using the display.
public final class VADisplayConnection: @unchecked Sendable {
    /// The libva display, for calls the plumbing does not wrap (through ``vaCall(_:context:_:)``).
    public let display: VADisplay
    /// Where the display is, e.g. "DRM render node /dev/dri/renderD128" or "X11 display :99".
    public let description: String
    /// vaQueryVendorString: the driver, e.g. "Intel iHD driver for Intel(R) Gen Graphics - 23.1.1".
    public let vendor: String
    /// The VA-API version vaInitialize reported (libva 2.17 says 1.17).
    public let apiVersion: (major: Int, minor: Int)
    private let close: () -> Void
    let sink: MessageSink

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
        // Every owner (VAConfig, VASurfaceSet...) holds the connection strongly, so they are all
        // gone here and vaTerminate finds nothing of SwiftVT's live.
        release("vaTerminate", context: "closing \(description)") { vaTerminate(display) }
        close()
        withExtendedLifetime(sink) {}
    }

    /// For deinits, which cannot throw: a failing destroy or unmap goes to the log (through the
    /// same ``vaCall(_:context:_:)`` as every other call) instead of being dropped.
    func release(_ name: String, context: @autoclosure () -> String? = nil, _ body: () -> VAStatus) {
        do throws(VAError) {
            try vaCall(name, context: context(), body)
        } catch {
            sink.log("\(error)")
        }
    }

    /// Which driver libva will load, for messages: libva itself reads LIBVA_DRIVER_NAME and
    /// LIBVA_DRIVERS_PATH (va.c, va_getDriverNames / va_openDriver), SwiftVT only reports them.
    static var driverOrigin: String {
        let name = getenv("LIBVA_DRIVER_NAME").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        let path = getenv("LIBVA_DRIVERS_PATH").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 }
        let driver =
            name.map { "driver \($0)" } ?? "the driver libva picks for the device (LIBVA_DRIVER_NAME is not set)"
        let directory = path.map { "LIBVA_DRIVERS_PATH=\($0)" } ?? "libva's default driver directory"
        return "\(driver) from \(directory)"
    }

    /// Opens the first VA display that initialises and that `accept` takes: each DRM render
    /// node (`renderD*`) of `renderNodeDirectory` in name order, then the X11 displays
    /// `x11DisplayNames` (DISPLAY by default). libva picks the driver (LIBVA_DRIVER_NAME,
    /// LIBVA_DRIVERS_PATH).
    ///
    /// A display `accept` refuses (a hybrid machine's integrated GPU without H.264, in front of
    /// the discrete GPU that has it) is closed and the search goes on, as GStreamer's va plugin
    /// looks at every device.
    ///
    /// - Parameters:
    ///   - log: libva's own info and error messages (instead of stderr) and the discovery's, for
    ///     a debug log; kept for the connection's lifetime and called from whichever thread uses
    ///     the display.
    ///   - accept: nil to take the display, or why it does not serve (for the attempts list).
    /// - Throws: every attempt and why it failed, also when libva itself cannot be loaded.
    public static func open(
        renderNodeDirectory: String = "/dev/dri", x11DisplayNames: [String] = defaultX11DisplayNames,
        log: @escaping (String) -> Void = { _ in }, accept: (VADisplayConnection) -> String? = { _ in nil }
    ) throws(VADisplayDiscoveryError) -> VADisplayConnection {
        var attempts: [String] = []
        var passedOver = 0
        if let problem = cva_load() {
            throw VADisplayDiscoveryError(attempts: ["libva: \(String(cString: problem)) (install libva2)"])
        }
        let sink = MessageSink(log: log)
        /// Initialises `display` and offers it to `accept`: the connection when taken; otherwise
        /// the attempt is recorded and the display closed (vaTerminate, then `close`, as the
        /// connection goes away; `close` alone when vaInitialize failed).
        func take(_ display: VADisplay, label: String, description: String, close: @escaping () -> Void)
            -> VADisplayConnection?
        {
            switch initialize(display, sink: sink) {
            case .success(let result):
                let connection = VADisplayConnection(
                    display: display, description: description, vendor: result.vendor, apiVersion: result.version,
                    sink: sink,
                    close: close)
                if let refusal = accept(connection) {
                    attempts.append("\(label): \(result.vendor): \(refusal)")
                    passedOver += 1
                    log("VA display: passed over: \(attempts[attempts.count - 1])")
                    return nil
                }
                log("VA display: \(description), \(result.vendor)")
                return connection
            case .failure(let error):
                attempts.append("\(label): \(error) (\(driverOrigin))")
                log("VA display: \(attempts[attempts.count - 1])")
                close()
                return nil
            }
        }
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
                if let taken = take(
                    display, label: node, description: "DRM render node \(node)", close: { Glibc.close(fd) })
                {
                    return taken
                }
            }
        }
        let names = x11DisplayNames.filter { !$0.isEmpty }
        if names.isEmpty { attempts.append("X11: DISPLAY is not set") }
        for name in names {
            if let problem = cva_load_x11() {
                attempts.append("X11 display \(name): \(String(cString: problem)) (install libva-x11-2)")
                break
            }
            guard let x11 = cva_x_open_display(name) else {
                attempts.append("X11 display \(name): cannot connect to the X server (XOpenDisplay failed)")
                continue
            }
            guard let display = cva_get_display_x11(x11) else {
                attempts.append("X11 display \(name): vaGetDisplay gave no display")
                cva_x_close_display(x11)
                continue
            }
            if let taken = take(
                display, label: "X11 display \(name)", description: "X11 display \(name)",
                close: { cva_x_close_display(x11) })
            {
                return taken
            }
        }
        throw VADisplayDiscoveryError(attempts: attempts, displaysPassedOver: passedOver)
    }

    /// The X11 display named by DISPLAY, when it is set.
    public static var defaultX11DisplayNames: [String] {
        getenv("DISPLAY").map { [String(cString: $0)] } ?? []
    }

    private static func initialize(
        _ display: VADisplay, sink: MessageSink
    ) -> Result<(vendor: String, version: (Int, Int)), VAError> {
        let context = Unmanaged.passUnretained(sink).toOpaque()
        _ = vaSetErrorCallback(display, messageTrampoline, context)
        _ = vaSetInfoCallback(display, messageTrampoline, context)
        var major: Int32 = 0
        var minor: Int32 = 0
        do throws(VAError) {
            try vaCall("vaInitialize") { vaInitialize(display, &major, &minor) }
        } catch {
            // vaGetDisplay* allocated the display; vaTerminate is what frees it, also after a
            // failed vaInitialize (va.c: it calls the driver's terminate only when a driver was
            // loaded, then destroys the display context).
            _ = vaTerminate(display)
            return .failure(error)
        }
        let vendor = vaQueryVendorString(display).map { String(cString: $0) } ?? "unknown VA driver"
        return .success((vendor, (Int(major), Int(minor))))
    }

    /// Whether there is anything for ``open(renderNodeDirectory:x11DisplayNames:log:accept:)`` to try: a
    /// render node or a named X11 display. Answered without loading libva, so that a machine
    /// with neither (the common case without a GPU) pays nothing at plugin load.
    public static func hasCandidateDisplays(
        renderNodeDirectory: String = "/dev/dri", x11DisplayNames: [String] = defaultX11DisplayNames
    ) -> Bool {
        !renderNodes(in: renderNodeDirectory).isEmpty || x11DisplayNames.contains { !$0.isEmpty }
    }

    /// `renderD*` entries of `directory`, sorted (renderD128 first: the first GPU). A missing
    /// or unreadable directory has none.
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

    /// vaBeginPicture: starts decoding (or encoding) a picture into `renderTarget`, one of the
    /// context's render targets.
    public func beginPicture(context: VAContext, renderTarget: VASurfaceID) throws(VAError) {
        try vaCall("vaBeginPicture") { vaBeginPicture(display, context.id, renderTarget) }
    }

    /// vaRenderPicture: hands the picture's parameter and data buffers to the driver. va.h: the
    /// buffers are consumed by vaEndPicture, so keep their ``VABufferObject``s until then.
    public func renderPicture(context: VAContext, buffers: [VABufferID]) throws(VAError) {
        var ids = buffers
        let count: Int32 = try vaArgument(ids.count, "vaRenderPicture", "a buffer count")
        try vaCall("vaRenderPicture") { vaRenderPicture(display, context.id, &ids, count) }
    }

    /// vaEndPicture: the picture is complete; the driver decodes it (perhaps asynchronously:
    /// ``syncSurface(_:)`` waits for it).
    public func endPicture(context: VAContext) throws(VAError) {
        try retryingWhileBusy("vaEndPicture") { vaEndPicture(display, context.id) }
    }

    /// vaSyncSurface: waits until every operation on `surface` is done. A decoding error of the
    /// picture may be reported here (VA_STATUS_ERROR_DECODING_ERROR, see
    /// ``querySurfaceError(_:status:)``).
    public func syncSurface(_ surface: VASurfaceID) throws(VAError) {
        try retryingWhileBusy("vaSyncSurface") { vaSyncSurface(display, surface) }
    }

    /// How often a call answered VA_STATUS_ERROR_HW_BUSY is made again (GStreamer's va plugin
    /// retries as many times), with 1, 2, ... ms between the attempts (55 ms in all).
    public static let busyRetries = 10

    /// `call`, made again while the driver says the hardware is busy: iHD answers HW_BUSY while
    /// its engine is reset or under irregular pacing, a state that passes. Any other status
    /// (and HW_BUSY after the last retry) is thrown.
    private func retryingWhileBusy(_ name: String, _ call: () -> VAStatus) throws(VAError) {
        var status = call()
        var attempt = 0
        while status == VAStatus(VA_STATUS_ERROR_HW_BUSY) && attempt < Self.busyRetries {
            attempt += 1
            usleep(useconds_t(1_000 * attempt))
            status = call()
        }
        try vaCall(name) { status }
    }

    /// vaQuerySurfaceStatus: VASurfaceReady, VASurfaceRendering... without waiting.
    public func querySurfaceStatus(_ surface: VASurfaceID) throws(VAError) -> VASurfaceStatus {
        var status = VASurfaceStatus(0)
        try vaCall("vaQuerySurfaceStatus") { vaQuerySurfaceStatus(display, surface, &status) }
        return status
    }

    /// vaQuerySurfaceError: the macroblock ranges the driver could not decode, after `status`
    /// (VA_STATUS_ERROR_DECODING_ERROR, what va.h defines the query for) came from
    /// vaSyncSurface or vaEndPicture. Empty when the driver has no details.
    public func querySurfaceError(
        _ surface: VASurfaceID, status: VAStatus = VAStatus(VA_STATUS_ERROR_DECODING_ERROR)
    ) throws(VAError) -> [VASurfaceDecodeMBErrors] {
        var info: UnsafeMutableRawPointer?
        try vaCall("vaQuerySurfaceError") { vaQuerySurfaceError(display, surface, status, &info) }
        guard let info else { return [] }
        // va.h: an array owned by the driver, terminated by a record whose status is -1. The
        // bound only stops a driver that forgets the terminator (a picture of 8192x4320 has
        // 139264 macroblocks).
        let records = info.assumingMemoryBound(to: VASurfaceDecodeMBErrors.self)
        var result: [VASurfaceDecodeMBErrors] = []
        var index = 0
        while index < 139_264, records[index].status != -1 {
            result.append(records[index])
            index += 1
        }
        return result
    }

    // MARK: - Images

    /// vaQueryImageFormats: the image formats the driver can create (``VAMappedImage`` copies
    /// use the driver's own description of a fourcc).
    public func imageFormats() throws(VAError) -> [VAImageFormat] {
        let maximum = Int(max(vaMaxNumImageFormats(display), 0))
        var formats = [VAImageFormat](repeating: VAImageFormat(), count: maximum)
        var count: Int32 = 0
        try vaCall("vaQueryImageFormats") { vaQueryImageFormats(display, &formats, &count) }
        return Array(formats.prefix(max(0, min(Int(count), maximum))))
    }
}
