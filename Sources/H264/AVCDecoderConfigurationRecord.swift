/// The avcC atom: AVCDecoderConfigurationRecord, ISO/IEC 14496-15 5.3.3.1.
///
/// It carries the parameter sets out of band (MP4 sample descriptions, GStreamer's `codec_data`)
/// and the size of the NAL unit length prefixes used by the samples.
public struct AVCDecoderConfigurationRecord: Hashable, Sendable {
    public var configurationVersion: UInt8 = 1
    /// AVCProfileIndication: profile_idc of the SPS.
    public var profileIndication: UInt8
    /// profile_compatibility: the byte of the SPS holding constraint_set0..5_flag.
    public var profileCompatibility: UInt8
    /// AVCLevelIndication: level_idc of the SPS.
    public var levelIndication: UInt8
    /// lengthSizeMinusOne + 1: 1, 2 or 4.
    public var nalUnitHeaderLength: Int
    /// SPS NAL units (header byte included, escaped, no start code or length).
    public var sequenceParameterSets: [[UInt8]]
    /// PPS NAL units.
    public var pictureParameterSets: [[UInt8]]
    /// The fields added for the High profiles (profile_idc 100, 110, 122, 144); nil when absent.
    /// Many muxers omitted them for years, so a record without them is accepted.
    public var highProfileExtension: HighProfileExtension?

    public struct HighProfileExtension: Hashable, Sendable {
        public var chromaFormat: UInt8
        public var bitDepthLumaMinus8: UInt8
        public var bitDepthChromaMinus8: UInt8
        /// SPS extension NAL units (type 13).
        public var sequenceParameterSetExtensions: [[UInt8]]

        public init(
            chromaFormat: UInt8, bitDepthLumaMinus8: UInt8, bitDepthChromaMinus8: UInt8,
            sequenceParameterSetExtensions: [[UInt8]] = []
        ) {
            self.chromaFormat = chromaFormat
            self.bitDepthLumaMinus8 = bitDepthLumaMinus8
            self.bitDepthChromaMinus8 = bitDepthChromaMinus8
            self.sequenceParameterSetExtensions = sequenceParameterSetExtensions
        }
    }

    /// The profiles for which 14496-15 defines the high-profile extension bytes.
    static let profilesWithExtension: Set<UInt8> = [100, 110, 122, 144]

