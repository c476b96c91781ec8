import MediaCore
import SoftwareCodecs
import SwiftVT
import Testing
import VAAPICodecs

@testable import SwiftVTElements

/// What the elements post for a session error is worded from its typed reason: element
/// properties (`hardware=require`, `entropy-mode=cavlc`) and caps format names, never the Swift
/// API's `hardwarePolicy`, `pixelFormats` or four-character codes.
@Suite("GStreamer wording")
struct GStreamerWordingTests {
    static let x264 = "x264 (software)"

    @Test("each reason in GStreamer terms")
    func reasons() {
        let excluded = VTError.BackendRefusal(
            backend: "libavcodec (software)", why: .excludedByHardwarePolicy(.require))
        let missing = VTError.BackendRefusal(backend: "VA-API H.264 decoder", why: .notInThisBuild)
        let cases: [(VTError.Reason, String)] = [
            (
                .hardwareRequired(.decoding, tried: [excluded, missing]),
                "hardware=require, but no hardware decoder can take this stream. Tried: libavcodec (software): "
                    + "software, excluded by hardware=require; no VA-API H.264 decoder: SwiftVT's VA-API backend is "
                    + "not available in this build. Use hardware=auto to decode it with libavcodec."
            ),
            (
                .hardwareRequired(.encoding, tried: []),
                "hardware=require, but no hardware encoder can take these pictures. Tried: no backends were given. "
                    + "Use hardware=auto to fall back to x264."
            ),
            (
                .noBackend(
                    .decoding,
                    tried: [.init(backend: "VA-API", why: .excludedByHardwarePolicy(.disable))]),
                "no decoder can take this stream. Tried: VA-API: hardware, excluded by hardware=disable"
            ),
            (
                .oddDimension(dimension: "width", value: 15, pixelFormat: .i422),
                "width 15 is odd, and 4:2:2 pictures (Y42B) need an even width; crop or pad by one pixel"
            ),
            (
                .pictureMismatch(
                    width: 320, height: 240, pixelFormat: .i444TenBit, sessionWidth: 320, sessionHeight: 240,
                    sessionPixelFormat: .i420),
                "the picture is 320x240 Y444_10LE but the caps say 320x240 I420"
            ),
            (
                .entropyModeNotAllowed(profile: .baseline),
                "entropy-mode: CABAC is not allowed in the baseline profile; use entropy-mode=cavlc or auto"
            ),
            (
                .inputPixelFormatNotEncoded(.i444TenBit, encodes: "encodes 8-bit 4:2:0 pictures (I420, NV12) only"),
                "encodes 8-bit 4:2:0 pictures (I420, NV12) only, not Y444_10LE"
            ),
            (
                .outputPixelFormatsUnavailable(requested: [.i420], decodesTo: .i444TenBit),
                "none of the formats downstream accepts [I420] can be produced: this stream decodes to Y444_10LE, "
                    + "and the libavcodec backend outputs that format or converts 4:2:0 to NV12 (8-bit) or P010_10LE "
                    + "(10-bit); let downstream accept one of those (video/x-raw caps)"
            ),
            (
                .outputPixelFormatsNotOffered(
                    backend: "the VA path", requested: [.i420TenBit], offered: [.nv12VideoRange, .nv12FullRange, .i420]),
                "the VA path outputs NV12 or I420, and downstream accepts none of them (it accepts [I420_10LE])"
            ),
            (
                .decodedFormatChanged(to: .i422TenBit),
                "the stream changed to I422_10LE, which none of the formats downstream accepts can hold"
            ),
            (
                .outputPicturesUnavailable(.p010VideoRange, detail: "allocationFailed"),
                "cannot make P010_10LE pictures: allocationFailed"
            ),
            (
                .other("the format description has no avcC or hvcC record"),
                "the format description has no avcC or hvcC record"
            )
        ]
        for (reason, expected) in cases {
            #expect(GStreamerWording.text(reason) == expected)
            // The Swift API's wording stays with the session layer.
            for swiftName in ["hardwarePolicy", "pixelFormats", ".cavlc", "'y420'", "'I410'", "'420v'"] {
                #expect(!GStreamerWording.text(reason).contains(swiftName), "\(reason)")
            }
        }
    }

