import Glibc
import H264
import SwiftVTFileSupport

// An accelerator that decodes nothing and checks, at every call, what a device driver relies on
// from the decoding state machine (H264PictureDecoder): the call order of the H264Accelerator
// protocol, reference pictures that exist, a DPB within its size, picture order counts that stay
// what they were, and decoded pictures that are output once or dropped for a reason the stream or
// the caller gave. A violation is a `require` failure (FuzzCheck.swift): a crash the fuzzer reports.

/// The surfaces of one sequence, the fewest the VA accelerator can do with: every DPB frame, the
/// current picture, and one picture being read back (VAH264Accelerator allocates DPB + 4).
final class SurfacePool {
    let size: Int
    var inUse = 0
    init(size: Int) { self.size = size }
}

/// Pictures that left the decoder (were freed) without being output and without a reason known
/// yet. The reasons come after the fact: an IDR picture with no_output_of_prior_pics_flag empties
/// the DPB before the accelerator hears of it, so the check is made when the caller's call ends.
final class DroppedPictures {
    var unexplained: [String] = []
}

/// What the checking accelerator keeps on each picture it was asked to begin (as its
/// `acceleratorData`, where a real accelerator keeps its surface): alive exactly as long as the
/// picture is, so its `deinit` sees a picture leave for good.
final class PictureLedgerEntry {
    enum State { case begun, failedToBegin, ended, nonExisting }
    var state: State
    let pool: SurfacePool
    let dropped: DroppedPictures
    /// The run of pictures between IDR / MMCO 5 pictures and flushes it belongs to: output never
    /// goes back to an earlier run (C.4.4).
    let epoch: Int
    let topFieldOrderCnt: Int
    let bottomFieldOrderCnt: Int
    let frameNum: Int
    let hasMemoryManagementControlOperation5: Bool
    /// The reference frames the picture was begun with: its slices' lists may name only these.
    let referenceFrames: [ObjectIdentifier]
    var outputCount = 0
    /// Dropped without output by the stream (no_output_of_prior_pics_flag) or the caller (a flush).
    var mayBeDropped = false

    init(
        picture: H264Picture, state: State, pool: SurfacePool, dropped: DroppedPictures, epoch: Int,
        referenceFrames: [H264Picture]
    ) {
        self.state = state
        self.pool = pool
        self.dropped = dropped
        self.epoch = epoch
        topFieldOrderCnt = picture.topFieldOrderCnt
        bottomFieldOrderCnt = picture.bottomFieldOrderCnt
        frameNum = picture.frameNum
        hasMemoryManagementControlOperation5 = picture.hasMemoryManagementControlOperation5
        self.referenceFrames = referenceFrames.map { ObjectIdentifier($0) }
        pool.inUse += 1
    }

    deinit {
        pool.inUse -= 1
        // A frame inferred for a frame_num gap is never output (8.2.5.2).
        if outputCount == 0 && !mayBeDropped && state != .nonExisting {
            dropped.unexplained.append("frame_num \(frameNum), POC \(min(topFieldOrderCnt, bottomFieldOrderCnt))")
        }
    }
}

/// Which accelerator call fails, to drive the state machine's error paths.
struct InjectedFailure {
    enum Call: CaseIterable { case newSequence, startPicture, decodeSlice, endPicture, storeNonExistingFrame }
    var call: Call
    /// Fails the n-th call of that kind (1-based).
    var occurrence: Int
}

final class CheckingAccelerator: H264Accelerator {
    /// SWIFTVT_FUZZ_TRACE=1 prints every call, to read what a crashing input does.
    static let tracesCalls = getenv("SWIFTVT_FUZZ_TRACE") != nil

    private func trace(_ call: @autoclosure () -> String, _ picture: H264Picture? = nil) {
        guard Self.tracesCalls else { return }
        let which = picture.map { " frame_num \($0.frameNum) POC \($0.picOrderCnt) ref \($0.frameReference)\($0.decodingFailed ? " failed" : "")" } ?? ""
        FileContents.printError("accelerator: \(call())\(which)")
    }

    /// The state machine under test, to compare its DPB with what it tells the accelerator.
    weak var decoder: H264PictureDecoder?
    var failure: InjectedFailure?
    private var callCounts: [InjectedFailure.Call: Int] = [:]

