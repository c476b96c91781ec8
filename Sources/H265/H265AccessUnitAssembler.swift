/// What a parser or decoder needs to know about the coded picture of an access unit (the base
/// layer's: one picture per access unit).
public struct H265AccessUnitPicture: Hashable, Sendable {
    /// nal_unit_type of the picture's slice segments (7.4.2.2: the same for all of them).
    public var nalUnitType: H265NALUnitType
    /// TemporalId of the picture's slice segments.
    public var temporalID: Int
    public var picParameterSetID: Int
    public var seqParameterSetID: Int
    public var videoParameterSetID: Int
    public var slicePicOrderCntLsb: Int
    /// PicOrderCntVal (8.3.1).
    public var pictureOrderCount: Int
    /// NoRaslOutputFlag (8.1.3) of an IRAP picture: 1 when it starts a coded video sequence (an
    /// IDR or BLA picture, the first picture of the stream or after an end of sequence, or a CRA
    /// handled as a BLA). Always false for other pictures.
    public var noRaslOutputFlag: Bool
    /// PicOutputFlag (8.1.3): 0 for a RASL picture of an IRAP picture with NoRaslOutputFlag 1
    /// (its references are missing; decoders skip it), else pic_output_flag.
    public var picOutputFlag: Bool
    /// Counts coded video sequences from 0: pictures with the same index are in the same CVS,
    /// within which POC values are unique.
    public var codedVideoSequenceIndex: Int
    /// Slice segments of the picture, and how many of them are independent (carry a full header).
    public var sliceSegmentCount = 0
    public var independentSliceSegmentCount = 0
    /// Slice types present.
    public var containsISlices = false
    public var containsPSlices = false
    public var containsBSlices = false
    /// The access unit starts with an access unit delimiter.
    public var hasAccessUnitDelimiter = false
    /// The access unit ends with an end of sequence / end of bitstream NAL unit.
    public var endsSequence = false
    public var endsBitstream = false
    /// The messages of the access unit's prefix and suffix SEI NAL units, in order.
    public var seiMessages: [H265SEIMessage] = []
    /// Problems in those SEI NAL units (the messages concerned are in `seiMessages` as `.other`).
    public var seiErrors: [H265Error] = []

    public init(
        nalUnitType: H265NALUnitType, temporalID: Int, picParameterSetID: Int, seqParameterSetID: Int,
        videoParameterSetID: Int, slicePicOrderCntLsb: Int, pictureOrderCount: Int, noRaslOutputFlag: Bool,
        picOutputFlag: Bool, codedVideoSequenceIndex: Int
    ) {
        self.nalUnitType = nalUnitType
        self.temporalID = temporalID
        self.picParameterSetID = picParameterSetID
        self.seqParameterSetID = seqParameterSetID
        self.videoParameterSetID = videoParameterSetID
        self.slicePicOrderCntLsb = slicePicOrderCntLsb
        self.pictureOrderCount = pictureOrderCount
        self.noRaslOutputFlag = noRaslOutputFlag
        self.picOutputFlag = picOutputFlag
        self.codedVideoSequenceIndex = codedVideoSequenceIndex
    }

    public var isIRAP: Bool { nalUnitType.isIRAP }
    public var isIDR: Bool { nalUnitType.isIDR }
    /// A picture at which decoding can start: an IRAP picture (its leading RASL pictures are
    /// then skipped).
    public var isRandomAccessPoint: Bool { nalUnitType.isIRAP }
    /// Only I slices: no reference to other pictures.
    public var isIntra: Bool { containsISlices && !containsPSlices && !containsBSlices }

    /// The decoded picture hash of the access unit's suffix SEI (D.2.20), if any.
    public var decodedPictureHash: H265DecodedPictureHash? {
        for case .decodedPictureHash(let hash) in seiMessages { return hash }
        return nil
    }

    /// The access unit's picture timing SEI (D.2.3), if any.
    public var pictureTiming: H265PictureTiming? {
        for case .pictureTiming(let timing) in seiMessages { return timing }
        return nil
    }
}

