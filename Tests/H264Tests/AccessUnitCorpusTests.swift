import H264
import SwiftVTTestSupport
import Testing

/// Runs the whole bitstream layer over the real streams of the corpus.
@Suite("Corpus: access units, AVCC and avcC")
struct AccessUnitCorpusTests {
    /// Splits a stream into access units with the assembler.
    static func accessUnits(of bytes: [UInt8]) -> (
        pictures: [AccessUnitPicture], accessUnitCount: Int, problems: [H264Error]
    ) {
        var assembler = AccessUnitAssembler()
        var pictures: [AccessUnitPicture] = []
        var accessUnitCount = 0
        var problems: [H264Error] = []
        bytes.withUnsafeBytes { data in
            AnnexB.forEachNALUnit(in: data) { unit in
                let step = assembler.push(nalUnit: UnsafeRawBufferPointer(rebasing: data[unit.payloadRange]))
                if step.startsNewAccessUnit { accessUnitCount += 1 }
                if let picture = step.completedPicture { pictures.append(picture) }
                if let problem = step.problem { problems.append(problem) }
            }
        }
        if let last = assembler.finish() { pictures.append(last) }
        return (pictures, accessUnitCount, problems)
    }

    @Test("every undamaged stream has as many primary pictures as MANIFEST.tsv has frames", .requiresCorpus)
    func accessUnitCountMatchesManifest() throws {
        guard let manifest = Corpus.manifest() else { return }
        var checked = 0
        for entry in manifest where !entry.isDamaged {
            let bytes = try #require(Corpus.bytes(of: entry), "cannot read \(entry.file)")
            let result = Self.accessUnits(of: bytes)
            // A field pair is one frame: count frames as complete frames plus field pairs.
            let frames =
                result.pictures.filter { !$0.fieldPicFlag }.count
                + result.pictures.filter { $0.fieldPicFlag }.count / 2
            #expect(frames == entry.frames, "\(entry.file): \(frames) access units, MANIFEST says \(entry.frames)")
            #expect(result.problems.isEmpty, "\(entry.file): \(result.problems)")
            #expect(
                result.pictures.first?.isRandomAccessPoint == true,
                "\(entry.file) does not start at a random access point")
            checked += 1
        }
        #expect(checked >= 20)
    }

    @Test("the SVC stream yields no base-layer picture", .requiresCorpus)
    func scalableStreamHasNoBaseLayerPicture() throws {
        guard let manifest = Corpus.manifest() else { return }
        let entry = try #require(manifest.first { $0.file == "sps_subsetsps_bothVUI.264" })
        let bytes = try #require(Corpus.bytes(of: entry))
        let result = Self.accessUnits(of: bytes)
        #expect(result.pictures.isEmpty)
    }

    @Test(
        "Annex B -> AVCC -> Annex B keeps every NAL unit byte-identical, for 1-, 2- and 4-byte lengths", .requiresCorpus
    )
    func avccRoundTrip() throws {
        guard let manifest = Corpus.manifest() else { return }
        for entry in manifest {
            let bytes = try #require(Corpus.bytes(of: entry))
            let original = AnnexB.nalUnits(in: bytes).map { Array(bytes[$0.payloadRange]) }
            #expect(!original.isEmpty)
            for lengthSize in [1, 2, 4] {
                let largest = original.map(\.count).max() ?? 0
                if largest > AVCC.maximumNALUnitLength(forHeaderLength: lengthSize) {
                    // The conversion must refuse, not truncate.
                    #expect(throws: H264Error.self) {
                        try AVCC.lengthPrefixed(fromAnnexB: bytes, nalUnitHeaderLength: lengthSize)
                    }
                    continue
                }
                let avcc = try AVCC.lengthPrefixed(fromAnnexB: bytes, nalUnitHeaderLength: lengthSize)
                let annexB = try AVCC.annexB(fromLengthPrefixed: avcc, nalUnitHeaderLength: lengthSize)
                let roundTripped = AnnexB.nalUnits(in: annexB).map { Array(annexB[$0.payloadRange]) }
                #expect(roundTripped == original, "\(entry.file) with \(lengthSize)-byte lengths")
            }
            // In place, on a copy rewritten with four-byte start codes.
            var fourByte = try AVCC.annexB(
                fromLengthPrefixed: try AVCC.lengthPrefixed(fromAnnexB: bytes), nalUnitHeaderLength: 4)
            let converted = fourByte.withUnsafeMutableBytes { AVCC.convertAnnexBInPlace($0) }
            #expect(converted)
            let inPlaceUnits = try fourByte.withUnsafeBytes { try AVCC.nalUnitRanges(in: $0, nalUnitHeaderLength: 4) }
                .map { Array(fourByte[$0]) }
            #expect(inPlaceUnits == original, "\(entry.file) in place")
            try fourByte.withUnsafeMutableBytes { try AVCC.convertLengthPrefixedToAnnexBInPlace($0) }
            #expect(AnnexB.nalUnits(in: fourByte).map { Array(fourByte[$0.payloadRange]) } == original)
        }
    }

    @Test("the streaming splitter agrees with the whole-buffer scanner for any chunking", .requiresCorpus)
    func streamingSplitterAgrees() throws {
        guard let manifest = Corpus.manifest() else { return }
        var generator = SeededGenerator(seed: 7)
        for entry in manifest.prefix(12) {
            let bytes = try #require(Corpus.bytes(of: entry))
            let expected = AnnexB.nalUnits(in: bytes).map { Array(bytes[$0.payloadRange]) }
            var splitter = AnnexBStreamSplitter()
            var units: [[UInt8]] = []
            var offset = 0
            while offset < bytes.count {
                let end = min(bytes.count, offset + Int.random(in: 1...4000, using: &generator))
                units += splitter.append(Array(bytes[offset..<end]))
                offset = end
            }
            if let last = splitter.finish() { units.append(last) }
            #expect(units == expected, "\(entry.file)")
        }
    }

    @Test("avcC built from each stream's parameter sets parses back to the same record", .requiresCorpus)
    func avcCRoundTrip() throws {
        guard let manifest = Corpus.manifest() else { return }
        for entry in manifest where entry.file != "sps_subsetsps_bothVUI.264" {
            let bytes = try #require(Corpus.bytes(of: entry))
            var spss: [[UInt8]] = []
            var ppss: [[UInt8]] = []
            for unit in AnnexB.nalUnits(in: bytes) {
                let nal = Array(bytes[unit.payloadRange])
                switch NALUnitType(rawValue: nal[0]) {
                case .sequenceParameterSet where !spss.contains(nal): spss.append(nal)
                case .pictureParameterSet where !ppss.contains(nal): ppss.append(nal)
                default: break
                }
            }
            for lengthSize in [1, 2, 4] {
                let record = try AVCDecoderConfigurationRecord(
                    sequenceParameterSets: spss, pictureParameterSets: ppss, nalUnitHeaderLength: lengthSize)
                let serialized = try record.serialized()
                let parsed = try AVCDecoderConfigurationRecord(parsing: serialized)
                #expect(parsed == record, "\(entry.file)")
                #expect(parsed.sequenceParameterSets == spss && parsed.pictureParameterSets == ppss)
                #expect(parsed.profileIndication == spss[0][1] && parsed.levelIndication == spss[0][3])
                #expect((parsed.highProfileExtension != nil) == [100, 110, 122, 144].contains(spss[0][1]))
            }
        }
    }

    @Test("damaged corpus streams and 100 seeded damaged variants never crash the bitstream layer", .requiresCorpus)
    func damagedInputNeverCrashes() throws {
        guard let manifest = Corpus.manifest() else { return }
        for entry in manifest where entry.isDamaged {
            let bytes = try #require(Corpus.bytes(of: entry))
            _ = Self.accessUnits(of: bytes)
        }
        let small = manifest.filter { !$0.isDamaged && $0.bytes < 200_000 }
        var generator = SeededGenerator(seed: 2026)
        var headerDamageDetected = 0
        for variant in 0..<100 {
            let entry = small[variant % small.count]
            var bytes = try #require(Corpus.bytes(of: entry))
            let units = AnnexB.nalUnits(in: bytes)
            switch variant % 3 {
            case 0:
                // Truncation anywhere.
                bytes.removeLast(Int.random(in: 1..<bytes.count, using: &generator))
            case 1:
                // Bit flips anywhere (mostly slice data, invisible at this layer).
                for _ in 0..<(1 + variant % 40) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                }
            default:
                // Bit flips in the first bytes of NAL units: headers and parameter sets.
                for _ in 0..<(1 + variant % 8) {
                    let unit = units[Int.random(in: 0..<units.count, using: &generator)]
                    let index = unit.payloadOffset + Int.random(in: 1..<min(6, unit.payloadLength), using: &generator)
                    bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                }
            }
            let result = Self.accessUnits(of: bytes)
            if variant % 3 == 2 && !result.problems.isEmpty { headerDamageDetected += 1 }
            _ = try? AVCDecoderConfigurationRecord(parsing: bytes)
        }
        // Most header damage is detected (a flip may also produce another valid value).
        #expect(
            headerDamageDetected >= 20, "only \(headerDamageDetected) of 33 header-damaged variants reported a problem")
    }
}

