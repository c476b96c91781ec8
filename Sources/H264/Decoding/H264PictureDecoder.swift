/// The H.264 decoding process above the slice data (clause 8 without 8.3 onwards), for frames:
/// parameter-set activation (7.4.1.2.1), picture order counts (8.2.1), frame_num gaps
/// (8.2.5.2), reference marking (8.2.5), reference picture lists (8.2.4) and output through
/// the DPB (C.4). Macroblock decoding is the accelerator's (``H264Accelerator``): this state
/// machine tells it, with explicit arguments, what to decode and with which references, and
/// which picture to output when.
///
/// Input is NAL units (header byte included, escaped) in decoding order, one access unit at a
/// time: ``decode(nalUnit:frameReference:)`` for each, then ``finishAccessUnit()``.
/// Field pictures and MBAFF frames are refused with ``H264DecodingError/unsupported(_:)``.
///
/// Not thread-safe: one caller at a time.
public final class H264PictureDecoder {
    public let accelerator: any H264Accelerator
    public private(set) var parameterSets = ParameterSetStore()
    public private(set) var decodedPictureBuffer = H264DecodedPictureBuffer()
    private var pictureOrderCounts = PictureOrderCountCalculator()
    /// The SPS of the current coded video sequence, as the accelerator was told.
    public private(set) var activeSequenceParameterSet: SequenceParameterSet?
    private var current: CurrentPicture?
    /// PrevRefFrameNum (7.4.3): frame_num of the previous reference picture, 0 after an IDR
    /// picture or one with MMCO 5.
    private var previousReferenceFrameNum = 0
    /// POC of the previous reference picture: what a frame inferred for a frame_num gap gets
    /// with pic_order_cnt_type 0, where its POC is not defined (8.2.5.2 forbids using it in
    /// B-slice list initialisation then).
    private var previousReferencePicOrderCnt = 0
    /// Decoding starts at an IDR picture or a picture with only I slices (after a seek, or in a
    /// stream joined midway); pictures before it are skipped.
    private var waitingForRandomAccessPoint = true

    private struct CurrentPicture {
        var picture: H264Picture
        var parameterSets: H264ActiveParameterSets
        var firstSlice: SliceHeader
        /// POC after decoding (differs for a picture with MMCO 5, 8.2.1).
        var pictureOrderCountAfterDecoding: PictureOrderCount
    }

    public init(accelerator: any H264Accelerator) {
        self.accelerator = accelerator
    }

    /// An SPS or PPS given out of band (the avcC record of the format description).
    public func storeParameterSet(nalUnit: UnsafeRawBufferPointer) throws(H264DecodingError) {
        guard let first = nalUnit.first else { return }
        do {
            switch NALUnitHeader(byte: first).nalUnitType {
            case .sequenceParameterSet: try parameterSets.storeSequenceParameterSet(nalUnit)
            case .pictureParameterSet: try parameterSets.storePictureParameterSet(nalUnit)
            default: return
            }
        } catch {
            throw .bitstream(error)
        }
    }

    /// One NAL unit of the current access unit.
    public func decode(nalUnit: UnsafeRawBufferPointer, frameReference: UInt64) throws(H264DecodingError) {
        guard let first = nalUnit.first else { return }
        let type = NALUnitHeader(byte: first).nalUnitType
        switch type.rawValue {
        case 7, 8:
            try storeParameterSet(nalUnit: nalUnit)
        case 1, 5:
            try decodeSlice(nalUnit: nalUnit, frameReference: frameReference)
        case 2, 3, 4:
            throw .unsupported("slice data partitioning (nal_unit_type \(type.rawValue), Extended profile)")
        default:
            // SEI, delimiters, end of sequence/stream, filler, extensions of other profiles:
            // nothing the decoding process of clause 8 needs.
            return
        }
    }

    /// The access unit is complete: decodes the picture it held (if any) to the end.
    public func finishAccessUnit() throws(H264DecodingError) {
        try finishPicture()
    }

