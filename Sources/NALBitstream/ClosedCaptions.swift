// Closed captions as H.264 and H.265 carry them: CTA-708 caption data (cc_data(), whose cc_type 0
// and 1 carry CEA-608 field 1 and 2 byte pairs, 2 and 3 the DTVCC packets of CEA-708) inside ATSC
// A/53 Part 4's user data (6.2.3 ATSC1_data, user_data_type_code 0x03), inside a
// user_data_registered_itu_t_t35 SEI message (H.264 D.1.6, H.265 D.2.6; payloadType 4) with the
// ITU-T T.35 United States country code and the ATSC provider code. Codec-neutral: the SEI
// payload bytes are the same in both codecs.

/// Caption data of one picture: CTA-708 cc_data_pkt triplets, in order.
public struct ClosedCaptionData: Hashable, Sendable {
    /// Each triplet: marker_bits (5 bits, 11111), cc_valid, cc_type (2 bits); cc_data_1; cc_data_2.
    public private(set) var triplets: [UInt8]

    /// The layouts GStreamer's GstVideoCaptionMeta carries (GstVideoCaptionType).
    public enum Layout: Sendable {
        /// cc_data() triplets as they are (GST_VIDEO_CAPTION_TYPE_CEA708_RAW).
        case cea708Triplets
        /// A SMPTE ST 334-2 caption distribution packet (GST_VIDEO_CAPTION_TYPE_CEA708_CDP).
        case cea708DistributionPacket
        /// CEA-608 field 1 byte pairs (GST_VIDEO_CAPTION_TYPE_CEA608_RAW).
        case cea608Pairs
        /// CEA-608 triplets of SMPTE ST 334-1 Annex A (GST_VIDEO_CAPTION_TYPE_CEA608_S334_1A): a
        /// field/line byte, then the pair.
        case cea608LineTriplets
    }

    /// The most triplets one A/53 cc_data() carries (cc_count is 5 bits).
    public static let maximumTripletsPerMessage = 31

    /// ITU-T T.35: itu_t_t35_country_code (United States), the ATSC provider code, then A/53's
    /// user_identifier "GA94" and user_data_type_code 3 (cc_data).
    static let atscHeader: [UInt8] = [0xB5, 0x00, 0x31, 0x47, 0x41, 0x39, 0x34, 0x03]

    public init(triplets: [UInt8]) {
        self.triplets = Array(triplets.prefix(triplets.count - triplets.count % 3))
    }

    /// The caption data in one of GStreamer's layouts; nil when the bytes are not that layout
    /// (a CDP without its identifier, a length that is no whole number of units).
    public init?(_ layout: Layout, bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        var triplets: [UInt8] = []
        switch layout {
        case .cea708Triplets:
            guard bytes.count % 3 == 0 else { return nil }
            triplets = bytes
        case .cea608Pairs:
            guard bytes.count % 2 == 0 else { return nil }
            for index in stride(from: 0, to: bytes.count, by: 2) {
                // cc_valid 1, cc_type 0 (NTSC field 1).
                triplets += [0xFC, bytes[index], bytes[index + 1]]
            }
        case .cea608LineTriplets:
            guard bytes.count % 3 == 0 else { return nil }
            for index in stride(from: 0, to: bytes.count, by: 3) {
                // ST 334-1 Annex A: bit 7 set for field 1 (cc_type 0), clear for field 2 (cc_type 1).
                let fieldType: UInt8 = bytes[index] & 0x80 != 0 ? 0 : 1
                triplets += [0xFC | fieldType, bytes[index + 1], bytes[index + 2]]
            }
        case .cea708DistributionPacket:
            guard let section = Self.distributionPacketTriplets(bytes) else { return nil }
            triplets = section
        }
        self.init(triplets: triplets)
    }

    /// ccdata_section() of a SMPTE ST 334-2 cdp(): cdp_identifier 0x9669, cdp_length,
    /// cdp_frame_rate, flags (time_code_present 0x80, ccdata_present 0x40), the sequence
    /// counter, an optional time code section (0x71, 4 more bytes), then 0x72 and cc_count.
    static func distributionPacketTriplets(_ bytes: [UInt8]) -> [UInt8]? {
        guard bytes.count >= 7, bytes[0] == 0x96, bytes[1] == 0x69 else { return nil }
        let flags = bytes[4]
        guard flags & 0x40 != 0 else { return [] }
        var position = 7
        if flags & 0x80 != 0 {
            guard bytes.count > position, bytes[position] == 0x71 else { return nil }
            position += 5
        }
        guard bytes.count > position + 1, bytes[position] == 0x72 else { return nil }
        let count = Int(bytes[position + 1] & 0x1F)
        position += 2
        guard bytes.count >= position + count * 3 else { return nil }
        return Array(bytes[position..<(position + count * 3)])
    }

    public var isEmpty: Bool { triplets.isEmpty }

    /// The triplets of `other` after these (several metas on one picture).
    public mutating func append(_ other: ClosedCaptionData) { triplets += other.triplets }

