/// buffering_period(), D.1.2 / D.2.2.
public struct BufferingPeriod: Hashable, Sendable {
    public struct InitialCPBRemovalDelay: Hashable, Sendable {
        /// initial_cpb_removal_delay[SchedSelIdx], in 90 kHz units.
        public var initialCpbRemovalDelay: UInt32
        /// initial_cpb_removal_delay_offset[SchedSelIdx].
        public var initialCpbRemovalDelayOffset: UInt32
    }

    /// seq_parameter_set_id, 0...31: the SPS that becomes active with the next picture.
    public var seqParameterSetID = 0
    /// One entry per SchedSelIdx when the SPS has NAL HRD parameters (NalHrdBpPresentFlag).
    public var nalInitialCpbRemovalDelays: [InitialCPBRemovalDelay] = []
    /// One entry per SchedSelIdx when the SPS has VCL HRD parameters (VclHrdBpPresentFlag).
    public var vclInitialCpbRemovalDelays: [InitialCPBRemovalDelay] = []
}

/// pic_timing(), D.1.3 / D.2.3.
public struct PictureTiming: Hashable, Sendable {
    /// clock_timestamp fields of one clock timestamp (D.2.3).
    public struct ClockTimestamp: Hashable, Sendable {
        /// ct_type, 0...2 (progressive, interlaced, unknown).
        public var ctType = 0
        public var nuitFieldBasedFlag = false
        /// counting_type, 0...6 (Table D-3).
        public var countingType = 0
        public var fullTimestampFlag = false
        public var discontinuityFlag = false
        public var cntDroppedFlag = false
        /// n_frames.
        public var nFrames = 0
        /// seconds_value, 0...59; nil when not sent.
        public var secondsValue: Int?
        /// minutes_value, 0...59; nil when not sent.
        public var minutesValue: Int?
        /// hours_value, 0...23; nil when not sent.
        public var hoursValue: Int?
        /// time_offset (i(v) of time_offset_length bits); 0 when time_offset_length is 0.
        public var timeOffset = 0
        public init() {}
    }

    /// cpb_removal_delay; nil unless CpbDpbDelaysPresentFlag.
    public var cpbRemovalDelay: UInt32?
    /// dpb_output_delay; nil unless CpbDpbDelaysPresentFlag.
    public var dpbOutputDelay: UInt32?
    /// pic_struct, 0...8 (Table D-1); nil unless pic_struct_present_flag.
    public var picStruct: Int?
    /// NumClockTS entries (Table D-1), nil where clock_timestamp_flag[i] is 0.
    public var clockTimestamps: [ClockTimestamp?] = []

    /// NumClockTS for a pic_struct (Table D-1); 0 for reserved values.
    public static func numClockTS(picStruct: Int) -> Int {
        switch picStruct {
        case 0, 1, 2: return 1
        case 3, 4, 7: return 2
        case 5, 6, 8: return 3
        default: return 0
        }
    }
}

/// recovery_point(), D.1.8 / D.2.8.
public struct RecoveryPoint: Hashable, Sendable {
    /// recovery_frame_cnt, 0...MaxFrameNum - 1.
    public var recoveryFrameCnt = 0
    public var exactMatchFlag = false
    public var brokenLinkFlag = false
    /// changing_slice_group_idc, 0...2.
    public var changingSliceGroupIdc = 0
}

/// user_data_unregistered(), D.1.7.
public struct UserDataUnregistered: Hashable, Sendable {
    /// uuid_iso_iec_11578, 16 bytes.
    public var uuid: [UInt8]
    /// user_data_payload_byte.
    public var payload: [UInt8]
}

/// One sei_message() (7.3.2.3.1), decoded where SwiftVT has a use for it.
public enum SEIMessage: Hashable, Sendable {
    case bufferingPeriod(BufferingPeriod)
    case pictureTiming(PictureTiming)
    case recoveryPoint(RecoveryPoint)
    case userDataUnregistered(UserDataUnregistered)
    /// Any other payloadType, or a message that could not be decoded (see `SEI.error`): the
    /// payload bytes (RBSP, without emulation prevention).
    case other(payloadType: Int, bytes: [UInt8])

    /// payloadType (Annex D).
    public var payloadType: Int {
        switch self {
        case .bufferingPeriod: return 0
        case .pictureTiming: return 1
        case .userDataUnregistered: return 5
        case .recoveryPoint: return 6
        case .other(let type, _): return type
        }
    }
}

/// The messages of one SEI NAL unit, sei_rbsp() of 7.3.2.3.
///
/// Error policy: `parse` throws only when the input is not an SEI NAL unit at all. Problems
/// inside it are reported in `error` (the first one) with every message that could be read:
/// - a message whose payload does not decode (truncated, out-of-range field, SPS unknown) is
///   kept as `.other(payloadType:bytes:)` and parsing continues with the next message, since
///   payloadSize still delimits it;
/// - broken framing (a payloadSize running past the end of the NAL unit) ends parsing: the
///   messages before it are returned.
public struct SEI: Equatable, Sendable {
    public var messages: [SEIMessage] = []
    /// The first problem met, nil when everything parsed.
    public var error: H264Error?

