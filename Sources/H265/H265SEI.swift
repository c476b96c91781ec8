/// pic_timing(), D.2.3 / D.3.3.
public struct H265PictureTiming: Hashable, Sendable {
    /// pic_struct, 0...12 (Table D.2); nil unless the VUI's frame_field_info_present_flag.
    public var picStruct: Int?
    /// source_scan_type, 0...2 (interlaced, progressive, unknown); nil like pic_struct.
    public var sourceScanType: Int?
    /// duplicate_flag; nil like pic_struct.
    public var duplicateFlag: Bool?
    /// au_cpb_removal_delay_minus1; nil unless CpbDpbDelaysPresentFlag.
    public var auCpbRemovalDelayMinus1: UInt32?
    /// pic_dpb_output_delay; nil unless CpbDpbDelaysPresentFlag.
    public var picDpbOutputDelay: UInt32?
    /// pic_dpb_output_du_delay; nil without a sub-picture HRD.
    public var picDpbOutputDuDelay: UInt32?
    /// num_decoding_units_minus1, 0...PicSizeInCtbsY - 1; nil unless the decoding unit delays are
    /// carried here (sub_pic_cpb_params_in_pic_timing_sei_flag).
    public var numDecodingUnitsMinus1: Int?
    /// du_common_cpb_removal_delay_increment_minus1; nil unless du_common_cpb_removal_delay_flag.
    public var duCommonCpbRemovalDelayIncrementMinus1: UInt32?
    /// num_nalus_in_du_minus1[i], num_decoding_units_minus1 + 1 entries.
    public var numNalusInDuMinus1: [Int] = []
    /// du_cpb_removal_delay_increment_minus1[i] (without a common increment), one fewer than
    /// the decoding units.
    public var duCpbRemovalDelayIncrementMinus1: [UInt32] = []

    public init() {}

    /// The picture is a single field (pic_struct 1, 2, 9...12, Table D.2).
    public var isField: Bool {
        guard let picStruct else { return false }
        return picStruct == 1 || picStruct == 2 || (9...12).contains(picStruct)
    }

    /// The picture is a top field (pic_struct 1, 9, 11).
    public var isTopField: Bool { picStruct == 1 || picStruct == 9 || picStruct == 11 }
    /// The picture is a bottom field (pic_struct 2, 10, 12).
    public var isBottomField: Bool { picStruct == 2 || picStruct == 10 || picStruct == 12 }
}

/// recovery_point(), D.2.8 / D.3.8.
public struct H265RecoveryPoint: Hashable, Sendable {
    /// recovery_poc_cnt, -MaxPicOrderCntLsb / 2 ... MaxPicOrderCntLsb / 2 - 1: output is correct
    /// from the picture this many POC units after the current one.
    public var recoveryPocCnt = 0
    public var exactMatchFlag = false
    public var brokenLinkFlag = false

    public init() {}
}

/// user_data_registered_itu_t_t35(), D.2.6 / D.3.6 (closed captions, HDR10+ and the like).
public struct H265UserDataRegistered: Hashable, Sendable {
    /// itu_t_t35_country_code (Rec. ITU-T T.35 annex A).
    public var countryCode: UInt8
    /// itu_t_t35_country_code_extension_byte, present when the country code is 0xFF.
    public var countryCodeExtension: UInt8?
    /// itu_t_t35_payload_byte.
    public var payload: [UInt8]

    public init(countryCode: UInt8, countryCodeExtension: UInt8?, payload: [UInt8]) {
        self.countryCode = countryCode
        self.countryCodeExtension = countryCodeExtension
        self.payload = payload
    }
}

/// user_data_unregistered(), D.2.7 / D.3.7 (x265 writes its settings in one).
public struct H265UserDataUnregistered: Hashable, Sendable {
    /// uuid_iso_iec_11578, 16 bytes.
    public var uuid: [UInt8]
    /// user_data_payload_byte.
    public var payload: [UInt8]

    public init(uuid: [UInt8], payload: [UInt8]) {
        self.uuid = uuid
        self.payload = payload
    }
}