    @Test("the session layer keeps the Swift API's wording")
    func swiftWording() {
        let error = VTError(
            .hardwareUnavailable,
            reason: .hardwareRequired(
                .decoding, tried: [.init(backend: "libavcodec (software)", why: .excludedByHardwarePolicy(.require))]))
        #expect(
            error.message
                == "hardware decoding is required, but no hardware decoder can take this stream. Tried: libavcodec "
                + "(software): software, excluded by hardwarePolicy .require. Allow software decoding (hardwarePolicy "
                + ".auto) to decode it anyway.")
        #expect(
            VTError(.unsupportedFormat, reason: .oddDimension(dimension: "height", value: 9, pixelFormat: .i420))
                .message
                == "height 9 is odd, and 4:2:0 pictures (y420) need an even height; crop or pad by one pixel")
    }

    @Test("hardware=require from the encoder session to the element's ERROR")
    func hardwareRequiredSurvives() throws {
        var thrown: VTError?
        do {
            _ = try CompressionSession(
                width: 320, height: 240, encoderSpecification: EncoderSpecification(hardwarePolicy: .require),
                sourcePixelFormat: .i420, backends: [X264EncoderFactory()], outputHandler: { _ in })
        } catch {
            thrown = error
        }
        let error = try #require(thrown)
        #expect(error.code == .hardwareUnavailable)
        guard case .hardwareRequired(.encoding, let tried) = error.reason else {
            Issue.record("reason \(error.reason)")
            return
        }
        guard case .excludedByHardwarePolicy(.require) = tried.first?.why else {
            Issue.record("first refusal \(tried)")
            return
        }
        let message = SessionFactory<VAH264EncoderFactory>.failure(error, width: 320, height: 240, format: .i420)
        #expect(
            message.text
                == "hardware=require, but no hardware encoder can take these pictures. Tried: \(Self.x264): software, "
                + "excluded by hardware=require; no VA-API H.264 encoder: SwiftVT's VA-API backend is not available in "
                + "this build. Use hardware=auto to fall back to x264.")
        #expect(message.debug == error.description)
    }

    @Test("a format the encoder does not take, from the backend's refusal to the element's ERROR")
    func unavailableFormatSurvives() throws {
        var thrown: VTError?
        do {
            _ = try CompressionSession(
                width: 320, height: 240, encoderSpecification: EncoderSpecification(hardwarePolicy: .disable),
                sourcePixelFormat: .p010VideoRange, backends: [X264EncoderFactory()], outputHandler: { _ in })
        } catch {
            thrown = error
        }
        let error = try #require(thrown)
        guard case .noBackend(.encoding, let tried) = error.reason,
            case .unavailable(.inputPixelFormatNotEncoded(let format, _)) = tried.first?.why
        else {
            Issue.record("reason \(error.reason)")
            return
        }
        #expect(format == .p010VideoRange)
        #expect(error.message.contains("not '\(PixelFormat.p010VideoRange.rawValue)'"))
        let message = SessionFactory<VAH264EncoderFactory>.failure(
            error, width: 320, height: 240, format: .p010VideoRange)
        #expect(
            message.text
                == "cannot encode 320x240 P010_10LE: no encoder can take these pictures. Tried: \(Self.x264): encodes "
                + "NV12 and planar 4:2:0, 4:2:2 and 4:4:4 pictures of 8 or 10 bits, not P010_10LE")
    }

    @Test("an odd width, from the session to the element's ERROR")
    func oddDimensionSurvives() throws {
        var thrown: VTError?
        do {
            _ = try CompressionSession(
                width: 15, height: 16, sourcePixelFormat: .i420, backends: [X264EncoderFactory()],
                outputHandler: { _ in })
        } catch {
            thrown = error
        }
        let error = try #require(thrown)
        guard case .oddDimension("width", 15, .i420) = error.reason else {
            Issue.record("reason \(error.reason)")
            return
        }
        let message = SessionFactory<VAH264EncoderFactory>.failure(error, width: 15, height: 16, format: .i420)
        #expect(
            message.text
                == "cannot encode 15x16 I420: width 15 is odd, and 4:2:0 pictures (I420) need an even width; crop or "
                + "pad by one pixel")
    }

    @Test("CABAC in Baseline names the element's entropy-mode property")
    func entropyModeSurvives() throws {
        let properties = CompressionProperties(
            profileLevel: H264ProfileLevel(profile: .baseline), entropyMode: .cabac)
        var thrown: VTError?
        do { try properties.validate() } catch { thrown = error }
        let error = try #require(thrown)
        #expect(error.property == .entropyMode)
        guard case .entropyModeNotAllowed(.baseline) = error.reason else {
            Issue.record("reason \(error.reason)")
            return
        }
        #expect(error.message == "entropyMode: CABAC is not allowed in the baseline profile; use .cavlc or nil")
        #expect(
            GStreamerWording.problem(error)
                == "CABAC is not allowed in the baseline profile; use entropy-mode=cavlc or auto")
        let message = SessionFactory<VAH264EncoderFactory>.failure(
            error, width: 320, height: 240, format: .nv12VideoRange)
        #expect(
            message.text
                == "cannot encode 320x240 NV12 (entropy-mode): CABAC is not allowed in the baseline profile; use "
                + "entropy-mode=cavlc or auto")
    }
}
