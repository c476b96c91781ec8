import H264
import MediaCore
import SwiftVT
import SwiftVTTestSupport
import Testing

/// The GStreamer-free input side of decoding: access-unit bytes as containers carry them in,
/// samples with 4-byte lengths and format changes out.
@Suite("H264SampleBuilder")
struct H264SampleBuilderTests {
    /// The NAL units of a corpus stream's first access units: SPS, PPS, IDR slice, then more slices.
    static func nalUnits(of file: String) throws -> [[UInt8]] {
        let entry = try #require(Corpus.entry(file))
        let bytes = try #require(Corpus.bytes(of: entry))
        var units: [[UInt8]] = []
        bytes.withUnsafeBytes { raw in
            AnnexB.forEachNALUnit(in: raw) { unit in units.append(Array(raw[unit.payloadRange])) }
        }
        return units
    }

    static func annexB(_ units: [[UInt8]]) -> [UInt8] { units.flatMap { [0, 0, 0, 1] + $0 } }

    static func lengthPrefixed(_ units: [[UInt8]], size: Int) -> [UInt8] {
        units.flatMap { unit -> [UInt8] in
            let count = unit.count
            return (0..<size).reversed().map { UInt8(truncatingIfNeeded: count >> (8 * $0)) } + unit
        }
    }

    @Test("Annex B: start codes become 4-byte lengths, and the first SPS/PPS make the format", .requiresCorpus)
    func annexBInput() throws {
        let units = try Array(Self.nalUnits(of: "BA_MW_D.264").prefix(3))
        #expect(units.map { $0[0] & 0x1F } == [7, 8, 5])
        var builder = H264SampleBuilder()
        let unit = try Self.annexB(units).withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
        #expect(unit.formatChanged)
        #expect(unit.notices.isEmpty)
        #expect(unit.convertedBytes == Self.lengthPrefixed(units, size: 4))
        let description = try #require(builder.formatDescription)
        #expect(description.dimensions.width == 176 && description.dimensions.height == 144)
        // The same parameter sets again: no change.
        let again = try Self.annexB(units).withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
        #expect(!again.formatChanged)
    }

    @Test("avc with 4-byte lengths is wrapped without a copy; 2-byte lengths are re-framed", .requiresCorpus)
    func lengthPrefixedInput() throws {
        let units = try Array(Self.nalUnits(of: "BA_MW_D.264").prefix(3))
        let record = try AVCDecoderConfigurationRecord(
            sequenceParameterSets: [units[0]], pictureParameterSets: [units[1]], nalUnitHeaderLength: 2)
        var builder = H264SampleBuilder()
        let changed = builder.setInput(.avc(nalUnitHeaderLength: 2), configuration: record)
        #expect(changed)
        let twoByte = try Self.lengthPrefixed([units[2]], size: 2).withUnsafeBytes { raw throws(H264Error) in
            try builder.read(raw)
        }
        #expect(twoByte.convertedBytes == Self.lengthPrefixed([units[2]], size: 4))
        builder.setInput(.avc(nalUnitHeaderLength: 4), configuration: nil)
        let fourByte = try Self.lengthPrefixed([units[2]], size: 4).withUnsafeBytes { raw throws(H264Error) in
            try builder.read(raw)
        }
        #expect(fourByte.convertedBytes == nil)
        let sample = try H264SampleBuilder.sampleBuffer(
            fourByte, original: BlockBuffer(Self.lengthPrefixed([units[2]], size: 4)),
            inBandParameterSets: [units[0], units[1]],
            formatDescription: try #require(builder.formatDescription), timing: .invalid, isSync: true)
        // In-band parameter sets first, then the frame, all with 4-byte lengths.
        let data = try #require(sample.dataBuffer)
        #expect(data.withContiguousBytes { Array($0) } == Self.lengthPrefixed([units[0], units[1], units[2]], size: 4))
    }

    @Test("length-prefixed NAL units under a byte-stream label are read as such, and said once", .requiresCorpus)
    func mislabelledInput() throws {
        let units = try Array(Self.nalUnits(of: "BA_MW_D.264").prefix(3))
        var builder = H264SampleBuilder()
        let bytes = Self.lengthPrefixed(units, size: 4)
        let first = try bytes.withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
        #expect(first.notices == [.lengthPrefixedUnderByteStreamLabel(nalUnitHeaderLength: 4)])
        #expect(first.formatChanged)
        let second = try bytes.withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
        #expect(second.notices.isEmpty)
        // Annex B does not tile as lengths.
        #expect(
            Self.annexB(units).withUnsafeBytes { H264SampleBuilder.lengthPrefixTiling($0, nalUnitHeaderLength: nil) }
                == nil)
    }

