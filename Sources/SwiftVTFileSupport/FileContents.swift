import Glibc

/// Whole-file reading for the tools around the plugin (benchmarks, the fuzz replayer, tests),
/// with the C library only: the plugin's own code never reads files.
public enum FileContents {
    /// The bytes of the file at `path`, or nil when it cannot be opened or read.
    public static func read(_ path: String) -> [UInt8]? {
        guard let handle = fopen(path, "rb") else { return nil }
        defer { fclose(handle) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let read = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, handle) }
            if read == 0 { break }
            bytes.append(contentsOf: chunk[0..<read])
        }
        return ferror(handle) == 0 ? bytes : nil
    }

    /// Writes `message` and a newline to standard error.
    public static func printError(_ message: String) {
        var line = message + "\n"
        line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
    }
}
