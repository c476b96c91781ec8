import H265
import MediaCore
import SwiftVTTestSupport
import Testing

@Suite("Format descriptions from H.265 parameter sets")
struct FormatDescriptionH265Tests {
    /// The distinct VPS, SPS and PPS NAL units of a stream, in order of appearance.
    static func parameterSets(of bytes: [UInt8]) -> [[UInt8]] {
        var sets: [[UInt8]] = []
        for unit in AnnexB.nalUnits(in: bytes) {
            let nal = Array(bytes[unit.payloadRange])
            let type = H265NALUnitType(sixBits: nal[0] >> 1)
            let isParameterSet =
                type == .videoParameterSet || type == .sequenceParameterSet || type == .pictureParameterSet
            if isParameterSet && !sets.contains(nal) { sets.append(nal) }
        }
        return sets
    }

    @Test(
        "every corpus stream: hvc1, size after the conformance window, bit depth, chroma, hvcC round trip",
        .requiresH265Corpus)
    func corpusStreams() throws {
        guard let manifest = H265Corpus.manifest() else { return }
        for entry in manifest {
            let bytes = try #require(H265Corpus.bytes(of: entry))
            let sets = Self.parameterSets(of: bytes)
            let description = try FormatDescription(hevcParameterSets: sets)
            let expected = try #require(entry.bitDepthAndChromaFormat)
            #expect(description.codecType == .hevc)
            #expect(
                description.dimensions == VideoDimensions(width: Int32(entry.width), height: Int32(entry.height)),
                "\(entry.file)")
            #expect(description.extensions.bitDepth == expected.bitDepth, "\(entry.file)")
            #expect(
                description.extensions.chromaSubsampling?.rawValue == UInt8(expected.chromaFormatIdc), "\(entry.file)")
            #expect(description.nalUnitHeaderLength == 4)
            // VPS first, then SPS, then PPS, as VideoToolbox's parameter set index reads them.
            #expect(try description.parameterSet(at: 0).parameterSet == description.hevcVideoParameterSets[0])
            #expect(
                description.hevcSequenceParameterSets.count + description.hevcPictureParameterSets.count
                    + description.hevcVideoParameterSets.count == sets.count)
            let hvcC = try #require(description.hevcDecoderConfigurationRecord)
            let fromRecord = try FormatDescription(hevcDecoderConfigurationRecord: hvcC)
            #expect(fromRecord == description, "\(entry.file)")
            #expect(description.hevcSessionCanAccept(fromRecord))
            #expect(
                description.extensions.fieldCount == (entry.file == "main_interlaced_tff.265" ? 2 : 1), "\(entry.file)")
        }
    }

    @Test(
        "the odd conformance window becomes the clean aperture, centred as CoreMedia measures it", .requiresH265Corpus)
    func oddConformanceWindow() throws {
        guard let manifest = H265Corpus.manifest() else { return }
        let entry = try #require(manifest.first { $0.file == "main_confwin_odd.265" })
        let description = try FormatDescription(
            hevcParameterSets: Self.parameterSets(of: try #require(H265Corpus.bytes(of: entry))))
        let sps = try H265SequenceParameterSet.parse(nalUnit: description.hevcSequenceParameterSets[0])
        let window = sps.conformanceWindow
        let aperture = try #require(description.extensions.cleanAperture)
        #expect(aperture.width == Rational(346) && aperture.height == Rational(282))
        // The offset is half the difference between the two centres (2x + w - coded) / 2.
        let horizontal = 2 * window.x + window.width - sps.picWidthInLumaSamples
        #expect(aperture.horizontalOffset.isNumericallyEqual(to: Rational(Int32(horizontal), 2)))
    }

    @Test func hev1ColourAndSessionChanges() throws {
        var sps = H265TestStreams.sequenceParameterSet()
        sps.conformanceWindowFlag = true
        sps.confWinBottomOffset = 4 // 64x56 shown of 64x64
        sps.vuiParametersPresentFlag = true
        var vui = H265VUIParameters()
        vui.aspectRatioInfoPresentFlag = true
        vui.aspectRatioIdc = 14 // 4:3
        vui.videoSignalTypePresentFlag = true
        vui.videoFullRangeFlag = true
        vui.colourDescriptionPresentFlag = true
        vui.colourPrimaries = 9
        vui.transferCharacteristics = 16
        vui.matrixCoeffs = 9
        sps.vui = vui
        let sets = [
            H265TestStreams.videoParameterSet().nalUnit(), sps.nalUnit(),
            H265TestStreams.pictureParameterSet().nalUnit()
        ]
        let description = try FormatDescription(
            hevcParameterSets: sets, nalUnitHeaderLength: 2, inBandParameterSets: true)
        #expect(description.codecType == .hevcInBandParameterSets && description.nalUnitHeaderLength == 2)
        #expect(description.dimensions == VideoDimensions(width: 64, height: 56))
        #expect(description.extensions.pixelAspectRatio == PixelAspectRatio(horizontalSpacing: 4, verticalSpacing: 3))
        #expect(description.extensions.fullRange == true)
        #expect(description.extensions.colorPrimaries == ColorPrimaries(rawValue: 9))
        #expect(description.extensions.transferFunction == TransferFunction(rawValue: 16))
        #expect(description.extensions.yCbCrMatrix == YCbCrMatrix(rawValue: 9))
        #expect(description.extensions.cleanAperture?.verticalOffset == Rational(-4)) // (2 * 0 + 56 - 64) / 2
        // hev1: the record says more parameter sets may come in band.
        let record = try HEVCDecoderConfigurationRecord(
            parsing: try #require(description.hevcDecoderConfigurationRecord))
        #expect(record.arrays.allSatisfy { !$0.arrayCompleteness })

        // A new PPS is accepted; a 10-bit SPS is not.
        var tenBit = sps
        tenBit.bitDepthLumaMinus8 = 2
        tenBit.bitDepthChromaMinus8 = 2
        let tenBitDescription = try FormatDescription(
            hevcParameterSets: [sets[0], tenBit.nalUnit(), sets[2]], inBandParameterSets: true)
        var otherPPS = H265TestStreams.pictureParameterSet()
        otherPPS.initQpMinus26 = 4
        let newPPS = try FormatDescription(
            hevcParameterSets: [sets[0], sets[1], otherPPS.nalUnit()], inBandParameterSets: true)
        #expect(description.hevcSessionCanAccept(newPPS))
        #expect(!description.hevcSessionCanAccept(tenBitDescription))

        // Not a parameter set; a PPS that does not fit its SPS.
        #expect(throws: H265Error.self) { try FormatDescription(hevcParameterSets: sets + [[0x4E, 0x01, 0x80]]) }
        var tooManyTiles = H265TestStreams.pictureParameterSet()
        tooManyTiles.tilesEnabledFlag = true
        tooManyTiles.numTileColumnsMinus1 = 9
        #expect(throws: H265Error.self) {
            try FormatDescription(hevcParameterSets: [sets[0], sets[1], tooManyTiles.nalUnit()])
        }
    }
}
