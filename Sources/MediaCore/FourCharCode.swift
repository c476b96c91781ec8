/// A four-character code: four bytes read big-endian into a `UInt32`, as QuickTime/ISO-BMFF box
/// types, codec types (`"avc1"`) and CoreVideo pixel formats (`"420v"`) are spelled.
///
/// Write them as string literals: `let codec: FourCharCode = "avc1"`.
public struct FourCharCode: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The code spelled by `string`, or nil unless it is exactly four ASCII characters.
    /// Use this for codes that come from input; literals use ``init(stringLiteral:)``. (It has an
    /// argument label because `FourCharCode("abc")` would be taken as a literal.)
    public init?(string: String) {
        var raw: UInt32 = 0
        var count = 0
        for byte in string.utf8 {
            guard byte < 0x80, count < 4 else { return nil }
            raw = raw << 8 | UInt32(byte)
            count += 1
        }
        guard count == 4 else { return nil }
        self.rawValue = raw
    }

    /// The four bytes, most significant first (the order they appear in a file).
    public var bytes: (UInt8, UInt8, UInt8, UInt8) {
        (
            UInt8(truncatingIfNeeded: rawValue >> 24), UInt8(truncatingIfNeeded: rawValue >> 16),
            UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)
        )
    }
}

extension FourCharCode: ExpressibleByStringLiteral {
    /// A code written in source, e.g. `"avc1"`.
    ///
    /// A literal that is not four ASCII characters is a typo in the program, not bad input, so it
    /// stops the program at the first use (there is no way to report an error from a literal, and
    /// a silently wrong code would be worse). Codes from input go through ``init(string:)``.
    public init(stringLiteral value: StaticString) {
        guard let code = FourCharCode(string: value.description) else {
            preconditionFailure("FourCharCode literal \"\(value)\" is not four ASCII characters")
        }
        self = code
    }
}

extension FourCharCode: CustomStringConvertible {
    /// The four characters when all are printable ASCII (`avc1`), otherwise hex (`0x00000001`).
    public var description: String {
        let (a, b, c, d) = bytes
        let characters = [a, b, c, d]
        if characters.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            return String(decoding: characters, as: UTF8.self)
        }
        let hex = String(rawValue, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - hex.count) + hex
    }
}

// MARK: - Well-known codes

extension FourCharCode {
    /// H.264 with parameter sets out of band, in the format description (`kCMVideoCodecType_H264`).
    public static let h264: FourCharCode = "avc1"
    /// H.264 whose parameter sets may also be repeated in band, in the stream (`avc3`).
    public static let h264InBandParameterSets: FourCharCode = "avc3"
    /// HEVC with parameter sets in the format description (`kCMVideoCodecType_HEVC`).
    public static let hevc: FourCharCode = "hvc1"
    /// HEVC whose parameter sets may also be repeated in band (`hev1`).
    public static let hevcInBandParameterSets: FourCharCode = "hev1"
    /// The ISO-BMFF `AVCDecoderConfigurationRecord` atom, a key of
    /// ``FormatDescriptionExtensions/sampleDescriptionAtoms``.
    public static let avcDecoderConfigurationAtom: FourCharCode = "avcC"
    /// The ISO-BMFF `HEVCDecoderConfigurationRecord` atom.
    public static let hevcDecoderConfigurationAtom: FourCharCode = "hvcC"

    /// HEVC in either sample entry (`hvc1`, `hev1`).
    public var isHEVC: Bool { self == .hevc || self == .hevcInBandParameterSets }
}
