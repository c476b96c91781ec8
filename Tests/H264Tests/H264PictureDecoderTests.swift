import SwiftVTTestSupport
import Testing

@testable import H264

/// An accelerator that decodes nothing and records every call, so the state machine's decisions
/// (what to decode with which references, what to output when) can be checked.
final class RecordingAccelerator: H264Accelerator {
    struct SliceRecord {
        var picture: H264Picture
        var list0: [H264Picture?]
        var list1: [H264Picture?]
        var expectedCount0: Int
        var expectedCount1: Int
    }
    var sequences: [H264SequenceInfo] = []
    var started: [H264Picture] = []
    var referenceFrameCounts: [Int] = []
    var slices: [SliceRecord] = []
    var ended: [H264Picture] = []
    var output: [H264Picture] = []
    var failEndPictureNumber: Int?
    /// The slice (counted from 1 over the stream) whose decodeSlice fails.
    var failSliceNumber: Int?
    /// The picture (counted from 1) whose startPicture fails.
    var failStartPictureNumber: Int?
    /// The newSequence call (counted from 1) that fails.
    var failNewSequenceNumber: Int?
    private var newSequenceCalls = 0
    /// A picture was begun while no newSequence had succeeded.
    var startedWithoutSequence = false
    /// The run between IDR / MMCO 5 pictures each picture belongs to, by decoding order.
    var epochs: [ObjectIdentifier: Int] = [:]
    private var epoch = 0

    func newSequence(_ sequence: H264SequenceInfo) throws(H264DecodingError) {
        newSequenceCalls += 1
        if let failNewSequenceNumber, newSequenceCalls == failNewSequenceNumber {
            throw .acceleratorFailed("simulated failure of sequence \(failNewSequenceNumber)")
        }
        sequences.append(sequence)
    }
    func startPicture(
        _ picture: H264Picture, firstSlice: SliceHeader, parameterSets: H264ActiveParameterSets,
        referenceFrames: [H264Picture]
    ) throws(H264DecodingError) {
        if sequences.isEmpty { startedWithoutSequence = true }
        started.append(picture)
        if let failStartPictureNumber, started.count == failStartPictureNumber {
            throw .acceleratorFailed("simulated failure at the start of picture \(failStartPictureNumber)")
        }
        if picture.isIDR || picture.hasMemoryManagementControlOperation5 { epoch += 1 }
        epochs[ObjectIdentifier(picture)] = epoch
        referenceFrameCounts.append(referenceFrames.count)
    }
    func decodeSlice(
        _ picture: H264Picture, slice: H264SliceData, parameterSets: H264ActiveParameterSets,
        referencePictureList0: [H264Picture?], referencePictureList1: [H264Picture?]
    ) throws(H264DecodingError) {
        slices.append(
            SliceRecord(
                picture: picture, list0: referencePictureList0, list1: referencePictureList1,
                expectedCount0: slice.header.numRefIdxL0Active, expectedCount1: slice.header.numRefIdxL1Active))
        if let failSliceNumber, slices.count == failSliceNumber {
            throw .acceleratorFailed("simulated failure of slice \(failSliceNumber)")
        }
    }
    func endPicture(_ picture: H264Picture) throws(H264DecodingError) {
        ended.append(picture)
        if let failEndPictureNumber, ended.count == failEndPictureNumber {
            throw .acceleratorFailed("simulated failure of picture \(failEndPictureNumber)")
        }
    }
    func outputPicture(_ picture: H264Picture) throws(H264DecodingError) { output.append(picture) }
}

@Suite("H.264 decoding state machine")
struct H264PictureDecoderTests {
    static func run(_ bytes: [UInt8], accelerator: RecordingAccelerator) throws(H264DecodingError) {
        let decoder = H264PictureDecoder(accelerator: accelerator)
        var failure: H264DecodingError?
        bytes.withUnsafeBytes { data in
            AnnexB.forEachNALUnit(in: data) { unit in
                guard failure == nil else { return }
                do throws(H264DecodingError) {
                    try decoder.decode(
                        nalUnit: UnsafeRawBufferPointer(rebasing: data[unit.payloadRange]), frameReference: 0)
                } catch {
                    failure = error
                }
            }
        }
        if let failure { throw failure }
        try decoder.drain()
    }

