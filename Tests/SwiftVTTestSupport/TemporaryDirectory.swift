import Glibc
import Testing

/// A fresh directory under /tmp (shared by the multi-pass and compression tests), removed with its files when the value goes away.
public struct TemporaryDirectory: ~Copyable {
    public let path: String

    public init(_ label: String = "multipass") throws {
        var template = Array("/tmp/swiftvt-test-\(label)-XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        }
        path = try #require(created, "mkdtemp failed: \(String(cString: strerror(errno)))")
    }

    deinit {
        for name in Self.names(in: path) { unlink("\(path)/\(name)") }
        rmdir(path)
    }

    /// The names in `directory`, without `.` and `..`, sorted.
    public static func names(in directory: String) -> [String] {
        guard let stream = opendir(directory) else { return [] }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    public var names: [String] { Self.names(in: path) }
}
