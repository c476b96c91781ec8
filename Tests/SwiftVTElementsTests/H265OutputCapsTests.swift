import H265
import MediaCore
import Testing

@testable import SwiftVTElements

/// The pure parts of h265parse-to-hvcc's caps (and what it shares with h264parse-to-avcc): the
/// frame rate upstream-first, and h265parse's rules for height, aspect ratio, colorimetry and
/// monochrome. The caps against h265parse itself are tests/h265parse_to_hvcc/test_caps.py.
@Suite("h265parse-to-hvcc's caps")
struct H265OutputCapsTests {
    static func sps(_ configure: (inout H265SequenceParameterSet) -> Void = { _ in }) -> H265SequenceParameterSet {
        var sps = H265SequenceParameterSet()
        sps.picWidthInLumaSamples = 352
        sps.picHeightInLumaSamples = 288
        sps.profileTierLevel = H265ProfileTierLevel(generalLevelIdc: 60)
        sps.profileTierLevel.general?.profileIdc = 1
        configure(&sps)
        return sps
    }

    static func vui(_ configure: (inout H265VUIParameters) -> Void) -> H265VUIParameters {
        var vui = H265VUIParameters()
        configure(&vui)
        return vui
    }

    static func caps(_ sps: H265SequenceParameterSet, fields: Bool = false, upstream: FrameRate? = nil)
        -> H265OutputCaps
    {
        H265OutputCaps(
            sps: sps, codecData: [1], streamFormat: .hvc1, picturesAreFields: fields, upstreamFrameRate: upstream)
    }

    @Test("upstream's frame rate wins, reduced; the VUI's is the fallback; none gives nil (0/1 in the caps)")
    func frameRates() {
        let vui = FrameRate(60000, 2002)
        #expect(ParsedVideoCaps.frameRates(upstream: FrameRate(50, 2), vui: vui).chosen == FrameRate(25, 1))
        #expect(ParsedVideoCaps.frameRates(upstream: FrameRate(50, 2), vui: vui).vui == FrameRate(30000, 1001))
        #expect(ParsedVideoCaps.frameRates(upstream: .unknown, vui: vui).chosen == FrameRate(30000, 1001))
        #expect(ParsedVideoCaps.frameRates(upstream: nil, vui: FrameRate(1, 0)).chosen == nil)
        #expect(ParsedVideoCaps.frameRates(upstream: nil, vui: FrameRate(Int(Int32.max) + 1, 1)).chosen == nil)
    }

    @Test(
        "profile, tier, level and the 4:2:0 8-bit fields of a plain Main SPS; no aspect ratio or colorimetry without a VUI"
    )
    func plainMain() {
        let caps = Self.caps(Self.sps())
        #expect(
            (caps.width, caps.height, caps.chromaFormat, caps.bitDepthLuma, caps.bitDepthChroma) == (
                352, 288, "4:2:0", 8, 8
            ))
        #expect((caps.profile, caps.tier, caps.level) == ("main", "main", "2"))
        #expect(caps.pixelAspectRatio == nil && caps.colorimetry == nil && caps.frameRate == nil)
    }

    @Test(
        "field pictures: the frame is twice as high; the VUI's tick rate is the caps' frame rate, as h265parse gives it"
    )
    func fields() {
        let sps = Self.sps { sps in
            sps.vui = Self.vui { vui in
                vui.fieldSeqFlag = true
                vui.timingInfoPresentFlag = true
                vui.numUnitsInTick = 1
                vui.timeScale = 30
            }
        }
        let caps = Self.caps(sps, fields: true)
        #expect(caps.height == 576)
        #expect(caps.frameRate == FrameRate(30, 1))
    }

    @Test("colorimetry only with a colour description (h265parse's rule); aspect ratio from the VUI")
    func colorimetryAndAspectRatio() {
        let signalOnly = Self.sps { $0.vui = Self.vui { $0.videoSignalTypePresentFlag = true } }
        #expect(Self.caps(signalOnly).colorimetry == nil)
        let described = Self.sps { sps in
            sps.vui = Self.vui { vui in
                vui.videoSignalTypePresentFlag = true
                vui.colourDescriptionPresentFlag = true
                vui.colourPrimaries = 1
                vui.transferCharacteristics = 1
                vui.matrixCoeffs = 1
                vui.aspectRatioInfoPresentFlag = true
                vui.aspectRatioIdc = 2
            }
        }
        #expect(Self.caps(described).colorimetry == "bt709")
        #expect(Self.caps(described).pixelAspectRatio == PixelAspectRatio(horizontalSpacing: 12, verticalSpacing: 11))
    }

    @Test("monochrome: chroma-format 4:0:0 and bit-depth-chroma 0, as h265parse says")
    func monochrome() {
        let caps = Self.caps(Self.sps { $0.chromaFormatIdc = 0 })
        #expect(caps.chromaFormat == "4:0:0" && caps.bitDepthChroma == 0)
    }
}