    @Test(
        "every progressive corpus stream: each picture output once, in POC order, with complete reference lists",
        .requiresCorpus)
    func corpusStreams() throws {
        guard let manifest = Corpus.manifest() else { return }
        var checked = 0
        var refusedAsInterlaced: [String] = []
        for entry in manifest where !entry.isDamaged && entry.frames > 0 {
            let bytes = try #require(Corpus.bytes(of: entry))
            let accelerator = RecordingAccelerator()
            do {
                try Self.run(bytes, accelerator: accelerator)
            } catch {
                if case .unsupported(let what) = error, what.contains("field") || what.contains("MBAFF") {
                    refusedAsInterlaced.append(entry.file)
                    continue
                }
                Issue.record("\(entry.file): \(error)")
                continue
            }
            checked += 1
            #expect(
                accelerator.output.count == entry.frames,
                "\(entry.file): \(accelerator.output.count) pictures output, MANIFEST says \(entry.frames)")
            #expect(
                accelerator.started.count == entry.frames,
                "\(entry.file): \(accelerator.started.count) pictures decoded")
            // Each decoded picture is output exactly once.
            let distinct = Set(accelerator.output.map { ObjectIdentifier($0) })
            #expect(distinct.count == accelerator.output.count, "\(entry.file): a picture was output twice")
            #expect(accelerator.output.allSatisfy { !$0.isNonExisting })
            // Output order: the runs between IDR / MMCO 5 pictures one after the other (C.4.4),
            // POC order within each (C.4.5.3).
            var previous: (epoch: Int, poc: Int)?
            for picture in accelerator.output {
                let epoch = accelerator.epochs[ObjectIdentifier(picture)] ?? -1
                if let previous {
                    #expect(
                        epoch > previous.epoch || (epoch == previous.epoch && picture.picOrderCnt > previous.poc),
                        "\(entry.file): POC \(picture.picOrderCnt) of run \(epoch) output after POC \(previous.poc) of run \(previous.epoch)"
                    )
                }
                previous = (epoch, picture.picOrderCnt)
            }
            // Undamaged streams never miss a reference, and the lists have exactly
            // num_ref_idx_lX_active entries.
            for slice in accelerator.slices {
                #expect(slice.list0.count == slice.expectedCount0 && slice.list1.count == slice.expectedCount1)
                #expect(
                    !slice.list0.contains { $0 == nil } && !slice.list1.contains { $0 == nil },
                    "\(entry.file): a reference list entry is missing")
            }
            let maxReferences = max(accelerator.sequences.map { $0.sequenceParameterSet.maxNumRefFrames }.max() ?? 1, 1)
            #expect(
                accelerator.referenceFrameCounts.allSatisfy { $0 <= maxReferences },
                "\(entry.file): more reference frames than max_num_ref_frames")
        }
        #expect(checked >= 18, "only \(checked) streams decoded; refused as interlaced: \(refusedAsInterlaced)")
    }

    @Test("B frames: the output is reordered, and list 1 starts after the current picture", .requiresCorpus)
    func bFrameStream() throws {
        let entry = try #require(Corpus.entry("VID_1280x720_cabac_temporal_direct.264"))
        let bytes = try #require(Corpus.bytes(of: entry))
        let accelerator = RecordingAccelerator()
        try Self.run(bytes, accelerator: accelerator)
        let decodingOrder = accelerator.started.map(\.picOrderCnt)
        let outputOrder = accelerator.output.map(\.picOrderCnt)
        #expect(decodingOrder != outputOrder, "no reordering in a stream with B frames")
        let bSlices = accelerator.slices.filter { !$0.list1.isEmpty }
        #expect(!bSlices.isEmpty)
        for slice in bSlices {
            let current = slice.picture.picOrderCnt
            // 8.2.4.2.3: list 0 starts with the pictures before the current one in output
            // order, list 1 with those after it (this stream modifies no list).
            let all = slice.list0.compactMap { $0 } + slice.list1.compactMap { $0 }
            if all.contains(where: { $0.picOrderCnt < current }), let first0 = slice.list0.first ?? nil {
                #expect(first0.picOrderCnt < current)
            }
            if all.contains(where: { $0.picOrderCnt > current }), let first1 = slice.list1.first ?? nil {
                #expect(first1.picOrderCnt > current)
            }
        }
    }

    /// Decodes an Annex B stream to the end, going on after each failing NAL unit; the failures.
    static func decodeCountingFailures(_ bytes: [UInt8], accelerator: RecordingAccelerator) throws -> Int {
        let decoder = H264PictureDecoder(accelerator: accelerator)
        var failures = 0
        bytes.withUnsafeBytes { data in
            AnnexB.forEachNALUnit(in: data) { unit in
                do {
                    try decoder.decode(
                        nalUnit: UnsafeRawBufferPointer(rebasing: data[unit.payloadRange]), frameReference: 0)
                } catch {
                    failures += 1
                }
            }
        }
        try decoder.drain()
        return failures
    }

    @Test("a failing accelerator: the error reaches the caller, the DPB stays consistent and later pictures decode")
    func acceleratorFailure() throws {
        guard let entry = Corpus.entry("BA_MW_D.264"), let bytes = Corpus.bytes(of: entry) else { return }
        let accelerator = RecordingAccelerator()
        accelerator.failEndPictureNumber = 5
        #expect(try Self.decodeCountingFailures(bytes, accelerator: accelerator) == 1)
        #expect(accelerator.output.count == entry.frames)
        #expect(accelerator.output.filter(\.decodingFailed).count == 1)
    }

    @Test("every started picture is ended, also after its start or a slice failed (a VA picture must not stay open)")
    func failedPicturesAreEnded() throws {
        guard let entry = Corpus.entry("BA_MW_D.264"), let bytes = Corpus.bytes(of: entry) else { return }
        for (failSlice, failStart) in [(7, nil), (nil, 4)] as [(Int?, Int?)] {
            let accelerator = RecordingAccelerator()
            accelerator.failSliceNumber = failSlice
            accelerator.failStartPictureNumber = failStart
            #expect(try Self.decodeCountingFailures(bytes, accelerator: accelerator) == 1)
            #expect(
                accelerator.started.map(ObjectIdentifier.init) == accelerator.ended.map(ObjectIdentifier.init),
                "started \(accelerator.started.count), ended \(accelerator.ended.count)")
            #expect(accelerator.output.count == entry.frames)
            #expect(accelerator.output.filter(\.decodingFailed).count == 1)
        }
    }

    /// An IDR picture and two P pictures of two slices each, fed as VAH264Decoder feeds them:
    /// one access unit at a time, going on after an error.
    static func decodeTwoSlicePictures(accelerator: RecordingAccelerator) -> [H264DecodingError] {
        var units = [SyntheticStream.sequenceParameterSet(), SyntheticStream.pictureParameterSet()]
        var accessUnits: [[[UInt8]]] = []
        for index in 0..<3 {
            let picture = SyntheticStream.Slice(
                isIDR: index == 0, frameNum: UInt32(index), picOrderCntLsb: UInt32(2 * index))
            var second = picture
            second.firstMb = 2
            units += [SyntheticStream.slice(picture), SyntheticStream.slice(second)]
            accessUnits.append(units)
            units = []
        }
        let decoder = H264PictureDecoder(accelerator: accelerator)
        var errors: [H264DecodingError] = []
        for accessUnit in accessUnits {
            for unit in accessUnit {
                unit.withUnsafeBytes { nal in
                    do throws(H264DecodingError) {
                        try decoder.decode(nalUnit: nal, frameReference: 0)
                    } catch {
                        errors.append(error)
                    }
                }
            }
            do throws(H264DecodingError) { try decoder.finishAccessUnit() } catch { errors.append(error) }
        }
        do throws(H264DecodingError) { try decoder.drain() } catch { errors.append(error) }
        return errors
    }

    @Test("a picture the accelerator failed to begin gets no slices, is still ended, and is output flagged")
    func startPictureFailure() {
        let accelerator = RecordingAccelerator()
        accelerator.failStartPictureNumber = 2
        let errors = Self.decodeTwoSlicePictures(accelerator: accelerator)
        #expect(errors.count == 1)
        #expect(accelerator.output.count == 3)
        guard accelerator.output.count == 3 else { return }
        let failed = accelerator.output[1]
        #expect(failed.decodingFailed && !accelerator.output[0].decodingFailed && !accelerator.output[2].decodingFailed)
        // Found by fuzz/run.sh (decoder mode): the second slice went to decodeSlice for a
        // picture whose startPicture had thrown (a VA render without vaBeginPicture).
        #expect(
            !accelerator.slices.contains { $0.picture === failed }, "a slice was decoded into a picture never begun")
        #expect(accelerator.ended.filter { $0 === failed }.count == 1)
        #expect(accelerator.slices.count == 4 && accelerator.ended.count == 3)
    }

    @Test("after a failed slice the picture gets no more slices but is still ended")
    func sliceFailure() {
        let accelerator = RecordingAccelerator()
        accelerator.failSliceNumber = 3 // the first slice of the first P picture
        let errors = Self.decodeTwoSlicePictures(accelerator: accelerator)
        #expect(errors.count == 1)
        #expect(accelerator.output.count == 3)
        guard accelerator.output.count == 3 else { return }
        let failed = accelerator.output[1]
        #expect(failed.decodingFailed && !accelerator.output[2].decodingFailed)
        #expect(accelerator.ended.count == 3 && accelerator.ended.filter { $0 === failed }.count == 1)
        #expect(
            accelerator.slices.filter { $0.picture === failed }.count == 1, "a slice went to a picture that had failed")
    }

    @Test("after a failed newSequence the next picture asks for the sequence again instead of beginning without one")
    func newSequenceFailure() {
        let accelerator = RecordingAccelerator()
        accelerator.failNewSequenceNumber = 1
        let errors = Self.decodeTwoSlicePictures(accelerator: accelerator)
        #expect(errors.count == 1)
        // Found by fuzz/run.sh (decoder mode): the SPS counted as active although the
        // accelerator had refused it, and the IDR picture's second slice began a picture on an
        // accelerator with no sequence.
        #expect(!accelerator.startedWithoutSequence, "a picture was begun on an accelerator without a sequence")
        #expect(accelerator.sequences.count == 1)
        // The IDR picture is decoded from its second slice; the P pictures follow.
        #expect(accelerator.output.count == 3)
    }

    @Test(
        "an SPS with a smaller MaxFrameNum activated at a non-IDR picture, adopted or starting a new sequence (was a trap)"
    )
    func sequenceChangeAtNonIDRPicture() throws {
        // frame_num 200 of 8 bits, then the SPS is replaced by one with 4-bit frame_num and a P
        // picture with frame_num 3 follows: a damaged stream (7.4.1.2.1 activates an SPS only
        // at an IDR picture). Found by fuzz/run.sh (decoder mode): PrevRefFrameNum 200 of the old
        // SPS made the frame_num gap count (3 - 200 - 1 + 16) % 16 = -6, and the gap loop
        // `0..<missing` trapped. The same SPS with another width starts a new sequence, the
        // first one is adopted with the references kept (H264PictureDecoder.startsNewSequence).
        for (width, sequences) in [(UInt32(1), [256]), (UInt32(2), [256, 16])] {
            let stream = SyntheticStream.annexB([
                SyntheticStream.sequenceParameterSet(log2MaxFrameNumMinus4: 4), SyntheticStream.pictureParameterSet(),
                SyntheticStream.slice(.init(isIDR: true, frameNum: 0, frameNumBits: 8)),
                SyntheticStream.slice(.init(frameNum: 200, frameNumBits: 8, picOrderCntLsb: 4)),
                SyntheticStream.sequenceParameterSet(widthInMbsMinus1: width), SyntheticStream.pictureParameterSet(),
                SyntheticStream.slice(.init(frameNum: 3, picOrderCntLsb: 8))
            ])
            let accelerator = RecordingAccelerator()
            try Self.run(stream, accelerator: accelerator)
            #expect(accelerator.sequences.map { $0.sequenceParameterSet.maxFrameNum } == sequences)
            #expect(accelerator.output.count == 3)
            #expect(accelerator.started.last?.frameNum == 3)
        }
    }

    @Test("a drain whose last picture fails still outputs every picture waiting, then reports the failure")
    func drainAfterFailedLastPicture() {
        // The stream has no VUI: up to 16 pictures wait for output, so all three are still in
        // the DPB when the drain finishes the last one. Found by fuzz/run.sh (decoder mode):
        // the endPicture failure left drain before its bumping, and the pictures were lost.
        let stream = SyntheticStream.annexB([
            SyntheticStream.sequenceParameterSet(), SyntheticStream.pictureParameterSet(),
            SyntheticStream.slice(.init(isIDR: true)),
            SyntheticStream.slice(.init(frameNum: 1, picOrderCntLsb: 2)),
            SyntheticStream.slice(.init(frameNum: 2, picOrderCntLsb: 4))
        ])
        let accelerator = RecordingAccelerator()
        accelerator.failEndPictureNumber = 3
        var drainError: H264DecodingError?
        do throws(H264DecodingError) {
            try Self.run(stream, accelerator: accelerator)
        } catch {
            drainError = error
        }
        #expect(drainError != nil, "the failure of the last picture is reported")
        #expect(accelerator.output.map(\.picOrderCnt) == [0, 2, 4])
        #expect(accelerator.output.map(\.decodingFailed) == [false, false, true])
    }

    @Test(
        "8.2.5.2 with POC type 2: a frame_num gap across MaxFrameNum carries FrameNumOffset to the inferred frame and the picture after it"
    )
    func frameNumGapAcrossWrap() throws {
        // frame_num 0...14, then 2: frames 15, 0 and 1 are missing; max_num_ref_frames 1 keeps
        // only frame 1, and the wrap happened in the frames not made (8.2.1.2: FrameNumOffset
        // 16 from there on, so POC 2 * (16 + 2) = 36 for the picture after the gap).
        var units = [SyntheticStream.sequenceParameterSet(picOrderCntType: 2), SyntheticStream.pictureParameterSet()]
        units.append(SyntheticStream.slice(.init(isIDR: true, picOrderCntType: 2)))
        for frameNum in 1...14 {
            units.append(SyntheticStream.slice(.init(frameNum: UInt32(frameNum), picOrderCntType: 2)))
        }
        units.append(SyntheticStream.slice(.init(frameNum: 2, picOrderCntType: 2)))
        let accelerator = RecordingAccelerator()
        try Self.run(SyntheticStream.annexB(units), accelerator: accelerator)
        #expect(accelerator.output.map(\.picOrderCnt) == Array(stride(from: 0, through: 28, by: 2)) + [36])
        // The gap frame is a reference of the last picture: frame 1 with POC 2 * (16 + 1).
        let lastSlice = try #require(accelerator.slices.last)
        #expect(lastSlice.list0.map { $0?.frameNum } == [1] && lastSlice.list0.first??.isNonExisting == true)
        #expect(lastSlice.list0.first??.picOrderCnt == 34)
    }

    @Test(
        "after a failed newSequence the DPB keeps the size of the sequence still active, the surfaces the accelerator has"
    )
    func refusedSequenceLeavesTheDPBSize() throws {
        // Found by fuzz/run.sh (decoder mode, 3.56 M executions in): SPS A (a DPB of 1 frame),
        // then SPS B (16 frames) refused by the accelerator, then A's pictures again. The DPB
        // took B's size before newSequence failed, so A's pictures piled up past the one frame
        // (two surfaces with the current picture) A's sequence was given.
        let accelerator = RecordingAccelerator()
        accelerator.failNewSequenceNumber = 2
        // Level 1.0 (MaxDpbMbs 396, A.3.1): 22x18 macroblocks leave room for 1 frame, 2x2 for 16.
        let spsA = SyntheticStream.sequenceParameterSet(widthInMbsMinus1: 21, heightInMapUnitsMinus1: 17, levelIdc: 10)
        let spsB = SyntheticStream.sequenceParameterSet(widthInMbsMinus1: 1, heightInMapUnitsMinus1: 1, levelIdc: 10)
        let pps = SyntheticStream.pictureParameterSet()
        var accessUnits: [[[UInt8]]] = [[spsA, pps, SyntheticStream.slice(.init(isIDR: true))]]
        accessUnits.append([spsB, pps, SyntheticStream.slice(.init(isIDR: true))])
        accessUnits.append([spsA, pps, SyntheticStream.slice(.init(isIDR: true))])
        // Non-reference P pictures in reverse POC order: each waits for output as long as the
        // reorder window (the whole DPB without a VUI) lets it.
        for index in 1...6 {
            accessUnits.append([
                SyntheticStream.slice(
                    .init(
                        nalRefIdc: 0, frameNum: 1, picOrderCntLsb: UInt32(2 * (10 - index))))
            ])
        }
        let decoder = H264PictureDecoder(accelerator: accelerator)
        var largestDPB = 0
        var errors = 0
        for accessUnit in accessUnits {
            for unit in accessUnit {
                unit.withUnsafeBytes { nal in
                    do throws(H264DecodingError) { try decoder.decode(nalUnit: nal, frameReference: 0) } catch {
                        errors += 1
                    }
                }
            }
            do throws(H264DecodingError) { try decoder.finishAccessUnit() } catch { errors += 1 }
            largestDPB = max(largestDPB, decoder.decodedPictureBuffer.pictures.count)
        }
        #expect(errors >= 1, "the refused sequence is reported")
        #expect(accelerator.sequences.count == 1 && accelerator.sequences.first?.maxDpbFrames == 1)
        #expect(decoder.decodedPictureBuffer.capacity == 1)
        #expect(largestDPB <= 1, "the DPB held \(largestDPB) frames on an accelerator given a DPB of 1")
    }

    // MARK: - Reference lists and marking on made-up DPBs

    static func picture(frameNum: Int, poc: Int, marking: H264ReferenceMarking = .shortTerm) -> H264Picture {
        let picture = H264Picture(
            frameNum: frameNum, topFieldOrderCnt: poc, bottomFieldOrderCnt: poc, isIDR: false, nalRefIdc: 1,
            isNonExisting: false, frameReference: UInt64(frameNum))
        picture.marking = marking
        return picture
    }

    @Test("8.2.4.2.1: P list by descending PicNum with wrapped frame_num, long-term after")
    func pListInitialisation() {
        // MaxFrameNum 16, current frame_num 1: frame 15 wraps to PicNum -1.
        let a = Self.picture(frameNum: 15, poc: 0)
        let b = Self.picture(frameNum: 0, poc: 2)
        let long = Self.picture(frameNum: 9, poc: -4, marking: .longTerm(frameIndex: 0))
        var dpb = H264DecodedPictureBuffer()
        for p in [a, b, long] { _ = dpb.store(p) }
        dpb.updateFrameNumWrap(currentFrameNum: 1, maxFrameNum: 16)
        let list = H264ReferencePictureLists.initialPList(
            shortTerm: dpb.shortTermReferences, longTerm: dpb.longTermReferences)
        #expect(list.map(\.frameNum) == [0, 15, 9])
        #expect(a.picNum == -1)
    }

    @Test("8.2.4.2.3: identical B lists get their first two entries of list 1 swapped")
    func bListSwap() {
        // Every reference precedes the current picture: both lists equal before the swap.
        let a = Self.picture(frameNum: 1, poc: 4)
        let b = Self.picture(frameNum: 2, poc: 8)
        let (list0, list1) = H264ReferencePictureLists.initialBLists(
            shortTerm: [a, b], longTerm: [], currentPicOrderCnt: 10)
        #expect(list0.map(\.picOrderCnt) == [8, 4])
        #expect(list1.map(\.picOrderCnt) == [4, 8])
    }

    @Test("8.2.4.3: modification moves a picture to the front and removes its later duplicate")
    func listModification() {
        let pictures = (0..<4).map { Self.picture(frameNum: $0, poc: $0 * 2) }
        for p in pictures { p.frameNumWrap = p.frameNum }
        let initial = pictures.reversed().map { $0 } // PicNum 3, 2, 1, 0
        // Current frame_num 4: abs_diff_pic_num_minus1 = 3 with idc 0 names PicNum 0.
        let list = H264ReferencePictureLists.modifiedList(
            initial: Array(initial), modifications: [RefPicListModification(modificationOfPicNumsIdc: 0, value: 3)],
            activeCount: 3, currPicNum: 4, maxPicNum: 16, shortTerm: pictures, longTerm: [])
        #expect(list.map { $0?.frameNum } == [0, 3, 2])
        // A picture that is not there leaves a hole instead of a wrong picture.
        let missing = H264ReferencePictureLists.modifiedList(
            initial: Array(initial), modifications: [RefPicListModification(modificationOfPicNumsIdc: 0, value: 9)],
            activeCount: 2, currPicNum: 4, maxPicNum: 16, shortTerm: pictures, longTerm: [])
        #expect(missing[0] == nil && missing[1]?.frameNum == 3)
    }

    @Test("8.2.5.3 and 8.2.5.4: sliding window drops the smallest FrameNumWrap; MMCO 1, 3 and 6")
    func marking() {
        var dpb = H264DecodedPictureBuffer()
        let pictures = (0..<3).map { Self.picture(frameNum: $0, poc: $0 * 2) }
        for p in pictures { _ = dpb.store(p) }
        dpb.updateFrameNumWrap(currentFrameNum: 3, maxFrameNum: 16)
        dpb.slidingWindow(maxNumRefFrames: 3)
        #expect(pictures[0].marking == .unused && pictures[1].isShortTermReference)
        let current = Self.picture(frameNum: 3, poc: 6, marking: .unused)
        // MMCO 3: PicNum 3 - (0 + 1) = 2 becomes long-term 0; MMCO 1: PicNum 1 unused;
        // MMCO 6: the current picture takes long-term index 0 from frame 2.
        let isLong = dpb.applyMemoryManagementControlOperations(
            [
                .assignLongTermFrameIdx(differenceOfPicNumsMinus1: 0, longTermFrameIdx: 0),
                .markShortTermUnused(differenceOfPicNumsMinus1: 1),
                .setMaxLongTermFrameIdx(maxLongTermFrameIdxPlus1: 2),
                .markCurrentLongTerm(longTermFrameIdx: 0)
            ],
            current: current, currPicNum: 3)
        #expect(isLong)
        #expect(pictures[1].marking == .unused)
        #expect(pictures[2].marking == .unused, "frame 2 lost index 0 to the current picture")
        #expect(current.longTermFrameIndex == 0)
    }

    @Test("8.2.5.3: the sliding window empties the buffer of a frame it makes unused that is not waiting for output")
    func slidingWindowEmptiesFrameBuffers() {
        // Found by fuzz/run.sh (decoder mode): before a frame inferred for a frame_num gap is
        // stored, the accelerator gives it a surface (storeNonExistingFrame), but the frame the
        // sliding window had let go of was still in the DPB with its surface, and stayed there
        // when that call failed.
        var dpb = H264DecodedPictureBuffer()
        let output = Self.picture(frameNum: 0, poc: 0)
        let waiting = Self.picture(frameNum: 1, poc: 2)
        output.isNeededForOutput = false
        _ = dpb.store(output)
        _ = dpb.store(waiting)
        dpb.updateFrameNumWrap(currentFrameNum: 2, maxFrameNum: 16)
        dpb.slidingWindow(maxNumRefFrames: 1)
        #expect(output.marking == .unused && waiting.marking == .unused)
        // The output one is gone; the one waiting for output stays until it is output.
        #expect(dpb.pictures.count == 1 && dpb.pictures.first === waiting)
    }

    @Test("8.2.5.4.3: operation 3 takes a LongTermFrameIdx from the current picture that operation 6 gave it")
    func longTermIndexTakenFromCurrentPicture() {
        // Found by fuzz/run.sh (decoder mode): MMCO 6 then MMCO 3 with the same index left the
        // current picture and another frame both with LongTermFrameIdx 0.
        var dpb = H264DecodedPictureBuffer()
        let earlier = Self.picture(frameNum: 0, poc: 0)
        _ = dpb.store(earlier)
        dpb.updateFrameNumWrap(currentFrameNum: 1, maxFrameNum: 16)
        let current = Self.picture(frameNum: 1, poc: 2, marking: .unused)
        let currentIsLongTerm = dpb.applyMemoryManagementControlOperations(
            [
                .markCurrentLongTerm(longTermFrameIdx: 0),
                .assignLongTermFrameIdx(differenceOfPicNumsMinus1: 0, longTermFrameIdx: 0)
            ],
            current: current, currPicNum: 1)
        #expect(earlier.longTermFrameIndex == 0)
        #expect(!currentIsLongTerm && current.longTermFrameIndex == nil, "the current picture gave index 0 up")
        // And operation 4 after operation 6 applies to the current picture too.
        let next = Self.picture(frameNum: 2, poc: 4, marking: .unused)
        let nextIsLongTerm = dpb.applyMemoryManagementControlOperations(
            [.markCurrentLongTerm(longTermFrameIdx: 3), .setMaxLongTermFrameIdx(maxLongTermFrameIdxPlus1: 2)],
            current: next, currPicNum: 2)
        #expect(!nextIsLongTerm && next.marking == .unused)
    }

    @Test(
        "C.4.5: a DPB full of long-term frames drops the one with the smallest LongTermFrameIdx instead of growing past its size"
    )
    func fullOfLongTermFrames() {
        // Found by fuzz/run.sh (decoder mode): MMCO 6 made a frame long-term in a DPB of one
        // frame, a frame_num gap then stored a non-existing frame next to it, and the DPB held
        // two frames (more than an accelerator has surfaces for).
        var dpb = H264DecodedPictureBuffer()
        dpb.capacity = 2
        let indexThree = Self.picture(frameNum: 0, poc: 0, marking: .longTerm(frameIndex: 3))
        let indexOne = Self.picture(frameNum: 1, poc: 2, marking: .longTerm(frameIndex: 1))
        for picture in [indexThree, indexOne] {
            picture.isNeededForOutput = false
            _ = dpb.store(picture)
        }
        let next = Self.picture(frameNum: 2, poc: 4)
        #expect(dpb.store(next).isEmpty)
        #expect(dpb.pictures.count == 2)
        #expect(dpb.pictures.contains { $0 === next } && dpb.pictures.contains { $0 === indexThree })
        #expect(indexOne.marking == .unused)
    }

    @Test(
        "C.4.5: bumping outputs the smallest POC when the DPB is full; a non-reference picture before all goes out at once"
    )
    func bumping() {
        var dpb = H264DecodedPictureBuffer()
        dpb.capacity = 2
        let first = Self.picture(frameNum: 0, poc: 0)
        let second = Self.picture(frameNum: 1, poc: 8)
        #expect(dpb.store(first).isEmpty && dpb.store(second).isEmpty)
        let nonReference = Self.picture(frameNum: 2, poc: -2, marking: .unused)
        // Lower than everything waiting: output directly, not stored (C.4.5.2).
        #expect(dpb.store(nonReference).map(\.picOrderCnt) == [-2])
        let third = Self.picture(frameNum: 2, poc: 4)
        // The sliding window made frame 0 unused; the DPB is full, so POC 0 is bumped out and
        // its frame buffer emptied to make room.
        first.marking = .unused
        #expect(dpb.store(third).map(\.picOrderCnt) == [0])
        #expect(dpb.bumpAll().map(\.picOrderCnt) == [4, 8])
    }
}

