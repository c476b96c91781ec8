import Glibc
import MediaCore
import SwiftVTFileSupport
import Testing

/// Access to the shared test corpus (`../shared/corpus` next to the repository, or the folder named
/// by `SWIFTVT_CORPUS`). When it is absent, tests that need it are skipped with a message saying
/// where it was looked for; with `SWIFTVT_REQUIRE_TEST_INPUTS` set (CI, `.ci/run`) they fail
/// instead, so a machine without the corpus can never pass (tests/lib/require.sh does the same for
/// the shell tests).
public enum Corpus {
    public struct Entry: Sendable {
        public var file: String
        public var bytes: Int
        public var width: Int
        public var height: Int
        public var profile: String
        public var frames: Int
        public var referenceMD5: String
        public var avdecMD5: String
        /// Damaged or unsupported on purpose (the corpus README names them).
        public var isDamaged: Bool { Corpus.damagedFiles.contains(file) }
    }

    public static let damagedFiles: Set<String> = [
        "BA_MW_D_IDR_LOST.264", "Error_I_P.264", "sps_subsetsps_bothVUI.264"
    ]

    /// True when a missing test input must fail rather than skip: `SWIFTVT_REQUIRE_TEST_INPUTS` set
    /// to anything but "" or "0".
    public static var inputsRequired: Bool {
        guard let value = getenv("SWIFTVT_REQUIRE_TEST_INPUTS") else { return false }
        let text = String(cString: value)
        return !text.isEmpty && text != "0"
    }

    /// Where the corpus is expected (whether or not it is there).
    public static var directory: String? {
        if let override = getenv("SWIFTVT_CORPUS") { return String(cString: override) }
        // This file is Tests/SwiftVTTestSupport/Corpus.swift; the corpus is ../shared/corpus
        // relative to the repository root.
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast(3)
        let root = components.joined(separator: "/")
        return root + "/../shared/corpus"
    }

    public static var h264Directory: String? {
        guard let directory else { return nil }
        let path = directory + "/h264"
        guard access(path + "/MANIFEST.tsv", R_OK) == 0 else { return nil }
        return path
    }

    /// The corpus entry for `file`.
    public static func entry(_ file: String) -> Entry? { manifest()?.first { $0.file == file } }

    /// The path of a corpus file.
    public static func path(of entry: Entry) -> String? { h264Directory.map { $0 + "/" + entry.file } }

    /// The manifest entries, or nil when the corpus is absent: then the caller skips its body (a line
    /// on stderr says where the corpus was expected), or, under `SWIFTVT_REQUIRE_TEST_INPUTS`, an
    /// issue is recorded, failing the test.
    public static func manifest(sourceLocation: SourceLocation = #_sourceLocation) -> [Entry]? {
        guard let directory = h264Directory, let text = readText(directory + "/MANIFEST.tsv") else {
            if inputsRequired {
                Issue.record(
                    "test corpus not found at \(directory ?? "?")/h264 (set SWIFTVT_CORPUS to the corpus folder); SWIFTVT_REQUIRE_TEST_INPUTS is set, so a missing corpus is a failure",
                    sourceLocation: sourceLocation)
            } else {
                FileContents.printError(
                    "skipped: test corpus not found at \(directory ?? "?")/h264 (set SWIFTVT_CORPUS); \(sourceLocation.fileName):\(sourceLocation.line) did not run"
                )
            }
            return nil
        }
        var entries: [Entry] = []
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count >= 9 else { continue }
            entries.append(
                Entry(
                    file: fields[0], bytes: Int(fields[1]) ?? 0, width: Int(fields[3]) ?? 0,
                    height: Int(fields[4]) ?? 0, profile: fields[5], frames: Int(fields[6]) ?? 0,
                    referenceMD5: fields[7], avdecMD5: fields[8]))
        }
        return entries
    }

    public static func bytes(of entry: Entry) -> [UInt8]? {
        guard let directory = h264Directory else { return nil }
        return readFile(directory + "/" + entry.file)
    }

    public static func readFile(_ path: String) -> [UInt8]? { FileContents.read(path) }

    public static func readText(_ path: String) -> String? {
        readFile(path).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// A small deterministic generator (SplitMix64) so damaged variants are the same on every run.
public struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips a test, saying where the corpus was looked for, when the corpus is absent. A developer
    /// without it sees the skip and the reason rather than a silent pass. Under
    /// `SWIFTVT_REQUIRE_TEST_INPUTS` (CI) the test runs anyway, so that the missing corpus fails it
    /// (`Corpus.manifest()` records the issue) instead of skipping to green.
    public static var requiresCorpus: Self {
        .enabled(
            if: Corpus.h264Directory != nil || Corpus.inputsRequired,
            "test corpus not found at \(Corpus.directory ?? "?")/h264 (set SWIFTVT_CORPUS to the corpus folder)")
    }
}