    public init(messages: [SEIMessage] = [], error: H264Error? = nil) {
        self.messages = messages
        self.error = error
    }

    /// Parses an SEI NAL unit (nal_unit_type 6, header byte included, escaped).
    ///
    /// Buffering period messages find their SPS through their own seq_parameter_set_id. Picture
    /// timing depends on the active SPS (D.2.3), which the message does not name: it is the SPS
    /// of a buffering period earlier in the same NAL unit if any, else
    /// `sequenceParameterSets(activeSequenceParameterSetID)`. Without one, the picture timing
    /// message is returned as `.other` with a `.missingParameterSet` error.
    public static func parse(
        nalUnit: UnsafeRawBufferPointer, activeSequenceParameterSetID: Int? = nil,
        sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> SEI {
        guard let first = nalUnit.first else { throw H264Error.truncated(what: "nal_unit_header") }
        let header = NALUnitHeader(byte: first)
        guard header.nalUnitType == .sei else {
            throw H264Error.invalidValue(field: "nal_unit_type", value: Int64(header.nalUnitType.rawValue))
        }
        let rbsp = RBSP.extractRBSP(from: UnsafeRawBufferPointer(rebasing: nalUnit[1...]))
        return rbsp.withUnsafeBytes { bytes in
            parse(
                rbsp: bytes, activeSequenceParameterSetID: activeSequenceParameterSetID,
                sequenceParameterSets: sequenceParameterSets)
        }
    }

    /// `parse(nalUnit:activeSequenceParameterSetID:sequenceParameterSets:)` for an array.
    public static func parse(
        nalUnit: [UInt8], activeSequenceParameterSetID: Int? = nil,
        sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> SEI {
        try nalUnit.withUnsafeBytes { bytes in
            Result { () throws(H264Error) -> SEI in
                try parse(
                    nalUnit: bytes, activeSequenceParameterSetID: activeSequenceParameterSetID,
                    sequenceParameterSets: sequenceParameterSets)
            }
        }.get()
    }

    /// Parses sei_rbsp() from RBSP bytes (after the NAL header byte).
    public static func parse(
        rbsp: UnsafeRawBufferPointer, activeSequenceParameterSetID: Int? = nil,
        sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) -> SEI {
        var sei = SEI()
        // The rbsp_stop_one_bit is the last 1 bit (7.2); messages are whole bytes, so there is
        // more data while the position is before the byte holding it.
        var lastNonZero = rbsp.count &- 1
        while lastNonZero >= 0 && rbsp[lastNonZero] == 0 { lastNonZero &-= 1 }
        let stopBitPosition = lastNonZero &* 8 &+ 7 &- (lastNonZero >= 0 ? rbsp[lastNonZero].trailingZeroBitCount : 0)
        var timingSPSID = activeSequenceParameterSetID
        var position = 0 // byte offset in rbsp
        while position &* 8 < stopBitPosition {
            // 7.3.2.3.1: payloadType and payloadSize are sums of 0xFF bytes plus a last byte.
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
            let decoded = decodePayload(
                type: payloadType, payload: payload, timingSPSID: &timingSPSID,
                sequenceParameterSets: sequenceParameterSets)
            switch decoded {
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

    static func decodePayload(
        type: Int, payload: UnsafeRawBufferPointer, timingSPSID: inout Int?,
        sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) -> Result<SEIMessage, H264Error> {
        var r = BitReader(payload)
        do throws(H264Error) {
            switch type {
            case 0:
                let period = try parseBufferingPeriod(&r, sequenceParameterSets: sequenceParameterSets)
                timingSPSID = period.seqParameterSetID
                return .success(.bufferingPeriod(period))
            case 1:
                guard let id = timingSPSID else {
                    throw H264Error.missingParameterSet(kind: "active SPS (for pic_timing)", id: -1)
                }
                guard let sps = sequenceParameterSets(id) else {
                    throw H264Error.missingParameterSet(kind: "SPS", id: id)
                }
                return .success(.pictureTiming(try parsePictureTiming(&r, sps: sps)))
            case 5:
                guard payload.count >= 16 else { throw H264Error.truncated(what: "uuid_iso_iec_11578") }
                return .success(
                    .userDataUnregistered(
                        UserDataUnregistered(
                            uuid: Array(payload[0..<16]), payload: Array(payload[16...]))))
            case 6:
                let maxFrameNum = timingSPSID.flatMap(sequenceParameterSets)?.maxFrameNum ?? 65536
                var point = RecoveryPoint()
                point.recoveryFrameCnt = try r.readUE("recovery_frame_cnt", max: maxFrameNum &- 1)
                point.exactMatchFlag = try r.readFlag("exact_match_flag")
                point.brokenLinkFlag = try r.readFlag("broken_link_flag")
                point.changingSliceGroupIdc = try r.readBits(2, "changing_slice_group_idc", max: 2)
                return .success(.recoveryPoint(point))
            default:
                return .success(.other(payloadType: type, bytes: Array(payload)))
            }
        } catch {
            return .failure(error)
        }
    }

    /// buffering_period(), D.1.2.
    static func parseBufferingPeriod(
        _ r: inout BitReader, sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> BufferingPeriod {
        var period = BufferingPeriod()
        period.seqParameterSetID = try r.readUE("seq_parameter_set_id", max: 31)
        guard let sps = sequenceParameterSets(period.seqParameterSetID) else {
            throw H264Error.missingParameterSet(kind: "SPS", id: period.seqParameterSetID)
        }
        func delays(_ hrd: HRDParameters?) throws(H264Error) -> [BufferingPeriod.InitialCPBRemovalDelay] {
            guard let hrd else { return [] }
            let length = hrd.initialCpbRemovalDelayLengthMinus1 &+ 1
            var list: [BufferingPeriod.InitialCPBRemovalDelay] = []
            list.reserveCapacity(hrd.cpbCntMinus1 &+ 1)
            for _ in 0...hrd.cpbCntMinus1 {
                let delay = try r.readBits(length, "initial_cpb_removal_delay")
                let offset = try r.readBits(length, "initial_cpb_removal_delay_offset")
                list.append(.init(initialCpbRemovalDelay: delay, initialCpbRemovalDelayOffset: offset))
            }
            return list
        }
        period.nalInitialCpbRemovalDelays = try delays(sps.vui?.nalHrdParameters)
        period.vclInitialCpbRemovalDelays = try delays(sps.vui?.vclHrdParameters)
        return period
    }

    /// pic_timing(), D.1.3: the syntax depends on the SPS's VUI (CpbDpbDelaysPresentFlag,
    /// pic_struct_present_flag) and HRD (field lengths).
    static func parsePictureTiming(_ r: inout BitReader, sps: SequenceParameterSet) throws(H264Error) -> PictureTiming {
        var timing = PictureTiming()
        guard let vui = sps.vui else { return timing }
        let hrd = vui.primaryHRD
        if vui.cpbDpbDelaysPresentFlag, let hrd {
            timing.cpbRemovalDelay = try r.readBits(hrd.cpbRemovalDelayLengthMinus1 &+ 1, "cpb_removal_delay")
            timing.dpbOutputDelay = try r.readBits(hrd.dpbOutputDelayLengthMinus1 &+ 1, "dpb_output_delay")
        }
        guard vui.picStructPresentFlag else { return timing }
        let picStruct = try r.readBits(4, "pic_struct", max: 8)
        timing.picStruct = picStruct
        // D.2.3: time_offset_length is 24 when there is no HRD.
        let timeOffsetLength = hrd?.timeOffsetLength ?? 24
        let count = PictureTiming.numClockTS(picStruct: picStruct)
        timing.clockTimestamps.reserveCapacity(count)
        for _ in 0..<count {
            guard try r.readFlag("clock_timestamp_flag") else {
                timing.clockTimestamps.append(nil)
                continue
            }
            var ts = PictureTiming.ClockTimestamp()
            ts.ctType = try r.readBits(2, "ct_type", max: 2)
            ts.nuitFieldBasedFlag = try r.readFlag("nuit_field_based_flag")
            ts.countingType = try r.readBits(5, "counting_type", max: 6)
            ts.fullTimestampFlag = try r.readFlag("full_timestamp_flag")
            ts.discontinuityFlag = try r.readFlag("discontinuity_flag")
            ts.cntDroppedFlag = try r.readFlag("cnt_dropped_flag")
            ts.nFrames = Int(try r.readBits(8, "n_frames"))
            if ts.fullTimestampFlag {
                ts.secondsValue = try r.readBits(6, "seconds_value", max: 59)
                ts.minutesValue = try r.readBits(6, "minutes_value", max: 59)
                ts.hoursValue = try r.readBits(5, "hours_value", max: 23)
            } else if try r.readFlag("seconds_flag") {
                ts.secondsValue = try r.readBits(6, "seconds_value", max: 59)
                if try r.readFlag("minutes_flag") {
                    ts.minutesValue = try r.readBits(6, "minutes_value", max: 59)
                    if try r.readFlag("hours_flag") {
                        ts.hoursValue = try r.readBits(5, "hours_value", max: 23)
                    }
                }
            }
            if timeOffsetLength > 0 {
                // i(v): two's complement in time_offset_length (<= 31) bits.
                let raw = Int(try r.readBits(timeOffsetLength, "time_offset"))
                let signBit = 1 << (timeOffsetLength &- 1)
                ts.timeOffset = raw & signBit != 0 ? raw &- (signBit << 1) : raw
            }
            timing.clockTimestamps.append(ts)
        }
        return timing
    }
}
