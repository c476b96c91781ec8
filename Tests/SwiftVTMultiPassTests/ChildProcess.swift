import Glibc
import MediaCore
import SwiftVT
import Testing

/// Runs this test binary again as a child process that runs only ``ChildProcessRoles/run()``,
/// with a role and a directory in its environment: a real separate process, which can crash for
/// real (SIGKILL) and can have its own file-size limit without touching the tests running in this
/// one.
enum ChildProcess {
    static let roleVariable = "SWIFTVT_MULTIPASS_CHILD_ROLE"
    static let directoryVariable = "SWIFTVT_MULTIPASS_CHILD_DIRECTORY"

    struct Exit: CustomStringConvertible {
        var status: Int32
        var log: String
        /// The signal that killed the child, if one did.
        var signal: Int32? { status & 0x7F == 0 ? nil : status & 0x7F }
        var exitCode: Int32? { status & 0x7F == 0 ? (status >> 8) & 0xFF : nil }
        var description: String {
            "status \(status) (signal \(signal.map(String.init) ?? "-"), exit \(exitCode.map(String.init) ?? "-")); log:\n\(log)"
        }
    }

    /// Spawns the child and waits for it. Its output goes to `logPath`.
    static func run(role: String, directory: String, logPath: String) throws -> Exit {
        var executable = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &executable, executable.count - 1)
        try #require(length > 0, "cannot find this test binary: \(String(cString: strerror(errno)))")
        let path = String(decoding: executable[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let arguments = [path, "--testing-library", "swift-testing", "--filter", "multiPassChildProcessRole"]
        var environment: [String] = []
        var entry = environ
        while let pointer = entry.pointee {
            let variable = String(cString: pointer)
            if !variable.hasPrefix(roleVariable + "="), !variable.hasPrefix(directoryVariable + "=") {
                environment.append(variable)
            }
            entry += 1
        }
        environment += ["\(roleVariable)=\(role)", "\(directoryVariable)=\(directory)"]

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            for argument in argv { free(argument) }
            for variable in envp { free(variable) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        try #require(spawned == 0, "posix_spawn failed: \(String(cString: strerror(spawned)))")
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        return Exit(status: status, log: String(decoding: readFile(logPath), as: UTF8.self))
    }
}

/// The child's side. Disabled unless this process was spawned by ``ChildProcess/run(role:directory:logPath:)``.
@Suite("Child process roles")
struct ChildProcessRoles {
    static var role: String? { getenv(ChildProcess.roleVariable).map { String(cString: $0) } }

    @Test(
        "multiPassChildProcessRole (runs only in a child process spawned by another test)",
        .enabled(if: role != nil))
    func multiPassChildProcessRole() throws {
        let directory = try #require(getenv(ChildProcess.directoryVariable).map { String(cString: $0) })
        switch Self.role {
        case "crash":
            // Files as a multi-pass encode has them mid-way, then a death nobody can clean up after.
            let silo = try FrameSilo(directory: directory)
            for sample in try Stream.samples(frames: 0..<20, pass: 1, description: { _ in nil }) {
                try silo.add(sample)
            }
            try silo.setTimeRangesForNextPass([Stream.range(0, 10)])
            let storage = try MultiPassStorage(creatingIn: directory, timeRange: Stream.range(0, 20))
            try storage.write(MultiPassStorageTests.record(0))
            withExtendedLifetime((silo, storage)) { _ = kill(getpid(), SIGKILL) }
        case "file-size-limit":
            try FileSizeLimitChild.run(directory: directory)
        default:
            Issue.record("unknown role \(String(describing: Self.role))")
        }
    }
}
