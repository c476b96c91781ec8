/// Length-prefixed NAL units, the sample format of ISO/IEC 14496-15 for both AVC (`avc1`, 5.3)
/// and HEVC (`hvc1`/`hev1`, 8.3): each NAL unit is preceded by its size as a big-endian integer
/// of 1, 2 or 4 bytes (`lengthSizeMinusOne + 1` in the avcC or hvcC record). MP4, QuickTime and
/// GStreamer's `stream-format=avc`/`hvc1` carry it.
///
/// The framing does not look inside NAL units, so it is the same for both codecs; the codec
/// modules wrap it (`AVCC` in H264, `H265LengthPrefixed` in H265) to filter by their own NAL
/// unit types and to report errors in their own error type (`Failure`).
public enum LengthPrefixedNALUnits {
    /// The NAL unit length sizes ISO/IEC 14496-15 allows (lengthSizeMinusOne 0, 1 or 3).
    @inlinable
    public static func isValidNALUnitHeaderLength(_ length: Int) -> Bool {
        length == 1 || length == 2 || length == 4
    }

    /// The largest NAL unit a length field of `size` bytes can describe.
    @inlinable
    public static func maximumNALUnitLength(forHeaderLength size: Int) -> Int {
        size >= 4 ? Int(UInt32.max) : (1 << (8 * Swift.max(size, 0))) - 1
    }

    /// Calls `body` with the byte range of each NAL unit of a length-prefixed sample.
    ///
    /// Throws (a `Failure`, or whatever `body` throws) when a length runs past the end of the
    /// sample, or the sample ends inside a length: a damaged sample must not be mistaken for a
    /// shorter valid one.
    @inlinable
    public static func forEachNALUnit<Failure: NALBitstreamError>(
        in sample: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, reporting _: Failure.Type,
        _ body: (Range<Int>) throws -> Void
    ) throws {
        guard isValidNALUnitHeaderLength(nalUnitHeaderLength) else {
            throw Failure.invalidValue(field: "lengthSizeMinusOne", value: Int64(nalUnitHeaderLength - 1))
        }
        var offset = 0
        let count = sample.count
        while offset < count {
            guard count - offset >= nalUnitHeaderLength else {
                throw Failure.malformedFraming(
                    "sample ends inside a \(nalUnitHeaderLength)-byte NAL unit length at offset \(offset)")
            }
            var length = 0
            for index in 0..<nalUnitHeaderLength {
                length = (length << 8) | Int(sample[offset + index])
            }
            offset += nalUnitHeaderLength
            guard length <= count - offset else {
                throw Failure.malformedFraming(
                    "NAL unit length \(length) at offset \(offset - nalUnitHeaderLength) runs past the end of the \(count)-byte sample"
                )
            }
            if length > 0 { try body(offset..<(offset + length)) }
            offset += length
        }
    }

