/// What a parser or decoder needs to know about the primary coded picture of an access unit.
public struct AccessUnitPicture: Hashable, Sendable {
    public var isIDR: Bool
    public var nalRefIdc: UInt8
    public var frameNum: Int64
    public var seqParameterSetID: Int
    public var picParameterSetID: Int
    public var fieldPicFlag: Bool
    public var bottomFieldFlag: Bool
    public var idrPicID: Int64
    /// Slice kinds present in the picture.
    public var containsISlices = false
    public var containsPSlices = false
    public var containsBSlices = false
    public var sliceCount = 0
    /// The access unit carries a recovery point SEI (D.2.8): decoding may start here, and output is
    /// correct from `recoveryFrameCount` frames on.
    public var recoveryFrameCount: Int?
    public var hasMemoryManagementControlOperation5: Bool
    public var pictureOrderCount: PictureOrderCount
    /// Counts IDR pictures and MMCO 5 resets; compare (epoch, POC) to order pictures for output.
    public var pictureOrderCountEpoch: Int

    public init(
        isIDR: Bool, nalRefIdc: UInt8, frameNum: Int64, seqParameterSetID: Int, picParameterSetID: Int,
        fieldPicFlag: Bool, bottomFieldFlag: Bool, idrPicID: Int64, recoveryFrameCount: Int? = nil,
        hasMemoryManagementControlOperation5: Bool, pictureOrderCount: PictureOrderCount, pictureOrderCountEpoch: Int
    ) {
        self.isIDR = isIDR
        self.nalRefIdc = nalRefIdc
        self.frameNum = frameNum
        self.seqParameterSetID = seqParameterSetID
        self.picParameterSetID = picParameterSetID
        self.fieldPicFlag = fieldPicFlag
        self.bottomFieldFlag = bottomFieldFlag
        self.idrPicID = idrPicID
        self.recoveryFrameCount = recoveryFrameCount
        self.hasMemoryManagementControlOperation5 = hasMemoryManagementControlOperation5
        self.pictureOrderCount = pictureOrderCount
        self.pictureOrderCountEpoch = pictureOrderCountEpoch
    }

    /// A picture at which decoding can start: an IDR, or a recovery point whose output is exact
    /// immediately (recovery_frame_cnt 0, D.2.8).
    public var isRandomAccessPoint: Bool { isIDR || recoveryFrameCount == 0 }
    /// Only I (and SI) slices: no reference to other pictures.
    public var isIntra: Bool { containsISlices && !containsPSlices && !containsBSlices }
}

/// How one NAL unit fits into the access-unit structure.
public struct AccessUnitAssemblyStep: Sendable {
    public var nalUnitType: NALUnitType
    /// This NAL unit is the first of a new access unit (7.4.1.2.3): everything pushed before it
    /// forms a complete access unit.
    public var startsNewAccessUnit: Bool
    /// When `startsNewAccessUnit`: the primary picture of the access unit that just ended, or nil
    /// when that access unit held no decodable picture (only parameter sets, or only damaged slices).
    public var completedPicture: AccessUnitPicture?
    /// The NAL unit cannot be used (a slice that does not parse, or refers to a parameter set that
    /// was never received; a malformed parameter set). The caller should drop it and warn.
    public var problem: H264Error?
    /// For SPS/PPS: whether it is new or differs from the one stored under its id.
    public var parameterSetChange: ParameterSetStore.Change?
    /// A slice of the picture before the last access-unit boundary, which an SPS, PPS or SEI
    /// between two slices of one picture made (against 7.4.1.2.3, but RTP payloaders that repeat
    /// the parameter sets before every IDR slice write it: rtph264pay config-interval=-1 with
    /// several slices per picture). The picture goes on: a caller that can should put the NAL
    /// units since that boundary into the previous access unit (``AccessUnitSplitter`` does),
    /// as h264parse-fed libavcodec decodes it.
    public var continuesPreviousPicture = false
}

