import Glibc
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Testing

/// Bit depths, chroma formats, ranges and crops the conformance corpus lacks
/// (see scripts/make-test-fixtures.sh).
@Suite(
    "DecompressionSession: 10-bit, 4:2:2, 4:4:4, full range, left/top cropping",
    .enabled(
        if: GeneratedFixtures.isAvailable,
        "generated fixtures not found: set SWIFTVT_FIXTURES to a folder made by scripts/make-test-fixtures.sh"))
struct FormatCoverageTests {
    struct Fixture: Sendable, CustomStringConvertible {
        var file: String
        var pixelFormat: PixelFormat
        var width: Int
        var height: Int
        var referenceMD5: String
        var fullRange: Bool?
        var description: String { file }
    }

    /// The streams scripts/make-test-fixtures.sh generated into `SWIFTVT_FIXTURES` (meson test
    /// and scripts/test.sh make them first), with FFmpeg's reference MD5s.
    static let directory = GeneratedFixtures.directory

    static let fixtures: [Fixture] = {
        guard let directory, let text = Corpus.readText(directory + "/MANIFEST.tsv") else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: "\t").map(String.init)
            guard fields.count >= 6, let width = Int(fields[2]), let height = Int(fields[3]) else { return nil }
            let format: PixelFormat
            switch fields[1] {
            case "yuv420p10le": format = .i420TenBit
            case "yuv422p": format = .i422
            case "yuv422p10le": format = .i422TenBit
            case "yuv444p": format = .i444
            default: format = .i420
            }
            return Fixture(
                file: fields[0], pixelFormat: format, width: width, height: height, referenceMD5: fields[5],
                fullRange: fields[1] == "yuvj420p" ? true : nil)
        }
    }()

    static func load(_ fixture: Fixture) throws -> CorpusStream {
        let path = (directory ?? ".") + "/" + fixture.file
        return try CorpusStream.load(try #require(Corpus.readFile(path), "cannot read \(path)"))
    }

    @Test("decodes to the reference MD5 in the native format, exactly cropped", arguments: fixtures)
    func nativeFormat(_ fixture: Fixture) throws {
        let stream = try Self.load(fixture)
        for asynchronous in [false, true] {
            let collector = OutputCollector(keepFrames: true)
            let session = try DecompressionSessionTests.decodeAll(
                stream, asynchronous: asynchronous, collector: collector,
                specification: DecoderSpecification(threadCount: asynchronous ? 2 : 1))
            #expect(collector.digest() == fixture.referenceMD5, "\(fixture.file) asynchronous: \(asynchronous)")
            #expect(collector.pictureCount == 12)
            #expect(collector.failures.isEmpty, "\(collector.failures)")
            let picture = try #require(collector.frames.first?.imageBuffer)
            #expect(picture.pixelFormat == fixture.pixelFormat && !picture.ownsMemory)
            #expect(picture.width == fixture.width && picture.height == fixture.height)
            if let fullRange = fixture.fullRange { #expect(picture.attachments.fullRange == fullRange) }
            session.invalidate()
        }
    }

    @Test(
        "4:2:0 converts to NV12 / P010 (per range) when the native format is not accepted",
        arguments: fixtures.filter { $0.pixelFormat == .i420 || $0.pixelFormat == .i420TenBit })
    func biPlanar(_ fixture: Fixture) throws {
        let stream = try Self.load(fixture)
        let tenBit = fixture.pixelFormat == .i420TenBit
        let collector = OutputCollector(keepFrames: true, deinterleave: true)
        let formats: [PixelFormat] = tenBit ? [.p010VideoRange, .p010FullRange] : [.nv12VideoRange, .nv12FullRange]
        let session = try DecompressionSessionTests.decodeAll(
            stream, asynchronous: false, attributes: DestinationImageBufferAttributes(pixelFormats: formats),
            collector: collector)
        let picture = try #require(collector.frames.first?.imageBuffer)
        let expectedFormat: PixelFormat =
            tenBit
            ? .p010VideoRange : (fixture.fullRange == true ? .nv12FullRange : .nv12VideoRange)
        #expect(picture.pixelFormat == expectedFormat)
        #expect(picture.width == fixture.width && picture.height == fixture.height)
        if tenBit {
            // P010 keeps the 10 bits in the high bits: every low 6 bits are zero.
            let luma = picture.planes[0]
            let samples = luma.baseAddress.assumingMemoryBound(to: UInt16.self)
            #expect((0..<luma.width).allSatisfy { samples[$0] & 0x3F == 0 })
        }
        #expect(collector.digest() == fixture.referenceMD5)
        session.invalidate()
    }
}

/// Where scripts/make-test-fixtures.sh put its streams.
enum GeneratedFixtures {
    static let directory: String? = getenv("SWIFTVT_FIXTURES").map { String(cString: $0) }
    static var isAvailable: Bool {
        directory.map { access($0 + "/MANIFEST.tsv", R_OK) == 0 } ?? false
    }
}