/// How one NAL unit fits into the access-unit structure.
public struct H265AccessUnitAssemblyStep: Sendable {
    /// nil when the NAL unit header itself is broken.
    public var nalUnitType: H265NALUnitType?
    /// This NAL unit is the first of a new access unit (7.4.2.4.4): everything pushed before it
    /// forms a complete access unit.
    public var startsNewAccessUnit = false
    /// When `startsNewAccessUnit`: the picture of the access unit that just ended, or nil when it
    /// held no usable picture (only parameter sets, or only damaged slices).
    public var completedPicture: H265AccessUnitPicture?
    /// The NAL unit cannot be used (a header or parameter set that does not parse, a slice whose
    /// parameter sets are missing). The caller should drop it and warn.
    public var problem: H265Error?
    /// For VPS/SPS/PPS: whether it is new or differs from the one stored under its id.
    public var parameterSetChange: H265ParameterSetStore.Change?
    /// A NAL unit the base layer ignores (nuh_layer_id > 0, reserved or unspecified types,
    /// 7.4.2.2); it still belongs to the current access unit.
    public var isIgnored = false

    public init(nalUnitType: H265NALUnitType?) {
        self.nalUnitType = nalUnitType
    }
}

/// Groups H.265 NAL units, in decoding order, into access units following 7.4.2.4.4, and
/// computes each picture's POC (8.3.1).
///
/// A picture starts at a slice segment with first_slice_segment_in_pic_flag 1, and the access
/// unit of a picture starts at the first AUD, VPS, SPS, PPS, prefix SEI, RSV_NVCL41...44 or
/// UNSPEC48...55 NAL unit after the previous picture's last VCL NAL unit, or at the picture's
/// first slice when none of those come first; an end of sequence or end of bitstream NAL unit
/// ends its access unit. Prefix SEI messages are parsed when the picture's first slice has
/// named the SPS they are interpreted with (see `H265SEI.parse`).
public struct H265AccessUnitAssembler: Sendable {
    public private(set) var parameterSets = H265ParameterSetStore()
    private var pocCalculator = H265PictureOrderCountCalculator()
    /// HandleCraAsBlaFlag (8.1.3): set by an application that starts decoding at a CRA picture
    /// after a splice; the first CRA of the stream is handled so anyway.
    public var handleCRAAsBLA = false
    /// How much of each NAL unit is read (``Depth``).
    public var depth = Depth.decoding

    /// How much of each NAL unit the assembler reads.
    public enum Depth: Sendable {
        /// Every slice segment header up to the reference lists, and every SEI message: what a
        /// decoder needs.
        case decoding
        /// What finds access units and orders pictures (7.4.2.4.4, 8.3.1), for parsers: the
        /// header of each picture's first slice segment up to slice_pic_order_cnt_lsb, and the
        /// prefix SEI messages (picture timing). The other slice segments of a picture are
        /// counted, not parsed (first_slice_segment_in_pic_flag alone places the boundary; their
        /// slice types are not noted), and suffix SEI messages (decoded picture hashes) are not
        /// read. A slice damaged after its POC field goes on to the decoder, as after h265parse.
        case accessUnits
    }

    /// The picture being assembled, once its first slice segment has been seen.
    public private(set) var currentPicture: H265AccessUnitPicture?
    /// The id of the SPS the current picture activated (for its suffix SEI), not the SPS
    /// itself: copying the parameter set per picture costs more than the lookup of the rare SEI.
    /// The store keeps it unchanged to the end of the access unit (an SPS NAL unit would start
    /// the next one, 7.4.2.4.4).
    private var currentSequenceParameterSetID: Int?
    private var seenVCLInCurrentAccessUnit = false
    private var currentAccessUnitHasNALUnits = false
    /// An end of sequence or end of bitstream NAL unit ended the access unit: the next NAL
    /// unit (other than an end of bitstream after an end of sequence) starts another.
    private var accessUnitEnded = false
    /// Prefix SEI NAL units of the current access unit, kept (copied, they are small) until its
    /// first slice names the SPS they are read with.
    private var pendingPrefixSEIs: [[UInt8]] = []
    private var pendingAccessUnitDelimiter = false
    /// 8.1.3: the first picture of the bitstream, and the first after an end of sequence, start
    /// a coded video sequence (NoRaslOutputFlag 1).
    private var nextPictureStartsSequence = true
    /// NoRaslOutputFlag of the last IRAP picture: its RASL pictures are not output when set.
    private var lastIRAPNoRaslOutputFlag = true
    private var codedVideoSequenceIndex = -1

