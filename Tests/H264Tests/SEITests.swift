import SwiftVTTestSupport
import Testing

@testable import H264

/// sei_message() framing: payloadType and payloadSize as 0xFF runs, then the payload.
func seiMessageBytes(type: Int, payload: [UInt8]) -> [UInt8] {
    func ffCoded(_ value: Int) -> [UInt8] {
        Array(repeating: 0xFF, count: value / 255) + [UInt8(value % 255)]
    }
    return ffCoded(type) + ffCoded(payload.count) + payload
}

/// An SEI NAL unit from messages (RBSP bytes), with rbsp_trailing_bits.
func seiNAL(_ messages: [[UInt8]]) -> [UInt8] {
    [0x06] + RBSP.insertEmulationPrevention(messages.flatMap { $0 } + [0x80])
}

func payload(_ write: (inout BitWriter) -> Void) -> [UInt8] {
    var w = BitWriter()
    write(&w)
    // Payloads that do not end on a byte boundary get bit_equal_to_one + zero bits (D.1.1).
    if !w.isByteAligned { w.writeRBSPTrailingBits() }
    return w.bytes
}

func timingSPS() -> SequenceParameterSet {
    var sps = baselineSPS()
    sps.seqParameterSetID = 4
    sps.vuiParametersPresentFlag = true
    var vui = VUIParameters()
    var hrd = HRDParameters()
    hrd.cpbCntMinus1 = 1
    hrd.cpbSpecifications = [
        .init(bitRateValueMinus1: 1, cpbSizeValueMinus1: 1, cbrFlag: false),
        .init(bitRateValueMinus1: 2, cpbSizeValueMinus1: 2, cbrFlag: true)
    ]
    hrd.initialCpbRemovalDelayLengthMinus1 = 22
    hrd.cpbRemovalDelayLengthMinus1 = 11
    hrd.dpbOutputDelayLengthMinus1 = 6
    hrd.timeOffsetLength = 10
    vui.nalHrdParametersPresentFlag = true
    vui.nalHrdParameters = hrd
    vui.picStructPresentFlag = true
    sps.vui = vui
    return sps
}

@Suite("SEITests")
struct SEITests {
    let sps = timingSPS()
    func lookup(_ id: Int) -> SequenceParameterSet? { id == 4 ? sps : nil }

    @Test func recoveryPointAndUserData() throws {
        let recovery = payload { w in
            w.writeUE(15)
            w.writeFlag(true)
            w.writeFlag(false)
            w.writeBits(2, count: 2)
        }
        let uuid: [UInt8] = (0..<16).map { UInt8($0 * 7) }
        let user = uuid + Array("x264 - core 0, 00 00 01".utf8) + [0, 0, 1, 0, 0, 0]
        let nal = seiNAL([seiMessageBytes(type: 6, payload: recovery), seiMessageBytes(type: 5, payload: user)])
        let sei = try SEI.parse(nalUnit: nal, sequenceParameterSets: lookup)
        #expect(sei.error == nil)
        #expect(sei.messages.count == 2)
        #expect(sei.messages.map(\.payloadType) == [6, 5])
        guard case .recoveryPoint(let point) = sei.messages[0] else {
            Issue.record("not a recovery point: \(sei.messages[0])")
            return
        }
        #expect(point.recoveryFrameCnt == 15 && point.exactMatchFlag && !point.brokenLinkFlag)
        #expect(point.changingSliceGroupIdc == 2)
        guard case .userDataUnregistered(let data) = sei.messages[1] else {
            Issue.record("not user data: \(sei.messages[1])")
            return
        }
        #expect(data.uuid == uuid)
        #expect(data.payload == Array(user.dropFirst(16)))
    }

