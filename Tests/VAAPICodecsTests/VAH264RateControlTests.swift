import CVA
import H264
import SwiftVT
import Testing

@testable import VAAPICodecs

/// How vtenc's rate properties become VA rate-control values, without a device: the numbers the
/// software driver's parameter log shows in tests/vtenc_va/test_rate_parameters.py, derived here
/// from the properties alone.
@Suite("VA-API H.264 rate control from the compression properties")
struct VAH264RateControlTests {
    static let allModes = UInt32(VA_RC_CQP) | UInt32(VA_RC_CBR) | UInt32(VA_RC_VBR)

    @Test("a limit at the bit rate is CBR: the rate that holds 500 kbit over every second at 12 pictures/s")
    func constantBitRate() throws {
        let properties = CompressionProperties(
            averageBitRate: 500_000, dataRateLimits: [DataRateLimit(bytes: 62_500, seconds: 1)])
        let (rateControl, notices) = try VAH264RateControl.choose(
            properties, frameRate: 12, offered: Self.allModes, strict: true)
        #expect(notices.isEmpty)
        #expect(rateControl.mode == .cbr)
        // A quarter of the second's 500000 bits is buffer; the other 375000 arrive over the 11/12 s
        // that a window of 12 pictures spans.
        #expect(rateControl.bufferBits == 125_000)
        #expect(rateControl.bitsPerSecond == 409_090)
        #expect(rateControl.targetPercentage == 100)
        #expect(rateControl.windowMilliseconds == 1000)
    }

    @Test("a limit above the bit rate is VBR with the limit's rate as the peak")
    func variableBitRateUnderAPeak() throws {
        let properties = CompressionProperties(
            averageBitRate: 800_000, dataRateLimits: [DataRateLimit(bytes: 200_000, seconds: 1)])
        let (rateControl, _) = try VAH264RateControl.choose(
            properties, frameRate: 30, offered: Self.allModes, strict: true)
        #expect(rateControl.mode == .vbr)
        #expect(rateControl.bitsPerSecond == 1_241_379)
        #expect(rateControl.targetPercentage == 64)
        #expect(rateControl.bufferBits == 400_000)
    }

    @Test("quality without a bit rate is constant QP: 51 x (1 - quality), I 3 lower and B 2 higher")
    func constantQuantizer() throws {
        let (rateControl, notices) = try VAH264RateControl.choose(
            CompressionProperties(quality: 0.6), frameRate: 30, offered: Self.allModes, strict: true)
        #expect(notices.isEmpty)
        #expect(rateControl.mode == .cqp)
        #expect(rateControl.pictureQuantizer(type: .idr, forced: nil) == 17)
        #expect(rateControl.pictureQuantizer(type: .predicted, forced: nil) == 20)
        #expect(rateControl.pictureQuantizer(type: .bidirectional, forced: nil) == 22)
        // The multi-pass rate control's QP wins, rounded and kept in 0...51.
        #expect(rateControl.pictureQuantizer(type: .predicted, forced: 33.6) == 34)
        #expect(rateControl.pictureQuantizer(type: .predicted, forced: 70) == 51)
    }

    @Test("data rate limits without a bit rate are said to be ignored in constant QP")
    func limitsWithoutBitRate() throws {
        let (rateControl, notices) = try VAH264RateControl.choose(
            CompressionProperties(dataRateLimits: [DataRateLimit(bytes: 100_000, seconds: 1)], quality: 0.5),
            frameRate: 30, offered: Self.allModes, strict: false)
        #expect(rateControl.mode == .cqp)
        #expect(notices.map(\.property) == [.dataRateLimits])
    }

    @Test("a device without VBR: hardware=require refuses naming the property; auto encodes CBR and says so")
    func deviceWithoutVariableBitRate() throws {
        let properties = CompressionProperties(averageBitRate: 800_000)
        let cqpAndCBR = UInt32(VA_RC_CQP) | UInt32(VA_RC_CBR)
        #expect(throws: VTError.self) {
            _ = try VAH264RateControl.choose(properties, frameRate: 30, offered: cqpAndCBR, strict: true)
        }
        let (rateControl, notices) = try VAH264RateControl.choose(
            properties, frameRate: 30, offered: cqpAndCBR, strict: false)
        #expect(rateControl.mode == .cbr)
        #expect(notices.map(\.property) == [.averageBitRate])
        #expect(notices.first?.message.contains("no VBR") == true)
    }

    @Test("a device without CBR: auto encodes VBR with the limit as its peak")
    func deviceWithoutConstantBitRate() throws {
        let properties = CompressionProperties(
            averageBitRate: 500_000, dataRateLimits: [DataRateLimit(bytes: 62_500, seconds: 1)])
        let cqpAndVBR = UInt32(VA_RC_CQP) | UInt32(VA_RC_VBR)
        let (rateControl, notices) = try VAH264RateControl.choose(
            properties, frameRate: 12, offered: cqpAndVBR, strict: false)
        #expect(rateControl.mode == .vbr)
        #expect(notices.map(\.property) == [.dataRateLimits])
    }
}

@Suite("VA-API H.264 misc parameters and frame rates")
struct VAH264MiscParameterTests {
    @Test("frame rates as 16-bit fractions: whole over 1, NTSC over 1001, others over 1000")
    func frameRateFractions() {
        #expect(VAH264EncodeParameters.frameRateFraction(12) == (12, 1))
        #expect(VAH264EncodeParameters.frameRateFraction(30000.0 / 1001) == (30000, 1001))
        #expect(VAH264EncodeParameters.frameRateFraction(24000.0 / 1001) == (24000, 1001))
        #expect(VAH264EncodeParameters.frameRateFraction(12.5) == (12500, 1000))
        // No usable rate: 30, as the encoder assumes elsewhere.
        #expect(VAH264EncodeParameters.frameRateFraction(.nan) == (30, 1))
        #expect(VAH264EncodeParameters.frameRateFraction(0) == (30, 1))
    }

    @Test("constant QP sends no rate-control or HRD parameter; CBR sends both, the buffer 3/4 full at the start")
    func miscParameterSets() throws {
        let cqp = try VAH264RateControl.choose(
            CompressionProperties(quality: 0.6), frameRate: 30, offered: VAH264RateControlTests.allModes, strict: true
        ).0
        let cqpNames = VAH264EncodeParameters.miscParameters(rateControl: cqp, frameRate: (30, 1), qualityLevel: 4)
            .map(\.0)
        #expect(cqpNames == ["frame rate", "quality level"])

        let cbr = try VAH264RateControl.choose(
            CompressionProperties(averageBitRate: 500_000, dataRateLimits: [DataRateLimit(bytes: 62_500, seconds: 1)]),
            frameRate: 12, offered: VAH264RateControlTests.allModes, strict: true
        ).0
        let parameters = VAH264EncodeParameters.miscParameters(rateControl: cbr, frameRate: (12, 1), qualityLevel: nil)
        #expect(parameters.map(\.0) == ["rate control", "HRD", "frame rate"])
        let hrd = try #require(parameters.first { $0.0 == "HRD" }?.1)
        // The buffer starts with the misc parameter's header (its type, a uint32), then the payload.
        let payload = hrd.dropFirst(MemoryLayout<UInt32>.size)
        let sizes = payload.withUnsafeBytes { bytes in
            (
                bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self),
                bytes.loadUnaligned(fromByteOffset: 4, as: UInt32.self)
            )
        }
        // va.h's VAEncMiscParameterHRD: initial_buffer_fullness, then buffer_size.
        #expect(sizes.0 == 93_750)
        #expect(sizes.1 == 125_000)
    }
}
