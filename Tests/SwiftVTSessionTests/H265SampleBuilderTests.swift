import H265
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Synchronization
import Testing

/// H.265 access units in (Annex B with in-band VPS/SPS/PPS, hvc1/hev1 with an hvcC record), samples
/// with 4-byte lengths, the hvc1 description and format changes out; the picture hash check of
/// vtdec's verify-picture-hash; and a session decoding the corpus through the builder.
@Suite("H265SampleBuilder")
struct H265SampleBuilderTests {
    /// The NAL units of a corpus stream (Annex B).
    static func nalUnits(of file: String) throws -> [[UInt8]] {
        let entry = try #require(H265Corpus.manifest()?.first { $0.file == file })
        let bytes = try #require(H265Corpus.bytes(of: entry))
        var units: [[UInt8]] = []
        bytes.withUnsafeBytes { raw in
            AnnexB.forEachNALUnit(in: raw) { unit in units.append(Array(raw[unit.payloadRange])) }
        }
        return units
    }

    static func type(_ unit: [UInt8]) -> H265NALUnitType { H265NALUnitType(sixBits: unit[0] >> 1) }

    /// The parameter sets, then the NAL units of the first access unit (up to the second picture's
    /// first slice).
    static func firstAccessUnit(of file: String) throws -> [[UInt8]] {
        let units = try nalUnits(of: file)
        var slices = 0
        return Array(
            units.prefix { unit in
                // first_slice_segment_in_pic_flag
                if type(unit).isVCL, unit.count > 2, unit[2] & 0x80 != 0 { slices += 1 }
                return slices <= 1
            })
    }

    /// The framing is the same for both codecs: the H.264 tests' helpers.
    static func annexB(_ units: [[UInt8]]) -> [UInt8] { H264SampleBuilderTests.annexB(units) }

    static func lengthPrefixed(_ units: [[UInt8]], size: Int) -> [UInt8] {
        H264SampleBuilderTests.lengthPrefixed(units, size: size)
    }

    @Test(
        "Annex B: start codes become 4-byte lengths, the VPS/SPS/PPS make an hvc1 description after the window",
        .requiresH265Corpus)
    func annexBInput() throws {
        let units = try Self.firstAccessUnit(of: "main_confwin_odd.265")
        var builder = H265SampleBuilder()
        let unit = try Self.annexB(units).withUnsafeBytes { raw throws(H265Error) in try builder.read(raw) }
        #expect(unit.formatChanged)
        #expect(unit.notices.isEmpty)
        #expect(unit.convertedBytes == Self.lengthPrefixed(units, size: 4))
        let description = try #require(builder.formatDescription)
        #expect(description.codecType == .hevc)
        #expect(description.dimensions.width == 346 && description.dimensions.height == 282)
        // The suffix SEI (the decoded picture hash) is found in the converted bytes.
        let converted = try #require(unit.convertedBytes)
        let seis = unit.seiNALUnitRanges.map { Array(converted[$0]) }
        #expect(seis.contains { Self.type($0) == .suffixSEI })
        let again = try Self.annexB(units).withUnsafeBytes { raw throws(H265Error) in try builder.read(raw) }
        #expect(!again.formatChanged)
    }