/// Groups NAL units, in decoding order, into access units following 7.4.1.2.3 and 7.4.1.2.4, and
/// computes each picture's POC (8.2.1).
///
/// The first VCL NAL unit of a new primary coded picture is found by comparing its slice header
/// with the previous slice of the current picture (7.4.1.2.4: frame_num, pic_parameter_set_id,
/// field_pic_flag, bottom_field_flag, nal_ref_idc being zero, the POC fields, IdrPicFlag and
/// idr_pic_id) rather than by first_mb_in_slice == 0, which arbitrary slice order (ASO, baseline
/// profile) and damaged streams break.
public struct AccessUnitAssembler: Sendable {
    public private(set) var parameterSets = ParameterSetStore()
    private var pocCalculator = PictureOrderCountCalculator()

    /// The primary picture of the access unit being assembled, once its first slice has been seen.
    public private(set) var currentPicture: AccessUnitPicture?
    /// The slice header fields of 7.4.1.2.4 of the last primary slice of the current picture.
    private var lastSliceIdentity: PrimaryPictureIdentity?
    /// Where the current picture's first slice starts: a later slice starting there again
    /// begins another picture (see ``pushSlice``).
    private var firstSlicePosition: SlicePosition?
    /// A VCL NAL unit of the current access unit has been pushed: the next SEI/SPS/PPS/AUD
    /// (7.4.1.2.3) starts a new access unit.
    private var seenVCLInCurrentAccessUnit = false
    /// Something (an SEI, SPS, AUD...) has been pushed since the last access unit ended.
    private var currentAccessUnitHasNALUnits = false
    /// Recovery point seen in the current access unit before its first slice.
    private var pendingRecoveryFrameCount: Int?
    /// The picture that an SPS/PPS/SEI after its slices ended, kept until the next slice shows
    /// whether it really ended (a new primary picture, 7.4.1.2.4) or goes on.
    private var suspendedPicture:
        (picture: AccessUnitPicture, lastSlice: PrimaryPictureIdentity, firstSlice: SlicePosition?)?

    public init() {}

    /// Classifies the next NAL unit (header byte included, escaped, no start code or length).
    public mutating func push(nalUnit: UnsafeRawBufferPointer) -> AccessUnitAssemblyStep {
        guard let headerByte = nalUnit.first else {
            return AccessUnitAssemblyStep(
                nalUnitType: .unspecified, startsNewAccessUnit: false,
                problem: .truncated(what: "NAL unit header"))
        }
        let header = NALUnitHeader(byte: headerByte)
        var step = AccessUnitAssemblyStep(nalUnitType: header.nalUnitType, startsNewAccessUnit: false)
        if header.forbiddenZeroBit {
            step.problem = .invalidValue(field: "forbidden_zero_bit", value: 1)
            return step
        }
        switch header.nalUnitType {
        case .codedSliceNonIDR, .codedSliceIDR, .codedSliceDataPartitionA:
            pushSlice(nalUnit, header: header, step: &step)
        case .codedSliceDataPartitionB, .codedSliceDataPartitionC:
            // Partitions B and C carry no slice header; they belong to the picture of the
            // partition A before them (7.3.2.9).
            if !seenVCLInCurrentAccessUnit {
                step.problem = .malformedFraming("slice data partition B or C without partition A")
            } else {
                joinCurrentAccessUnit(&step)
            }
        case .sequenceParameterSet, .pictureParameterSet, .sei, .accessUnitDelimiter,
            .prefixNALUnit, .subsetSequenceParameterSet, .depthParameterSet,
            NALUnitType(rawValue: 17), NALUnitType(rawValue: 18):
            // 7.4.1.2.3: after the last VCL NAL unit of a primary picture, these begin the next
            // access unit. Unless it is an access unit delimiter, the picture is kept in case the
            // next slice continues it (continuesPreviousPicture).
            if header.nalUnitType == .accessUnitDelimiter {
                suspendedPicture = nil
            } else if seenVCLInCurrentAccessUnit, let picture = currentPicture, let last = lastSliceIdentity {
                suspendedPicture = (picture, last, firstSlicePosition)
            }
            if seenVCLInCurrentAccessUnit { endAccessUnit(into: &step) }
            joinCurrentAccessUnit(&step)
            storeNonVCL(nalUnit, header: header, step: &step)
        case .endOfSequence:
            // The next picture is an IDR (7.4.1.2.3); this NAL unit ends the current access unit
            // and is part of it.
            joinCurrentAccessUnit(&step)
        default:
            // End of stream, filler, SPS extension, auxiliary slices and reserved types stay with
            // the current access unit.
            joinCurrentAccessUnit(&step)
        }
        return step
    }