    @Test("a damaged length keeps the whole NAL units before it; damage at the start throws", .requiresCorpus)
    func damagedLength() throws {
        let units = try Array(Self.nalUnits(of: "BA_MW_D.264").prefix(3))
        var builder = H264SampleBuilder()
        builder.setInput(.avc3(nalUnitHeaderLength: 4), configuration: nil)
        let whole = Self.lengthPrefixed(Array(units.prefix(2)), size: 4)
        let damaged = whole + [0x7F, 0xFF, 0xFF, 0xFF] + units[2]
        let unit = try damaged.withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
        #expect(unit.convertedBytes == whole)
        guard case .damagedLength(_, let intact)? = unit.notices.first else {
            Issue.record("no damage notice: \(unit.notices)")
            return
        }
        #expect(intact == whole.count)
        #expect(throws: H264Error.self) {
            try [0x7F, 0xFF, 0xFF, 0xFF, 0x65].withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
        }
    }

    @Test("an SPS that changes its id's content outside an IDR access unit is ignored (7.4.1.2.1)", .requiresCorpus)
    func changedSequenceParameterSetOutsideIDR() throws {
        let units = try Self.nalUnits(of: "BA_MW_D.264")
        let sps = units[0]
        let nonIDRSlice = try #require(units.first { $0[0] & 0x1F == 1 })
        var builder = H264SampleBuilder()
        _ = try Self.annexB(Array(units.prefix(3))).withUnsafeBytes { raw throws(H264Error) in try builder.read(raw) }
        let before = builder.formatDescription
        // The same id with other content (another level_idc, byte 3 of the SPS NAL unit).
        var changed = sps
        changed[3] = changed[3] == 30 ? 31 : 30
        let unit = try Self.annexB([changed, nonIDRSlice]).withUnsafeBytes { raw throws(H264Error) in
            try builder.read(raw)
        }
        #expect(unit.notices == [.sequenceParameterSetChangeIgnored(id: 0)])
        #expect(!unit.formatChanged)
        #expect(builder.formatDescription == before)
        // At an IDR picture the change is taken.
        let atIDR = try Self.annexB([changed, units[1], units[2]]).withUnsafeBytes { raw throws(H264Error) in
            try builder.read(raw)
        }
        #expect(atIDR.formatChanged)
    }

    @Test(
        "decoder delay: the stream's reorder depth (0 for Baseline, max_num_reorder_frames, else the DPB) plus a frame per extra frame thread",
        .requiresCorpus, arguments: [("BA_MW_D.264", 0), ("VID_1280x720_cabac_temporal_direct.264", -1)])
    func decoderDelay(stream: String, reorder: Int) throws {
        let units = try Array(Self.nalUnits(of: stream).prefix(2))
        let description = try FormatDescription(h264ParameterSets: units)
        let sps = try SequenceParameterSet.parse(nalUnit: try #require(description.h264SequenceParameterSets.first))
        // Baseline: no B slices, nothing reordered (A.2.1); else the VUI's or the DPB's depth.
        let expected = reorder >= 0 ? reorder : (sps.vui?.maxNumReorderFrames ?? sps.maxDpbFrames)
        let single = try #require(H264SampleBuilder.decoderDelay(for: description, frameThreads: 1))
        #expect(single == expected)
        #expect(H264SampleBuilder.decoderDelay(for: description, frameThreads: 0) == single)
        #expect(H264SampleBuilder.decoderDelay(for: description, frameThreads: 4) == single + 3)
    }
}
