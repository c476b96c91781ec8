import SwiftVT

/// `swiftvt-farm defaults`: the encoder's rules that the job (pipelines/lib/swiftvt_farm) plans
/// with, printed from the Swift code that applies them, so that the Python side keeps no copy:
///
///     gop-seconds 10            MultiPassGOP.automaticDuration: an IDR picture at least this often
///     minimum-gop-frames 4      MultiPassGOP.minimumLength
enum DefaultsCommand {
    static var lines: [String] {
        [
            "gop-seconds \(MultiPassGOP.automaticDuration)",
            "minimum-gop-frames \(MultiPassGOP.minimumLength)"
        ]
    }

    static func run() {
        for line in lines { print(line) }
    }
}
