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
                        sps: { (id: Int) in parameterSets.sequenceParameterSet(id: id) })
                    let before = try SliceHeader.parse(nalUnit: nal, pictureParameterSets: lookups.pps, sequenceParameterSets: lookups.sps)
                    let newID = newIDOfThisUnit
                        ?? IDRPictureIDRewriting.replacementID(for: before.idrPicID, avoiding: Set([previousNewID].compactMap { $0 }))
                    newIDOfThisUnit = newID
                    let attempt = Result { () throws(H264Error) -> [UInt8] in
                        try IDRPictureIDRewriting.rewrite(
                            idrSlice: nal, to: newID, pictureParameterSets: lookups.pps, sequenceParameterSets: lookups.sps)
                    }
                    if case .failure(.unsupported(let reason)) = attempt {
                        refusal = reason
                        continue
                    }
                    let rewritten = try attempt.get()
                    var after = try SliceHeader.parse(nalUnit: rewritten, pictureParameterSets: lookups.pps, sequenceParameterSets: lookups.sps)
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
            #expect(digest == entry.referenceMD5, "\(entry.file) with \(slicesRewritten) IDR slices rewritten: \(digest) != \(entry.referenceMD5)")
            if digest == entry.referenceMD5 {
                if usesCABAC { rewrittenCABAC += 1 } else { rewrittenCAVLC += 1 }
            }
        }
        print("IDRPictureIDRewriting: \(rewrittenCAVLC) CAVLC and \(rewrittenCABAC) CABAC streams rewritten and exact; refused: \(refused)")
        #expect(rewrittenCAVLC >= 5 && rewrittenCABAC >= 5)
    }
}
