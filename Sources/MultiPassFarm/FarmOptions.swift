import Glibc
import SwiftVT

/// What ends a command: its usage was wrong (exit 2) or the work failed (exit 1), with the
/// sentence the user reads after "swiftvt-farm: ".
enum FarmFailure: Error {
    case usage(String)
    case failed(String)

    /// A failure of SwiftVT's, in its own words, after what was being done.
    static func vt(_ error: VTError, _ doing: String) -> FarmFailure { .failed("\(doing): \(error.message)") }
}

/// Positional arguments and `--name value` options.
struct FarmOptions {
    var positional: [String] = []
    private var values: [String: String] = [:]

    init(_ arguments: [String]) throws(FarmFailure) {
        var remaining = arguments[...]
        while let argument = remaining.popFirst() {
            guard argument.hasPrefix("--") else {
                positional.append(argument)
                continue
            }
            guard let value = remaining.popFirst() else { throw .usage("\(argument) needs a value") }
            values[String(argument.dropFirst(2))] = value
        }
    }

    func string(_ name: String) -> String? { values[name] }

    func requiredString(_ name: String) throws(FarmFailure) -> String {
        guard let value = values[name], !value.isEmpty else { throw .usage("--\(name) is required") }
        return value
    }

    /// A whole number within `range`; `fallback` when the option is absent (required without one).
    func integer(_ name: String, in range: ClosedRange<Int>, default fallback: Int? = nil) throws(FarmFailure) -> Int {
        guard let text = values[name] else {
            guard let fallback else { throw .usage("--\(name) is required") }
            return fallback
        }
        guard let number = Int(text), range.contains(number) else {
            throw .usage("--\(name) \(text) is not a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }
}

/// Reading and writing small text files (manifests, plans, the planner's state).
enum TextFile {
    static func read(_ path: String) throws(FarmFailure) -> String {
        guard let file = fopen(path, "rb") else {
            throw .failed("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes += chunk[0..<count] }
            if count < chunk.count { break }
        }
        guard ferror(file) == 0 else { throw .failed("cannot read \(path): \(String(cString: strerror(errno)))") }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Written under a temporary name and renamed: a reader never sees half a file.
    static func write(_ text: String, to path: String) throws(FarmFailure) {
        let temporary = path + ".tmp"
        guard let file = fopen(temporary, "wb") else {
            throw .failed("cannot write \(path): \(String(cString: strerror(errno)))")
        }
        let bytes = Array(text.utf8)
        let written = fwrite(bytes, 1, bytes.count, file) == bytes.count
        let closed = fclose(file) == 0
        guard written, closed, rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .failed("cannot write \(path): \(reason)")
        }
    }

    static func makeDirectory(_ path: String) throws(FarmFailure) {
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw .failed("cannot create the directory \(path): \(String(cString: strerror(errno)))")
        }
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    static func baseName(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
