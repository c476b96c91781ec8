import CVA
import Glibc
import SwiftVTTestSupport
import Testing
import VAPlumbing

/// Discovery on a machine with two devices of which the first lacks H.264 (a hybrid laptop's
/// integrated GPU in front of the discrete one). No machine here has two GPUs (or any DRM node),
/// so the two devices are two X11 displays, each with the software driver (LIBVA_DRIVER_NAME):
/// the one scripts/with-software-va.sh started (DISPLAY) and a second Xvfb this test starts;
/// SWIFTVT_VA_NO_H264=x11:<first> makes the first offer no H.264. Render nodes and X11 displays
/// go through the same candidate loop.
@Suite("VA discovery across several devices", .serialized)
struct VAMultipleDevicesTests {
    static var hasDriver: Bool { getenv("LIBVA_DRIVER_NAME") != nil && getenv("DISPLAY") != nil }

    static func withEnvironment<Result>(_ environment: [(String, String)], _ body: () throws -> Result) rethrows
        -> Result
    {
        let previous = environment.map { ($0.0, getenv($0.0).map { String(cString: $0) }) }
        for (name, value) in environment { setenv(name, value, 1) }
        defer {
            for (name, value) in previous {
                if let value { setenv(name, value, 1) } else { unsetenv(name) }
            }
        }
        return try body()
    }

    /// An Xvfb server of its own on the first free display from :190, stopped when this goes away.
    final class SecondDisplay {
        let name: String
        private let pid: pid_t

        init() throws {
            for number in 190..<230 {
                let socket = "/tmp/.X11-unix/X\(number)"
                guard access(socket, F_OK) != 0 else { continue }
                var spawned: pid_t = 0
                let arguments = ["Xvfb", ":\(number)", "-screen", "0", "64x64x24", "-nolisten", "tcp", "-noreset"]
                var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
                defer { for argument in argv { free(argument) } }
                var actions = posix_spawn_file_actions_t()
                posix_spawn_file_actions_init(&actions)
                defer { posix_spawn_file_actions_destroy(&actions) }
                posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
                posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
                // The test's threads block signals (libdispatch); a child inherits the mask, and an
                // Xvfb with SIGTERM blocked would never stop.
                var attributes = posix_spawnattr_t()
                posix_spawnattr_init(&attributes)
                defer { posix_spawnattr_destroy(&attributes) }
                var unblocked = sigset_t()
                sigemptyset(&unblocked)
                posix_spawnattr_setsigmask(&attributes, &unblocked)
                posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
                guard posix_spawnp(&spawned, "Xvfb", &actions, &attributes, argv, environ) == 0 else { break }
                // Up to 10 s for the server's socket; a server that lost the race for the
                // display number exits, and the next number is tried.
                for _ in 0..<100 where access(socket, F_OK) != 0 {
                    var status: Int32 = 0
                    if waitpid(spawned, &status, WNOHANG) == spawned { break }
                    usleep(100_000)
                }
                if access(socket, F_OK) == 0 {
                    name = ":\(number)"
                    pid = spawned
                    return
                }
                kill(spawned, SIGKILL)
                var status: Int32 = 0
                waitpid(spawned, &status, 0)
            }
            throw SpawnFailure()
        }

        deinit {
            kill(pid, SIGTERM)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }

        struct SpawnFailure: Error {}
    }

    /// Whether the display offers H.264 decoding (any H.264 profile with VLD).
    static func decodesH264(_ connection: VADisplayConnection) -> String? {
        guard let capabilities = try? connection.probeCapabilities() else { return "cannot be probed" }
        let h264 = [VAProfileH264ConstrainedBaseline, VAProfileH264Main, VAProfileH264High]
        return h264.contains { capabilities.supports(profile: $0, entrypoint: VAEntrypointVLD) }
            ? nil : "no H.264 decoder"
    }

    @Test(
        "a first device without H.264 is passed over and the second one is used; with neither, the error names both",
        .enabled(if: hasDriver, "needs the software VA driver and Xvfb: run through scripts/with-software-va.sh"))
    func passesOverDeviceWithoutH264() throws {
        let empty = try TemporaryDirectory("va-devices")
        let first = try #require(getenv("DISPLAY").map { String(cString: $0) })
        let second = try SecondDisplay()
        let displays = [first, second.name]
        var log: [String] = []
        let connection = try Self.withEnvironment([("SWIFTVT_VA_NO_H264", "x11:\(first)")]) {
            try VADisplayConnection.open(
                renderNodeDirectory: empty.path, x11DisplayNames: displays, log: { log.append($0) },
                accept: Self.decodesH264)
        }
        #expect(connection.description == "X11 display \(second.name)", "\(log)")
        #expect(
            log.contains {
                $0.contains("passed over") && $0.contains("X11 display \(first)") && $0.contains("no H.264 decoder")
            },
            "\(log)")

        // Without the question, the first display that initialises is taken: the one without
        // H.264, where the old discovery stopped.
        let plain = try Self.withEnvironment([("SWIFTVT_VA_NO_H264", "x11:\(first)")]) {
            try VADisplayConnection.open(renderNodeDirectory: empty.path, x11DisplayNames: displays)
        }
        #expect(plain.description == "X11 display \(first)")

        do {
            _ = try Self.withEnvironment([("SWIFTVT_VA_NO_H264", "any")]) {
                try VADisplayConnection.open(
                    renderNodeDirectory: empty.path, x11DisplayNames: displays, accept: Self.decodesH264)
            }
            Issue.record("a display without H.264 was accepted")
        } catch let error as VADisplayDiscoveryError {
            #expect(error.displaysPassedOver == 2)
            #expect(error.description.hasPrefix("no VA-API display offers what is needed"), "\(error)")
            #expect(error.attempts.filter { $0.contains("no H.264 decoder") }.count == 2, "\(error.attempts)")
        }
    }
}