    /// Ends the stream: returns the picture of the last access unit, if it has one.
    public mutating func finish() -> AccessUnitPicture? {
        defer {
            currentPicture = nil
            lastSliceIdentity = nil
            firstSlicePosition = nil
            seenVCLInCurrentAccessUnit = false
            currentAccessUnitHasNALUnits = false
            pendingRecoveryFrameCount = nil
            suspendedPicture = nil
        }
        return currentPicture
    }

    /// Forgets the picture in progress and the POC history (a flush or seek); parameter sets are
    /// kept, as a decoder keeps them across a seek.
    public mutating func reset() {
        _ = finish()
        pocCalculator = PictureOrderCountCalculator()
    }

    private mutating func endAccessUnit(into step: inout AccessUnitAssemblyStep) {
        step.startsNewAccessUnit = true
        step.completedPicture = currentPicture
        currentPicture = nil
        lastSliceIdentity = nil
        firstSlicePosition = nil
        seenVCLInCurrentAccessUnit = false
        currentAccessUnitHasNALUnits = false
        pendingRecoveryFrameCount = nil
    }

    private mutating func storeNonVCL(
        _ nalUnit: UnsafeRawBufferPointer, header: NALUnitHeader, step: inout AccessUnitAssemblyStep
    ) {
        do throws(H264Error) {
            switch header.nalUnitType {
            case .sequenceParameterSet:
                step.parameterSetChange = try parameterSets.storeSequenceParameterSet(nalUnit).change
            case .pictureParameterSet:
                step.parameterSetChange = try parameterSets.storePictureParameterSet(nalUnit).change
            case .sei:
                if let count = try SEIRecoveryPoint.recoveryFrameCount(inSEI: nalUnit, parameterSets: parameterSets) {
                    pendingRecoveryFrameCount = count
                }
            default:
                break
            }
        } catch {
            step.problem = error
        }
    }

    private mutating func pushSlice(
        _ nalUnit: UnsafeRawBufferPointer, header: NALUnitHeader, step: inout AccessUnitAssemblyStep
    ) {
        // The picture identity (7.4.1.2.4) for every slice; the whole header only for the first
        // slice of each picture, which is all POC and MMCO detection need.
        let quick: SliceIdentity
        do throws(H264Error) {
            quick = try parameterSets.withSliceIdentityContexts { (contexts) throws(H264Error) in
                try SliceIdentity.parse(nalUnit: nalUnit, contexts: contexts)
            }
        } catch {
            step.problem = error
            return
        }
        // A redundant coded picture (redundant_pic_cnt > 0) belongs to the access unit of its
        // primary picture and takes no part in the comparison of 7.4.1.2.4.
        if quick.redundantPicCnt > 0 {
            if !seenVCLInCurrentAccessUnit {
                step.problem = .malformedFraming("redundant slice without a primary picture")
            } else {
                joinCurrentAccessUnit(&step)
            }
            return
        }
        if !seenVCLInCurrentAccessUnit, let suspended = suspendedPicture {
            suspendedPicture = nil
            if !suspended.lastSlice.differsAsNewPrimaryPicture(from: quick.identity),
                quick.position != suspended.firstSlice
            {
                // The parameter sets or SEI came between two slices of one picture: it goes on.
                currentPicture = suspended.picture
                lastSliceIdentity = suspended.lastSlice
                firstSlicePosition = suspended.firstSlice
                seenVCLInCurrentAccessUnit = true
                step.continuesPreviousPicture = true
            }
        }
        let startsPicture: Bool
        if seenVCLInCurrentAccessUnit, let last = lastSliceIdentity {
            // 7.4.1.2.4 cannot tell a picture from the same picture repeated (one-picture streams
            // concatenated: the same IDR with the same idr_pic_id); its slices can: a slice that
            // starts where the picture's first slice started belongs to another picture, since
            // no two slices of a primary picture start at the same macroblock (7.4.3).
            startsPicture =
                last.differsAsNewPrimaryPicture(from: quick.identity) || quick.position == firstSlicePosition
        } else {
            startsPicture = true
        }
        var parsed: ParsedSlice?
        if startsPicture || currentPicture == nil {
            do throws(H264Error) {
                parsed = try ParsedSlice(nalUnit: nalUnit, parameterSets: parameterSets)
            } catch {
                step.problem = error
                return
            }
        }
        if startsPicture && seenVCLInCurrentAccessUnit {
            endAccessUnit(into: &step)
        }
        joinCurrentAccessUnit(&step)
        if currentPicture == nil, let parsed {
            let poc: PictureOrderCount
            do throws(H264Error) {
                poc = try pocCalculator.compute(parsed.pictureOrderCountInputs)
            } catch {
                step.problem = error
                return
            }
            currentPicture = AccessUnitPicture(
                isIDR: parsed.identity.isIDR, nalRefIdc: header.nalRefIdc, frameNum: parsed.identity.frameNum,
                seqParameterSetID: parsed.seqParameterSetID, picParameterSetID: parsed.identity.picParameterSetID,
                fieldPicFlag: parsed.identity.fieldPicFlag, bottomFieldFlag: parsed.identity.bottomFieldFlag,
                idrPicID: parsed.identity.idrPicID, recoveryFrameCount: pendingRecoveryFrameCount,
                hasMemoryManagementControlOperation5: parsed.pictureOrderCountInputs
                    .hasMemoryManagementControlOperation5,
                pictureOrderCount: poc, pictureOrderCountEpoch: pocCalculator.epoch)
        }
        currentPicture?.sliceCount += 1
        switch quick.sliceType % 5 {
        case 2, 4: currentPicture?.containsISlices = true
        case 0, 3: currentPicture?.containsPSlices = true
        default: currentPicture?.containsBSlices = true
        }
        if startsPicture { firstSlicePosition = quick.position }
        lastSliceIdentity = quick.identity
        seenVCLInCurrentAccessUnit = true
    }