    @Test func bufferingPeriodThenPictureTiming() throws {
        let period = payload { w in
            w.writeUE(4)
            w.writeBits(90000, count: 23)
            w.writeBits(12, count: 23)
            w.writeBits(45000, count: 23)
            w.writeBits(0, count: 23)
        }
        let timing = payload { w in
            w.writeBits(2047, count: 12) // cpb_removal_delay
            w.writeBits(3, count: 7) // dpb_output_delay
            w.writeBits(5, count: 4) // pic_struct 5: top bottom top, NumClockTS 3
            // Clock timestamp 0: full.
            w.writeFlag(true)
            w.writeBits(1, count: 2) // ct_type
            w.writeFlag(true)
            w.writeBits(4, count: 5) // counting_type
            w.writeFlag(true) // full_timestamp_flag
            w.writeFlag(false)
            w.writeFlag(true)
            w.writeBits(29, count: 8)
            w.writeBits(59, count: 6)
            w.writeBits(58, count: 6)
            w.writeBits(23, count: 5)
            w.writeBits(0x3FF, count: 10) // time_offset -1
            // Clock timestamp 1: absent.
            w.writeFlag(false)
            // Clock timestamp 2: seconds and minutes only.
            w.writeFlag(true)
            w.writeBits(0, count: 2)
            w.writeFlag(false)
            w.writeBits(0, count: 5)
            w.writeFlag(false) // full_timestamp_flag
            w.writeFlag(false)
            w.writeFlag(false)
            w.writeBits(0, count: 8)
            w.writeFlag(true) // seconds_flag
            w.writeBits(7, count: 6)
            w.writeFlag(true) // minutes_flag
            w.writeBits(8, count: 6)
            w.writeFlag(false) // hours_flag
            w.writeBits(5, count: 10)
        }
        let nal = seiNAL([seiMessageBytes(type: 0, payload: period), seiMessageBytes(type: 1, payload: timing)])
        let sei = try SEI.parse(nalUnit: nal, sequenceParameterSets: lookup)
        #expect(sei.error == nil)
        guard sei.messages.count == 2, case .bufferingPeriod(let bp) = sei.messages[0],
            case .pictureTiming(let pt) = sei.messages[1]
        else {
            Issue.record("unexpected messages \(sei.messages)")
            return
        }
        #expect(bp.seqParameterSetID == 4)
        #expect(bp.nalInitialCpbRemovalDelays.map(\.initialCpbRemovalDelay) == [90000, 45000])
        #expect(bp.nalInitialCpbRemovalDelays.map(\.initialCpbRemovalDelayOffset) == [12, 0])
        #expect(bp.vclInitialCpbRemovalDelays.isEmpty)
        #expect(pt.cpbRemovalDelay == 2047)
        #expect(pt.dpbOutputDelay == 3)
        #expect(pt.picStruct == 5)
        #expect(pt.clockTimestamps.count == 3)
        let first = try #require(pt.clockTimestamps[0])
        #expect(first.ctType == 1 && first.nuitFieldBasedFlag && first.countingType == 4)
        #expect(first.fullTimestampFlag && !first.discontinuityFlag && first.cntDroppedFlag)
        #expect(first.nFrames == 29 && first.secondsValue == 59 && first.minutesValue == 58 && first.hoursValue == 23)
        #expect(first.timeOffset == -1)
        #expect(pt.clockTimestamps[1] == nil)
        let third = try #require(pt.clockTimestamps[2])
        #expect(third.secondsValue == 7 && third.minutesValue == 8 && third.hoursValue == nil)
        #expect(third.timeOffset == 5)
    }

    @Test func pictureTimingNeedsAnSPS() throws {
        let timing = payload { w in w.writeBits(0, count: 24) } // delays, pic_struct 0, clock_timestamp_flag 0
        let nal = seiNAL([seiMessageBytes(type: 1, payload: timing)])
        let without = try SEI.parse(nalUnit: nal, sequenceParameterSets: lookup)
        #expect(without.messages == [.other(payloadType: 1, bytes: timing)])
        #expect(without.error != nil)
        let with = try SEI.parse(nalUnit: nal, activeSequenceParameterSetID: 4, sequenceParameterSets: lookup)
        #expect(with.error == nil)
        guard case .pictureTiming(let pt) = with.messages.first else {
            Issue.record("no picture timing")
            return
        }
        #expect(pt.cpbRemovalDelay == 0 && pt.picStruct == 0)
        #expect(pt.clockTimestamps == [nil])
    }

    @Test func unknownTypesLargeSizesAndBrokenFraming() throws {
        let big = [UInt8](repeating: 0x42, count: 600)
        let valid = seiMessageBytes(type: 300, payload: big)
        let broken: [UInt8] = [0x05, 0xFF, 0x10, 1, 2, 3] // payloadSize 270, 3 bytes present
        let sei = try SEI.parse(nalUnit: seiNAL([valid, broken]), sequenceParameterSets: lookup)
        #expect(sei.messages == [.other(payloadType: 300, bytes: big)])
        guard case .truncated = sei.error else {
            Issue.record("expected a truncation error, got \(String(describing: sei.error))")
            return
        }
        // A broken known payload keeps its bytes and parsing continues.
        let badRecovery: [UInt8] = [0x00] // recovery_frame_cnt code runs off the end
        let after = seiMessageBytes(type: 4, payload: [0xB5, 0x00, 0x31])
        let mixed = try SEI.parse(
            nalUnit: seiNAL([seiMessageBytes(type: 6, payload: badRecovery), after]), sequenceParameterSets: lookup)
        #expect(
            mixed.messages == [
                .other(payloadType: 6, bytes: badRecovery), .other(payloadType: 4, bytes: [0xB5, 0, 0x31])
            ])
        #expect(mixed.error != nil)
        // Not an SEI NAL unit.
        #expect(throws: H264Error.self) { try SEI.parse(nalUnit: [0x67, 0x80], sequenceParameterSets: lookup) }
        // Empty SEI (only trailing bits): no messages, no error.
        let empty = try SEI.parse(nalUnit: [0x06, 0x80], sequenceParameterSets: lookup)
        #expect(empty.messages.isEmpty && empty.error == nil)
    }

    @Test func randomSEINeverTraps() {
        var generator = SeededGenerator(seed: 11)
        for _ in 0..<3000 {
            let count = Int.random(in: 0...80, using: &generator)
            let body = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = try? SEI.parse(nalUnit: [0x06] + body, activeSequenceParameterSetID: 4, sequenceParameterSets: lookup)
        }
    }
}