    let dropped = DroppedPictures()
    private var sequence: H264SequenceInfo?
    private var pool = SurfacePool(size: 0)
    /// The picture between startPicture and its endPicture (which comes also when startPicture
    /// failed).
    private(set) var openPicture: H264Picture?
    /// The open picture's startPicture or one of its decodeSlice calls failed: it gets no more
    /// slices.
    private var openPictureFailed = false
    private var epoch = 0
    private var lastOutputEpoch = 0
    /// Output pictures the caller has not taken yet (VAH264Accelerator.outputPictures): they keep
    /// their surfaces until the caller reads them back, after each access unit.
    private(set) var heldOutputs: [H264Picture] = []

    /// What each begun picture and each slice were given, by frame reference, for comparing with
    /// an encoder's plan; kept only when `recordsCalls` is set.
    struct BegunPicture {
        var frameReference: UInt64
        var referenceFrames: [UInt64]
        var picOrderCnt: Int
        var frameNum: Int
    }
    struct DecodedSlice {
        var frameReference: UInt64
        var list0: [UInt64?]
        var list1: [UInt64?]
    }
    var recordsCalls = false
    private(set) var begunPictures: [BegunPicture] = []
    private(set) var decodedSlices: [DecodedSlice] = []

    private func injectFailure(_ call: InjectedFailure.Call) throws(H264DecodingError) {
        let count = (callCounts[call] ?? 0) + 1
        callCounts[call] = count
        if let failure, failure.call == call, failure.occurrence == count {
            trace("injected failure of \(call) #\(count)")
            throw .acceleratorFailed("injected failure of \(call) #\(count)")
        }
    }

    private static func entry(_ picture: H264Picture) -> PictureLedgerEntry? {
        picture.acceleratorData as? PictureLedgerEntry
    }

    /// The DPB within its size, holding only pictures that are references or wait for output,
    /// with distinct long-term frame indices.
    func checkDecodedPictureBuffer() {
        guard let buffer = decoder?.decodedPictureBuffer else { return }
        require(buffer.capacity >= 1 && buffer.capacity <= 16, "DPB capacity \(buffer.capacity) outside 1...16 (A.3.1)")
        require(
            buffer.pictures.count <= buffer.capacity,
            "the DPB holds \(buffer.pictures.count) frames, more than its \(buffer.capacity) frame buffers: \(Self.describe(buffer.pictures))")
        require(
            Set(buffer.pictures.map { ObjectIdentifier($0) }).count == buffer.pictures.count, "a picture is twice in the DPB")
        var longTermIndices = Set<Int>()
        for picture in buffer.pictures {
            require(
                picture.marking.isReference || picture.isNeededForOutput,
                "the DPB keeps a frame that is neither a reference nor waiting for output (C.4.5.3 empties its buffer)")
            require(!(picture.isNonExisting && picture.isNeededForOutput), "a frame inferred for a frame_num gap waits for output")
            if let index = picture.longTermFrameIndex {
                require(longTermIndices.insert(index).inserted, "two long-term frames share LongTermFrameIdx \(index)")
            }
        }
    }

    static func describe(_ pictures: [H264Picture]) -> String {
        pictures.map { picture in
            "[frame_num \(picture.frameNum) POC \(picture.picOrderCnt) \(picture.marking)\(picture.isNonExisting ? " non-existing" : "")\(picture.isNeededForOutput ? " waiting" : "")]"
        }.joined(separator: " ")
    }

    /// Every picture holding a surface is in the DPB, the one just given one, or an output the
    /// caller has not taken: none is kept anywhere else (a surface never given back). The caller
    /// takes the outputs after each access unit; an access unit that holds several pictures (a
    /// damaged stream, or an upstream that cuts access units differently) keeps more of them
    /// alive than the VA pool holds, which is the caller's matter, not the state machine's.
    private func checkSurfaces(adding what: String) {
        let inBuffer = decoder?.decodedPictureBuffer.pictures ?? []
        let inBufferOfPool = inBuffer.reduce(0) { $0 + (Self.entry($1)?.pool === pool ? 1 : 0) }
        let heldOfPool = heldOutputs.reduce(0) { count, held in
            count + (Self.entry(held)?.pool === pool && !inBuffer.contains { $0 === held } ? 1 : 0)
        }
        require(
            pool.inUse <= inBufferOfPool + heldOfPool + 1,
            "\(pool.inUse) pictures hold surfaces with \(what): the DPB holds \(inBufferOfPool), the caller \(heldOfPool), so one is kept elsewhere")
        require(inBufferOfPool + 1 <= pool.size - 1, "the DPB and \(what) need more than \(pool.size - 1) surfaces")
    }