/// decoded_picture_hash(), D.2.20 / D.3.20: a digest of each colour component of the decoded
/// picture, for conformance checking.
public enum H265DecodedPictureHash: Hashable, Sendable {
    /// hash_type 0: picture_md5[cIdx], 16 bytes per component.
    case md5([[UInt8]])
    /// hash_type 1: picture_crc[cIdx].
    case crc([UInt16])
    /// hash_type 2: picture_checksum[cIdx].
    case checksum([UInt32])

    /// Components hashed: one for monochrome (chroma_format_idc 0), else three (D.2.20).
    public var componentCount: Int {
        switch self {
        case .md5(let digests): return digests.count
        case .crc(let values): return values.count
        case .checksum(let values): return values.count
        }
    }
}

/// mastering_display_colour_volume(), D.2.28 / D.3.28 (SMPTE ST 2086).
public struct H265MasteringDisplayColourVolume: Hashable, Sendable {
    /// display_primaries_x[c] and display_primaries_y[c], in 0.00002 units of CIE 1931 x and y,
    /// 0...50000; c = 0, 1, 2 are normally green, blue, red.
    public var displayPrimariesX: [UInt16] = []
    public var displayPrimariesY: [UInt16] = []
    /// white_point_x / white_point_y, 0...50000 in the same units.
    public var whitePointX: UInt16 = 0
    public var whitePointY: UInt16 = 0
    /// max_display_mastering_luminance, in 0.0001 cd/m^2.
    public var maxDisplayMasteringLuminance: UInt32 = 0
    /// min_display_mastering_luminance, in 0.0001 cd/m^2.
    public var minDisplayMasteringLuminance: UInt32 = 0

    public init() {}
}

/// content_light_level_info(), D.2.35 / D.3.35 (CTA-861.3 MaxCLL and MaxFALL).
public struct H265ContentLightLevel: Hashable, Sendable {
    /// max_content_light_level, cd/m^2 (0: unknown).
    public var maxContentLightLevel: UInt16 = 0
    /// max_pic_average_light_level, cd/m^2 (0: unknown).
    public var maxPicAverageLightLevel: UInt16 = 0

    public init() {}
}

/// One sei_message() (7.3.5), decoded where SwiftVT has a use for it.
public enum H265SEIMessage: Hashable, Sendable {
    case pictureTiming(H265PictureTiming)
    case recoveryPoint(H265RecoveryPoint)
    case userDataRegistered(H265UserDataRegistered)
    case userDataUnregistered(H265UserDataUnregistered)
    case decodedPictureHash(H265DecodedPictureHash)
    case masteringDisplayColourVolume(H265MasteringDisplayColourVolume)
    case contentLightLevel(H265ContentLightLevel)
    /// Any other payloadType, or a message that could not be decoded (see `H265SEI.error`): the
    /// payload bytes (RBSP, without emulation prevention).
    case other(payloadType: Int, bytes: [UInt8])

    /// payloadType (D.2.1).
    public var payloadType: Int {
        switch self {
        case .pictureTiming: return 1
        case .userDataRegistered: return 4
        case .userDataUnregistered: return 5
        case .recoveryPoint: return 6
        case .decodedPictureHash: return 132
        case .masteringDisplayColourVolume: return 137
        case .contentLightLevel: return 144
        case .other(let type, _): return type
        }
    }
}

/// The messages of one SEI NAL unit, sei_rbsp() of 7.3.2.4 / 7.3.5, prefix (nal_unit_type 39)
/// or suffix (40).
///
/// Error policy, as for H.264's SEI: `parse` throws only when the input is not an SEI NAL unit
/// at all. Problems inside it are reported in `error` (the first one) with every message that
/// could be read: a message whose payload does not decode (truncated, out of range, no active
/// SPS) is kept as `.other` and parsing goes on with the next message, since payloadSize still
/// delimits it; broken framing (a payloadSize past the end) ends parsing.
public struct H265SEI: Equatable, Sendable {
    public var messages: [H265SEIMessage] = []
    /// The first problem met, nil when everything parsed.
    public var error: H265Error?
    /// A suffix SEI NAL unit (it follows the picture's slices, D.2.1).
    public var isSuffix = false

    public init(messages: [H265SEIMessage] = [], error: H265Error? = nil, isSuffix: Bool = false) {
        self.messages = messages
        self.error = error
        self.isSuffix = isSuffix
    }