/// RTP payloaders that repeat the parameter sets before every IDR slice (rtph264pay
/// config-interval=-1 with several slices per picture) put an SPS and a PPS between two slices of
/// one picture, which 7.4.1.2.3 does not allow; rtph264depay hands that on as it is. h264parse and
/// libavcodec keep such a picture whole, and so must the splitter: the parameter sets belong to the
/// access unit of the picture they sit in.
@Suite("Parameter sets between the slices of one picture")
struct ParameterSetsBetweenSlicesTests {
    /// `bytes` with the last SPS and PPS seen written again before every IDR slice that is not the
    /// first of its picture (first_mb_in_slice != 0: its first payload bit is 0, ue(v) not "1").
    static func withParameterSetsBeforeEveryIDRSlice(_ bytes: [UInt8]) -> (stream: [UInt8], inserted: Int) {
        var out: [UInt8] = []
        var sps: [UInt8] = []
        var pps: [UInt8] = []
        var inserted = 0
        for unit in AnnexB.nalUnits(in: bytes) {
            let nal = Array(bytes[unit.payloadRange])
            switch nal[0] & 0x1F {
            case 7: sps = nal
            case 8: pps = nal
            case 5 where nal.count > 1 && nal[1] & 0x80 == 0 && !sps.isEmpty && !pps.isEmpty:
                out += [0, 0, 0, 1] + sps + [0, 0, 0, 1] + pps
                inserted += 1
            default: break
            }
            out += [0, 0, 0, 1] + nal
        }
        return (out, inserted)
    }