    private func checkInDecodedPictureBuffer(_ picture: H264Picture, _ what: String) {
        guard let buffer = decoder?.decodedPictureBuffer else { return }
        require(buffer.pictures.contains { $0 === picture }, "\(what) is not in the DPB")
        require(picture.marking.isReference, "\(what) is not marked as a reference")
    }

    // MARK: - H264Accelerator

    func newSequence(_ sequence: H264SequenceInfo) throws(H264DecodingError) {
        trace("newSequence dpb \(sequence.maxDpbFrames) reorder \(sequence.maxReorderFrames)")
        require(openPicture == nil, "newSequence while a picture is being decoded")
        require(sequence.maxDpbFrames >= 1 && sequence.maxDpbFrames <= 16, "maxDpbFrames \(sequence.maxDpbFrames) outside 1...16")
        require(
            sequence.maxReorderFrames >= 0 && sequence.maxReorderFrames <= sequence.maxDpbFrames,
            "maxReorderFrames \(sequence.maxReorderFrames) outside 0...\(sequence.maxDpbFrames)")
        try injectFailure(.newSequence)
        self.sequence = sequence
        pool = SurfacePool(size: sequence.maxDpbFrames + 2)
    }

    func startPicture(
        _ picture: H264Picture, firstSlice: SliceHeader, parameterSets: H264ActiveParameterSets, referenceFrames: [H264Picture]
    ) throws(H264DecodingError) {
        trace("startPicture with \(referenceFrames.count) references", picture)
        require(openPicture == nil, "startPicture while another picture is being decoded (endPicture missing)")
        require(picture.acceleratorData == nil, "startPicture twice for one picture")
        require(!picture.isNonExisting, "startPicture for a frame inferred for a frame_num gap")
        require(sequence != nil, "startPicture before newSequence")
        require(picture.isIDR == firstSlice.idrPicFlag && picture.frameNum == firstSlice.frameNum, "the picture is not its first slice's")
        if picture.isIDR && firstSlice.noOutputOfPriorPicsFlag {
            // C.4.4: the pictures still waiting were dropped without output (the state machine
            // empties the DPB before it begins the IDR picture).
            dropped.unexplained.removeAll()
        }
        if picture.isIDR || picture.hasMemoryManagementControlOperation5 { epoch += 1 }
        checkDecodedPictureBuffer()
        let references = decoder?.decodedPictureBuffer.referencePictures ?? []
        require(
            referenceFrames.count == references.count && zip(referenceFrames, references).allSatisfy { $0 === $1 },
            "referenceFrames are not the DPB's reference frames")
        require(referenceFrames.count <= 16, "\(referenceFrames.count) reference frames; VA's ReferenceFrames holds 16")
        let entry = PictureLedgerEntry(
            picture: picture, state: .failedToBegin, pool: pool, dropped: dropped, epoch: epoch,
            referenceFrames: referenceFrames)
        picture.acceleratorData = entry
        checkSurfaces(adding: "the current picture")
        // endPicture comes for every picture startPicture was called for, failed or not.
        openPicture = picture
        openPictureFailed = true
        try injectFailure(.startPicture)
        entry.state = .begun
        openPictureFailed = false
        if recordsCalls {
            begunPictures.append(BegunPicture(
                frameReference: picture.frameReference, referenceFrames: referenceFrames.map(\.frameReference),
                picOrderCnt: picture.picOrderCnt, frameNum: picture.frameNum))
        }
    }

    func decodeSlice(
        _ picture: H264Picture, slice: H264SliceData, parameterSets: H264ActiveParameterSets,
        referencePictureList0: [H264Picture?], referencePictureList1: [H264Picture?]
    ) throws(H264DecodingError) {
        trace("decodeSlice", picture)
        require(openPicture === picture, "decodeSlice for a picture that is not between startPicture and endPicture")
        require(!openPictureFailed, "decodeSlice for a picture whose startPicture or an earlier decodeSlice failed")
        guard let entry = Self.entry(picture) else { fail("decodeSlice for a picture never begun") }
        let header = slice.header
        require(
            referencePictureList0.count == header.numRefIdxL0Active && referencePictureList1.count == header.numRefIdxL1Active,
            "reference lists of \(referencePictureList0.count) and \(referencePictureList1.count) entries for num_ref_idx_active \(header.numRefIdxL0Active) and \(header.numRefIdxL1Active)")
        for reference in referencePictureList0 + referencePictureList1 {
            guard let reference else { continue }
            require(reference !== picture, "a picture is in its own reference list")
            checkInDecodedPictureBuffer(reference, "a reference list entry")
            require(
                entry.referenceFrames.contains(ObjectIdentifier(reference)),
                "a reference list entry is not among the reference frames the picture was begun with")
        }
        require(slice.nalUnit.first.map { $0 & 0x1F } == header.nalUnitType.rawValue, "the slice's NAL unit is not its header's")
        if recordsCalls {
            decodedSlices.append(DecodedSlice(
                frameReference: picture.frameReference, list0: referencePictureList0.map { $0?.frameReference },
                list1: referencePictureList1.map { $0?.frameReference }))
        }
        openPictureFailed = true
        try injectFailure(.decodeSlice)
        openPictureFailed = false
    }

