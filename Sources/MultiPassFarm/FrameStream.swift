import Glibc
import MediaCore
import SwiftVT

/// Decoded frames from the job's GStreamer pipeline (fdsink), on a file descriptor: the
/// frame stream of docs/farm.md. Little-endian.
///
///     header:  "SVTFRAME", uint32 version (2; 1 is still read), width, height, fps_n, fps_d,
///              format (0 = I420), stride[3], offset[3], frame_size  (GstVideoInfo of the negotiated caps),
///              version 2 only: field_order (0 progressive, 1 interlaced top field first,
///              2 interlaced bottom field first)
///     records: uint8 1, int64 pts_ns, int64 duration_ns (-1 unknown), frame_size bytes
///              uint8 2                                  (the end of a time range)
///
/// Each frame is read straight into a pooled picture (the one copy out of the pipe).
struct FrameStreamReader {
    struct Header {
        var width: Int
        var height: Int
        var frameRate: Double?
        var strides: [Int]
        var offsets: [Int]
        var frameSize: Int
        /// How the encoder codes the pictures: field_order of a version 2 header, progressive
        /// for version 1 (written before interlaced inputs were coded as such).
        var fieldCoding: FieldCoding
    }

    enum Record {
        case frame(presentationTime: MediaTime, duration: MediaTime)
        case endOfRange
        case endOfStream
    }

    let descriptor: Int32
    let header: Header
    /// Frames read so far, for messages.
    private(set) var framesRead = 0

    static let magic = Array("SVTFRAME".utf8)

    init(descriptor: Int32) throws(FarmFailure) {
        self.descriptor = descriptor
        var magic = [UInt8](repeating: 0, count: 8)
        guard try Self.readFully(descriptor, into: &magic, count: 8), magic == Self.magic else {
            throw .failed("standard input is not a SwiftVT frame stream (it does not begin with SVTFRAME)")
        }
        var fields = [UInt8](repeating: 0, count: 13 * 4)
        guard try Self.readFully(descriptor, into: &fields, count: fields.count) else {
            throw .failed("the frame stream ended inside its header")
        }
        let value = { (index: Int) -> Int in
            (0..<4).reduce(0) { $0 | Int(fields[index * 4 + $1]) << (8 * $1) }
        }
        let version = value(0)
        guard version == 1 || version == 2 else { throw .failed("frame stream version \(version) is not 1 or 2") }
        guard value(5) == 0 else { throw .failed("frame stream format \(value(5)) is not 0 (I420)") }
        let (width, height) = (value(1), value(2))
        guard (2...16_384).contains(width), (2...16_384).contains(height) else {
            throw .failed("the frame stream's size \(width)x\(height) is outside 2x2...16384x16384")
        }
        let strides = [value(6), value(7), value(8)]
        let offsets = [value(9), value(10), value(11)]
        let frameSize = value(12)
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        let planeWidths = [width, chromaWidth, chromaWidth]
        let planeHeights = [height, chromaHeight, chromaHeight]
        for plane in 0..<3 {
            guard strides[plane] >= planeWidths[plane],
                offsets[plane] >= (plane == 0 ? 0 : offsets[plane - 1] + strides[plane - 1] * planeHeights[plane - 1]),
                offsets[plane] + strides[plane] * (planeHeights[plane] - 1) + planeWidths[plane] <= frameSize
            else {
                throw .failed(
                    "the frame stream's I420 layout (strides \(strides), offsets \(offsets), size \(frameSize)) does not hold a \(width)x\(height) picture"
                )
            }
        }
        let fieldCoding: FieldCoding = try version == 1 ? .progressive : Self.readFieldCoding(descriptor)
        let (rateNumerator, rateDenominator) = (value(3), value(4))
        header = Header(
            width: width, height: height,
            frameRate: rateNumerator > 0 && rateDenominator > 0 ? Double(rateNumerator) / Double(rateDenominator) : nil,
            strides: strides, offsets: offsets, frameSize: frameSize, fieldCoding: fieldCoding)
    }

