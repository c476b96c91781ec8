import H265
import SwiftVTTestSupport
import Testing

/// Runs the whole H.265 bitstream layer over the real streams of the corpus (x265 3.5, every
/// picture with an MD5 decoded picture hash SEI).
@Suite("H.265 corpus: parameter sets, access units, POC, SEI, hvcC")
struct H265CorpusTests {
    /// What one pass of the assembler over a stream found.
    struct StreamSummary {
        var pictures: [H265AccessUnitPicture] = []
        var problems: [String] = []
        var nalUnitCount = 0
        var parameterSets = H265ParameterSetStore()
        var videoParameterSets: [[UInt8]] = []
        var sequenceParameterSets: [[UInt8]] = []
        var pictureParameterSets: [[UInt8]] = []
    }

    static func summarize(_ bytes: [UInt8]) -> StreamSummary {
        var summary = StreamSummary()
        var assembler = H265AccessUnitAssembler()
        bytes.withUnsafeBytes { data in
            AnnexB.forEachNALUnit(in: data) { unit in
                let nal = UnsafeRawBufferPointer(rebasing: data[unit.payloadRange])
                summary.nalUnitCount += 1
                let step = assembler.push(nalUnit: nal)
                if let picture = step.completedPicture { summary.pictures.append(picture) }
                if let problem = step.problem {
                    summary.problems.append(
                        "NAL unit \(summary.nalUnitCount) (\(step.nalUnitType.map { "\($0)" } ?? "?")): \(problem)")
                }
                // Keep the first instance of each parameter set, for the hvcC record.
                switch step.nalUnitType {
                case .videoParameterSet? where step.parameterSetChange == .added:
                    summary.videoParameterSets.append(Array(nal))
                case .sequenceParameterSet? where step.parameterSetChange == .added:
                    summary.sequenceParameterSets.append(Array(nal))
                case .pictureParameterSet? where step.parameterSetChange == .added:
                    summary.pictureParameterSets.append(Array(nal))
                default: break
                }
            }
        }
        if let last = assembler.finish() { summary.pictures.append(last) }
        summary.parameterSets = assembler.parameterSets
        for picture in summary.pictures {
            for error in picture.seiErrors {
                summary.problems.append("SEI of POC \(picture.pictureOrderCount): \(error)")
            }
        }
        return summary
    }

    @Test("every stream: pictures, size, bit depth, chroma format, hash SEI, POC, hvcC", .requiresH265Corpus)
    func everyStream() throws {
        guard let manifest = H265Corpus.manifest() else { return }
        #expect(manifest.count >= 13)
        var table: [String] = [
            "stream | pictures found / manifest frames | size, bit depth, chroma | MD5 hash SEI | POC distinct per CVS | hvcC round trip"
        ]
        for entry in manifest {
            let bytes = try #require(H265Corpus.bytes(of: entry), "cannot read \(entry.file)")
            let summary = Self.summarize(bytes)
            #expect(summary.problems.isEmpty, "\(entry.file): \(summary.problems.prefix(5))")

            // Size after the conformance window, bit depth and chroma format of every SPS.
            let spsIDs = summary.parameterSets.sequenceParameterSetIDs
            #expect(!spsIDs.isEmpty, "\(entry.file): no SPS")
            let expected = try #require(entry.bitDepthAndChromaFormat, "\(entry.file): pix_fmt \(entry.pixelFormat)")
            var formatOK = !spsIDs.isEmpty
            for id in spsIDs {
                let sps = try #require(summary.parameterSets.sequenceParameterSet(id: id))
                // libavcodec outputs every picture as a frame of its own, field pictures too (it
                // does not weave them), so MANIFEST.tsv's size is the picture's.
                let matches =
                    sps.displayWidth == entry.width && sps.displayHeight == entry.height
                    && sps.bitDepthLuma == expected.bitDepth && sps.bitDepthChroma == expected.bitDepth
                    && sps.chromaFormatIdc == expected.chromaFormatIdc
                #expect(
                    matches,
                    "\(entry.file): SPS \(id) is \(sps.displayWidth)x\(sps.displayHeight), \(sps.bitDepthLuma)/\(sps.bitDepthChroma) bits, chroma_format_idc \(sps.chromaFormatIdc); MANIFEST says \(entry.width)x\(entry.height) \(entry.pixelFormat)"
                )
                formatOK = formatOK && matches
            }

            // The pictures found by the access-unit logic that are output, as libavcodec counts
            // them (one frame per picture, fields included).
            let frames = summary.pictures.filter(\.picOutputFlag).count
            #expect(frames == entry.frames, "\(entry.file): \(frames) pictures, MANIFEST says \(entry.frames) frames")
            #expect(
                summary.pictures.first?.isRandomAccessPoint == true, "\(entry.file) does not start at an IRAP picture")