    /// Parses an SEI NAL unit (header included, escaped).
    ///
    /// Picture timing and decoded picture hash messages are read with the SPS that is active for
    /// the picture they belong to (D.3.3, D.3.20: the VUI's frame_field_info_present_flag and HRD
    /// decide the timing syntax, chroma_format_idc the number of hashes). A prefix SEI comes
    /// before the slices that activate that SPS: `H265AccessUnitAssembler` therefore holds
    /// prefix SEIs until the picture's first slice names its SPS. Without one, such messages are
    /// returned as `.other` with a `.missingParameterSet` error.
    public static func parse(
        nalUnit: UnsafeRawBufferPointer, activeSequenceParameterSet sps: H265SequenceParameterSet?
    ) throws(H265Error) -> H265SEI {
        let header = try H265NALUnitHeader(parsing: nalUnit)
        guard header.nalUnitType == .prefixSEI || header.nalUnitType == .suffixSEI else {
            throw H265Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        // Copy: the messages are parsed from RBSP, and an SEI is small.
        let rbsp = RBSP.extractRBSP(from: UnsafeRawBufferPointer(rebasing: nalUnit[H265NALUnitHeader.byteCount...]))
        return rbsp.withUnsafeBytes { bytes in
            parse(rbsp: bytes, isSuffix: header.nalUnitType == .suffixSEI, activeSequenceParameterSet: sps)
        }
    }

    /// `parse(nalUnit:activeSequenceParameterSet:)` for an array.
    public static func parse(
        nalUnit: [UInt8], activeSequenceParameterSet sps: H265SequenceParameterSet?
    ) throws(H265Error) -> H265SEI {
        try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H265Error) -> H265SEI in try parse(nalUnit: bytes, activeSequenceParameterSet: sps) }
        }.get()
    }

    /// Parses sei_rbsp() from RBSP bytes (after the two-byte NAL unit header).
    public static func parse(
        rbsp: UnsafeRawBufferPointer, isSuffix: Bool, activeSequenceParameterSet sps: H265SequenceParameterSet?
    ) -> H265SEI {
        var sei = H265SEI(isSuffix: isSuffix)
        // The rbsp_stop_one_bit is the last 1 bit (7.2); messages are whole bytes, so there is
        // more data while the position is before the byte holding it.
        var lastNonZero = rbsp.count &- 1
        while lastNonZero >= 0 && rbsp[lastNonZero] == 0 { lastNonZero &-= 1 }
        let stopBitPosition = lastNonZero &* 8 &+ 7 &- (lastNonZero >= 0 ? rbsp[lastNonZero].trailingZeroBitCount : 0)
        var position = 0
        while position &* 8 < stopBitPosition {
            // 7.3.5: payloadType and payloadSize are sums of 0xFF bytes plus a last byte.
            guard let payloadType = readFFCoded(rbsp, &position) else {
                sei.error = sei.error ?? .truncated(what: "last_payload_type_byte")
                break
            }
            guard let payloadSize = readFFCoded(rbsp, &position) else {
                sei.error = sei.error ?? .truncated(what: "last_payload_size_byte")
                break
            }
            guard payloadSize <= rbsp.count &- position else {
                sei.error =
                    sei.error
                    ?? .truncated(what: "sei_payload (payloadType \(payloadType), payloadSize \(payloadSize))")
                break
            }
            let payload = UnsafeRawBufferPointer(rebasing: rbsp[position..<(position &+ payloadSize)])
            position &+= payloadSize
            switch decodePayload(type: payloadType, payload: payload, isSuffix: isSuffix, sps: sps) {
            case .success(let message):
                sei.messages.append(message)
            case .failure(let error):
                sei.error = sei.error ?? error
                sei.messages.append(.other(payloadType: payloadType, bytes: Array(payload)))
            }
        }
        return sei
    }

    /// Reads a 0xFF-run coded value; nil when the data ends first.
    static func readFFCoded(_ bytes: UnsafeRawBufferPointer, _ position: inout Int) -> Int? {
        var value = 0
        while position < bytes.count {
            let byte = bytes[position]
            position &+= 1
            value &+= Int(byte)
            if byte != 0xFF { return value }
        }
        return nil
    }

    /// sei_payload(payloadType, payloadSize), D.2.1: which message a payloadType is depends on
    /// whether the NAL unit is a prefix or a suffix SEI.
    static func decodePayload(
        type: Int, payload: UnsafeRawBufferPointer, isSuffix: Bool, sps: H265SequenceParameterSet?
    ) -> Result<H265SEIMessage, H265Error> {
        var r = H265BitReader(payload)
        do throws(H265Error) {
            switch (isSuffix, type) {
            case (false, 1):
                guard let sps else { throw H265Error.missingParameterSet(kind: "active SPS (for pic_timing)", id: -1) }
                return .success(.pictureTiming(try parsePictureTiming(&r, sps: sps)))
            case (_, 4):
                return .success(.userDataRegistered(try parseUserDataRegistered(payload)))
            case (_, 5):
                // D.2.7: a 16-byte UUID, then the user's bytes.
                guard payload.count >= 16 else { throw H265Error.truncated(what: "uuid_iso_iec_11578") }
                return .success(
                    .userDataUnregistered(
                        H265UserDataUnregistered(
                            uuid: Array(payload[0..<16]), payload: Array(payload[16...]))))
            case (false, 6):
                var point = H265RecoveryPoint()
                // D.3.8: -MaxPicOrderCntLsb / 2 ... MaxPicOrderCntLsb / 2 - 1; the widest range
                // (log2_max_pic_order_cnt_lsb 16) without an SPS.
                let half = (sps?.maxPicOrderCntLsb ?? (1 << 16)) / 2
                point.recoveryPocCnt = try r.readSE("recovery_poc_cnt", range: -half...(half &- 1))
                point.exactMatchFlag = try r.readFlag("exact_match_flag")
                point.brokenLinkFlag = try r.readFlag("broken_link_flag")
                return .success(.recoveryPoint(point))
            case (true, 132):
                guard let sps else {
                    throw H265Error.missingParameterSet(kind: "active SPS (for decoded_picture_hash)", id: -1)
                }
                guard let hash = try parseDecodedPictureHash(&r, chromaFormatIdc: sps.chromaFormatIdc) else {
                    return .success(.other(payloadType: type, bytes: Array(payload)))
                }
                return .success(.decodedPictureHash(hash))
            case (false, 137):
                return .success(.masteringDisplayColourVolume(try parseMasteringDisplayColourVolume(&r)))
            case (false, 144):
                var level = H265ContentLightLevel()
                level.maxContentLightLevel = UInt16(try r.readBits(16, "max_content_light_level"))
                level.maxPicAverageLightLevel = UInt16(try r.readBits(16, "max_pic_average_light_level"))
                return .success(.contentLightLevel(level))
            default:
                return .success(.other(payloadType: type, bytes: Array(payload)))
            }
        } catch {
            return .failure(error)
        }
    }

    /// pic_timing(), D.2.3: the syntax depends on the SPS's VUI (frame_field_info_present_flag)
    /// and its HRD (CpbDpbDelaysPresentFlag, the field lengths).
    static func parsePictureTiming(_ r: inout H265BitReader, sps: H265SequenceParameterSet) throws(H265Error)
        -> H265PictureTiming
    {
        var timing = H265PictureTiming()
        guard let vui = sps.vui else { return timing }
        if vui.frameFieldInfoPresentFlag {
            // D.3.3: pic_struct 0...12 (Table D.2), source_scan_type 0...2 (3 is reserved).
            timing.picStruct = try r.readBits(4, "pic_struct", max: 12)
            timing.sourceScanType = try r.readBits(2, "source_scan_type", max: 2)
            timing.duplicateFlag = try r.readFlag("duplicate_flag")
        }
        guard let hrd = vui.hrdParameters, hrd.cpbDpbDelaysPresentFlag else { return timing }
        timing.auCpbRemovalDelayMinus1 = try r.readBits(
            hrd.auCpbRemovalDelayLengthMinus1 &+ 1, "au_cpb_removal_delay_minus1")
        timing.picDpbOutputDelay = try r.readBits(hrd.dpbOutputDelayLengthMinus1 &+ 1, "pic_dpb_output_delay")
        if hrd.subPicHrdParamsPresentFlag {
            timing.picDpbOutputDuDelay = try r.readBits(
                hrd.dpbOutputDelayDuLengthMinus1 &+ 1, "pic_dpb_output_du_delay")
        }
        if hrd.subPicHrdParamsPresentFlag && hrd.subPicCpbParamsInPicTimingSeiFlag {
            // D.3.3: 0...PicSizeInCtbsY - 1 (a decoding unit holds at least one CTB).
            let units = try r.readUE("num_decoding_units_minus1", max: sps.picSizeInCtbsY &- 1)
            timing.numDecodingUnitsMinus1 = units
            let incrementLength = hrd.duCpbRemovalDelayIncrementLengthMinus1 &+ 1
            let common = try r.readFlag("du_common_cpb_removal_delay_flag")
            if common {
                timing.duCommonCpbRemovalDelayIncrementMinus1 = try r.readBits(
                    incrementLength, "du_common_cpb_removal_delay_increment_minus1")
            }
            for index in 0...units {
                timing.numNalusInDuMinus1.append(try r.readUE("num_nalus_in_du_minus1", max: sps.picSizeInCtbsY &- 1))
                if !common && index < units {
                    timing.duCpbRemovalDelayIncrementMinus1.append(
                        try r.readBits(incrementLength, "du_cpb_removal_delay_increment_minus1"))
                }
            }
        }
        return timing
    }

    /// user_data_registered_itu_t_t35(), D.2.6.
    static func parseUserDataRegistered(_ payload: UnsafeRawBufferPointer) throws(H265Error) -> H265UserDataRegistered {
        guard let countryCode = payload.first else { throw H265Error.truncated(what: "itu_t_t35_country_code") }
        if countryCode == 0xFF {
            guard payload.count >= 2 else { throw H265Error.truncated(what: "itu_t_t35_country_code_extension_byte") }
            return H265UserDataRegistered(
                countryCode: countryCode, countryCodeExtension: payload[1], payload: Array(payload[2...]))
        }
        return H265UserDataRegistered(
            countryCode: countryCode, countryCodeExtension: nil, payload: Array(payload[1...]))
    }

    /// decoded_picture_hash(), D.2.20; nil for a reserved hash_type (3...255), which decoders
    /// ignore (D.3.20).
    static func parseDecodedPictureHash(
        _ r: inout H265BitReader, chromaFormatIdc: Int
    ) throws(H265Error) -> H265DecodedPictureHash? {
        let hashType = try r.readBits(8, "hash_type")
        let components = chromaFormatIdc == 0 ? 1 : 3
        switch hashType {
        case 0:
            var digests: [[UInt8]] = []
            for _ in 0..<components {
                var digest: [UInt8] = []
                digest.reserveCapacity(16)
                for _ in 0..<16 { digest.append(UInt8(try r.readBits(8, "picture_md5"))) }
                digests.append(digest)
            }
            return .md5(digests)
        case 1:
            var values: [UInt16] = []
            for _ in 0..<components { values.append(UInt16(try r.readBits(16, "picture_crc"))) }
            return .crc(values)
        case 2:
            var values: [UInt32] = []
            for _ in 0..<components { values.append(try r.readBits(32, "picture_checksum")) }
            return .checksum(values)
        default:
            return nil
        }
    }

    /// mastering_display_colour_volume(), D.2.28.
    static func parseMasteringDisplayColourVolume(_ r: inout H265BitReader) throws(H265Error)
        -> H265MasteringDisplayColourVolume
    {
        var volume = H265MasteringDisplayColourVolume()
        // D.3.28: the chromaticity coordinates are in 0...50000 (x and y in 0...1 in steps of
        // 0.00002).
        for _ in 0..<3 {
            volume.displayPrimariesX.append(UInt16(try r.readBits(16, "display_primaries_x", max: 50000)))
            volume.displayPrimariesY.append(UInt16(try r.readBits(16, "display_primaries_y", max: 50000)))
        }
        volume.whitePointX = UInt16(try r.readBits(16, "white_point_x", max: 50000))
        volume.whitePointY = UInt16(try r.readBits(16, "white_point_y", max: 50000))
        volume.maxDisplayMasteringLuminance = try r.readBits(32, "max_display_mastering_luminance")
        volume.minDisplayMasteringLuminance = try r.readBits(32, "min_display_mastering_luminance")
        return volume
    }
}
