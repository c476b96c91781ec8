import MediaCore
import SwiftVTTestSupport
import Testing

@testable import H264

/// The encoder side of the H.264 layer: the writers are checked against the parsers on every
/// parameter set and slice header of the corpus, and the coding planner against the rules of
/// 7.4.3 (frame_num), 8.2.1 (POC), 8.2.4 (lists) and 8.2.5.3 (sliding window).
@Suite("H.264 encoding: writers and coding planner")
struct H264EncodingTests {
    @Test("every corpus SPS, PPS and slice header written back parses to the same values", .requiresCorpus)
    func writersRoundTripTheCorpus() throws {
        guard let manifest = Corpus.manifest() else { return }
        var counts = (sps: 0, pps: 0, slices: 0, identicalSPS: 0)
        for entry in manifest where !entry.isDamaged {
            let bytes = try #require(Corpus.bytes(of: entry))
            var spss: [Int: SequenceParameterSet] = [:]
            var ppss: [Int: PictureParameterSet] = [:]
            var slicesOfStream = 0
            for unit in TestNALUnits.split(bytes) {
                let nal = Array(unit)
                switch nal[0] & 0x1F {
                case 7:
                    let sps = try SequenceParameterSet.parse(nalUnit: nal)
                    spss[sps.seqParameterSetID] = sps
                    guard !sps.seqScalingMatrixPresentFlag else { continue }
                    let written = try sps.writeNALUnit()
                    #expect(
                        try SequenceParameterSet.parse(nalUnit: written) == sps,
                        "\(entry.file): SPS \(sps.seqParameterSetID)")
                    if written == nal { counts.identicalSPS += 1 }
                    counts.sps += 1
                case 8:
                    let pps = try PictureParameterSet.parse(nalUnit: nal, sequenceParameterSets: { spss[$0] })
                    ppss[pps.picParameterSetID] = pps
                    guard !pps.picScalingMatrixPresentFlag, pps.numSliceGroupsMinus1 == 0 else { continue }
                    let written = try pps.writeNALUnit()
                    #expect(
                        try PictureParameterSet.parse(nalUnit: written, sequenceParameterSets: { spss[$0] }) == pps,
                        "\(entry.file): PPS \(pps.picParameterSetID)")
                    counts.pps += 1
                case 1, 5:
                    guard slicesOfStream < 60 else { continue }
                    let header = try SliceHeader.parse(
                        nalUnit: nal, pictureParameterSets: { ppss[$0] }, sequenceParameterSets: { spss[$0] })
                    guard let pps = ppss[header.picParameterSetID], let sps = spss[pps.seqParameterSetID],
                        pps.numSliceGroupsMinus1 == 0
                    else { continue }
                    let bits = try header.write(sequenceParameterSet: sps, pictureParameterSet: pps)
                    #expect(
                        bits.bitCount == header.headerBitSize,
                        "\(entry.file): slice header of \(header.headerBitSize) bits written in \(bits.bitCount)")
                    // Parse the written header back: NAL header byte + the bits + some slice data.
                    var rbsp = bits
                    rbsp.writeRBSPTrailingBits()
                    let rewritten = [nal[0]] + RBSP.insertEmulationPrevention(rbsp.bytes + [0x80])
                    var reparsed = try SliceHeader.parse(
                        nalUnit: rewritten, pictureParameterSets: { ppss[$0] }, sequenceParameterSets: { spss[$0] })
                    reparsed.escapedHeaderBitSize = header.escapedHeaderBitSize
                    #expect(reparsed == header, "\(entry.file): slice header differs after writing")
                    slicesOfStream += 1
                    counts.slices += 1
                default:
                    break
                }
            }
        }
        #expect(counts.sps >= 20 && counts.pps >= 20 && counts.slices >= 800, "\(counts)")
        // Most encoders write exactly what the parser reads: the writer gives their bytes back.
        #expect(counts.identicalSPS * 2 > counts.sps, "\(counts.identicalSPS) of \(counts.sps) SPSs byte-identical")
    }

    private static func plan(
        frames: Int, structure: H264GOPStructure, forcedIDR: Set<Int> = []
    ) -> [H264CodingPicture<Int>] {
        var planner = H264CodingPlanner<Int>(structure: structure)
        var pictures: [H264CodingPicture<Int>] = []
        for frame in 0..<frames { pictures += planner.submit(frame, forceIDR: forcedIDR.contains(frame)) }
        return pictures + planner.flush()
    }

    @Test("I B B P: coding order, types, frame_num, POC, lists and the DPB")
    func bPictureGOP() {
        let structure = H264GOPStructure(idrPeriod: 0, consecutiveBFrames: 2)
        let pictures = Self.plan(frames: 10, structure: structure)
        #expect(pictures.map(\.frame) == [0, 3, 1, 2, 6, 4, 5, 9, 7, 8])
        #expect(
            pictures.map(\.type) == [
                .idr, .predicted, .bidirectional, .bidirectional, .predicted, .bidirectional,
                .bidirectional, .predicted, .bidirectional, .bidirectional
            ])
        // 7.4.3: PrevRefFrameNum + 1 after each reference picture, the same for the B pictures after it.
        #expect(pictures.map(\.frameNum) == [0, 1, 2, 2, 2, 3, 3, 3, 4, 4])
        #expect(pictures.map(\.pictureOrderCount) == pictures.map { 2 * $0.frame })
        #expect(pictures.map(\.isReference) == pictures.map { $0.type != .bidirectional })
        // B picture 1: list 0 the IDR (POC 0), list 1 the P picture (POC 6).
        #expect(pictures[2].list0.map(\.pictureOrderCount) == [0])
        #expect(pictures[2].list1.map(\.pictureOrderCount) == [6])
        // P picture 6 refers to both anchors in the DPB, the most recent first (8.2.4.2.1).
        #expect(pictures[4].list0.map(\.pictureOrderCount) == [6, 0])
        #expect(pictures.allSatisfy { $0.referenceFrames.count <= structure.maxReferenceFrames })
        // The end of the stream: frame 9 is the last anchor.
        #expect(pictures[7].type == .predicted && pictures[7].frame == 9)
    }

    @Test("a forced IDR picture codes the held frames first, the last as P; the IDR period holds")
    func forcedAndPeriodicIDR() {
        let structure = H264GOPStructure(idrPeriod: 8, consecutiveBFrames: 2)
        let pictures = Self.plan(frames: 20, structure: structure, forcedIDR: [5])
        // Frames 4 is held as a B candidate when 5 must be an IDR: 4 becomes a P picture.
        let order = pictures.map(\.frame)
        #expect(Array(order.prefix(5)) == [0, 3, 1, 2, 4])
        #expect(pictures[4].type == .predicted)
        #expect(pictures[5].frame == 5 && pictures[5].type == .idr && pictures[5].idrPicID == 1)
        // 8 frames after the IDR at 5 comes the next one, at 13.
        let idrs = pictures.filter { $0.type == .idr }.map(\.frame)
        #expect(idrs == [0, 5, 13])
        #expect(pictures.filter { $0.type == .idr }.map(\.idrPicID) == [0, 1, 2])
        // After an IDR the DPB restarts (8.2.5.1) and POC counts from 0.
        #expect(pictures[5].referenceFrames.isEmpty && pictures[5].pictureOrderCount == 0)
        #expect(Set(order) == Set(0..<20) && order.count == 20)
    }

    @Test("the planner's slice headers are the ones a decoder parses back, for every picture type")
    func plannedHeadersRoundTrip() throws {
        // Found by fuzz/run.sh (writers mode): I and P headers said direct_spatial_mv_pred_flag 1
        // (only B slice headers carry it), and P headers num_ref_idx_l1_active_minus1 0 where
        // the parser infers the PPS default.
        let structure = H264GOPStructure(idrPeriod: 0, consecutiveBFrames: 2)
        var sps = SequenceParameterSet()
        sps.profileIdc = 100
        sps.levelIdc = 30
        sps.log2MaxFrameNumMinus4 = structure.log2MaxFrameNum - 4
        sps.log2MaxPicOrderCntLsbMinus4 = structure.log2MaxPicOrderCntLsb - 4
        sps.maxNumRefFrames = structure.maxReferenceFrames
        sps.frameMbsOnlyFlag = true
        sps.direct8x8InferenceFlag = true
        var pps = PictureParameterSet()
        pps.numRefIdxL0DefaultActiveMinus1 = 2
        pps.numRefIdxL1DefaultActiveMinus1 = 1
        pps.deblockingFilterControlPresentFlag = true
        let pictures = Self.plan(frames: 7, structure: structure)
        #expect(Set(pictures.map(\.type)) == [.idr, .predicted, .bidirectional])
        for picture in pictures {
            let header = picture.sliceHeader(structure: structure, pictureParameterSet: pps, sliceQpDelta: 0)
            var bits = try header.write(sequenceParameterSet: sps, pictureParameterSet: pps)
            bits.writeRBSPTrailingBits()
            let nal = H264NALUnitWriter.nalUnit(type: header.nalUnitType, nalRefIdc: header.nalRefIdc, rbsp: bits.bytes)
            var parsed = try SliceHeader.parse(
                nalUnit: nal, pictureParameterSets: { _ in pps }, sequenceParameterSets: { _ in sps })
            parsed.headerBitSize = header.headerBitSize
            parsed.escapedHeaderBitSize = header.escapedHeaderBitSize
            #expect(parsed == header, "\(picture.type) picture \(picture.frame)")
        }
    }

    @Test(
        "8.2.1.1: a decoder recovers every planned POC from its LSBs, however many B pictures and however few LSB bits were asked for"
    )
    func pictureOrderCountFromLSBs() throws {
        // Found by fuzz/run.sh (writers mode): 6 B pictures with 4-bit POC LSBs put the first
        // anchor at POC 14, 14 above the IDR picture in a 16-value LSB: decoded as -2.
        for bFrames in [0, 1, 2, 3, 4, 6, 7, 15] {
            let structure = H264GOPStructure(idrPeriod: 0, consecutiveBFrames: bFrames, log2MaxPicOrderCntLsb: 4)
            #expect(4 * (bFrames + 1) <= 1 << structure.log2MaxPicOrderCntLsb)
            var calculator = PictureOrderCountCalculator()
            for picture in Self.plan(frames: 80, structure: structure) {
                let header = picture.sliceHeader(
                    structure: structure, pictureParameterSet: PictureParameterSet(), sliceQpDelta: 0)
                let decoded = try calculator.compute(
                    PictureOrderCountInputs(
                        picOrderCntType: 0, maxPicOrderCntLsb: Int64(1 << structure.log2MaxPicOrderCntLsb),
                        isIDR: header.idrPicFlag, nalRefIdc: header.nalRefIdc, frameNum: Int64(header.frameNum),
                        picOrderCntLsb: Int64(header.picOrderCntLsb)))
                #expect(
                    decoded.picOrderCnt == Int64(picture.pictureOrderCount),
                    "\(bFrames) B pictures, frame \(picture.frame)")
            }
        }
    }

    @Test("a reset starts a new sequence but keeps coding indices and idr_pic_id going")
    func resetKeepsIdentities() {
        // Found by fuzz/run.sh (writers mode): a flush + reset right after an IDR picture gave
        // the next IDR picture idr_pic_id 0 again (7.4.3 wants consecutive IDR access units to
        // differ), and coding index 0 again, a key VAH264Encoder still held a reference under.
        var planner = H264CodingPlanner<Int>(structure: H264GOPStructure(idrPeriod: 0, consecutiveBFrames: 2))
        var pictures = planner.submit(0, forceIDR: false) + planner.flush()
        planner.reset()
        pictures += planner.submit(1, forceIDR: false) + planner.flush()
        planner.reset()
        pictures += planner.submit(2, forceIDR: false) + planner.submit(3, forceIDR: false) + planner.flush()
        #expect(pictures.map(\.type) == [.idr, .idr, .idr, .predicted])
        #expect(pictures.map(\.codingIndex) == [0, 1, 2, 3])
        #expect(pictures.map(\.idrPicID).prefix(3) == [0, 1, 2])
        #expect(
            pictures[3].referenceFrames.map(\.codingIndex) == [2], "the new sequence refers only to its own IDR picture"
        )
    }

    @Test("I P P P: one reference, frame_num wraps at MaxFrameNum, sliding window")
    func predictedOnly() {
        let structure = H264GOPStructure(
            idrPeriod: 0, consecutiveBFrames: 0, log2MaxFrameNum: 4, log2MaxPicOrderCntLsb: 4)
        let pictures = Self.plan(frames: 40, structure: structure)
        #expect(pictures.map(\.frame) == Array(0..<40))
        #expect(pictures.map(\.frameNum) == (0..<40).map { $0 % 16 })
        #expect(
            pictures.dropFirst().allSatisfy { $0.list0.count == 1 && $0.list0[0].codingIndex == $0.codingIndex - 1 })
        let header = pictures[20].sliceHeader(
            structure: structure, pictureParameterSet: PictureParameterSet(), sliceQpDelta: 2)
        #expect(header.picOrderCntLsb == 40 % 16 && header.frameNum == 20 % 16 && header.sliceQPY == 28)
        #expect(!header.numRefIdxActiveOverrideFlag)
    }

    @Test("decode time stamps: increasing, never after the PTS, the PTS shifted by the reorder delay")
    func decodeTimeStamps() {
        let structure = H264GOPStructure(idrPeriod: 0, consecutiveBFrames: 2)
        let pictures = Self.plan(frames: 12, structure: structure)
        var sequencer = DecodeTimeStampSequencer(reorderDelay: structure.maxReorderFrames)
        let frame = MediaTime(value: 1, timescale: 30)
        for index in 0..<12 {
            sequencer.noteInput(presentationTimeStamp: MediaTime(value: Int64(index), timescale: 30))
        }
        var last: MediaTime?
        var decodeTimes: [MediaTime] = []
        for picture in pictures {
            let pts = MediaTime(value: Int64(picture.frame), timescale: 30)
            let dts = sequencer.next(presentationTimeStamp: pts, frameDuration: frame)
            #expect(dts <= pts)
            if let last { #expect(dts > last) }
            last = dts
            decodeTimes.append(dts)
        }
        #expect(decodeTimes.first == MediaTime(value: -1, timescale: 30))
        #expect(decodeTimes[1] == .zero)
    }

    @Test("level choice follows Table A-1")
    func levels() {
        #expect(
            H264LevelLimits.lowestLevel(
                widthInMacroblocks: 11, heightInMacroblocks: 9, frameRate: 15, referenceFrames: 1, bitRate: nil,
                high: false) == 10)
        #expect(
            H264LevelLimits.lowestLevel(
                widthInMacroblocks: 80, heightInMacroblocks: 45, frameRate: 30, referenceFrames: 2, bitRate: nil,
                high: true) == 31)
        #expect(
            H264LevelLimits.lowestLevel(
                widthInMacroblocks: 120, heightInMacroblocks: 68, frameRate: 30, referenceFrames: 2, bitRate: 8_000_000,
                high: true) == 40)
        #expect(
            H264LevelLimits.lowestLevel(
                widthInMacroblocks: 120, heightInMacroblocks: 68, frameRate: 60, referenceFrames: 2, bitRate: nil,
                high: true) == 42)
    }
}

@Suite("decode time stamps from upstream's durations")
struct DecodeTimeStampRangeTests {
    @Test("a frame duration near 2^63 ns with B-frame delay saturates instead of trapping; DTS stays before PTS")
    func hugeFrameDuration() {
        var sequencer = DecodeTimeStampSequencer(reorderDelay: 2)
        let pts = MediaTime(value: 0, timescale: 1_000_000_000)
        sequencer.noteInput(presentationTimeStamp: pts)
        // The old code multiplied the raw value: (2^62) * 2 trapped.
        let duration = MediaTime(value: Int64.max / 2 + 1, timescale: 1_000_000_000)
        let dts = sequencer.next(presentationTimeStamp: pts, frameDuration: duration)
        #expect(dts < pts)
        let second = sequencer.next(presentationTimeStamp: pts, frameDuration: duration)
        #expect(second > dts && second <= pts)
    }
}
