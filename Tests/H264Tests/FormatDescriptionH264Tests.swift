import H264
import MediaCore
import SwiftVTTestSupport
import Testing

@Suite("Format descriptions from H.264 parameter sets")
struct FormatDescriptionH264Tests {
    static func parameterSets(of bytes: [UInt8]) -> [[UInt8]] {
        var sets: [[UInt8]] = []
        for unit in AnnexB.nalUnits(in: bytes) {
            let nal = Array(bytes[unit.payloadRange])
            let type = NALUnitType(rawValue: nal[0])
            if (type == .sequenceParameterSet || type == .pictureParameterSet) && !sets.contains(nal) {
                sets.append(nal)
            }
        }
        return sets
    }

    @Test(
        "every corpus stream: dimensions after cropping match MANIFEST.tsv; avcC and parameter sets round-trip",
        .requiresCorpus)
    func corpusStreams() throws {
        guard let manifest = Corpus.manifest() else { return }
        for entry in manifest where entry.file != "sps_subsetsps_bothVUI.264" {
            let bytes = try #require(Corpus.bytes(of: entry))
            let sets = Self.parameterSets(of: bytes)
            let description = try FormatDescription(h264ParameterSets: sets)
            #expect(description.codecType == .h264)
            #expect(
                description.dimensions == VideoDimensions(width: Int32(entry.width), height: Int32(entry.height)),
                "\(entry.file)")
            #expect(description.nalUnitHeaderLength == 4)
            let spsCount = description.h264SequenceParameterSets.count
            #expect(try description.parameterSet(at: 0).parameterSet == description.h264SequenceParameterSets[0])
            #expect(try description.parameterSet(at: 0).count == sets.count)
            #expect(try description.parameterSet(at: spsCount).parameterSet[0] & 0x1F == 8)
            let avcC = try #require(description.avcDecoderConfigurationRecord)
            let fromRecord = try FormatDescription(avcDecoderConfigurationRecord: avcC)
            #expect(fromRecord == description, "\(entry.file)")
            #expect(description.h264SessionCanAccept(fromRecord))
        }
    }

    @Test("SarVui.264: the VUI sample aspect ratio reaches the description", .requiresCorpus)
    func sampleAspectRatio() throws {
        guard let manifest = Corpus.manifest() else { return }
        let entry = try #require(manifest.first { $0.file == "SarVui.264" })
        let description = try FormatDescription(
            h264ParameterSets: Self.parameterSets(of: try #require(Corpus.bytes(of: entry))))
        let sps = try SequenceParameterSet.parse(nalUnit: description.h264SequenceParameterSets[0])
        let sar = try #require(sps.vui?.sampleAspectRatio)
        #expect(
            description.extensions.pixelAspectRatio
                == PixelAspectRatio(
                    horizontalSpacing: Int32(sar.width), verticalSpacing: Int32(sar.height)))
    }

    @Test("a session for one resolution does not accept another; a new PPS alone is accepted", .requiresCorpus)
    func canAccept() throws {
        let small = try FormatDescription(h264ParameterSets: [
            SyntheticStream.sequenceParameterSet(), SyntheticStream.pictureParameterSet()
        ])
        let otherPPS = try FormatDescription(h264ParameterSets: [
            SyntheticStream.sequenceParameterSet(), SyntheticStream.pictureParameterSet(redundantPicCntPresent: true)
        ])
        #expect(small.h264SessionCanAccept(otherPPS))
        guard let manifest = Corpus.manifest() else { return }
        let entry = try #require(manifest.first { $0.width == 1920 })
        let large = try FormatDescription(
            h264ParameterSets: Self.parameterSets(of: try #require(Corpus.bytes(of: entry))))
        #expect(!small.h264SessionCanAccept(large))
        #expect(!large.h264SessionCanAccept(small))
    }

    @Test("missing SPS or PPS, a subset SPS, or a bad length size are errors")
    func errors() {
        #expect(throws: H264Error.self) {
            try FormatDescription(h264ParameterSets: [SyntheticStream.pictureParameterSet()])
        }
        #expect(throws: H264Error.self) {
            try FormatDescription(h264ParameterSets: [SyntheticStream.sequenceParameterSet()])
        }
        #expect(throws: H264Error.self) {
            try FormatDescription(h264ParameterSets: [[0x6F, 0x53, 0, 30]] + [SyntheticStream.pictureParameterSet()])
        }
        #expect(throws: H264Error.self) {
            try FormatDescription(
                h264ParameterSets: [SyntheticStream.sequenceParameterSet(), SyntheticStream.pictureParameterSet()],
                nalUnitHeaderLength: 3)
        }
        #expect(throws: H264Error.self) { try FormatDescription(avcDecoderConfigurationRecord: [1, 66, 0xC0]) }
    }
}