    /// The byte ranges of the NAL units of a length-prefixed sample.
    @inlinable
    public static func nalUnitRanges<Failure: NALBitstreamError>(
        in sample: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, reporting failure: Failure.Type
    ) throws -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        try forEachNALUnit(in: sample, nalUnitHeaderLength: nalUnitHeaderLength, reporting: failure) {
            ranges.append($0)
        }
        return ranges
    }

    /// Appends one NAL unit with a 4-byte big-endian length in front (the samples the sessions
    /// exchange).
    @inlinable
    public static func appendLengthPrefixed(nalUnit: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        let length = UInt32(truncatingIfNeeded: nalUnit.count)
        output += [
            UInt8(length >> 24), UInt8(truncatingIfNeeded: length >> 16), UInt8(truncatingIfNeeded: length >> 8),
            UInt8(truncatingIfNeeded: length)
        ]
        output += nalUnit
    }

    @inlinable
    static func writeLength(_ length: Int, size: Int, to destination: UnsafeMutableRawPointer) {
        var remaining = length
        for index in stride(from: size - 1, through: 0, by: -1) {
            destination.storeBytes(of: UInt8(truncatingIfNeeded: remaining), toByteOffset: index, as: UInt8.self)
            remaining >>= 8
        }
    }

    /// Converts a complete Annex B buffer into length-prefixed NAL units, appending to `output`.
    ///
    /// This copies every payload byte: a three-byte start code becomes a longer (or, for
    /// 1- and 2-byte lengths, shorter) prefix, so the NAL units move and cannot stay in place.
    /// When the input uses only four-byte start codes and the length size is 4, use
    /// `convertAnnexBInPlace`, which copies nothing.
    ///
    /// - Parameter keep: decides per NAL unit (header and escaped payload) whether it goes into
    ///   the output; the codec wrappers turn it into a question about their NAL unit type.
    /// - Returns: the number of NAL units written.
    @discardableResult
    @inlinable
    public static func appendLengthPrefixed<Failure: NALBitstreamError>(
        fromAnnexB input: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, to output: inout [UInt8],
        reporting _: Failure.Type, keep: (UnsafeRawBufferPointer) -> Bool = { _ in true }
    ) throws -> Int {
        guard isValidNALUnitHeaderLength(nalUnitHeaderLength) else {
            throw Failure.invalidValue(field: "lengthSizeMinusOne", value: Int64(nalUnitHeaderLength - 1))
        }
        guard let inputBase = input.baseAddress else { return 0 }
        let maximumLength = maximumNALUnitLength(forHeaderLength: nalUnitHeaderLength)
        var written = 0
        // Reserve for the worst case (every start code 3 bytes, lengths 4 bytes) once, so the
        // loop below never reallocates.
        output.reserveCapacity(output.count + input.count + input.count / 3 + 8)
        try AnnexB.forEachNALUnit(in: input) { unit in
            guard keep(UnsafeRawBufferPointer(rebasing: input[unit.payloadRange])) else { return }
            guard unit.payloadLength <= maximumLength else {
                throw Failure.malformedFraming(
                    "a \(unit.payloadLength)-byte NAL unit does not fit a \(nalUnitHeaderLength)-byte length")
            }
            let start = output.count
            // Copy: see the function's comment (the layout changes).
            output.append(contentsOf: repeatElement(0, count: nalUnitHeaderLength))
            output.withUnsafeMutableBytes { bytes in
                if let base = bytes.baseAddress {
                    writeLength(unit.payloadLength, size: nalUnitHeaderLength, to: base + start)
                }
            }
            output.append(
                contentsOf: UnsafeRawBufferPointer(
                    start: inputBase + unit.payloadOffset, count: unit.payloadLength))
            written += 1
        }
        return written
    }

    /// Rewrites an Annex B buffer whose start codes are all four bytes long into 4-byte
    /// length-prefixed NAL units, in place, copying nothing.
    ///
    /// Returns false and leaves the buffer unchanged when the conversion cannot be done in place
    /// (a three-byte start code, trailing zero bytes between NAL units, or leading garbage):
    /// the caller then uses `appendLengthPrefixed`.
    public static func convertAnnexBInPlace(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        let readOnly = UnsafeRawBufferPointer(buffer)
        guard let base = buffer.baseAddress else { return true }
        // One pass: each start code is overwritten once the scanner has found where its unit
        // ends (the scanner looks ahead, never back, so it never sees a rewritten start code).
        var expectedOffset = 0
        var previous: AnnexBNALUnit?
        var tiles = true
        AnnexB.forEachNALUnit(in: readOnly) { unit in
            guard tiles else { return }
            guard unit.startCodeLength == 4, unit.startCodeOffset == expectedOffset else {
                tiles = false
                return
            }
            if let done = previous { writeLength(done.payloadLength, size: 4, to: base + done.startCodeOffset) }
            previous = unit
            expectedOffset = unit.payloadOffset + unit.payloadLength
        }
        guard tiles, expectedOffset == buffer.count, let last = previous else {
            // Undo the units already rewritten, walking them by their new lengths.
            var offset = 0
            while let done = previous, offset < done.startCodeOffset {
                let length = Int(UInt32(bigEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
                base.storeBytes(of: UInt32(1).bigEndian, toByteOffset: offset, as: UInt32.self)
                offset += 4 + length
            }
            return buffer.isEmpty
        }
        writeLength(last.payloadLength, size: 4, to: base + last.startCodeOffset)
        return true
    }

    /// Rewrites 4-byte length prefixes into four-byte start codes in place (the reverse of
    /// `convertAnnexBInPlace`), copying nothing.
    public static func convertLengthPrefixedToAnnexBInPlace<Failure: NALBitstreamError>(
        _ buffer: UnsafeMutableRawBufferPointer, reporting failure: Failure.Type
    ) throws {
        let ranges = try nalUnitRanges(in: UnsafeRawBufferPointer(buffer), nalUnitHeaderLength: 4, reporting: failure)
        guard let base = buffer.baseAddress else { return }
        for range in ranges {
            // A 32-bit 1 stored big-endian is the four-byte start code 00 00 00 01.
            base.storeBytes(of: UInt32(1).bigEndian, toByteOffset: range.lowerBound - 4, as: UInt32.self)
        }
    }

    /// Converts length-prefixed NAL units into an Annex B byte stream with four-byte start codes,
    /// appending to `output`.
    ///
    /// Copies the payload: with 1- or 2-byte lengths the start codes are longer than the prefixes,
    /// so units move. For 4-byte lengths prefer `convertLengthPrefixedToAnnexBInPlace`.
    @discardableResult
    public static func appendAnnexB<Failure: NALBitstreamError>(
        fromLengthPrefixed input: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, to output: inout [UInt8],
        reporting failure: Failure.Type
    ) throws -> Int {
        guard let inputBase = input.baseAddress else { return 0 }
        var written = 0
        output.reserveCapacity(output.count + input.count + 4 * (input.count / 8 + 1))
        try forEachNALUnit(in: input, nalUnitHeaderLength: nalUnitHeaderLength, reporting: failure) { range in
            output.append(contentsOf: [0, 0, 0, 1] as [UInt8])
            // Copy: see the function's comment.
            output.append(contentsOf: UnsafeRawBufferPointer(start: inputBase + range.lowerBound, count: range.count))
            written += 1
        }
        return written
    }
}
