import NALBitstream
import SwiftVTTestSupport
import Testing

@testable import H264

/// ATSC A/53 captions in SEI (NALBitstream's ClosedCaptionData, written by vtenc's backends and
/// read by vtdec), read back by SwiftVT's own H.264 SEI parser.
@Suite struct ClosedCaptionTests {
    static let atsc: [UInt8] = [0xB5, 0x00, 0x31, 0x47, 0x41, 0x39, 0x34, 0x03]

    @Test func onePayloadHoldsTheTripletsBetweenTheA53Fields() {
        let captions = ClosedCaptionData(triplets: [0xFC, 0x94, 0x2C])
        // process_cc_data_flag with cc_count 1, em_data 0xFF, the triplet, marker_bits 0xFF.
        #expect(captions.userDataRegisteredPayloads == [Self.atsc + [0x41, 0xFF, 0xFC, 0x94, 0x2C, 0xFF]])
    }

    @Test func moreThan31TripletsTakeSeveralMessagesAndComeBackWhole() throws {
        let triplets = (0..<40).flatMap { index -> [UInt8] in [0xFC, UInt8(index), UInt8(index + 1)] }
        let captions = ClosedCaptionData(triplets: triplets)
        #expect(captions.userDataRegisteredPayloads.map { $0[8] & 0x1F } == [31, 9])
        let nal = H264NALUnitWriter.nalUnit(type: .sei, nalRefIdc: 0, rbsp: captions.seiRBSP)
        let sei = try SEI.parse(nalUnit: nal, sequenceParameterSets: { _ in nil })
        #expect(sei.error == nil)
        #expect(sei.messages.map(\.payloadType) == [4, 4])
        // In a 4-byte length-prefixed access unit beside a slice, as vtdec reads samples.
        let slice: [UInt8] = [0x65, 0x88, 0x84]
        var sample: [UInt8] = []
        for unit in [nal, slice] {
            sample += [0, 0, 0, UInt8(unit.count)] + unit
        }
        let read = sample.withUnsafeBytes { ClosedCaptionData(accessUnit: $0, nalUnitHeaderLength: 4, hevc: false) }
        #expect(read?.triplets == triplets)
    }

    @Test func theGStreamerLayoutsBecomeCCData() {
        // CEA-608 S334-1A: field 1 (bit 7 set) is cc_type 0, field 2 cc_type 1.
        #expect(
            ClosedCaptionData(.cea608LineTriplets, bytes: [0x89, 0x94, 0x2C, 0x09, 0x20, 0x20])?.triplets == [
                0xFC, 0x94, 0x2C, 0xFD, 0x20, 0x20
            ])
        #expect(ClosedCaptionData(.cea608Pairs, bytes: [0x94, 0x2C])?.triplets == [0xFC, 0x94, 0x2C])
        // A CDP with a time code section before its ccdata_section (SMPTE ST 334-2).
        let cdp: [UInt8] = [
            0x96, 0x69, 0x17, 0x4F, 0xC3, 0x00, 0x01, 0x71, 0x10, 0x20, 0x30, 0x40, 0x72, 0xE2,
            0xFC, 0x94, 0x2C, 0xFE, 0x01, 0x02, 0x74, 0x00, 0x01
        ]
        #expect(
            ClosedCaptionData(.cea708DistributionPacket, bytes: cdp)?.triplets == [
                0xFC, 0x94, 0x2C, 0xFE, 0x01, 0x02
            ])
        #expect(ClosedCaptionData(.cea708DistributionPacket, bytes: [0x12, 0x34, 0, 0, 0, 0, 0]) == nil)
        #expect(ClosedCaptionData(.cea708Triplets, bytes: [0xFC, 0x94]) == nil)
    }

    @Test func otherRegisteredUserDataIsNotCaptions() {
        // Active format description (user_identifier "DTG1"), and A/53 cc_data without
        // process_cc_data_flag.
        #expect(ClosedCaptionData(userDataRegisteredPayload: [0xB5, 0x00, 0x31, 0x44, 0x54, 0x47, 0x31, 0x41]) == nil)
        #expect(ClosedCaptionData(userDataRegisteredPayload: Self.atsc + [0x01, 0xFF, 0xFC, 0x94, 0x2C, 0xFF]) == nil)
        // cc_count larger than the payload: what is there is read.
        #expect(
            ClosedCaptionData(userDataRegisteredPayload: Self.atsc + [0x45, 0xFF, 0xFC, 0x94, 0x2C])?.triplets == [
                0xFC, 0x94, 0x2C
            ])
    }
}