    /// End of stream: finishes the current picture and outputs every picture still waiting
    /// (C.4.5.3). The decoder stays usable; the DPB keeps its references.
    public func drain() throws(H264DecodingError) {
        // The pictures waiting are output even when the accelerator failed the last one: they
        // were decoded, and a caller that drains after a failure (FallbackDecoderBackend) is
        // promised them. The failure is reported after.
        var finishError: H264DecodingError?
        do {
            try finishPicture()
        } catch {
            finishError = error
        }
        for picture in decodedPictureBuffer.bumpAll() {
            try accelerator.outputPicture(picture)
        }
        if let finishError { throw finishError }
    }

    /// A seek: every picture is dropped without output, and decoding waits for the next IDR
    /// picture or I picture.
    public func flush() {
        current = nil
        decodedPictureBuffer.removeAll()
        pictureOrderCounts = PictureOrderCountCalculator()
        previousReferenceFrameNum = 0
        previousReferencePicOrderCnt = 0
        waitingForRandomAccessPoint = true
    }

    // MARK: - Slices

    private func decodeSlice(nalUnit: UnsafeRawBufferPointer, frameReference: UInt64) throws(H264DecodingError) {
        let header: SliceHeader
        do {
            header = try SliceHeader.parse(
                nalUnit: nalUnit, pictureParameterSets: { self.parameterSets.pictureParameterSet(id: $0) },
                sequenceParameterSets: { self.parameterSets.sequenceParameterSet(id: $0) })
        } catch {
            throw .bitstream(error)
        }
        // 7.4.3: redundant coded pictures are for decoders that lost the primary one; this
        // decoder uses the primary coded picture.
        if header.redundantPicCnt > 0 { return }
        if header.fieldPicFlag {
            throw .unsupported("field pictures (field_pic_flag 1, interlaced coding) are not supported by this decoder")
        }
        if header.mbaffFrameFlag {
            throw .unsupported(
                "MBAFF frames (mb_adaptive_frame_field_flag 1, interlaced coding) are not supported by this decoder")
        }
        // A failure of the previous picture is reported after this slice is decoded: the
        // slice belongs to the next picture, which must not be lost with it.
        var previousPictureError: H264DecodingError?
        if let current, !Self.belongsToSamePicture(header, current.firstSlice) {
            do {
                try finishPicture()
            } catch {
                previousPictureError = error
            }
        }
        if current == nil {
            guard try startPicture(header: header, frameReference: frameReference) else {
                if let previousPictureError { throw previousPictureError }
                return
            }
        }
        guard let current else { return }
        if !header.sliceKind.isIntra { current.picture.hasOnlyIntraSlices = false }
        // A picture the accelerator failed to begin, or failed on an earlier slice of, gets no
        // more slices (a VA render into a context where no picture began): it is output flagged
        // as failed, and that failure was reported already. endPicture still comes.
        guard !current.picture.decodingFailed else {
            if let previousPictureError { throw previousPictureError }
            return
        }
        let (list0, list1) = referencePictureLists(
            for: header, currentPicture: current.picture, sps: current.parameterSets.sequence)
        do {
            try accelerator.decodeSlice(
                current.picture, slice: H264SliceData(header: header, nalUnit: nalUnit),
                parameterSets: current.parameterSets, referencePictureList0: list0, referencePictureList1: list1)
        } catch {
            current.picture.decodingFailed = true
            throw error
        }
        if let previousPictureError { throw previousPictureError }
    }

    /// 7.4.1.2.4: the fields that differ between the first VCL NAL unit of a new primary coded
    /// picture and the previous picture's (fields only: field_pic_flag is always 0 here).
    static func belongsToSamePicture(_ a: SliceHeader, _ b: SliceHeader) -> Bool {
        a.frameNum == b.frameNum && a.picParameterSetID == b.picParameterSetID
            && (a.nalRefIdc == 0) == (b.nalRefIdc == 0) && a.picOrderCntLsb == b.picOrderCntLsb
            && a.deltaPicOrderCntBottom == b.deltaPicOrderCntBottom && a.deltaPicOrderCnt0 == b.deltaPicOrderCnt0
            && a.deltaPicOrderCnt1 == b.deltaPicOrderCnt1 && a.idrPicFlag == b.idrPicFlag
            && (!a.idrPicFlag || a.idrPicID == b.idrPicID)
    }

