import CVA
import Glibc
import SwiftVTTestSupport
import Testing
import VAPlumbing

/// The VA plumbing on the project's software VA driver. Tests that need a device run when
/// LIBVA_DRIVER_NAME is set, which scripts/with-software-va.sh does (meson test va-swift-tests
/// runs them through it):
///   scripts/with-software-va.sh swift test --filter VAAPITests
/// Serialized: the driver reads its fault-injection variables when a display is initialised,
/// and the environment is process-wide.
@Suite("VA plumbing on the software VA driver", .serialized)
struct VAPlumbingTests {
    static var hasDriver: Bool { getenv("LIBVA_DRIVER_NAME") != nil }

    /// Runs `body` with `name=value` in the environment, restoring the previous value after.
    static func withEnvironment<R>(_ name: String, _ value: String?, _ body: () throws -> R) rethrows -> R {
        let previous = getenv(name).map { String(cString: $0) }
        if let value { setenv(name, value, 1) } else { unsetenv(name) }
        defer {
            if let previous { setenv(name, previous, 1) } else { unsetenv(name) }
        }
        return try body()
    }

    @Test("no render node and no X display: the error lists both attempts")
    func discoveryWithoutDevice() throws {
        let empty = try TemporaryDirectory("va-plumbing")
        do throws(VADisplayDiscoveryError) {
            _ = try VADisplayConnection.open(renderNodeDirectory: empty.path, x11DisplayName: nil)
            Issue.record("a display was opened without any device")
        } catch {
            #expect(error.attempts.count == 2, "\(error.attempts)")
            #expect(error.description.contains("\(empty.path): no render nodes"))
            #expect(error.description.contains("DISPLAY is not set"))
            #expect(error.description.contains("LIBVA_DRIVER_NAME"))
        }
    }

    @Test("the driver's display: description, vendor, H.264 VLD profiles, NV12 surfaces",
          .enabled(if: hasDriver, "needs a VA device: run through scripts/with-software-va.sh"))
    func probe() throws {
        var messages: [String] = []
        let connection = try VADisplayConnection.open(log: { messages.append($0) })
        #expect(connection.description.hasPrefix("X11 display"))
        #expect(!connection.vendor.isEmpty)
        #expect(connection.apiVersion.major == 1)
        // libva's own messages reach the log instead of stderr.
        #expect(messages.contains { $0.hasPrefix("libva: ") }, "\(messages)")
        let capabilities = try connection.probeCapabilities()
        for profile in [VAProfileH264ConstrainedBaseline, VAProfileH264Main, VAProfileH264High] {
            #expect(capabilities.supports(profile: profile, entrypoint: VAEntrypointVLD))
            #expect(!capabilities.supports(profile: profile, entrypoint: VAEntrypointEncSlice))
        }
        #expect(capabilities.summary.contains("H264High: VLD"), "\(capabilities.summary)")
        let maximum = capabilities.maxPictureSize(profile: VAProfileH264High, entrypoint: VAEntrypointVLD)
        #expect(maximum.map { $0.width >= 1920 && $0.height >= 1080 } == true)
        let config = try VAConfig(
            connection: connection, profile: VAProfileH264High, entrypoint: VAEntrypointVLD,
            attributes: [VAConfigAttrib(type: VAConfigAttribRTFormat, value: UInt32(VA_RT_FORMAT_YUV420))])
        let surfaces = try connection.surfaceAttributes(config: config)
        #expect(surfaces.pixelFormats.contains(UInt32(VA_FOURCC_NV12)))
    }

    @Test("configs, surfaces, contexts, buffers and images are all destroyed: nothing is live at vaTerminate",
          .enabled(if: hasDriver, "needs a VA device: run through scripts/with-software-va.sh"))
    func lifetimes() throws {
        let directory = try TemporaryDirectory("va-plumbing")
        let report = directory.path + "/report"
        try Self.withEnvironment("SWIFTVT_VA_REPORT", report) {
            do {
                let connection = try VADisplayConnection.open()
                let config = try VAConfig(
                    connection: connection, profile: VAProfileH264Main, entrypoint: VAEntrypointVLD, attributes: [])
                let surfaces = try VASurfaceSet(
                    connection: connection, rtFormat: UInt32(VA_RT_FORMAT_YUV420), width: 64, height: 48, count: 4,
                    fourcc: UInt32(VA_FOURCC_NV12))
                let context = try VAContext(
                    connection: connection, config: config, width: 64, height: 48, flags: Int32(VA_PROGRESSIVE),
                    renderTargets: surfaces.ids)
                var bytes: [UInt8] = Array(repeating: 7, count: 100)
                let buffer = try bytes.withUnsafeMutableBytes { raw in
                    try VABufferObject(connection: connection, context: context, type: VASliceDataBufferType, bytes: UnsafeRawBufferPointer(raw))
                }
                let derived = try VAMappedImage(deriving: surfaces.ids[0], connection: connection)
                #expect(derived.image.width == 64 && derived.data.count >= 64 * 48 * 3 / 2)
                let copied = try VAMappedImage(
                    copying: surfaces.ids[1], connection: connection, fourcc: UInt32(VA_FOURCC_NV12), width: 64, height: 48)
                #expect(copied.image.pitches.0 >= 64)
                withExtendedLifetime(buffer) {}
            }
        }
        let text = try #require(Corpus.readText(report))
        #expect(text.contains("live-objects configs=0 contexts=0 surfaces=0 buffers=0 images=0"), "\(text)")
    }

    @Test("fault injection: a failing vaCreateConfig is a VAError naming the call; a busy device fails discovery",
          .enabled(if: hasDriver, "needs a VA device: run through scripts/with-software-va.sh"))
    func faults() throws {
        try Self.withEnvironment("SWIFTVT_VA_FAIL", "create-config") {
            let connection = try VADisplayConnection.open()
            do throws(VAError) {
                _ = try VAConfig(connection: connection, profile: VAProfileH264Main, entrypoint: VAEntrypointVLD, attributes: [])
                Issue.record("vaCreateConfig did not fail")
            } catch {
                #expect(error.call == "vaCreateConfig")
                #expect(error.status == Int32(VA_STATUS_ERROR_OPERATION_FAILED))
                #expect(error.description.contains("vaCreateConfig failed: operation failed"), "\(error)")
            }
        }
        Self.withEnvironment("SWIFTVT_VA_BUSY", "1") {
            do throws(VADisplayDiscoveryError) {
                _ = try VADisplayConnection.open(renderNodeDirectory: "/nonexistent")
                Issue.record("a busy device was opened")
            } catch {
                #expect(error.description.contains("vaInitialize failed"), "\(error)")
                #expect(error.attempts.contains { $0.hasPrefix("X11 display") }, "\(error.attempts)")
            }
        }
    }
}
