import Glibc
import MediaCore
import SwiftVT
import SwiftVTTestSupport
import Testing

@testable import MultiPassFarm

/// The frame stream the job's GStreamer pipeline writes to `swiftvt-farm encode` (docs/farm.md),
/// read from a real file descriptor: the header's checks, version 1 and 2, the records, and the
/// sentences a damaged stream gets.
@Suite("swiftvt-farm's frame stream reader")
struct FrameStreamTests {
    /// A little-endian header of an I420 `width`x`height` picture with tightly packed planes.
    static func header(
        version: UInt32 = 2, width: Int = 16, height: Int = 8, rate: (UInt32, UInt32) = (25, 1), format: UInt32 = 0,
        fieldOrder: UInt32? = 0
    ) -> [UInt8] {
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        let strides = [width, chromaWidth, chromaWidth]
        let offsets = [0, width * height, width * height + chromaWidth * chromaHeight]
        let frameSize = width * height + 2 * chromaWidth * chromaHeight
        var words: [UInt32] = [version, UInt32(width), UInt32(height), rate.0, rate.1, format]
        words += strides.map(UInt32.init) + offsets.map(UInt32.init) + [UInt32(frameSize)]
        if version == 2, let fieldOrder { words.append(fieldOrder) }
        return Array("SVTFRAME".utf8) + words.flatMap(littleEndian)
    }

    static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    static func frameRecord(pts: Int64, duration: Int64, size: Int) -> [UInt8] {
        [1] + littleEndian(pts) + littleEndian(duration) + [UInt8](repeating: 0x80, count: size)
    }

    /// `bytes` behind a pipe's read end (the job writes through fdsink; the pipe holds 64 KiB).
    static func withStream<R>(_ bytes: [UInt8], _ body: (Int32) throws -> R) throws -> R {
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        defer { close(ends[0]) }
        let written = bytes.withUnsafeBytes { write(ends[1], $0.baseAddress, $0.count) }
        close(ends[1])
        try #require(written == bytes.count)
        return try body(ends[0])
    }

    static func failure(_ bytes: [UInt8]) throws -> String? {
        try withStream(bytes) { descriptor in
            do throws(FarmFailure) {
                var reader = try FrameStreamReader(descriptor: descriptor)
                while true {
                    switch try reader.next() {
                    case .frame: continue
                    case .endOfRange: continue
                    case .endOfStream: return nil
                    }
                }
            } catch .failed(let message) {
                return message
            } catch .usage(let message) {
                return "usage: \(message)"
            }
        }
    }

    @Test("a version 2 header: size, rate, layout and field order")
    func versionTwoHeader() throws {
        let reader = try Self.withStream(Self.header(fieldOrder: 1)) { try FrameStreamReader(descriptor: $0) }
        #expect(reader.header.width == 16 && reader.header.height == 8)
        #expect(reader.header.frameRate == 25)
        #expect(reader.header.strides == [16, 8, 8])
        #expect(reader.header.offsets == [0, 128, 160])
        #expect(reader.header.frameSize == 192)
        #expect(reader.header.fieldCoding == .topFieldFirst)
    }

    @Test("a version 1 header has no field order: progressive")
    func versionOneHeader() throws {
        let reader = try Self.withStream(Self.header(version: 1)) { try FrameStreamReader(descriptor: $0) }
        #expect(reader.header.fieldCoding == .progressive)
    }

    @Test("records: frames with their times, the end of a range, the end of the stream")
    func records() throws {
        let bytes =
            Self.header() + Self.frameRecord(pts: 40_000_000, duration: 40_000_000, size: 192) + [2]
            + Self.frameRecord(pts: 80_000_000, duration: -1, size: 192)
        try Self.withStream(bytes) { descriptor in
            var reader = try FrameStreamReader(descriptor: descriptor)
            let picture = try PixelBuffer(width: 16, height: 8, pixelFormat: .i420)
            guard case .frame(let pts, let duration) = try reader.next() else {
                Issue.record("the first record is not a frame")
                return
            }
            #expect(pts == MediaTime(value: 40_000_000, timescale: 1_000_000_000))
            #expect(duration == MediaTime(value: 40_000_000, timescale: 1_000_000_000))
            // The picture's rows are 64-byte aligned, the stream's 16 bytes: read row by row.
            try reader.readPicture(into: picture)
            for plane in picture.planes {
                let lastRow = plane.baseAddress + (plane.height - 1) * plane.bytesPerRow
                #expect(plane.baseAddress.load(as: UInt8.self) == 0x80)
                #expect(lastRow.load(fromByteOffset: plane.width - 1, as: UInt8.self) == 0x80)
            }
            guard case .endOfRange = try reader.next() else {
                Issue.record("the second record is not the end of a range")
                return
            }
            guard case .frame(_, let unknown) = try reader.next() else {
                Issue.record("the third record is not a frame")
                return
            }
            #expect(!unknown.isValid)
            try reader.readPicture(into: picture)
            guard case .endOfStream = try reader.next() else {
                Issue.record("no end of stream after the last frame")
                return
            }
            #expect(reader.framesRead == 2)
        }
    }

    /// Each damaged stream and what its failure must say.
    static let damagedStreams: [([UInt8], String)] = {
        let junk: [UInt8] = Array("NOTFRAME".utf8) + [UInt8](repeating: 0, count: 52)
        let cut: [UInt8] = Array(header().prefix(20))
        let unknownRecord: [UInt8] = header() + [9]
        let cutTimes: [UInt8] = header() + [1, 0, 0, 0]
        return [
            (junk, "does not begin with SVTFRAME"),
            (cut, "ended inside its header"),
            (header(version: 3), "version 3 is not 1 or 2"),
            (header(format: 7), "format 7 is not 0 (I420)"),
            (header(width: 1), "size 1x8 is outside"),
            (header(fieldOrder: 5), "field order 5 is not 0"),
            (unknownRecord, "record of unknown kind 9 after frame 0"),
            (cutTimes, "ended inside frame 1's time stamps")
        ]
    }()

    @Test("damaged streams get a sentence saying what is wrong", arguments: damagedStreams)
    func damaged(bytes: [UInt8], expected: String) throws {
        let message = try Self.failure(bytes)
        #expect(message?.contains(expected) == true, "\(message ?? "no failure")")
    }
}

@Suite("swiftvt-farm's options")
struct FarmOptionsTests {
    @Test("positional arguments and --name value options")
    func parsing() throws {
        let options = try FarmOptions(["chunk-0", "--bitrate", "1000000", "chunk-1", "--max-passes", "3"])
        #expect(options.positional == ["chunk-0", "chunk-1"])
        #expect(try options.integer("bitrate", in: 1...1_000_000_000) == 1_000_000)
        #expect(try options.integer("threads", in: 0...64, default: 0) == 0)
    }

    @Test("an option without a value, a required one missing and a number out of range are usage errors")
    func usageErrors() throws {
        #expect(throws: FarmFailure.self) { _ = try FarmOptions(["--bitrate"]) }
        let options = try FarmOptions(["--max-passes", "11"])
        do throws(FarmFailure) {
            _ = try options.integer("max-passes", in: 1...10)
            Issue.record("--max-passes 11 was taken")
        } catch .usage(let message) {
            #expect(message == "--max-passes 11 is not a whole number in 1...10")
        } catch {
            Issue.record("not a usage error: \(error)")
        }
        do throws(FarmFailure) {
            _ = try options.requiredString("output")
            Issue.record("a missing --output was taken")
        } catch .usage(let message) {
            #expect(message == "--output is required")
        } catch {
            Issue.record("not a usage error: \(error)")
        }
    }
}