    /// Begins the picture whose first slice is `header`. Returns false when the picture is
    /// skipped (no random access point yet).
    private func startPicture(header: SliceHeader, frameReference: UInt64) throws(H264DecodingError) -> Bool {
        if waitingForRandomAccessPoint {
            guard header.idrPicFlag || header.sliceKind.isIntra else { return false }
            waitingForRandomAccessPoint = false
        }
        guard let pps = parameterSets.pictureParameterSet(id: header.picParameterSetID),
            let sps = parameterSets.sequenceParameterSet(id: pps.seqParameterSetID)
        else {
            throw .bitstream(.missingParameterSet(kind: "PPS", id: header.picParameterSetID))
        }
        // 7.4.1.2.1: a new SPS is activated only at an IDR picture. One that changes what
        // decoding depends on starts a new sequence for the accelerator (new sizes, new DPB); one
        // that changes only the rest (VUI, HRD: re-sent with new colour or timing information,
        // even mid-GOP) is adopted with the references kept.
        if let active = activeSequenceParameterSet, active != sps, !Self.startsNewSequence(from: active, to: sps) {
            adoptSequenceParameterSet(sps)
        } else if activeSequenceParameterSet != sps {
            try startSequence(sps, firstSlice: header)
        }
        let maxFrameNum = sps.maxFrameNum
        if header.idrPicFlag {
            // C.4.4: before an IDR picture, the pictures waiting are output (or dropped with
            // no_output_of_prior_pics_flag), and every frame buffer is emptied (8.2.5.1).
            if header.noOutputOfPriorPicsFlag {
                decodedPictureBuffer.removeAll()
            } else {
                for picture in decodedPictureBuffer.bumpAll() { try accelerator.outputPicture(picture) }
                decodedPictureBuffer.removeAll()
            }
            previousReferenceFrameNum = 0
        } else if header.frameNum != previousReferenceFrameNum
            && header.frameNum != (previousReferenceFrameNum + 1) % maxFrameNum
        {
            try fillFrameNumGap(upTo: header.frameNum, sps: sps, frameReference: frameReference)
        }
        let pictureOrderCount: PictureOrderCount
        do {
            pictureOrderCount = try pictureOrderCounts.compute(Self.pictureOrderCountInputs(header, sps: sps))
        } catch {
            throw .bitstream(error)
        }
        let whileDecoding = pictureOrderCounts.lastPictureOrderCountWhileDecoding
        let top = Int(whileDecoding.topFieldOrderCnt ?? 0)
        let picture = H264Picture(
            frameNum: header.frameNum, topFieldOrderCnt: top,
            bottomFieldOrderCnt: Int(whileDecoding.bottomFieldOrderCnt ?? Int64(top)), isIDR: header.idrPicFlag,
            nalRefIdc: header.nalRefIdc, isNonExisting: false, frameReference: frameReference)
        picture.hasMemoryManagementControlOperation5 = header.hasMemoryManagementControlOperation5
        decodedPictureBuffer.updateFrameNumWrap(currentFrameNum: header.frameNum, maxFrameNum: maxFrameNum)
        let active = H264ActiveParameterSets(sequence: sps, picture: pps)
        current = CurrentPicture(
            picture: picture, parameterSets: active, firstSlice: header,
            pictureOrderCountAfterDecoding: pictureOrderCount)
        do {
            try accelerator.startPicture(
                picture, firstSlice: header, parameterSets: active,
                referenceFrames: decodedPictureBuffer.referencePictures)
        } catch {
            picture.decodingFailed = true
            throw error
        }
        return true
    }

