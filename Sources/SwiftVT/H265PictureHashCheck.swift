import H265
import MediaCore

/// What an H.265 access unit's decoded picture hash SEI (D.2.20) says its picture must be, with
/// what is needed to find that picture around a cropped output picture.
public struct H265ExpectedPictureHash: Sendable, Equatable {
    public var hash: H265DecodedPictureHash
    /// PicOrderCntVal of the picture (8.3.1), to name it.
    public var pictureOrderCount: Int
    /// The decoded picture's size before the conformance window, in luma samples
    /// (pic_width/height_in_luma_samples): D.3.19 hashes the whole decoded picture.
    public var codedWidth: Int
    public var codedHeight: Int
    /// The conformance window's top-left corner in luma samples (7.4.3.2.1): where the output
    /// picture starts inside the decoded one.
    public var windowLeft: Int
    public var windowTop: Int
    /// The conformance window's size in luma samples: the output picture's.
    public var windowWidth: Int
    public var windowHeight: Int
    /// SubWidthC and SubHeightC (Table 6-1).
    public var subWidthC: Int
    public var subHeightC: Int
}

/// Reads the decoded picture hash of each access unit, in decoding order, for vtdec's
/// verify-picture-hash. Runs its own ``H265AccessUnitAssembler`` over the samples (4-byte
/// length-prefixed NAL units), which gives each picture its POC and its SEI read with the SPS
/// the picture activated (D.3.20: the SPS's chroma format decides how many hashes there are).
public struct H265PictureHashReader: Sendable {
    private var assembler = H265AccessUnitAssembler()

    public init() {}

    /// Parameter sets from outside the samples (an hvcC record), before the samples that use them.
    public mutating func learn(parameterSets: [[UInt8]]) {
        for set in parameterSets { set.withUnsafeBytes { _ = assembler.push(nalUnit: $0) } }
        _ = assembler.finish()
    }

    /// One access unit's sample (4-byte lengths): its picture's POC and hash, nil when the
    /// sample holds no picture; `expected` is nil when the picture has no decoded picture hash SEI.
    public mutating func read(sample bytes: UnsafeRawBufferPointer) -> (
        pictureOrderCount: Int, expected: H265ExpectedPictureHash?
    )? {
        _ = try? H265LengthPrefixed.forEachNALUnit(in: bytes, nalUnitHeaderLength: 4) { range in
            _ = assembler.push(nalUnit: UnsafeRawBufferPointer(rebasing: bytes[range]))
        }
        guard let picture = assembler.finish() else { return nil }
        guard let hash = picture.decodedPictureHash,
            let sps = assembler.parameterSets.sequenceParameterSet(id: picture.seqParameterSetID)
        else { return (picture.pictureOrderCount, nil) }
        let window = sps.conformanceWindow
        return (
            picture.pictureOrderCount,
            H265ExpectedPictureHash(
                hash: hash, pictureOrderCount: picture.pictureOrderCount, codedWidth: sps.picWidthInLumaSamples,
                codedHeight: sps.picHeightInLumaSamples, windowLeft: window.x, windowTop: window.y,
                windowWidth: window.width,
                windowHeight: window.height, subWidthC: sps.subWidthC, subHeightC: sps.subHeightC)
        )
    }
}

/// The decoded picture hash computations of D.3.19 (MD5, CRC, checksum) over a decoded picture.
public enum H265PictureHashCheck {
    /// The outcome for one picture.
    public enum Outcome: Sendable, Equatable {
        case matches
        /// The components (0 Y, 1 Cb, 2 Cr) whose hash differs.
        case differs(components: [Int])
        /// The picture cannot be checked: a format other than planar YUV (a picture converted
        /// to NV12 no longer holds the decoded picture around its conformance window), or a
        /// size that does not fit the hash's picture.
        case notCheckable(String)
    }