    public init(handleCRAAsBLA: Bool = false, depth: Depth = .decoding) {
        self.handleCRAAsBLA = handleCRAAsBLA
        self.depth = depth
    }

    /// Classifies the next NAL unit (header included, escaped, no start code or length).
    public mutating func push(nalUnit: UnsafeRawBufferPointer) -> H265AccessUnitAssemblyStep {
        // One step, filled in place and returned: a step made in several places was copied to
        // the caller (it carries the completed picture) for every NAL unit.
        var step = H265AccessUnitAssemblyStep(nalUnitType: nil)
        classify(nalUnit, into: &step)
        return step
    }

    private mutating func classify(_ nalUnit: UnsafeRawBufferPointer, into step: inout H265AccessUnitAssemblyStep) {
        let header: H265NALUnitHeader
        do {
            header = try H265NALUnitHeader(parsing: nalUnit)
        } catch {
            step.problem = error
            return
        }
        let type = header.nalUnitType
        step.nalUnitType = type
        // 7.4.2.2: a decoder of the base layer ignores the NAL units of other layers; they sit
        // inside the base layer's access units and do not delimit them.
        if header.nuhLayerID > 0 {
            step.isIgnored = true
            return
        }
        if accessUnitEnded && type != .endOfBitstream { endAccessUnit(into: &step) }
        if type.startsAccessUnitAfterPicture && seenVCLInCurrentAccessUnit { endAccessUnit(into: &step) }

        switch type {
        case .videoParameterSet:
            noteNALUnit(&step)
            do { step.parameterSetChange = try parameterSets.storeVideoParameterSet(nalUnit).change } catch {
                step.problem = error
            }
        case .sequenceParameterSet:
            noteNALUnit(&step)
            do { step.parameterSetChange = try parameterSets.storeSequenceParameterSet(nalUnit).change } catch {
                step.problem = error
            }
        case .pictureParameterSet:
            noteNALUnit(&step)
            do { step.parameterSetChange = try parameterSets.storePictureParameterSet(nalUnit).change } catch {
                step.problem = error
            }
        case .accessUnitDelimiter:
            noteNALUnit(&step)
            pendingAccessUnitDelimiter = true
            // 7.3.2.5 / 7.4.3.5: pic_type u(3), 0...2 (which slice types the picture holds).
            if nalUnit.count > H265NALUnitHeader.byteCount, nalUnit[H265NALUnitHeader.byteCount] >> 5 > 2 {
                step.problem = .invalidValue(field: "pic_type", value: Int64(nalUnit[H265NALUnitHeader.byteCount] >> 5))
            } else if nalUnit.count <= H265NALUnitHeader.byteCount {
                step.problem = .truncated(what: "pic_type")
            }
        case .prefixSEI:
            noteNALUnit(&step)
            // Copy: the SEI is parsed once the picture's SPS is known (type comment).
            pendingPrefixSEIs.append(Array(nalUnit))
        case .suffixSEI:
            noteNALUnit(&step)
            // 7.4.2.4.4: a suffix SEI follows the first VCL NAL unit of its access unit.
            guard hasCurrentPicture, let spsID = currentSequenceParameterSetID else {
                step.problem = .malformedFraming("a suffix SEI NAL unit without a picture before it in its access unit")
                break
            }
            if depth == .decoding, let sps = parameterSets.sequenceParameterSet(id: spsID) {
                attachSEI(nalUnit, sps: sps)
            }
        case .endOfSequence, .endOfBitstream:
            noteNALUnit(&step)
            if type == .endOfSequence {
                currentPicture?.endsSequence = true
            } else {
                currentPicture?.endsBitstream = true
            }
            accessUnitEnded = true
            // 8.1.3: the picture after an end of sequence starts a coded video sequence.
            nextPictureStartsSequence = true
        default:
            if type.isVCL && !type.isReservedOrUnspecified {
                pushSlice(nalUnit, header: header, step: &step)
            } else {
                // FD_NUT and reserved/unspecified types: part of the access unit, ignored.
                noteNALUnit(&step)
                step.isIgnored = type.isReservedOrUnspecified
            }
        }
    }