    /// Whether activating `new` after `old` needs a new sequence (the DPB emptied, the
    /// accelerator's surfaces and context made again): only when what decoding depends on changes,
    /// as GStreamer's H.264 decoder base class decides: the profile, chroma format, bit depths, the
    /// picture size and cropping, frame or field coding (frame_mbs_only_flag) and the DPB size
    /// (A.3.1, or max_dec_frame_buffering). Anything else an SPS carries (the VUI's colour, timing
    /// and HRD) does not touch the pictures already decoded.
    static func startsNewSequence(from old: SequenceParameterSet, to new: SequenceParameterSet) -> Bool {
        old.profileIdc != new.profileIdc || old.chromaFormatIdc != new.chromaFormatIdc
            || old.separateColourPlaneFlag != new.separateColourPlaneFlag
            || old.bitDepthLuma != new.bitDepthLuma || old.bitDepthChroma != new.bitDepthChroma
            || old.widthInMbs != new.widthInMbs || old.heightInMapUnits != new.heightInMapUnits
            || old.frameMbsOnlyFlag != new.frameMbsOnlyFlag || old.cropRect != new.cropRect
            || old.maxDpbFrames != new.maxDpbFrames
    }

    /// An SPS that changes nothing decoding depends on: later pictures use its fields, and the
    /// reorder window follows its VUI (C.4.5.3 bumps with the active SPS's max_num_reorder_frames).
    private func adoptSequenceParameterSet(_ sps: SequenceParameterSet) {
        activeSequenceParameterSet = sps
        decodedPictureBuffer.maxReorderFrames = sps.bumpingReorderFrames
        // log2_max_frame_num may have changed with it (a damaged stream: 7.4.1.2.1 changes the SPS
        // only at an IDR picture): PrevRefFrameNum is taken into the new MaxFrameNum, or the
        // frame_num gap count would come out negative, as it did, and trap.
        previousReferenceFrameNum %= sps.maxFrameNum
    }

    private func startSequence(_ sps: SequenceParameterSet, firstSlice: SliceHeader) throws(H264DecodingError) {
        // Everything of the previous sequence is output first (C.4.4: an IDR picture without
        // no_output_of_prior_pics_flag; a resolution change infers the flag 1 but dropping
        // pictures a user expects helps nobody).
        for picture in decodedPictureBuffer.bumpAll() { try accelerator.outputPicture(picture) }
        decodedPictureBuffer.removeAll()
        // PrevRefFrameNum belongs to the previous sequence and its MaxFrameNum. A new SPS is
        // activated at an IDR picture (7.4.1.2.1), where it is 0 anyway; a damaged stream may
        // change the SPS at any picture, and an old PrevRefFrameNum at or above the new
        // MaxFrameNum made the frame_num gap count negative. The DPB is empty: start as a
        // decoder that joins a stream does.
        previousReferenceFrameNum = 0
        previousReferencePicOrderCnt = 0
        let dpbFrames = sps.maxDpbFrames
        let reorder = sps.bumpingReorderFrames
        try accelerator.newSequence(
            H264SequenceInfo(sequenceParameterSet: sps, maxDpbFrames: dpbFrames, maxReorderFrames: reorder))
        // Active, and its DPB size in force, only once the accelerator took it: after a failed
        // newSequence the next picture asks again rather than going to an accelerator that has no
        // sequence, and pictures of the sequence still active are held within that sequence's DPB,
        // the surfaces the accelerator has (a DPB sized for the refused sequence outgrew them).
        decodedPictureBuffer.capacity = dpbFrames
        decodedPictureBuffer.maxReorderFrames = reorder
        activeSequenceParameterSet = sps
    }

    static func pictureOrderCountInputs(_ header: SliceHeader, sps: SequenceParameterSet) -> PictureOrderCountInputs {
        PictureOrderCountInputs(
            picOrderCntType: sps.picOrderCntType, maxPicOrderCntLsb: Int64(sps.maxPicOrderCntLsb),
            maxFrameNum: Int64(sps.maxFrameNum), offsetForNonRefPic: Int64(sps.offsetForNonRefPic),
            offsetForTopToBottomField: Int64(sps.offsetForTopToBottomField),
            offsetForRefFrame: sps.offsetForRefFrame.map { Int64($0) }, isIDR: header.idrPicFlag,
            nalRefIdc: header.nalRefIdc, frameNum: Int64(header.frameNum), fieldPicFlag: header.fieldPicFlag,
            bottomFieldFlag: header.bottomFieldFlag, picOrderCntLsb: Int64(header.picOrderCntLsb),
            deltaPicOrderCntBottom: Int64(header.deltaPicOrderCntBottom),
            deltaPicOrderCnt0: Int64(header.deltaPicOrderCnt0), deltaPicOrderCnt1: Int64(header.deltaPicOrderCnt1),
            hasMemoryManagementControlOperation5: header.hasMemoryManagementControlOperation5)
    }