    /// The splitter over `bytes` handed over in `pieceSize` pieces (the whole at once when nil),
    /// as GstBaseParse hands over its adapter: the primary pictures of the access units, in order.
    static func split(_ bytes: [UInt8], nalAligned: Bool) -> [AccessUnitPicture?] {
        var splitter = AccessUnitSplitter()
        var pictures: [AccessUnitPicture?] = []
        // NAL-aligned input (rtph264depay alignment=nal): the data grows one NAL unit at a time
        // and every call ends at a NAL unit boundary; the last call ends the stream.
        let ends = nalAligned ? AnnexB.nalUnits(in: bytes).map { $0.payloadRange.upperBound } : [bytes.count]
        var consumed = 0
        for (index, end) in ends.enumerated() {
            let last = index == ends.count - 1
            loop: while true {
                let result = bytes[consumed..<end].withUnsafeBytes { data in
                    splitter.next(in: data, dataEnd: last ? .accessUnitBoundary : .nalUnitBoundary)
                }
                switch result {
                case .skip(let count): consumed += count
                case .accessUnit(let unit):
                    consumed += unit.byteCount
                    pictures.append(unit.picture)
                    if consumed >= end { break loop }
                case .needMoreData: break loop
                }
            }
        }
        return pictures
    }

    @Test(
        "one access unit per picture, slices counted, with the parameter sets repeated inside IDR pictures",
        .requiresCorpus,
        arguments: ["test_cif_I_CABAC_slice.264", "SVA_Base_B.264"])
    func parameterSetsInsideAPictureKeepItWhole(file: String) throws {
        let entry = try #require(Corpus.entry(file))
        let original = try #require(Corpus.bytes(of: entry))
        let (modified, inserted) = Self.withParameterSetsBeforeEveryIDRSlice(original)
        #expect(inserted > 0, "\(file) has no IDR picture of several slices")
        let reference = Self.split(original, nalAligned: false).compactMap { $0 }
        #expect(reference.count == entry.frames)
        for nalAligned in [false, true] {
            let pictures = Self.split(modified, nalAligned: nalAligned).compactMap { $0 }
            #expect(
                pictures.count == entry.frames,
                "\(file), NAL-aligned \(nalAligned): \(pictures.count) pictures for \(entry.frames)")
            #expect(
                pictures.map(\.sliceCount) == reference.map(\.sliceCount),
                "\(file), NAL-aligned \(nalAligned): slices per picture differ")
            #expect(pictures.map(\.pictureOrderCount) == reference.map(\.pictureOrderCount))
        }
    }
}
