import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Testing

/// Bit depths, chroma formats, ranges and crops the conformance corpus lacks (see Fixtures/README.md).
@Suite("DecompressionSession: 10-bit, 4:2:2, 4:4:4, full range, left/top cropping")
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

    static let fixtures: [Fixture] = [
        Fixture(file: "crop420.264", pixelFormat: .i420, width: 104, height: 58, referenceMD5: "811edd672bba2e80ba4348531c08db43"),
        Fixture(file: "yuv420p10le.264", pixelFormat: .i420TenBit, width: 102, height: 58, referenceMD5: "2e755190094bd1d2d426ca0547eb6e35"),
        Fixture(file: "yuv422p.264", pixelFormat: .i422, width: 102, height: 58, referenceMD5: "aeb3add316f4870e63455c9f34533ff7"),
        Fixture(file: "yuv422p10le.264", pixelFormat: .i422TenBit, width: 102, height: 58, referenceMD5: "74a34448ef4ea2d94e6f071c4822d3ce"),
        Fixture(file: "yuv444p.264", pixelFormat: .i444, width: 102, height: 58, referenceMD5: "c61b8b13c9361caf988a18a01b494e79"),
        Fixture(file: "yuvj420p.264", pixelFormat: .i420, width: 102, height: 58, referenceMD5: "0de1d08f26005e15f97414bb7043d8f1", fullRange: true),
    ]

    static func load(_ fixture: Fixture) throws -> CorpusStream {
        var components = #filePath.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        components.removeLast()
        let path = components.joined(separator: "/") + "/Fixtures/" + fixture.file
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

    @Test("4:2:0 converts to NV12 / P010 (per range) when the native format is not accepted",
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
        let expectedFormat: PixelFormat = tenBit
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