    @Test("hvc1 with 4-byte lengths is wrapped without a copy; 2-byte lengths are re-framed", .requiresH265Corpus)
    func lengthPrefixedInput() throws {
        let units = try Self.firstAccessUnit(of: "main_ld_cif_slices.265")
        let sets = units.filter {
            [.videoParameterSet, .sequenceParameterSet, .pictureParameterSet].contains(Self.type($0))
        }
        let picture = units.filter { !sets.contains($0) }
        let record = try HEVCDecoderConfigurationRecord(
            parsing: try #require(
                FormatDescription(hevcParameterSets: sets, nalUnitHeaderLength: 2).hevcDecoderConfigurationRecord))
        var builder = H265SampleBuilder()
        let changed = builder.setInput(.hvc1(nalUnitHeaderLength: 2), configuration: record)
        #expect(changed)
        let twoByte = try Self.lengthPrefixed(picture, size: 2).withUnsafeBytes { raw throws(H265Error) in
            try builder.read(raw)
        }
        #expect(twoByte.convertedBytes == Self.lengthPrefixed(picture, size: 4))
        builder.setInput(.hvc1(nalUnitHeaderLength: 4), configuration: nil)
        let fourByte = try Self.lengthPrefixed(picture, size: 4).withUnsafeBytes { raw throws(H265Error) in
            try builder.read(raw)
        }
        #expect(fourByte.convertedBytes == nil)
        #expect(
            builder.formatDescription?.hevcSequenceParameterSets
                == sets.filter { Self.type($0) == .sequenceParameterSet })
    }

    @Test("length-prefixed NAL units under a byte-stream label are read as such, and said once", .requiresH265Corpus)
    func mislabelledInput() throws {
        let units = try Self.firstAccessUnit(of: "main_ld_cif_slices.265")
        var builder = H265SampleBuilder()
        let bytes = Self.lengthPrefixed(units, size: 4)
        let first = try bytes.withUnsafeBytes { raw throws(H265Error) in try builder.read(raw) }
        #expect(first.notices == [.lengthPrefixedUnderByteStreamLabel(nalUnitHeaderLength: 4)])
        #expect(first.formatChanged)
        let second = try bytes.withUnsafeBytes { raw throws(H265Error) in try builder.read(raw) }
        #expect(second.notices.isEmpty)
        #expect(
            Self.annexB(units).withUnsafeBytes { H265SampleBuilder.lengthPrefixTiling($0, nalUnitHeaderLength: nil) }
                == nil)
    }

    @Test("a damaged length keeps the whole NAL units before it; damage at the start throws", .requiresH265Corpus)
    func damagedLength() throws {
        let units = try Self.firstAccessUnit(of: "main_ld_cif_slices.265")
        var builder = H265SampleBuilder()
        builder.setInput(.hev1(nalUnitHeaderLength: 4), configuration: nil)
        let whole = Self.lengthPrefixed(Array(units.prefix(3)), size: 4)
        let damaged = whole + [0x7F, 0xFF, 0xFF, 0xFF] + units[3]
        let unit = try damaged.withUnsafeBytes { raw throws(H265Error) in try builder.read(raw) }
        #expect(unit.convertedBytes == whole)
        guard case .damagedLength(_, let intact)? = unit.notices.first else {
            Issue.record("no damage notice: \(unit.notices)")
            return
        }
        #expect(intact == whole.count)
        #expect(throws: H265Error.self) {
            try [0x7F, 0xFF, 0xFF, 0xFF, 0x26, 0x01].withUnsafeBytes { raw throws(H265Error) in try builder.read(raw) }
        }
    }

    @Test(
        "an SPS that changes its id's content outside an IRAP access unit is ignored (7.4.2.4.2)", .requiresH265Corpus)
    func changedSequenceParameterSetOutsideIRAP() throws {
        let units = try Self.nalUnits(of: "main_ld_cif_slices.265")
        let first = try Self.firstAccessUnit(of: "main_ld_cif_slices.265")
        var builder = H265SampleBuilder()
        _ = try Self.annexB(first).withUnsafeBytes { raw throws(H265Error) in try builder.read(raw) }
        let before = builder.formatDescription
        let sps = try #require(units.first { Self.type($0) == .sequenceParameterSet })
        let trailing = try #require(units.first { Self.type($0) == .trailR || Self.type($0) == .trailN })
        // The same id with another general_level_idc, the byte after the general profile fields
        // (7.3.3: 12 bytes from the byte after the two-byte header and the ids byte; emulation
        // prevention bytes among the zero flags move it on, three in the corpus's SPSs).
        let level = UInt8(try H265SequenceParameterSet.parse(nalUnit: sps).profileTierLevel.generalLevelIdc)
        let position = try #require((14..<20).first { sps[$0] == level })
        var changed = sps
        changed[position] = level == 93 ? 90 : 93
        let unit = try Self.annexB([changed, trailing]).withUnsafeBytes { raw throws(H265Error) in try builder.read(raw)
        }
        #expect(unit.notices == [.sequenceParameterSetChangeIgnored(id: 0)])
        #expect(!unit.formatChanged)
        #expect(builder.formatDescription == before)
    }

    @Test(
        "decoder delay: sps_max_num_reorder_pics plus a frame per extra frame thread", .requiresH265Corpus,
        arguments: ["main_bpyramid_refs5.265", "main_ld_cif_slices.265", "main_intra_only.265"])
    func decoderDelay(stream: String) throws {
        let units = try Self.nalUnits(of: stream)
        let sets = units.filter {
            [.videoParameterSet, .sequenceParameterSet, .pictureParameterSet].contains(Self.type($0))
        }
        let description = try FormatDescription(hevcParameterSets: Array(sets.prefix(3)))
        let sps = try H265SequenceParameterSet.parse(nalUnit: try #require(description.hevcSequenceParameterSets.first))
        let single = try #require(H265SampleBuilder.decoderDelay(for: description, frameThreads: 1))
        #expect(single == sps.outputReorderDepth)
        #expect(H265SampleBuilder.decoderDelay(for: description, frameThreads: 4) == single + 3)
    }

    @Test(
        "every corpus stream through the builder and a session: the pictures match their hash SEIs", .requiresH265Corpus
    )
    func corpusMatchesItsHashes() throws {
        // The 1080p stream is left to tests/vtdec_h265 (the plugin in release): this debug build's
        // MD5 would take most of a minute over it.
        for entry in try #require(H265Corpus.manifest()) where entry.file != "main_1080p.265" {
            let units = try Self.nalUnits(of: entry.file)
            var builder = H265SampleBuilder()
            var reader = H265PictureHashReader()
            let expected = Mutex<[UInt64: H265ExpectedPictureHash]>([:])
            let outcomes = Mutex<[H265PictureHashCheck.Outcome]>([])
            var session: DecompressionSession?
            // Access units: a new one at each first slice of a picture after a VCL NAL unit
            // (7.4.2.4.4, simplified for these streams: prefix NAL units start one too).
            var accessUnits: [[[UInt8]]] = [[]]
            var sawSlice = false
            for unit in units {
                let type = Self.type(unit)
                let startsPicture =
                    (type.isVCL && unit.count > 2 && unit[2] & 0x80 != 0)
                    || [
                        .videoParameterSet, .sequenceParameterSet, .pictureParameterSet, .prefixSEI,
                        .accessUnitDelimiter
                    ].contains(type)
                if startsPicture && sawSlice {
                    accessUnits.append([])
                    sawSlice = false
                }
                if type.isVCL { sawSlice = true }
                accessUnits[accessUnits.count - 1].append(unit)
            }
            for (number, accessUnit) in accessUnits.enumerated() {
                let unit = try Self.annexB(accessUnit).withUnsafeBytes { raw throws(H265Error) in try builder.read(raw)
                }
                let description = try #require(builder.formatDescription)
                if session == nil {
                    session = try DecompressionSession(
                        formatDescription: description, decoderSpecification: .init(threadCount: 1),
                        backends: [LibavcodecDecoderFactory()]
                    ) { frame in
                        guard let image = frame.imageBuffer, let hash = expected.withLock({ $0[frame.frameReference] })
                        else { return }
                        let outcome = H265PictureHashCheck.check(image, against: hash)
                        outcomes.withLock { $0.append(outcome) }
                    }
                }
                let converted = try #require(unit.convertedBytes)
                if let read = converted.withUnsafeBytes({ reader.read(sample: $0) }), let hash = read.expected {
                    expected.withLock { $0[UInt64(number)] = hash }
                }
                let sample = try H265SampleBuilder.sampleBuffer(
                    unit, original: BlockBuffer(), inBandParameterSets: [], formatDescription: description,
                    timing: .invalid,
                    isSync: number == 0)
                try session?.decode(sample, frameReference: UInt64(number))
            }
            try session?.finishDelayedFrames()
            let checked = outcomes.withLock { $0 }
            #expect(checked.count == entry.frames, "\(entry.file)")
            #expect(
                checked.allSatisfy { $0 == .matches }, "\(entry.file): \(checked.filter { $0 != .matches }.prefix(3))")
        }
    }
}
