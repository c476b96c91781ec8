import Glibc
import SwiftVTTestSupport
import Testing

/// The debug plugin this test build made (with the elements of test builds only, Elements.swift's
/// `testBuildOnly`) against the interface snapshots in docs/gst-inspect, through the same script
/// as the release plugin's `meson test inspect-snapshot`: a test-build element's snapshot lives in
/// docs/gst-inspect/test-build/.
@Suite("interface snapshots of the test build")
struct InterfaceSnapshotTests {
    /// The repository, from this file's path (Tests/SwiftVTElementsTests/).
    static let sourceRoot: String = {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        return components.joined(separator: "/")
    }()

    /// libgstswiftvt.so built beside this test binary (`swift build --build-tests` builds every
    /// product); nil when it is not there.
    static let debugPlugin: String? = {
        var executable = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &executable, executable.count - 1)
        guard length > 0 else { return nil }
        let path = String(decoding: executable[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var directory = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        directory.removeLast()
        let plugin = directory.joined(separator: "/") + "/libgstswiftvt.so"
        return access(plugin, R_OK) == 0 ? plugin : nil
    }()

    @Test(
        "every element of the debug plugin, those of test builds included, matches its snapshot",
        .enabled(if: debugPlugin != nil, "no libgstswiftvt.so beside the test binary"))
    func snapshots() throws {
        let plugin = try #require(Self.debugPlugin)
        let (status, output) = try Self.run(
            ["/usr/bin/python3", "-m", "pytest", "-q", Self.sourceRoot + "/tests/inspect_snapshot"],
            environment: [
                "SWIFTVT_PLUGIN=\(plugin)", "SWIFTVT_SOURCE_ROOT=\(Self.sourceRoot)", "PYTHONDONTWRITEBYTECODE=1"
            ])
        #expect(status == 0, "tests/inspect_snapshot on \(plugin):\n\(output)")
        #expect(output.contains(" passed"), "\(output)")
    }

    /// Runs `arguments` with this process's environment plus `environment`; its exit status and
    /// output (stdout and stderr).
    static func run(_ arguments: [String], environment: [String]) throws -> (status: Int32, output: String) {
        var template = Array("/tmp/swiftvt-snapshot-XXXXXX".utf8CString)
        let descriptor = mkstemp(&template)
        try #require(descriptor >= 0, "mkstemp: \(String(cString: strerror(errno)))")
        let logPath = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        close(descriptor)
        defer { unlink(logPath) }
        var variables: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            variables.append(String(cString: pointer))
            entry += 1
        }
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = (variables + environment).map { strdup($0) } + [nil]
        defer {
            for argument in argv { free(argument) }
            for variable in envp { free(variable) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid = pid_t()
        let spawned = posix_spawn(&pid, arguments[0], &actions, nil, argv, envp)
        try #require(spawned == 0, "posix_spawn: \(String(cString: strerror(spawned)))")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        let output = Corpus.readText(logPath) ?? ""
        return (status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F), output)
    }
}