            // Every picture carries an MD5 decoded picture hash, one digest per colour component.
            let components = expected.chromaFormatIdc == 0 ? 1 : 3
            let hashed = summary.pictures.filter {
                if case .md5(let digests)? = $0.decodedPictureHash {
                    return digests.count == components && digests.allSatisfy { $0.count == 16 }
                }
                return false
            }.count
            #expect(
                hashed == summary.pictures.count,
                "\(entry.file): \(hashed) of \(summary.pictures.count) pictures have an MD5 hash SEI")

            // POC values are distinct within each coded video sequence.
            var seen: [Int: Set<Int>] = [:]
            var duplicates = 0
            for picture in summary.pictures {
                if !seen[picture.codedVideoSequenceIndex, default: []].insert(picture.pictureOrderCount).inserted {
                    duplicates += 1
                }
            }
            #expect(duplicates == 0, "\(entry.file): \(duplicates) repeated POC values within a CVS")

            // An hvcC record written from the parameter sets parses back identically.
            let record = try HEVCDecoderConfigurationRecord(
                videoParameterSets: summary.videoParameterSets, sequenceParameterSets: summary.sequenceParameterSets,
                pictureParameterSets: summary.pictureParameterSets)
            let serialized = try record.serialized()
            let parsed = try HEVCDecoderConfigurationRecord(parsing: serialized)
            #expect(parsed == record, "\(entry.file): hvcC did not round-trip")
            #expect(try parsed.serialized() == serialized)
            let firstSPS = try H265SequenceParameterSet.parse(
                nalUnit: try #require(summary.sequenceParameterSets.first))
            #expect(parsed.chromaFormat == UInt8(firstSPS.chromaFormatIdc))
            #expect(parsed.bitDepthLumaMinus8 == UInt8(firstSPS.bitDepthLumaMinus8))
            #expect(parsed.generalProfile == firstSPS.profileTierLevel.general)
            #expect(Int(parsed.numTemporalLayers) == firstSPS.maxSubLayersMinus1 + 1)

            table.append(
                "\(entry.file) | \(frames) / \(entry.frames) | \(formatOK ? "ok" : "MISMATCH") | \(hashed)/\(summary.pictures.count) | \(duplicates == 0 ? "ok" : "\(duplicates) repeated") | \(parsed == record ? "ok" : "DIFFERS")"
            )
        }
        print(table.joined(separator: "\n"))
    }

    @Test(
        "every parameter set, SEI and slice header parses on its own and the writers reproduce the parameter sets",
        .requiresH265Corpus)
    func everyNALUnitParses() throws {
        guard let manifest = H265Corpus.manifest() else { return }
        for entry in manifest {
            let bytes = try #require(H265Corpus.bytes(of: entry))
            var store = H265ParameterSetStore()
            var slices = 0
            var parsedSEIs = 0
            try bytes.withUnsafeBytes { data in
                for unit in AnnexB.nalUnits(in: data) {
                    let nal = UnsafeRawBufferPointer(rebasing: data[unit.payloadRange])
                    let header = try H265NALUnitHeader(parsing: nal)
                    switch header.nalUnitType {
                    case .videoParameterSet:
                        let vps = try H265VideoParameterSet.parse(nalUnit: nal)
                        #expect(
                            try H265VideoParameterSet.parse(nalUnit: vps.nalUnit()) == vps, "\(entry.file): VPS writer")
                        try store.storeVideoParameterSet(nal)
                    case .sequenceParameterSet:
                        let sps = try H265SequenceParameterSet.parse(nalUnit: nal)
                        #expect(
                            try H265SequenceParameterSet.parse(nalUnit: sps.nalUnit()) == sps,
                            "\(entry.file): SPS writer")
                        try store.storeSequenceParameterSet(nal)
                    case .pictureParameterSet:
                        let pps = try H265PictureParameterSet.parse(nalUnit: nal)
                        #expect(
                            try H265PictureParameterSet.parse(nalUnit: pps.nalUnit()) == pps,
                            "\(entry.file): PPS writer")
                        try store.storePictureParameterSet(nal)
                    case .prefixSEI, .suffixSEI:
                        let sps = store.sequenceParameterSetIDs.first.flatMap { store.sequenceParameterSet(id: $0) }
                        let sei = try H265SEI.parse(nalUnit: nal, activeSequenceParameterSet: sps)
                        #expect(sei.error == nil, "\(entry.file): \(String(describing: sei.error))")
                        parsedSEIs += 1
                    default:
                        guard header.nalUnitType.isVCL else { break }
                        let slice = try H265SliceSegmentHeader.parse(
                            nalUnit: nal, pictureParameterSet: { store.pictureParameterSet(id: $0) },
                            sequenceParameterSet: { store.sequenceParameterSet(id: $0) })
                        // Writing the parsed part back gives the same bits.
                        let (pps, sps) = try store.activate(pictureParameterSetID: slice.slicePicParameterSetID)
                        var writer = BitWriter()
                        slice.writeParsedPart(to: &writer, pps: pps, sps: sps)
                        let rbsp = RBSP.extractRBSP(from: UnsafeRawBufferPointer(rebasing: nal[2...]), maxBytes: 2048)
                        let written = writer.bytes
                        #expect(writer.bitCount == slice.parsedBitCount, "\(entry.file): slice header length")
                        let wholeBytes = writer.bitCount / 8
                        #expect(
                            Array(rbsp.prefix(wholeBytes)) == Array(written.prefix(wholeBytes)),
                            "\(entry.file): slice header bits")
                        slices += 1
                        // The parsers' path, through the store's per-PPS contexts, reads the
                        // same fields as the path through the parameter sets themselves.
                        let quick = try H265SliceSegmentHeader.parseThroughPictureOrderCount(
                            nalUnit: nal, contexts: { store.slicePictureContext(ppsID: $0) })
                        let reference = try H265SliceSegmentHeader.parse(
                            nalUnit: nal, pictureParameterSet: { store.pictureParameterSet(id: $0) },
                            sequenceParameterSet: { store.sequenceParameterSet(id: $0) },
                            extent: .throughPictureOrderCount)
                        #expect(quick == reference, "\(entry.file): slice header through the POC")
                        #expect(store.activationError(ppsID: slice.slicePicParameterSetID) == nil, "\(entry.file)")
                    }
                }
            }
            #expect(slices > 0 && parsedSEIs > 0, "\(entry.file)")
        }
    }

    @Test(
        "the field-coded stream: pictures are fields with pic_struct from the picture timing SEI", .requiresH265Corpus)
    func fieldCodedStream() throws {
        guard let manifest = H265Corpus.manifest() else { return }
        let entry = try #require(manifest.first { $0.file == "main_interlaced_tff.265" })
        let bytes = try #require(H265Corpus.bytes(of: entry))
        let summary = Self.summarize(bytes)
        let sps = try #require(
            summary.parameterSets.sequenceParameterSetIDs.first.flatMap {
                summary.parameterSets.sequenceParameterSet(id: $0)
            })
        let vui = try #require(sps.vui)
        #expect(vui.frameFieldInfoPresentFlag)
        let structures = summary.pictures.map { $0.pictureTiming?.picStruct }
        #expect(!structures.contains(nil), "every picture carries pic_struct")
        // x265 --interlace tff codes each field as a picture (E.3.1: field_seq_flag 1) and says
        // which field it is in pic_struct (D.3.3, Table D.2: 1 top, 2 bottom).
        #expect(vui.fieldSeqFlag)
        #expect(summary.pictures.count == 30)
        let timings = summary.pictures.compactMap(\.pictureTiming)
        #expect(timings.count == summary.pictures.count)
        #expect(timings.allSatisfy { $0.isField })
        // In output order the fields alternate, top field first: 1, 2, 1, 2, ...
        let outputOrder = summary.pictures.sorted {
            ($0.codedVideoSequenceIndex, $0.pictureOrderCount) < ($1.codedVideoSequenceIndex, $1.pictureOrderCount)
        }
        let inOutputOrder = outputOrder.map { $0.pictureTiming?.picStruct }
        let topFieldFirst = (0..<inOutputOrder.count).map { $0 % 2 == 0 ? 1 : 2 }
        #expect(inOutputOrder == topFieldFirst.map { Optional($0) }, "pic_struct in output order: \(inOutputOrder)")
    }
}