    /// The user_data_registered_itu_t_t35 payloads (SEI payloadType 4) carrying the data: one
    /// A/53 cc_data() per 31 triplets.
    public var userDataRegisteredPayloads: [[UInt8]] {
        var payloads: [[UInt8]] = []
        let perMessage = Self.maximumTripletsPerMessage * 3
        var start = 0
        while start < triplets.count {
            let end = min(start + perMessage, triplets.count)
            let count = UInt8((end - start) / 3)
            // process_em_data_flag 0, process_cc_data_flag 1, additional_data_flag 0, cc_count;
            // em_data 0xFF; the triplets; marker_bits 0xFF.
            payloads.append(Self.atscHeader + [0x40 | count, 0xFF] + triplets[start..<end] + [0xFF])
            start = end
        }
        return payloads
    }

    /// sei_rbsp() (H.264 7.3.2.3, H.265 7.3.2.4) of the user data messages, with the
    /// rbsp_trailing_bits: the RBSP of one SEI NAL unit (no header, no emulation prevention).
    public var seiRBSP: [UInt8] {
        var rbsp: [UInt8] = []
        for payload in userDataRegisteredPayloads {
            rbsp.append(4)
            var size = payload.count
            while size >= 255 {
                rbsp.append(0xFF)
                size -= 255
            }
            rbsp.append(UInt8(size))
            rbsp += payload
        }
        rbsp.append(0x80)
        return rbsp
    }

    /// The caption data of a user_data_registered_itu_t_t35 payload; nil when it is another
    /// registered user's data (not ATSC A/53 cc_data) or has process_cc_data_flag 0.
    public init?(userDataRegisteredPayload payload: some Collection<UInt8>) {
        let bytes = Array(payload)
        guard bytes.count >= Self.atscHeader.count + 2, Array(bytes[0..<Self.atscHeader.count]) == Self.atscHeader
        else { return nil }
        let flags = bytes[Self.atscHeader.count]
        guard flags & 0x40 != 0 else { return nil }
        let start = Self.atscHeader.count + 2 // after the flags and em_data
        let count = min(Int(flags & 0x1F) * 3, bytes.count - start)
        self.init(triplets: Array(bytes[start..<(start + count)]))
    }
}

extension ClosedCaptionData {
    /// The captions of one access unit: the A/53 cc_data of every user_data_registered_itu_t_t35
    /// message in its SEI NAL units (H.264 nal_unit_type 6, H.265 PREFIX_SEI_NUT 39), in order;
    /// nil when it has none. `sample` is length-prefixed (`nalUnitHeaderLength` bytes, 4 when 0).
    /// Damaged framing or SEI ends the scan with what was read: captions are never worth a
    /// decoding error.
    public init?(accessUnit sample: UnsafeRawBufferPointer, nalUnitHeaderLength: Int, hevc: Bool) {
        var found = ClosedCaptionData(triplets: [])
        try? LengthPrefixedNALUnits.forEachNALUnit(
            in: sample, nalUnitHeaderLength: nalUnitHeaderLength == 0 ? 4 : nalUnitHeaderLength,
            reporting: CaptionScanError.self
        ) { range in
            let headerLength = hevc ? 2 : 1
            guard range.count > headerLength else { return }
            let first = sample[range.lowerBound]
            let isSEI = hevc ? (first >> 1) & 0x3F == 39 : first & 0x1F == 6
            guard isSEI else { return }
            let rbsp = RBSP.extractRBSP(
                from: UnsafeRawBufferPointer(rebasing: sample[(range.lowerBound + headerLength)..<range.upperBound]))
            Self.forEachUserDataRegisteredPayload(inSEIRBSP: rbsp) { payload in
                if let captions = ClosedCaptionData(userDataRegisteredPayload: payload) { found.append(captions) }
            }
        }
        guard !found.isEmpty else { return nil }
        self = found
    }

    /// Calls `body` with the payload of each user_data_registered_itu_t_t35 message (payloadType
    /// 4) of sei_rbsp(): payloadType and payloadSize are runs of 0xFF bytes plus a last byte
    /// (H.264 7.3.2.3.1, H.265 7.3.5); the messages end at the rbsp_trailing_bits.
    static func forEachUserDataRegisteredPayload(inSEIRBSP rbsp: [UInt8], _ body: (ArraySlice<UInt8>) -> Void) {
        var position = 0
        func readCoded() -> Int? {
            var value = 0
            while position < rbsp.count {
                let byte = rbsp[position]
                position += 1
                value += Int(byte)
                if byte != 0xFF { return value }
            }
            return nil
        }
        // More messages while more than the trailing byte (0x80) is left.
        while rbsp.count - position > 1 || (rbsp.count - position == 1 && rbsp[position] != 0x80) {
            guard let type = readCoded(), let size = readCoded(), size <= rbsp.count - position else { return }
            if type == 4 { body(rbsp[position..<(position + size)]) }
            position += size
        }
    }
}

/// The framing errors of a caption scan, which ends the scan (the decoder reports damage).
private enum CaptionScanError: NALBitstreamError {
    case truncated(what: String)
    case invalidValue(field: String, value: Int64)
    case malformedFraming(String)
}