    /// Forgets the access unit being assembled and the POC history (a flush, a seek): the next
    /// picture starts a coded video sequence, as after an end of sequence (8.1.3), so a CRA
    /// picture decoding restarts at is handled with NoRaslOutputFlag 1 and its RASL pictures are
    /// not output. Parameter sets are kept (7.4.2.4.2: they stay until replaced).
    public mutating func reset() {
        pocCalculator.reset()
        // The access unit being assembled is dropped, not completed.
        var dropped = H265AccessUnitAssemblyStep(nalUnitType: nil)
        endAccessUnit(into: &dropped)
        nextPictureStartsSequence = true
    }

    /// Ends the stream: the access unit being assembled is complete.
    public mutating func finish() -> H265AccessUnitPicture? {
        var step = H265AccessUnitAssemblyStep(nalUnitType: nil)
        endAccessUnit(into: &step)
        return step.completedPicture
    }

    /// `currentPicture != nil` without the Equatable `!=` of optionals, which copies the picture
    /// (and its arrays) into a pair to compare, for every slice.
    private var hasCurrentPicture: Bool {
        if case .some = currentPicture { return true }
        return false
    }

    private mutating func noteNALUnit(_ step: inout H265AccessUnitAssemblyStep) {
        if !currentAccessUnitHasNALUnits { step.startsNewAccessUnit = true }
        currentAccessUnitHasNALUnits = true
    }

    private mutating func endAccessUnit(into step: inout H265AccessUnitAssemblyStep) {
        step.startsNewAccessUnit = currentAccessUnitHasNALUnits || step.startsNewAccessUnit
        // Moved, not copied (the picture holds arrays: a copy retains and releases them).
        step.completedPicture = currentPicture.take()
        currentSequenceParameterSetID = nil
        seenVCLInCurrentAccessUnit = false
        currentAccessUnitHasNALUnits = false
        accessUnitEnded = false
        pendingPrefixSEIs.removeAll()
        pendingAccessUnitDelimiter = false
    }

    private mutating func pushSlice(
        _ nalUnit: UnsafeRawBufferPointer, header: H265NALUnitHeader, step: inout H265AccessUnitAssemblyStep
    ) {
        guard let startsPicture = H265SliceSegmentHeader.firstSliceSegmentInPicFlag(of: nalUnit) else {
            noteNALUnit(&step)
            seenVCLInCurrentAccessUnit = true
            step.problem = .truncated(what: "first_slice_segment_in_pic_flag")
            return
        }
        // The flag alone places the boundary (7.4.2.4.4), so a slice whose header cannot be
        // parsed still ends the previous picture and does not merge it with the next.
        if startsPicture && seenVCLInCurrentAccessUnit { endAccessUnit(into: &step) }
        noteNALUnit(&step)
        seenVCLInCurrentAccessUnit = true
        if depth == .accessUnits && !startsPicture && hasCurrentPicture {
            currentPicture?.sliceSegmentCount &+= 1
            return
        }
        let slice: H265SliceSegmentHeader
        do {
            if depth == .decoding {
                slice = try H265SliceSegmentHeader.parse(
                    nalUnit: nalUnit, pictureParameterSet: { parameterSets.pictureParameterSet(id: $0) },
                    sequenceParameterSet: { parameterSets.sequenceParameterSet(id: $0) },
                    extent: .throughTemporalMVP)
            } else {
                // Only the fields that place the picture: read through the store's per-PPS
                // contexts, without copying the PPS and SPS for every picture.
                slice = try H265SliceSegmentHeader.parseThroughPictureOrderCount(
                    nalUnit: nalUnit, contexts: { parameterSets.slicePictureContext(ppsID: $0) })
            }
        } catch {
            step.problem = error
            if startsPicture { currentPicture = nil }
            return
        }
        if startsPicture {
            startPicture(with: slice, step: &step)
            return
        }
        guard var picture = currentPicture else {
            step.problem = .invalidValue(
                field: "first_slice_segment_in_pic_flag (no first slice segment before this one)", value: 0)
            return
        }
        // 7.4.2.2 and 7.4.7.1: all slice segments of a picture share nal_unit_type, the PPS and
        // slice_pic_order_cnt_lsb; a slice segment that does not belong to a picture whose first
        // segment was lost.
        if slice.nalUnitHeader.nalUnitType != picture.nalUnitType
            || slice.slicePicParameterSetID != picture.picParameterSetID
            || (!slice.dependentSliceSegmentFlag && slice.slicePicOrderCntLsb != picture.slicePicOrderCntLsb)
        {
            step.problem = .invalidValue(
                field: "first_slice_segment_in_pic_flag (slice segment of another picture)", value: 0)
            return
        }
        picture.sliceSegmentCount &+= 1
        if !slice.dependentSliceSegmentFlag {
            picture.independentSliceSegmentCount &+= 1
            note(slice.sliceType, in: &picture)
        }
        currentPicture = picture
    }