@Suite("when an SPS starts a new sequence")
struct SequenceRestartRuleTests {
    static var base: SequenceParameterSet {
        var sps = SequenceParameterSet()
        sps.profileIdc = 100
        sps.levelIdc = 31
        sps.picWidthInMbsMinus1 = 19
        sps.picHeightInMapUnitsMinus1 = 14
        sps.maxNumRefFrames = 4
        var vui = VUIParameters()
        vui.colourPrimaries = 1
        sps.vuiParametersPresentFlag = true
        sps.vui = vui
        return sps
    }

    @Test(
        "VUI-only changes (colour, timing, reorder window) keep the sequence; size, crop, DPB, profile, bit depth and chroma format start one"
    )
    func restartRules() {
        let old = Self.base
        var colour = old
        colour.vui?.colourPrimaries = 9
        colour.vui?.videoFullRangeFlag = true
        #expect(!H264PictureDecoder.startsNewSequence(from: old, to: colour))
        var reorder = old
        reorder.vui?.maxNumReorderFrames = 1
        #expect(!H264PictureDecoder.startsNewSequence(from: old, to: reorder))

        var wider = old
        wider.picWidthInMbsMinus1 += 1
        var cropped = old
        cropped.frameCroppingFlag = true
        cropped.frameCropBottomOffset = 4
        var profile = old
        profile.profileIdc = 77
        var deeper = old
        deeper.bitDepthLumaMinus8 = 2
        var chroma = old
        chroma.chromaFormatIdc = 2
        var fields = old
        fields.frameMbsOnlyFlag = false
        var smallerDPB = old
        smallerDPB.vui?.bitstreamRestrictionFlag = true
        smallerDPB.vui?.maxDecFrameBuffering = 2
        for (label, new) in [
            ("width", wider), ("crop", cropped), ("profile", profile), ("bit depth", deeper),
            ("chroma format", chroma), ("field coding", fields), ("DPB size", smallerDPB)
        ] {
            #expect(H264PictureDecoder.startsNewSequence(from: old, to: new), "\(label)")
        }
    }
}