    /// Adds the NAL unit to the access unit being assembled, marking it as the first NAL unit of
    /// that access unit when it is.
    private mutating func joinCurrentAccessUnit(_ step: inout AccessUnitAssemblyStep) {
        if !currentAccessUnitHasNALUnits { step.startsNewAccessUnit = true }
        currentAccessUnitHasNALUnits = true
    }
}

/// The slice header fields that 7.4.1.2.4 compares between consecutive VCL NAL units.
struct PrimaryPictureIdentity: Hashable, Sendable {
    var frameNum: Int64
    var picParameterSetID: Int
    var fieldPicFlag: Bool
    var bottomFieldFlag: Bool
    var nalRefIdcIsZero: Bool
    var picOrderCntType: Int
    var picOrderCntLsb: Int64
    var deltaPicOrderCntBottom: Int64
    var deltaPicOrderCnt0: Int64
    var deltaPicOrderCnt1: Int64
    var isIDR: Bool
    var idrPicID: Int64

    /// 7.4.1.2.4: does `next` begin a new primary coded picture?
    func differsAsNewPrimaryPicture(from next: PrimaryPictureIdentity) -> Bool {
        if frameNum != next.frameNum { return true }
        if picParameterSetID != next.picParameterSetID { return true }
        if fieldPicFlag != next.fieldPicFlag { return true }
        // bottom_field_flag is present in both only when both are fields.
        if fieldPicFlag && next.fieldPicFlag && bottomFieldFlag != next.bottomFieldFlag { return true }
        if nalRefIdcIsZero != next.nalRefIdcIsZero { return true }
        if picOrderCntType == 0 && next.picOrderCntType == 0
            && (picOrderCntLsb != next.picOrderCntLsb || deltaPicOrderCntBottom != next.deltaPicOrderCntBottom)
        {
            return true
        }
        if picOrderCntType == 1 && next.picOrderCntType == 1
            && (deltaPicOrderCnt0 != next.deltaPicOrderCnt0 || deltaPicOrderCnt1 != next.deltaPicOrderCnt1)
        {
            return true
        }
        if isIDR != next.isIDR { return true }
        if isIDR && next.isIDR && idrPicID != next.idrPicID { return true }
        return false
    }
}
