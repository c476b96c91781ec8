import H264
import MediaCore
import SoftwareCodecs
import SwiftVT
import SwiftVTTestSupport
import Testing

/// IDRPictureIDRewriting (what swiftvt-farm's splice does where two chunks meet) over the
/// corpus: every IDR picture of a stream gets the replacement idr_pic_id (0 -> 15: the ue(v)
/// code grows by 8 bits, so CAVLC slice data moves by a byte and CABAC data is realigned;
/// distinct from the previous IDR picture's new id, 7.4.3), and libavcodec must decode the
/// rewritten stream to the corpus's reference MD5: nothing but the id changed.
@Suite("IDRPictureIDRewriting over the corpus", .serialized)
struct IDRPictureIDRewritingTests {
    @Test("the replacement id keeps the code length modulo 8 bits")
    func replacementIDs() {
        #expect(IDRPictureIDRewriting.replacementID(for: 0) == 15)
        #expect(IDRPictureIDRewriting.replacementID(for: 1) == 2)
        // ue(v) codes 1 and 2 in 3 bits, 31...62 in 11.
        #expect(IDRPictureIDRewriting.replacementID(for: 1, avoiding: [2]) == 31)
        #expect([0, 1, 2, 3, 15, 31].map(IDRPictureIDRewriting.codeLength) == [1, 3, 3, 5, 9, 11])
    }

    @Test("rewritten IDR slices decode to the reference MD5, CAVLC and CABAC", .requiresCorpus)
    func rewrittenStreamsDecodeExactly() throws {
        guard let manifest = Corpus.manifest() else { return }
        var rewrittenCAVLC = 0
        var rewrittenCABAC = 0
        var refused: [String] = []
        for entry in manifest where !entry.isDamaged {
            let bytes = try #require(Corpus.bytes(of: entry))
            let original = try CorpusStream.load(bytes)
            var parameterSets = ParameterSetStore()
            var slicesRewritten = 0
            var usesCABAC = false
            var refusal: String?
            var units = original.accessUnits
            var previousNewID: Int?
            for unitIndex in units.indices {
                var newIDOfThisUnit: Int?
                for nalIndex in units[unitIndex].indices {
                    let nal = units[unitIndex][nalIndex]
                    let type = NALUnitType(rawValue: nal[0])
                    if type == .sequenceParameterSet {
                        _ = try nal.withUnsafeBytes { bytes in try parameterSets.storeSequenceParameterSet(bytes) }
                    } else if type == .pictureParameterSet {
                        _ = try nal.withUnsafeBytes { bytes in try parameterSets.storePictureParameterSet(bytes) }
                    }
                    guard nal[0] & 0x1F == 5, refusal == nil else { continue }
                    let lookups = (
                        pps: { (id: Int) in parameterSets.pictureParameterSet(id: id) },
                        sps: { (id: Int) in parameterSets.sequenceParameterSet(id: id) }
                    )
                    let before = try SliceHeader.parse(
                        nalUnit: nal, pictureParameterSets: lookups.pps, sequenceParameterSets: lookups.sps)
                    let newID =
                        newIDOfThisUnit
                        ?? IDRPictureIDRewriting.replacementID(
                            for: before.idrPicID, avoiding: Set([previousNewID].compactMap { $0 }))
                    newIDOfThisUnit = newID
                    let attempt = Result { () throws(H264Error) -> [UInt8] in
                        try IDRPictureIDRewriting.rewrite(
                            idrSlice: nal, to: newID, pictureParameterSets: lookups.pps,
                            sequenceParameterSets: lookups.sps)
                    }
                    if case .failure(.unsupported(let reason)) = attempt {
                        refusal = reason
                        continue
                    }
                    let rewritten = try attempt.get()
                    var after = try SliceHeader.parse(
                        nalUnit: rewritten, pictureParameterSets: lookups.pps, sequenceParameterSets: lookups.sps)
                    #expect(after.idrPicID == newID, "\(entry.file): idr_pic_id \(after.idrPicID)")
                    // Every other field as it was.
                    after.idrPicID = before.idrPicID
                    after.headerBitSize = before.headerBitSize
                    after.escapedHeaderBitSize = before.escapedHeaderBitSize
                    #expect(after == before, "\(entry.file): the header changed beyond idr_pic_id")
                    usesCABAC = lookups.pps(before.picParameterSetID)?.entropyCodingModeFlag ?? false
                    units[unitIndex][nalIndex] = rewritten
                    slicesRewritten += 1
                }
                if let newIDOfThisUnit { previousNewID = newIDOfThisUnit }
            }
            if let refusal {
                refused.append("\(entry.file): \(refusal)")
                continue
            }
            guard slicesRewritten > 0 else { continue }
            // Back to an Annex B stream, loaded as the original was.
            var rebuilt: [UInt8] = []
            for nal in units.joined() { rebuilt += [0, 0, 0, 1] + nal }
            let stream = try CorpusStream.load(rebuilt)
            let collector = OutputCollector(keepFrames: false)
            let session = try DecompressionSessionTests.decodeAll(
                stream, asynchronous: false, collector: collector)
            session.invalidate()
            let digest = collector.digest()
            #expect(
                digest == entry.referenceMD5,
                "\(entry.file) with \(slicesRewritten) IDR slices rewritten: \(digest) != \(entry.referenceMD5)")
            if digest == entry.referenceMD5 {
                if usesCABAC { rewrittenCABAC += 1 } else { rewrittenCAVLC += 1 }
            }
        }
        print(
            "IDRPictureIDRewriting: \(rewrittenCAVLC) CAVLC and \(rewrittenCABAC) CABAC streams rewritten and exact; refused: \(refused)"
        )
        #expect(rewrittenCAVLC >= 5 && rewrittenCABAC >= 5)
    }
}

