/// Length-prefixed H.265 NAL units, the sample format of ISO/IEC 14496-15 8.3 (`hvc1`/`hev1`
/// in MP4, GStreamer's `stream-format=hvc1/hev1`): each NAL unit preceded by its size in 1, 2 or
/// 4 big-endian bytes (the hvcC record's lengthSizeMinusOne + 1).
///
/// The framing is shared with H.264 (`LengthPrefixedNALUnits`); this wrapper reports
/// `H265Error`s and lets callers filter by H.265 NAL unit type.
public enum H265LengthPrefixed {
    /// Calls `body` with the byte range of each NAL unit of a length-prefixed sample; throws when
    /// a length runs past the end or the sample ends inside a length.
    @inlinable
    public static func forEachNALUnit(
        in sample: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, _ body: (Range<Int>) throws -> Void
    ) throws {
        try LengthPrefixedNALUnits.forEachNALUnit(
            in: sample, nalUnitHeaderLength: nalUnitHeaderLength, reporting: H265Error.self, body)
    }

    /// The byte ranges of the NAL units of a length-prefixed sample.
    public static func nalUnitRanges(in sample: UnsafeRawBufferPointer, nalUnitHeaderLength: Int) throws -> [Range<Int>]
    {
        try LengthPrefixedNALUnits.nalUnitRanges(
            in: sample, nalUnitHeaderLength: nalUnitHeaderLength, reporting: H265Error.self)
    }

    /// Converts a complete Annex B buffer into length-prefixed NAL units, appending to `output`
    /// (copying every payload byte: the units move, see `LengthPrefixedNALUnits`).
    ///
    /// - Parameter keep: decides per NAL unit type whether it goes into the output (e.g. drop the
    ///   parameter sets an `hvc1` hvcC record carries, or access unit delimiters). A NAL unit too
    ///   short for its two-byte header is kept: the framing does not judge contents.
    /// - Returns: the number of NAL units written.
    @discardableResult
    public static func appendLengthPrefixed(
        fromAnnexB input: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, to output: inout [UInt8],
        keep: (H265NALUnitType) -> Bool = { _ in true }
    ) throws -> Int {
        try LengthPrefixedNALUnits.appendLengthPrefixed(
            fromAnnexB: input, nalUnitHeaderLength: nalUnitHeaderLength, to: &output, reporting: H265Error.self,
            keep: { nalUnit in nalUnit.first.map { keep(H265NALUnitType(sixBits: $0 >> 1)) } ?? true })
    }

    /// Converts length-prefixed NAL units into an Annex B byte stream with four-byte start codes,
    /// appending to `output`.
    @discardableResult
    public static func appendAnnexB(
        fromLengthPrefixed input: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, to output: inout [UInt8]
    ) throws -> Int {
        try LengthPrefixedNALUnits.appendAnnexB(
            fromLengthPrefixed: input, nalUnitHeaderLength: nalUnitHeaderLength, to: &output, reporting: H265Error.self)
    }

    /// Rewrites an Annex B buffer with only four-byte start codes into 4-byte length prefixes in
    /// place; false (buffer unchanged) when that cannot be done in place.
    public static func convertAnnexBInPlace(_ buffer: UnsafeMutableRawBufferPointer) -> Bool {
        LengthPrefixedNALUnits.convertAnnexBInPlace(buffer)
    }

    /// Rewrites 4-byte length prefixes into four-byte start codes in place.
    public static func convertLengthPrefixedToAnnexBInPlace(_ buffer: UnsafeMutableRawBufferPointer) throws {
        try LengthPrefixedNALUnits.convertLengthPrefixedToAnnexBInPlace(buffer, reporting: H265Error.self)
    }

    // MARK: Array conveniences

    public static func lengthPrefixed(
        fromAnnexB input: [UInt8], nalUnitHeaderLength: Int = 4, keep: (H265NALUnitType) -> Bool = { _ in true }
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