    private mutating func startPicture(with slice: H265SliceSegmentHeader, step: inout H265AccessUnitAssemblyStep) {
        // 7.4.2.4.2: the picture activates its PPS and that PPS's SPS; what the picture needs of
        // them, and whether the PPS's bounds hold for that SPS, are in the store's context (the
        // same checks as `H265ParameterSetStore.activate`, without copying either set).
        guard let context = parameterSets.slicePictureContext(ppsID: slice.slicePicParameterSetID),
            let sequence = context.sequence, !sequence.failsValidation
        else {
            step.problem = parameterSets.activationError(ppsID: slice.slicePicParameterSetID)
            currentPicture = nil
            return
        }
        let type = slice.nalUnitHeader.nalUnitType
        // 8.1.3: NoRaslOutputFlag is 1 for IDR and BLA pictures, the first picture of the
        // stream or after an end of sequence, and CRA pictures handled as BLA.
        var noRaslOutputFlag = false
        if type.isIRAP {
            noRaslOutputFlag = type.isIDR || type.isBLA || nextPictureStartsSequence || handleCRAAsBLA
            lastIRAPNoRaslOutputFlag = noRaslOutputFlag
        }
        if noRaslOutputFlag { codedVideoSequenceIndex &+= 1 }
        // A stream that starts without an IRAP picture still gets a sequence index.
        if codedVideoSequenceIndex < 0 { codedVideoSequenceIndex = 0 }
        nextPictureStartsSequence = false
        let poc = pocCalculator.pictureOrderCount(
            slicePicOrderCntLsb: slice.slicePicOrderCntLsb, maxPicOrderCntLsb: sequence.maxPicOrderCntLsb,
            nalUnitType: type, temporalID: slice.nalUnitHeader.temporalID,
            isIRAPWithNoRaslOutputFlag: noRaslOutputFlag)
        // 8.1.3: RASL pictures of an IRAP picture with NoRaslOutputFlag 1 are not output (they
        // refer to pictures before the random access point).
        let output = type.isRASL && lastIRAPNoRaslOutputFlag ? false : slice.picOutputFlag
        var picture = H265AccessUnitPicture(
            nalUnitType: type, temporalID: slice.nalUnitHeader.temporalID,
            picParameterSetID: slice.slicePicParameterSetID, seqParameterSetID: context.seqParameterSetID,
            videoParameterSetID: sequence.videoParameterSetID, slicePicOrderCntLsb: slice.slicePicOrderCntLsb,
            pictureOrderCount: poc.value, noRaslOutputFlag: noRaslOutputFlag, picOutputFlag: output,
            codedVideoSequenceIndex: codedVideoSequenceIndex)
        picture.sliceSegmentCount = 1
        picture.independentSliceSegmentCount = 1
        picture.hasAccessUnitDelimiter = pendingAccessUnitDelimiter
        note(slice.sliceType, in: &picture)
        currentPicture = picture
        currentSequenceParameterSetID = context.seqParameterSetID
        if !pendingPrefixSEIs.isEmpty, let sps = parameterSets.sequenceParameterSet(id: context.seqParameterSetID) {
            for sei in pendingPrefixSEIs {
                sei.withUnsafeBytes { attachSEI($0, sps: sps) }
            }
        }
        pendingPrefixSEIs.removeAll()
    }

    private func note(_ type: H265SliceType, in picture: inout H265AccessUnitPicture) {
        switch type {
        case .i: picture.containsISlices = true
        case .p: picture.containsPSlices = true
        case .b: picture.containsBSlices = true
        }
    }

    private mutating func attachSEI(_ nalUnit: UnsafeRawBufferPointer, sps: H265SequenceParameterSet) {
        guard var picture = currentPicture else { return }
        do {
            let sei = try H265SEI.parse(nalUnit: nalUnit, activeSequenceParameterSet: sps)
            picture.seiMessages += sei.messages
            if let error = sei.error { picture.seiErrors.append(error) }
        } catch {
            picture.seiErrors.append(error)
        }
        currentPicture = picture
    }
}