    /// 8.2.5.2: frames "inferred" for the frame_num values skipped between the previous
    /// reference picture and this one. They take part in sliding-window marking and in the
    /// reference lists, are never output, and have no accelerator data. The stream either
    /// allows gaps (gaps_in_frame_num_value_allowed_flag) or lost pictures; both are handled
    /// the same way, as the spec suggests for the latter.
    private func fillFrameNumGap(upTo frameNum: Int, sps: SequenceParameterSet, frameReference: UInt64)
        throws(H264DecodingError)
    {
        let maxFrameNum = sps.maxFrameNum
        let firstUnusedFrameNum = previousReferenceFrameNum + 1
        let missing = (frameNum - firstUnusedFrameNum + maxFrameNum) % maxFrameNum
        // Only the last max_num_ref_frames inferred frames can survive the sliding window, so
        // only they are made. The ones before would leave no trace but the FrameNumOffset of
        // POC types 1 and 2, and the first frame made finds that itself: its frame_num is
        // below the previous picture's exactly when the skipped ones crossed MaxFrameNum
        // (8.2.1.2). A frame_num jump so costs max_num_ref_frames POC computations, not up to
        // MaxFrameNum (65535) of them, each copying the SPS's offset_for_ref_frame.
        let kept = Swift.min(missing, Swift.max(sps.maxNumRefFrames, 1))
        let offsetForRefFrame = sps.offsetForRefFrame.map { Int64($0) }
        for index in (missing - kept)..<missing {
            let unusedFrameNum = (firstUnusedFrameNum + index) % maxFrameNum
            var pictureOrderCount = previousReferencePicOrderCnt
            if sps.picOrderCntType != 0 {
                let inputs = PictureOrderCountInputs(
                    picOrderCntType: sps.picOrderCntType, maxPicOrderCntLsb: Int64(sps.maxPicOrderCntLsb),
                    maxFrameNum: Int64(maxFrameNum), offsetForNonRefPic: Int64(sps.offsetForNonRefPic),
                    offsetForTopToBottomField: Int64(sps.offsetForTopToBottomField),
                    offsetForRefFrame: offsetForRefFrame, isIDR: false, nalRefIdc: 1,
                    frameNum: Int64(unusedFrameNum), fieldPicFlag: false, bottomFieldFlag: false, picOrderCntLsb: 0,
                    deltaPicOrderCntBottom: 0, deltaPicOrderCnt0: 0, deltaPicOrderCnt1: 0,
                    hasMemoryManagementControlOperation5: false)
                if let computed = try? pictureOrderCounts.compute(inputs) {
                    pictureOrderCount = Int(computed.picOrderCnt)
                }
            }
            let picture = H264Picture(
                frameNum: unusedFrameNum, topFieldOrderCnt: pictureOrderCount, bottomFieldOrderCnt: pictureOrderCount,
                isIDR: false, nalRefIdc: 1, isNonExisting: true, frameReference: frameReference)
            decodedPictureBuffer.updateFrameNumWrap(currentFrameNum: unusedFrameNum, maxFrameNum: maxFrameNum)
            decodedPictureBuffer.slidingWindow(maxNumRefFrames: sps.maxNumRefFrames)
            // The sliding window has made room: the accelerator's surface for the inferred
            // frame comes from what the DPB let go of.
            try accelerator.storeNonExistingFrame(picture)
            for output in decodedPictureBuffer.storeNonExisting(picture) { try accelerator.outputPicture(output) }
            previousReferenceFrameNum = unusedFrameNum
        }
    }

    // MARK: - Reference lists (8.2.4)