    func endPicture(_ picture: H264Picture) throws(H264DecodingError) {
        trace("endPicture", picture)
        require(openPicture === picture, "endPicture for a picture that is not being decoded")
        guard let entry = Self.entry(picture) else { fail("endPicture for a picture never begun") }
        openPicture = nil
        openPictureFailed = false
        entry.state = .ended
        try injectFailure(.endPicture)
    }

    func storeNonExistingFrame(_ picture: H264Picture) throws(H264DecodingError) {
        trace("storeNonExistingFrame", picture)
        require(picture.isNonExisting, "storeNonExistingFrame for a decoded picture")
        require(openPicture == nil, "storeNonExistingFrame while a picture is being decoded")
        require(picture.acceleratorData == nil, "storeNonExistingFrame twice for one frame")
        require(sequence != nil, "storeNonExistingFrame before newSequence")
        try injectFailure(.storeNonExistingFrame)
        picture.acceleratorData = PictureLedgerEntry(
            picture: picture, state: .nonExisting, pool: pool, dropped: dropped, epoch: epoch, referenceFrames: [])
        checkSurfaces(adding: "a frame inferred for a frame_num gap")
    }

    func outputPicture(_ picture: H264Picture) throws(H264DecodingError) {
        trace("outputPicture", picture)
        require(picture !== openPicture, "a picture is output before its endPicture")
        require(!picture.isNonExisting, "a frame inferred for a frame_num gap is output")
        require(!picture.isNeededForOutput, "an output picture is still marked as waiting for output")
        guard let entry = Self.entry(picture) else { fail("a picture never begun is output") }
        require(entry.state == .ended, "a picture is output before its endPicture")
        entry.outputCount += 1
        require(entry.outputCount == 1, "a picture is output twice")
        require(entry.epoch >= lastOutputEpoch, "a picture of an earlier IDR / MMCO 5 period is output after a later one (C.4.4)")
        lastOutputEpoch = entry.epoch
        if entry.hasMemoryManagementControlOperation5 {
            // 8.2.1: after decoding, tempPicOrderCnt is subtracted; 7.4.3: frame_num becomes 0.
            require(picture.picOrderCnt == 0 && picture.frameNum == 0, "a picture with MMCO 5 keeps POC \(picture.picOrderCnt) / frame_num \(picture.frameNum)")
        } else {
            require(
                picture.topFieldOrderCnt == entry.topFieldOrderCnt && picture.bottomFieldOrderCnt == entry.bottomFieldOrderCnt
                    && picture.frameNum == entry.frameNum,
                "a picture's POC or frame_num changed between startPicture and output")
        }
        heldOutputs.append(picture)
    }

    // MARK: - The caller's side

    /// The caller read the output pictures back (after each access unit).
    func takeOutputs() -> [H264Picture] {
        defer { heldOutputs.removeAll() }
        return heldOutputs
    }

    /// Before a flush (a seek): every picture in the DPB may be dropped without output, and
    /// output starts a new period.
    func noteFlush() {
        require(openPicture == nil, "a flush between access units finds a picture being decoded")
        for picture in decoder?.decodedPictureBuffer.pictures ?? [] { Self.entry(picture)?.mayBeDropped = true }
        epoch += 1
        lastOutputEpoch = epoch
    }

    /// After each call of the caller's (an access unit, a drain): no picture was lost without a
    /// reason, and the DPB is within its size.
    func checkAfterCall(_ what: String) {
        require(dropped.unexplained.isEmpty, "\(what): decoded pictures dropped without output: \(dropped.unexplained)")
        checkDecodedPictureBuffer()
    }
}
