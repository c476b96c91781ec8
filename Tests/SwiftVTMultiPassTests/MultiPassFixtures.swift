import Glibc
import H264
import MediaCore
import SwiftVT
import SwiftVTTestSupport
import Testing

func fileExists(_ path: String) -> Bool {
    var status = stat()
    return stat(path, &status) == 0
}

func fileSize(_ path: String) -> Int {
    var status = stat()
    return stat(path, &status) == 0 ? Int(status.st_size) : -1
}

func readFile(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "rb") else { return [] }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&buffer, 1, buffer.count, file)
        if count == 0 { break }
        bytes += buffer[0..<count]
    }
    return bytes
}

func writeFile(_ path: String, _ bytes: [UInt8]) {
    guard let file = fopen(path, "wb") else { return }
    _ = fwrite(bytes, 1, bytes.count, file)
    fclose(file)
}

/// The error a throwing call threw, as a VTError (nil if it did not throw one).
func multiPassError(_ body: () throws -> Void) -> VTError? {
    do {
        try body()
        return nil
    } catch let error as VTError {
        return error
    } catch {
        return nil
    }
}

/// Synthetic H.264-like streams: closed GOPs with B-frames, payloads that say which frame and
/// pass they belong to.
enum Stream {
    /// x264's SPS/PPS for 1280x720 High and 640x360 Main (from `ffmpeg -c:v libx264`).
    static func descriptions() throws -> (FormatDescription, FormatDescription) {
        let high720 = try FormatDescription(h264ParameterSets: [
            [
                0x67, 0x64, 0x00, 0x1F, 0xAC, 0xD9, 0x40, 0x50, 0x05, 0xBB, 0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10,
                0x00, 0x00, 0x03, 0x03, 0x20, 0xF1, 0x83, 0x19, 0x60
            ],
            [0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0]
        ])
        let main360 = try FormatDescription(h264ParameterSets: [
            [
                0x67, 0x4D, 0x40, 0x1E, 0xEC, 0xA0, 0x50, 0x17, 0xFC, 0xB8, 0x08, 0x80, 0x00, 0x00, 0x03, 0x00, 0x80,
                0x00, 0x00, 0x19, 0x07, 0x8B, 0x16, 0xCB
            ],
            [0x68, 0xEB, 0xE3, 0xCB, 0x20]
        ])
        return (high720, main360)
    }

    static let timescale: Int32 = 30
    static let gopLength = 10

    static func time(_ frame: Int) -> MediaTime { MediaTime(value: Int64(frame), timescale: timescale) }

    /// `[first, first + count)` frames as a time range.
    static func range(_ first: Int, _ count: Int) -> MediaTimeRange {
        MediaTimeRange(start: time(first), duration: time(count))
    }

    /// Presentation indexes of `frames` frames in decode order: per GOP of 10, I0 P3 B1 B2 P6 B4
    /// B5 P9 B7 B8.
    static func decodeOrder(frames: Int) -> [Int] {
        let pattern = [0, 3, 1, 2, 6, 4, 5, 9, 7, 8]
        return (0..<frames).map { index in (index / gopLength) * gopLength + pattern[index % gopLength] }
    }

    /// The payload of frame `frame` coded in `pass`: its size and bytes depend on both.
    static func payload(frame: Int, pass: Int) -> [UInt8] {
        let position = frame % gopLength
        let size = (position == 0 ? 3000 : position % 3 == 0 ? 900 : 250) + frame * 7 + pass * 13
        return (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ frame &* 7 &+ pass &* 101) }
    }

    /// Frame `frame` (a presentation index) as a sample of `pass`, decoded at position
    /// `decodeIndex`. Sample attachments follow the frame type; every third frame's payload is
    /// split over two memory blocks.
    static func sample(
        frame: Int, decodeIndex: Int, pass: Int, description: FormatDescription?
    ) throws -> SampleBuffer {
        let position = frame % gopLength
        let bytes = payload(frame: frame, pass: pass)
        var data = BlockBuffer(Array(bytes[..<(bytes.count / 2)]))
        if frame % 3 == 0 {
            data.append(BlockBuffer(Array(bytes[(bytes.count / 2)...])))
        } else {
            data = BlockBuffer(bytes)
        }
        let attachments: SampleAttachments
        switch position {
        case 0:
            attachments = SampleAttachments(
                notSync: false, dependsOnOthers: false, isDependedOnByOthers: true, earlierDisplayTimesAllowed: true)
        case 3, 6, 9:
            attachments = SampleAttachments(
                notSync: true, dependsOnOthers: true, isDependedOnByOthers: true, earlierDisplayTimesAllowed: true)
        default:
            attachments = SampleAttachments(
                notSync: true, dependsOnOthers: true, isDependedOnByOthers: false, earlierDisplayTimesAllowed: true)
        }
        return try SampleBuffer(
            dataBuffer: data, formatDescription: description, sampleCount: 1,
            timings: .uniform(
                SampleTimingInfo(
                    duration: time(1), presentationTimeStamp: time(frame), decodeTimeStamp: time(decodeIndex - 1))),
            sizes: .uniform(bytes.count), sampleAttachments: [attachments])
    }

    /// The frames with presentation index in `frames` (a set of GOPs), in decode order, as
    /// samples of `pass`.
    static func samples(
        frames: Range<Int>, pass: Int, description: (Int) -> FormatDescription?
    ) throws -> [SampleBuffer] {
        let order = decodeOrder(frames: frames.upperBound)
        return try order.enumerated().filter { frames.contains($0.element) }.map { decodeIndex, frame in
            try sample(frame: frame, decodeIndex: decodeIndex, pass: pass, description: description(frame))
        }
    }
}

/// What must survive a trip through the silo, compared as one value.
struct SampleSnapshot: Equatable, CustomStringConvertible {
    var bytes: [UInt8]
    var timing: SampleTimingInfo
    var attachments: SampleAttachments
    var format: FormatDescription?

    init(_ sample: SampleBuffer) throws {
        bytes = sample.dataBuffer?.copyToArray() ?? []
        timing = try sample.timingInfo(at: 0)
        attachments = try sample.attachments(forSampleAt: 0)
        format = sample.formatDescription
    }

    var description: String { "pts \(timing.presentationTimeStamp) \(bytes.count) bytes" }
}

extension FrameSilo {
    /// Every sample of `range` as snapshots, in the order iteration gives them.
    func snapshots(in range: MediaTimeRange? = nil) throws -> [SampleSnapshot] {
        var result: [SampleSnapshot] = []
        try forEachSample(in: range) { result.append(try SampleSnapshot($0)) }
        return result
    }
}