    /// Version 2's field_order, the uint32 after frame_size. The job sets it from the caps as vtenc
    /// reads them (interlace-mode interleaved or mixed: interlaced, in the caps' field order), so
    /// that the farm codes an input as vtenc would.
    private static func readFieldCoding(_ descriptor: Int32) throws(FarmFailure) -> FieldCoding {
        var bytes = [UInt8](repeating: 0, count: 4)
        guard try readFully(descriptor, into: &bytes, count: 4) else {
            throw .failed("the frame stream ended inside its header")
        }
        let fieldOrder = bytes.reversed().reduce(0) { $0 << 8 | Int($1) }
        switch fieldOrder {
        case 0: return .progressive
        case 1: return .topFieldFirst
        case 2: return .bottomFieldFirst
        default:
            throw .failed(
                "the frame stream's field order \(fieldOrder) is not 0 (progressive), 1 (interlaced, top field first) or 2 (interlaced, bottom field first)"
            )
        }
    }

    /// The next record; after `.frame`, ``readPicture(into:)`` must read its picture.
    mutating func next() throws(FarmFailure) -> Record {
        var kind: [UInt8] = [0]
        guard try Self.readFully(descriptor, into: &kind, count: 1) else { return .endOfStream }
        switch kind[0] {
        case 1:
            var times = [UInt8](repeating: 0, count: 16)
            guard try Self.readFully(descriptor, into: &times, count: 16) else {
                throw .failed("the frame stream ended inside frame \(framesRead + 1)'s time stamps")
            }
            let field = { (index: Int) -> Int64 in
                Int64(bitPattern: (0..<8).reduce(UInt64(0)) { $0 | UInt64(times[index * 8 + $1]) << (8 * UInt64($1)) })
            }
            let (pts, duration) = (field(0), field(1))
            framesRead += 1
            return .frame(
                presentationTime: MediaTime(value: pts, timescale: 1_000_000_000),
                duration: duration >= 0 ? MediaTime(value: duration, timescale: 1_000_000_000) : .invalid)
        case 2:
            return .endOfRange
        default:
            throw .failed("the frame stream has a record of unknown kind \(kind[0]) after frame \(framesRead)")
        }
    }

    /// Reads the current frame's picture into `picture` (I420 of the header's size), plane by
    /// plane; rows are moved one by one only when the strides differ.
    func readPicture(into picture: PixelBuffer) throws(FarmFailure) {
        var position = 0
        for (index, plane) in picture.planes.enumerated() {
            try skip(header.offsets[index] - position)
            position = header.offsets[index]
            let stride = header.strides[index]
            if stride == plane.bytesPerRow && position + stride * plane.height <= header.frameSize {
                guard try Self.readFully(descriptor, into: plane.baseAddress, count: stride * plane.height) else {
                    throw truncated()
                }
                position += stride * plane.height
                continue
            }
            for row in 0..<plane.height {
                let rowBytes = min(plane.width, stride)
                guard try Self.readFully(descriptor, into: plane.baseAddress + row * plane.bytesPerRow, count: rowBytes)
                else {
                    throw truncated()
                }
                // The last row of the last plane may end the frame before its stride does.
                let padding = min(stride - rowBytes, header.frameSize - (position + rowBytes))
                try skip(padding)
                position += rowBytes + padding
            }
        }
        try skip(header.frameSize - position)
    }

    private func truncated() -> FarmFailure {
        .failed("the frame stream ended inside frame \(framesRead)'s picture")
    }

    private func skip(_ count: Int) throws(FarmFailure) {
        guard count > 0 else { return }
        var scratch = [UInt8](repeating: 0, count: count)
        guard try Self.readFully(descriptor, into: &scratch, count: count) else { throw truncated() }
    }

    /// Reads exactly `count` bytes; false when the stream ends first (each caller says where it
    /// ended: in the header, in a frame's time stamps or picture), a failure when reading fails.
    private static func readFully(
        _ descriptor: Int32, into destination: UnsafeMutableRawPointer, count: Int
    ) throws(FarmFailure) -> Bool {
        var done = 0
        while done < count {
            let got = read(descriptor, destination + done, count - done)
            if got < 0 {
                if errno == EINTR { continue }
                throw .failed("reading the frame stream failed: \(String(cString: strerror(errno)))")
            }
            if got == 0 { return false }
            done += got
        }
        return true
    }

    private static func readFully(
        _ descriptor: Int32, into bytes: inout [UInt8], count: Int
    ) throws(FarmFailure) -> Bool {
        try bytes.withUnsafeMutableBytes { buffer in
            Result { () throws(FarmFailure) -> Bool in
                guard let base = buffer.baseAddress else { return false }
                return try readFully(descriptor, into: base, count: count)
            }
        }.get()
    }
}
