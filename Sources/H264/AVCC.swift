/// Length-prefixed NAL units, the "AVCC" sample format of ISO/IEC 14496-15 (MP4, QuickTime,
/// GStreamer's `stream-format=avc`): each NAL unit is preceded by its size as a big-endian
/// integer of 1, 2 or 4 bytes (`lengthSizeMinusOne + 1` in the avcC record).
///
/// The framing itself is shared with H.265 (`LengthPrefixedNALUnits` in NALBitstream); this
/// wrapper reports `H264Error`s and lets callers filter by H.264 NAL unit type.
public enum AVCC {
    /// The NAL unit length sizes ISO/IEC 14496-15 allows (lengthSizeMinusOne 0, 1 or 3).
    public static func isValidNALUnitHeaderLength(_ length: Int) -> Bool {
        LengthPrefixedNALUnits.isValidNALUnitHeaderLength(length)
    }

    /// Calls `body` with the byte range of each NAL unit of a length-prefixed sample.
    ///
    /// Throws when a length runs past the end of the sample, or the sample ends inside a length:
    /// a damaged sample must not be mistaken for a shorter valid one.
    @inlinable
    public static func forEachNALUnit(
        in sample: UnsafeRawBufferPointer, nalUnitHeaderLength: Int,
        _ body: (Range<Int>) throws -> Void
    ) throws {
        try LengthPrefixedNALUnits.forEachNALUnit(
            in: sample, nalUnitHeaderLength: nalUnitHeaderLength, reporting: H264Error.self, body)
    }

    /// The byte ranges of the NAL units of a length-prefixed sample.
    public static func nalUnitRanges(
        in sample: UnsafeRawBufferPointer, nalUnitHeaderLength: Int
    ) throws -> [Range<Int>] {
        try LengthPrefixedNALUnits.nalUnitRanges(
            in: sample, nalUnitHeaderLength: nalUnitHeaderLength, reporting: H264Error.self)
    }

    /// Appends one NAL unit with a 4-byte big-endian length in front (the AVCC samples the
    /// sessions exchange).
    @inlinable
    public static func appendLengthPrefixed(nalUnit: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        LengthPrefixedNALUnits.appendLengthPrefixed(nalUnit: nalUnit, to: &output)
    }

    /// The largest NAL unit a length field of `size` bytes can describe.
    public static func maximumNALUnitLength(forHeaderLength size: Int) -> Int {
        LengthPrefixedNALUnits.maximumNALUnitLength(forHeaderLength: size)
    }

    /// Converts a complete Annex B buffer into length-prefixed NAL units, appending to `output`.
    ///
    /// This copies every payload byte: a three-byte start code becomes a longer (or, for
    /// 1- and 2-byte lengths, shorter) prefix, so the NAL units move and cannot stay in place.
    /// When the input uses only four-byte start codes and the length size is 4, use
    /// `convertAnnexBInPlace`, which copies nothing.
    ///
    /// - Parameter keep: decides per NAL unit type whether it goes into the output (e.g. drop
    ///   SPS/PPS that are carried in the avcC record instead, or access unit delimiters).
    /// - Returns: the number of NAL units written.
    @discardableResult
    public static func appendLengthPrefixed(
        fromAnnexB input: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, to output: inout [UInt8],
        keep: (NALUnitType) -> Bool = { _ in true }
    ) throws -> Int {
        try LengthPrefixedNALUnits.appendLengthPrefixed(
            fromAnnexB: input, nalUnitHeaderLength: nalUnitHeaderLength, to: &output, reporting: H264Error.self,
            keep: { nalUnit in nalUnit.first.map { keep(NALUnitType(rawValue: $0)) } ?? false })
    }

    /// Rewrites an Annex B buffer whose start codes are all four bytes long into 4-byte
    /// length-prefixed NAL units, in place, copying nothing.
    ///
    /// Returns false and leaves the buffer unchanged when the conversion cannot be done in place
    /// (a three-byte start code, trailing zero bytes between NAL units, or leading garbage):
    /// the caller then uses `appendLengthPrefixed`.
    public static func convertAnnexBInPlace(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        LengthPrefixedNALUnits.convertAnnexBInPlace(buffer)
    }

    /// Rewrites 4-byte length prefixes into four-byte start codes in place (the reverse of
    /// `convertAnnexBInPlace`), copying nothing.
    public static func convertLengthPrefixedToAnnexBInPlace(_ buffer: UnsafeMutableRawBufferPointer) throws {
        try LengthPrefixedNALUnits.convertLengthPrefixedToAnnexBInPlace(buffer, reporting: H264Error.self)
    }

    /// Converts length-prefixed NAL units into an Annex B byte stream with four-byte start codes,
    /// appending to `output`.
    ///
    /// Copies the payload: with 1- or 2-byte lengths the start codes are longer than the prefixes,
    /// so units move. For 4-byte lengths prefer `convertLengthPrefixedToAnnexBInPlace`.
    @discardableResult
    public static func appendAnnexB(
        fromLengthPrefixed input: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, to output: inout [UInt8]
    ) throws -> Int {
        try LengthPrefixedNALUnits.appendAnnexB(
            fromLengthPrefixed: input, nalUnitHeaderLength: nalUnitHeaderLength, to: &output, reporting: H264Error.self)
    }

    // MARK: Array conveniences

    public static func lengthPrefixed(
        fromAnnexB input: [UInt8], nalUnitHeaderLength: Int = 4, keep: (NALUnitType) -> Bool = { _ in true }
    ) throws -> [UInt8] {
        var output: [UInt8] = []
        try input.withUnsafeBytes {
            _ = try appendLengthPrefixed(
                fromAnnexB: $0, nalUnitHeaderLength: nalUnitHeaderLength, to: &output, keep: keep)
        }
        return output
    }

    public static func annexB(fromLengthPrefixed input: [UInt8], nalUnitHeaderLength: Int = 4) throws -> [UInt8] {
        var output: [UInt8] = []
        try input.withUnsafeBytes {
            _ = try appendAnnexB(fromLengthPrefixed: $0, nalUnitHeaderLength: nalUnitHeaderLength, to: &output)
        }
        return output
    }
}
