import Glibc
import MediaCore
import SwiftVTFileSupport
import Testing

/// The H.265 part of the shared test corpus (`h265/` in the corpus folder: see `Corpus` for where
/// that is looked for). Its MANIFEST.tsv has other columns than the H.264 one: file, bytes,
/// sha256, width, height, profile, pix_fmt (libavcodec's name of the decoded format), frames,
/// ref_md5.
public enum H265Corpus {
    public struct Entry: Sendable {
        public var file: String
        public var bytes: Int
        public var width: Int
        public var height: Int
        public var profile: String
        public var pixelFormat: String
        public var frames: Int
        public var referenceMD5: String

        /// Bits per sample and chroma_format_idc that `pixelFormat` stands for (libavcodec's
        /// yuv420p, yuv422p10le, ...; gray for monochrome), nil for a name not known here.
        public var bitDepthAndChromaFormat: (bitDepth: Int, chromaFormatIdc: Int)? {
            var name = Substring(pixelFormat)
            if name.hasSuffix("le") || name.hasSuffix("be") { name = name.dropLast(2) }
            let chroma: Int
            if name.hasPrefix("yuv420p") {
                chroma = 1
                name = name.dropFirst(7)
            } else if name.hasPrefix("yuv422p") {
                chroma = 2
                name = name.dropFirst(7)
            } else if name.hasPrefix("yuv444p") {
                chroma = 3
                name = name.dropFirst(7)
            } else if name.hasPrefix("gray") {
                chroma = 0
                name = name.dropFirst(4)
            } else {
                return nil
            }
            guard let depth = name.isEmpty ? 8 : Int(name) else { return nil }
            return (depth, chroma)
        }
    }

    public static var directory: String? {
        guard let directory = Corpus.directory else { return nil }
        let path = directory + "/h265"
        guard access(path + "/MANIFEST.tsv", R_OK) == 0 else { return nil }
        return path
    }

    /// The manifest entries, or nil when the corpus is absent: then the caller skips its body (a
    /// line on stderr says where the corpus was expected), or, under
    /// `SWIFTVT_REQUIRE_TEST_INPUTS`, an issue is recorded, failing the test.
    public static func manifest(sourceLocation: SourceLocation = #_sourceLocation) -> [Entry]? {
        guard let directory, let text = Corpus.readText(directory + "/MANIFEST.tsv") else {
            let expected = "\(Corpus.directory ?? "?")/h265"
            if Corpus.inputsRequired {
                Issue.record(
                    "H.265 test corpus not found at \(expected) (set SWIFTVT_CORPUS to the corpus folder); SWIFTVT_REQUIRE_TEST_INPUTS is set, so a missing corpus is a failure",
                    sourceLocation: sourceLocation)
            } else {
                FileContents.printError(
                    "skipped: H.265 test corpus not found at \(expected) (set SWIFTVT_CORPUS); \(sourceLocation.fileName):\(sourceLocation.line) did not run"
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
                    height: Int(fields[4]) ?? 0,
                    profile: fields[5], pixelFormat: fields[6], frames: Int(fields[7]) ?? 0, referenceMD5: fields[8]))
        }
        return entries
    }

    public static func bytes(of entry: Entry) -> [UInt8]? {
        guard let directory else { return nil }
        return Corpus.readFile(directory + "/" + entry.file)
    }
}

extension Trait where Self == ConditionTrait {
    /// Skips a test, saying where the H.265 corpus was looked for, when it is absent (under
    /// `SWIFTVT_REQUIRE_TEST_INPUTS` the test runs anyway and fails on the missing corpus).
    public static var requiresH265Corpus: Self {
        .enabled(
            if: H265Corpus.directory != nil || Corpus.inputsRequired,
            "H.265 test corpus not found at \(Corpus.directory ?? "?")/h265 (set SWIFTVT_CORPUS to the corpus folder)")
    }
}