/// IDRPictureIDSplicer: which IDR access units of a spliced stream get another idr_pic_id.
@Suite("IDRPictureIDSplicer")
struct IDRPictureIDSplicerTests {
    /// The first IDR access unit of a corpus stream and a non-IDR one after it, with the stream's
    /// parameter sets.
    static func units() throws -> (idr: [UInt8], other: [UInt8], parameterSets: [[UInt8]])? {
        guard let entry = Corpus.entry("BA1_Sony_D.jsv"), let bytes = Corpus.bytes(of: entry) else { return nil }
        let stream = try CorpusStream.load(bytes)
        let avcc = try stream.samples.map { try #require($0.dataBuffer).copyToArray() }
        let types = stream.accessUnits.map { unit in Set(unit.map { $0[0] & 0x1F }) }
        let idr = try #require(zip(types, avcc).first { $0.0.contains(5) }?.1)
        let other = try #require(zip(types, avcc).first { $0.0.contains(1) && !$0.0.contains(5) }?.1)
        return (idr, other, stream.format.parameterSets)
    }

    @Test("consecutive IDR pictures with one id: the second gets another; apart: only when asked", .requiresCorpus)
    func splicing() throws {
        guard let (idr, other, parameterSets) = try Self.units() else { return }
        var splicer = try IDRPictureIDSplicer(parameterSets: parameterSets, nalUnitHeaderLength: 4)
        #expect(try idr.withUnsafeBytes { try splicer.next($0) } == nil)
        let rewritten = try idr.withUnsafeBytes { try splicer.next($0) }
        let second = try #require(rewritten, "an IDR right after one with its id")
        let firstID = try BitReaderProbe(unit: idr, parameterSets: parameterSets).idrPicID()
        let secondID = try BitReaderProbe(unit: second, parameterSets: parameterSets).idrPicID()
        let ids = [try #require(firstID), try #require(secondID)]
        #expect(
            ids[0] != ids[1]
                && IDRPictureIDRewriting.codeLength(ids[1]) % 8 == IDRPictureIDRewriting.codeLength(ids[0]) % 8)
        #expect(try other.withUnsafeBytes { try splicer.next($0) } == nil)
        // After another picture, the original id differs from the last IDR's new one: kept.
        #expect(try idr.withUnsafeBytes { try splicer.next($0) } == nil)
        #expect(try other.withUnsafeBytes { try splicer.next($0) } == nil)
        // Same id as the last IDR, not adjacent: kept, unless the caller asks (a chunk junction).
        #expect(try idr.withUnsafeBytes { try splicer.next($0) } == nil)
        #expect(try other.withUnsafeBytes { try splicer.next($0) } == nil)
        #expect(try idr.withUnsafeBytes { try splicer.next($0, distinctFromLastIDR: true) } != nil)
        #expect(splicer.rewrittenCount == 2)
    }
}

/// Reads idr_pic_id from an AVCC access unit's first IDR slice.
struct BitReaderProbe {
    var unit: [UInt8]
    var parameterSets: [[UInt8]]

    func idrPicID() throws -> Int? {
        var store = ParameterSetStore()
        for nal in parameterSets where NALUnitType(rawValue: nal[0]) == .sequenceParameterSet {
            _ = try nal.withUnsafeBytes { try store.storeSequenceParameterSet($0) }
        }
        for nal in parameterSets where NALUnitType(rawValue: nal[0]) == .pictureParameterSet {
            _ = try nal.withUnsafeBytes { try store.storePictureParameterSet($0) }
        }
        var found: Int?
        try unit.withUnsafeBytes { bytes in
            try AVCC.forEachNALUnit(in: bytes, nalUnitHeaderLength: 4) { range in
                guard found == nil, bytes[range.lowerBound] & 0x1F == 5 else { return }
                found = try SliceHeader.parse(
                    nalUnit: UnsafeRawBufferPointer(rebasing: bytes[range]),
                    pictureParameterSets: { store.pictureParameterSet(id: $0) },
                    sequenceParameterSets: { store.sequenceParameterSet(id: $0) }
                ).idrPicID
            }
        }
        return found
    }
}