    private func referencePictureLists(
        for header: SliceHeader, currentPicture: H264Picture, sps: SequenceParameterSet
    ) -> ([H264Picture?], [H264Picture?]) {
        let kind = header.sliceKind
        if kind.isIntra { return ([], []) }
        let shortTerm = decodedPictureBuffer.shortTermReferences
        let longTerm = decodedPictureBuffer.longTermReferences
        // Frames: CurrPicNum = frame_num, MaxPicNum = MaxFrameNum (7.4.3).
        let currPicNum = header.frameNum
        let maxPicNum = sps.maxFrameNum
        let initial0: [H264Picture]
        var initial1: [H264Picture] = []
        if kind == .b {
            (initial0, initial1) = H264ReferencePictureLists.initialBLists(
                shortTerm: shortTerm, longTerm: longTerm, currentPicOrderCnt: currentPicture.picOrderCnt)
        } else {
            initial0 = H264ReferencePictureLists.initialPList(shortTerm: shortTerm, longTerm: longTerm)
        }
        let list0 = H264ReferencePictureLists.modifiedList(
            initial: initial0,
            modifications: header.refPicListModificationFlagL0 ? header.refPicListModificationL0 : [],
            activeCount: header.numRefIdxL0Active, currPicNum: currPicNum, maxPicNum: maxPicNum,
            shortTerm: shortTerm, longTerm: longTerm)
        let list1 =
            kind == .b
            ? H264ReferencePictureLists.modifiedList(
                initial: initial1,
                modifications: header.refPicListModificationFlagL1 ? header.refPicListModificationL1 : [],
                activeCount: header.numRefIdxL1Active, currPicNum: currPicNum, maxPicNum: maxPicNum,
                shortTerm: shortTerm, longTerm: longTerm)
            : []
        return (list0, list1)
    }

    // MARK: - End of a picture: marking (8.2.5) and storage (C.4.5)

    private func finishPicture() throws(H264DecodingError) {
        guard let finished = current else { return }
        current = nil
        let picture = finished.picture
        let header = finished.firstSlice
        var acceleratorError: H264DecodingError?
        // Every started picture is ended, also one whose start or slices failed: an accelerator
        // must not leave a picture open on its device (see H264Accelerator.endPicture). The
        // failure that came first is the one reported.
        do {
            try accelerator.endPicture(picture)
        } catch {
            if !picture.decodingFailed { acceleratorError = error }
            picture.decodingFailed = true
        }
        // Marking and storage happen whether or not the accelerator succeeded: the DPB must
        // stay what the stream describes, so that later pictures find their references.
        var outputs: [H264Picture] = []
        if picture.nalRefIdc != 0 {
            if header.idrPicFlag {
                decodedPictureBuffer.markIDR(picture, longTermReference: header.longTermReferenceFlag)
            } else {
                var currentIsLongTerm = false
                if header.adaptiveRefPicMarkingModeFlag {
                    currentIsLongTerm = decodedPictureBuffer.applyMemoryManagementControlOperations(
                        header.memoryManagementControlOperations, current: picture, currPicNum: header.frameNum)
                } else {
                    decodedPictureBuffer.slidingWindow(maxNumRefFrames: finished.parameterSets.sequence.maxNumRefFrames)
                }
                if !currentIsLongTerm { picture.marking = .shortTerm }
            }
        }
        if picture.hasMemoryManagementControlOperation5 {
            // C.4.4: a picture with MMCO 5 outputs every earlier picture first (their POCs
            // belong to the previous epoch); 8.2.1: its own POC becomes relative to itself and
            // its frame_num 0.
            outputs += decodedPictureBuffer.bumpAll()
            decodedPictureBuffer.removeAll()
            let after = finished.pictureOrderCountAfterDecoding
            picture.topFieldOrderCnt = Int(after.topFieldOrderCnt ?? 0)
            picture.bottomFieldOrderCnt = Int(after.bottomFieldOrderCnt ?? after.topFieldOrderCnt ?? 0)
            picture.frameNum = 0
            picture.frameNumWrap = 0
        }
        if picture.nalRefIdc != 0 {
            previousReferenceFrameNum = picture.frameNum
            previousReferencePicOrderCnt = picture.picOrderCnt
        }
        outputs += decodedPictureBuffer.store(picture)
        for output in outputs { try accelerator.outputPicture(output) }
        if let acceleratorError { throw acceleratorError }
    }
}