    /// Checks `picture`, an output picture that is a view of the decoded picture cropped to the
    /// conformance window (libavcodec's cropped frame, wrapped without a copy), against
    /// `expected`. D.3.19 hashes the whole decoded picture (pic_width_in_luma_samples by
    /// pic_height_in_luma_samples), so the rows are read from the window's corner moved back by
    /// the window offsets: that memory is the decoded picture's own, around the view.
    public static func check(_ picture: PixelBuffer, against expected: H265ExpectedPictureHash) -> Outcome {
        let planar: Set<PixelFormat> = [.i420, .i422, .i444, .i420TenBit, .i422TenBit, .i444TenBit, .gray8]
        guard planar.contains(picture.pixelFormat) else {
            return .notCheckable("\(picture.pixelFormat) pictures are converted copies, not the decoded picture")
        }
        let bytesPerSample = picture.pixelFormat.bitDepth > 8 ? 2 : 1
        let components = min(expected.hash.componentCount, picture.planes.count)
        var differing: [Int] = []
        for component in 0..<components {
            let plane = picture.planes[component]
            let divideX = component == 0 ? 1 : expected.subWidthC
            let divideY = component == 0 ? 1 : expected.subHeightC
            let width = expected.codedWidth / divideX
            let height = expected.codedHeight / divideY
            let left = expected.windowLeft / divideX
            let top = expected.windowTop / divideY
            // The output plane must be exactly the window of the SPS the hash was read with (the
            // rows around it are then the decoded picture's): anything else, say after damage,
            // is not the picture this hash describes, and reading around it could leave its memory.
            let windowWidth = (expected.windowWidth + divideX - 1) / divideX
            let windowHeight = (expected.windowHeight + divideY - 1) / divideY
            guard plane.width == windowWidth, plane.height == windowHeight, windowWidth + left <= width,
                windowHeight + top <= height
            else {
                return .notCheckable(
                    "the output picture is not the conformance window of the SPS the hash was read with")
            }
            let origin = plane.baseAddress - top * plane.bytesPerRow - left * bytesPerSample
            let rows = ComponentRows(
                origin: UnsafeRawPointer(origin), bytesPerRow: plane.bytesPerRow,
                width: width, height: height, bytesPerSample: bytesPerSample)
            let matches: Bool
            switch expected.hash {
            case .md5(let digests): matches = md5(rows) == digests[component]
            case .crc(let values): matches = crc(rows) == values[component]
            case .checksum(let values): matches = checksum(rows) == values[component]
            }
            if !matches { differing.append(component) }
        }
        return differing.isEmpty ? .matches : .differs(components: differing)
    }

    /// One component of a decoded picture: rows of samples of 1 byte (bit depth 8) or 2 bytes
    /// little-endian (more), which is D.3.19's pictureData laid out row by row.
    struct ComponentRows {
        var origin: UnsafeRawPointer
        var bytesPerRow: Int
        var width: Int
        var height: Int
        var bytesPerSample: Int

        func row(_ y: Int) -> UnsafeRawBufferPointer {
            UnsafeRawBufferPointer(start: origin + y * bytesPerRow, count: width * bytesPerSample)
        }

        func sample(_ row: UnsafeRawBufferPointer, _ x: Int) -> UInt32 {
            bytesPerSample == 2
                ? UInt32(row.loadUnaligned(fromByteOffset: 2 * x, as: UInt16.self).littleEndian) : UInt32(row[x])
        }
    }

    /// hash_type 0: the MD5 of pictureData (D.3.19, equation D-30 ff.).
    static func md5(_ rows: ComponentRows) -> [UInt8] {
        var hash = MD5()
        for y in 0..<rows.height { hash.update(rows.row(y)) }
        return hash.finalizeDigest()
    }

    /// hash_type 1: CRC-16 (polynomial 0x1021, initial 0xFFFF) over pictureData's bytes, most
    /// significant bit first, followed by 16 zero bits (D.3.19).
    static func crc(_ rows: ComponentRows) -> UInt16 {
        var crc: UInt32 = 0xFFFF
        func feed(_ byte: UInt32) {
            for bit in 0..<8 {
                let msb = (crc >> 15) & 1
                let value = (byte >> UInt32(7 - bit)) & 1
                crc = (((crc << 1) + value) & 0xFFFF) ^ (msb * 0x1021)
            }
        }
        for y in 0..<rows.height {
            let row = rows.row(y)
            for x in 0..<rows.width {
                let sample = rows.sample(row, x)
                feed(sample & 0xFF)
                if rows.bytesPerSample == 2 { feed(sample >> 8) }
            }
        }
        for _ in 0..<16 {
            let msb = (crc >> 15) & 1
            crc = ((crc << 1) & 0xFFFF) ^ (msb * 0x1021)
        }
        return UInt16(truncatingIfNeeded: crc)
    }

    /// hash_type 2: the sum of pictureData's bytes, each XORed with a mask made of the sample's
    /// position, modulo 2^32 (D.3.19).
    static func checksum(_ rows: ComponentRows) -> UInt32 {
        var sum: UInt32 = 0
        for y in 0..<rows.height {
            let row = rows.row(y)
            for x in 0..<rows.width {
                let mask = UInt32((x & 0xFF) ^ (y & 0xFF) ^ (x >> 8) ^ (y >> 8))
                let sample = rows.sample(row, x)
                sum &+= (sample & 0xFF) ^ mask
                if rows.bytesPerSample == 2 { sum &+= (sample >> 8) ^ mask }
            }
        }
        return sum
    }
}