    public init(
        profileIndication: UInt8, profileCompatibility: UInt8, levelIndication: UInt8,
        nalUnitHeaderLength: Int, sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]],
        highProfileExtension: HighProfileExtension? = nil
    ) {
        self.profileIndication = profileIndication
        self.profileCompatibility = profileCompatibility
        self.levelIndication = levelIndication
        self.nalUnitHeaderLength = nalUnitHeaderLength
        self.sequenceParameterSets = sequenceParameterSets
        self.pictureParameterSets = pictureParameterSets
        self.highProfileExtension = highProfileExtension
    }

    /// Builds the record for a set of parameter sets, taking profile, compatibility and level from
    /// the first SPS and, for High profiles, chroma format and bit depths from its parse.
    public init(
        sequenceParameterSets: [[UInt8]], pictureParameterSets: [[UInt8]],
        sequenceParameterSetExtensions: [[UInt8]] = [], nalUnitHeaderLength: Int = 4
    ) throws(H264Error) {
        guard AVCC.isValidNALUnitHeaderLength(nalUnitHeaderLength) else {
            throw H264Error.invalidValue(field: "lengthSizeMinusOne", value: Int64(nalUnitHeaderLength - 1))
        }
        guard let firstSPS = sequenceParameterSets.first else {
            throw H264Error.malformedFraming("an avcC record needs at least one SPS")
        }
        guard firstSPS.count >= 4 else { throw H264Error.truncated(what: "sequence parameter set") }
        let sps = try SequenceParameterSet.parse(nalUnit: firstSPS)
        self.init(
            profileIndication: firstSPS[1], profileCompatibility: firstSPS[2], levelIndication: firstSPS[3],
            nalUnitHeaderLength: nalUnitHeaderLength, sequenceParameterSets: sequenceParameterSets,
            pictureParameterSets: pictureParameterSets)
        if Self.profilesWithExtension.contains(firstSPS[1]) {
            highProfileExtension = HighProfileExtension(
                chromaFormat: UInt8(truncatingIfNeeded: sps.chromaFormatIdc),
                bitDepthLumaMinus8: UInt8(truncatingIfNeeded: sps.bitDepthLumaMinus8),
                bitDepthChromaMinus8: UInt8(truncatingIfNeeded: sps.bitDepthChromaMinus8),
                sequenceParameterSetExtensions: sequenceParameterSetExtensions)
        }
    }

    /// Parses a record, e.g. GStreamer's `codec_data` or an MP4 `avcC` box payload.
    public init(parsing bytes: UnsafeRawBufferPointer) throws(H264Error) {
        var reader = ByteReader(bytes)
        let version = try reader.byte("configurationVersion")
        guard version == 1 else {
            throw H264Error.invalidValue(field: "configurationVersion", value: Int64(version))
        }
        configurationVersion = version
        profileIndication = try reader.byte("AVCProfileIndication")
        profileCompatibility = try reader.byte("profile_compatibility")
        levelIndication = try reader.byte("AVCLevelIndication")
        let lengthSizeMinusOne = try reader.byte("lengthSizeMinusOne") & 0x3
        guard lengthSizeMinusOne != 2 else {
            throw H264Error.invalidValue(field: "lengthSizeMinusOne", value: 2)
        }
        nalUnitHeaderLength = Int(lengthSizeMinusOne) + 1
        let spsCount = Int(try reader.byte("numOfSequenceParameterSets") & 0x1F)
        sequenceParameterSets = []
        for _ in 0..<spsCount { sequenceParameterSets.append(try reader.parameterSet("sequenceParameterSetNALUnit")) }
        let ppsCount = Int(try reader.byte("numOfPictureParameterSets"))
        pictureParameterSets = []
        for _ in 0..<ppsCount { pictureParameterSets.append(try reader.parameterSet("pictureParameterSetNALUnit")) }
        highProfileExtension = nil
        if Self.profilesWithExtension.contains(profileIndication) && reader.remaining >= 4 {
            let chromaFormat = try reader.byte("chroma_format") & 0x3
            let bitDepthLuma = try reader.byte("bit_depth_luma_minus8") & 0x7
            let bitDepthChroma = try reader.byte("bit_depth_chroma_minus8") & 0x7
            let extensionCount = Int(try reader.byte("numOfSequenceParameterSetExt"))
            var extensions: [[UInt8]] = []
            for _ in 0..<extensionCount { extensions.append(try reader.parameterSet("sequenceParameterSetExtNALUnit")) }
            highProfileExtension = HighProfileExtension(
                chromaFormat: chromaFormat, bitDepthLumaMinus8: bitDepthLuma,
                bitDepthChromaMinus8: bitDepthChroma, sequenceParameterSetExtensions: extensions)
        }
        for sps in sequenceParameterSets where sps.first.map({ NALUnitType(rawValue: $0) }) != .sequenceParameterSet {
            throw H264Error.malformedFraming(
                "avcC lists a NAL unit of type \(sps.first.map { $0 & 0x1F } ?? 0) as an SPS")
        }
        for pps in pictureParameterSets where pps.first.map({ NALUnitType(rawValue: $0) }) != .pictureParameterSet {
            throw H264Error.malformedFraming(
                "avcC lists a NAL unit of type \(pps.first.map { $0 & 0x1F } ?? 0) as a PPS")
        }
    }

    public init(parsing bytes: [UInt8]) throws(H264Error) {
        self = try bytes.withUnsafeBytes { raw in
            Result { () throws(H264Error) -> AVCDecoderConfigurationRecord in
                try AVCDecoderConfigurationRecord(parsing: raw)
            }
        }.get()
    }

    /// The serialized record.
    public func serialized() throws(H264Error) -> [UInt8] {
        guard AVCC.isValidNALUnitHeaderLength(nalUnitHeaderLength) else {
            throw H264Error.invalidValue(field: "lengthSizeMinusOne", value: Int64(nalUnitHeaderLength - 1))
        }
        guard sequenceParameterSets.count <= 31 else {
            throw H264Error.invalidValue(field: "numOfSequenceParameterSets", value: Int64(sequenceParameterSets.count))
        }
        guard pictureParameterSets.count <= 255 else {
            throw H264Error.invalidValue(field: "numOfPictureParameterSets", value: Int64(pictureParameterSets.count))
        }
        var bytes: [UInt8] = [
            configurationVersion, profileIndication, profileCompatibility, levelIndication,
            0xFC | UInt8(nalUnitHeaderLength - 1), 0xE0 | UInt8(sequenceParameterSets.count)
        ]
        try Self.appendParameterSets(sequenceParameterSets, to: &bytes)
        bytes.append(UInt8(pictureParameterSets.count))
        try Self.appendParameterSets(pictureParameterSets, to: &bytes)
        if let ext = highProfileExtension {
            guard ext.sequenceParameterSetExtensions.count <= 255 else {
                throw H264Error.invalidValue(
                    field: "numOfSequenceParameterSetExt", value: Int64(ext.sequenceParameterSetExtensions.count))
            }
            bytes.append(0xFC | (ext.chromaFormat & 0x3))
            bytes.append(0xF8 | (ext.bitDepthLumaMinus8 & 0x7))
            bytes.append(0xF8 | (ext.bitDepthChromaMinus8 & 0x7))
            bytes.append(UInt8(ext.sequenceParameterSetExtensions.count))
            try Self.appendParameterSets(ext.sequenceParameterSetExtensions, to: &bytes)
        }
        return bytes
    }

    private static func appendParameterSets(_ sets: [[UInt8]], to bytes: inout [UInt8]) throws(H264Error) {
        for set in sets {
            guard set.count <= Int(UInt16.max) else {
                throw H264Error.invalidValue(field: "parameterSetLength", value: Int64(set.count))
            }
            bytes.append(UInt8(set.count >> 8))
            bytes.append(UInt8(set.count & 0xFF))
            bytes.append(contentsOf: set)
        }
    }
}

/// A bounds-checked big-endian byte reader for container structures (not the RBSP bit reader).
struct ByteReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func byte(_ what: String) throws(H264Error) -> UInt8 {
        guard offset < bytes.count else { throw H264Error.truncated(what: what) }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// A 16-bit length followed by that many bytes (copied: parameter sets are a few bytes and
    /// must outlive the record's buffer).
    mutating func parameterSet(_ what: String) throws(H264Error) -> [UInt8] {
        let length = Int(try byte(what)) << 8 | Int(try byte(what))
        guard length > 0 else { throw H264Error.malformedFraming("empty \(what) in the avcC record") }
        guard length <= remaining else { throw H264Error.truncated(what: what) }
        defer { offset += length }
        return Array(bytes[offset..<(offset + length)])
    }
}
