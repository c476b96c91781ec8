/// The parts of a slice header, and of its SPS/PPS, that access-unit assembly and POC need.
///
/// Isolates the assembler from the full header structures: it holds exactly the 7.4.1.2.4
/// identity and the 8.2.1 inputs.
struct ParsedSlice: Sendable {
    var identity: PrimaryPictureIdentity
    var pictureOrderCountInputs: PictureOrderCountInputs
    var seqParameterSetID: Int
    var redundantPicCnt: Int
    var sliceKind: SliceKind

    init(nalUnit: UnsafeRawBufferPointer, parameterSets: ParameterSetStore) throws(H264Error) {
        let header = try SliceHeader.parse(
            nalUnit: nalUnit, pictureParameterSets: { parameterSets.pictureParameterSet(id: $0) },
            sequenceParameterSets: { parameterSets.sequenceParameterSet(id: $0) })
        guard let sps = parameterSets.sequenceParameterSet(id: header.seqParameterSetID) else {
            throw H264Error.missingParameterSet(kind: "SPS", id: header.seqParameterSetID)
        }
        identity = PrimaryPictureIdentity(
            frameNum: Int64(header.frameNum), picParameterSetID: header.picParameterSetID,
            fieldPicFlag: header.fieldPicFlag, bottomFieldFlag: header.bottomFieldFlag,
            nalRefIdcIsZero: header.nalRefIdc == 0, picOrderCntType: sps.picOrderCntType,
            picOrderCntLsb: Int64(header.picOrderCntLsb), deltaPicOrderCntBottom: Int64(header.deltaPicOrderCntBottom),
            deltaPicOrderCnt0: Int64(header.deltaPicOrderCnt0), deltaPicOrderCnt1: Int64(header.deltaPicOrderCnt1),
            isIDR: header.idrPicFlag, idrPicID: Int64(header.idrPicID))
        pictureOrderCountInputs = PictureOrderCountInputs(
            picOrderCntType: sps.picOrderCntType, maxPicOrderCntLsb: Int64(sps.maxPicOrderCntLsb),
            maxFrameNum: Int64(sps.maxFrameNum), offsetForNonRefPic: Int64(sps.offsetForNonRefPic),
            offsetForTopToBottomField: Int64(sps.offsetForTopToBottomField),
            offsetForRefFrame: sps.offsetForRefFrame.map { Int64($0) },
            isIDR: header.idrPicFlag, nalRefIdc: header.nalRefIdc, frameNum: Int64(header.frameNum),
            fieldPicFlag: header.fieldPicFlag, bottomFieldFlag: header.bottomFieldFlag,
            picOrderCntLsb: Int64(header.picOrderCntLsb), deltaPicOrderCntBottom: Int64(header.deltaPicOrderCntBottom),
            deltaPicOrderCnt0: Int64(header.deltaPicOrderCnt0), deltaPicOrderCnt1: Int64(header.deltaPicOrderCnt1),
            hasMemoryManagementControlOperation5: header.hasMemoryManagementControlOperation5)
        seqParameterSetID = header.seqParameterSetID
        redundantPicCnt = header.redundantPicCnt
        sliceKind = header.sliceKind
    }
}

/// Finds the recovery point SEI message (D.1.8) in an SEI NAL unit.
enum SEIRecoveryPoint {
    /// recovery_frame_cnt of the recovery point message, nil when the NAL unit has none.
    /// A recovery point message does not depend on the SPS, so an SEI whose other messages fail
    /// to decode still yields it.
    static func recoveryFrameCount(inSEI nalUnit: UnsafeRawBufferPointer, parameterSets: ParameterSetStore)
        throws(H264Error) -> Int?
    {
        let sei = try SEI.parse(nalUnit: nalUnit, sequenceParameterSets: { parameterSets.sequenceParameterSet(id: $0) })
        for message in sei.messages {
            if case .recoveryPoint(let point) = message { return point.recoveryFrameCnt }
        }
        return nil
    }
}

/// The SPS and PPS fields that slice_header() reads up to redundant_pic_cnt (7.3.3).
public struct SliceIdentityContext: Sendable, Hashable {
    public var seqParameterSetID: Int
    public var separateColourPlaneFlag: Bool
    public var log2MaxFrameNum: Int
    public var frameMbsOnlyFlag: Bool
    public var picOrderCntType: Int
    public var log2MaxPicOrderCntLsb: Int
    public var deltaPicOrderAlwaysZeroFlag: Bool
    public var bottomFieldPicOrderInFramePresentFlag: Bool
    public var redundantPicCntPresentFlag: Bool

    init(sps: SequenceParameterSet, pps: PictureParameterSet) {
        seqParameterSetID = pps.seqParameterSetID
        separateColourPlaneFlag = sps.separateColourPlaneFlag
        log2MaxFrameNum = sps.log2MaxFrameNumMinus4 &+ 4
        frameMbsOnlyFlag = sps.frameMbsOnlyFlag
        picOrderCntType = sps.picOrderCntType
        log2MaxPicOrderCntLsb = sps.log2MaxPicOrderCntLsbMinus4 &+ 4
        deltaPicOrderAlwaysZeroFlag = sps.deltaPicOrderAlwaysZeroFlag
        bottomFieldPicOrderInFramePresentFlag = pps.bottomFieldPicOrderInFramePresentFlag
        redundantPicCntPresentFlag = pps.redundantPicCntPresentFlag
    }
}

/// The first part of a slice header, up to redundant_pic_cnt: everything 7.4.1.2.4 compares.
///
/// Reading only this part is enough for the slices after the first of a picture, whose
/// dec_ref_pic_marking (the one later field access-unit assembly uses) 7.4.3 requires to equal
/// the first slice's. It reads at most ~40 bytes, unescaped on the stack, and looks up nothing
/// but a few integers: a many-slice stream spends most of its parsing time here.
struct SliceIdentity: Sendable {
    var identity: PrimaryPictureIdentity
    var sliceType: Int
    var redundantPicCnt: Int
    /// Where the slice starts: first_mb_in_slice and colour_plane_id (7.4.3). No two slices of
    /// one primary picture start at the same place.
    var position: SlicePosition

    /// Enough unescaped bytes for every field up to redundant_pic_cnt at their largest.
    static let maximumBytes = 48

    /// `contexts`: ``ParameterSetStore``'s slice identity contexts by PPS id
    /// (`withSliceIdentityContexts`). A buffer, not the store: the parse runs for every slice
    /// (8160 a picture in a stream of one slice per macroblock), and a closure holding the store
    /// retained and released its three containers each time, a quarter of the parser's time.
    static func parse(nalUnit: UnsafeRawBufferPointer, contexts: UnsafeBufferPointer<SliceIdentityContext?>)
        throws(H264Error) -> SliceIdentity
    {
        guard let first = nalUnit.first else { throw H264Error.truncated(what: "nal_unit_header") }
        let header = NALUnitHeader(byte: first)
        let isIDR = header.nalUnitType == .codedSliceIDR
        return try RBSP.withUnescapedPayload(of: nalUnit, from: 1, maxBytes: maximumBytes) { rbsp in
            Result { () throws(H264Error) -> SliceIdentity in
                var reader = BitReader(rbsp)
                let firstMbInSlice = try reader.readUE("first_mb_in_slice")
                let sliceType = try reader.readUE("slice_type", max: 9)
                let ppsID = try reader.readUE("pic_parameter_set_id", max: 255)
                guard ppsID < contexts.count, let context = contexts[ppsID] else {
                    throw H264Error.missingParameterSet(kind: "PPS", id: ppsID)
                }
                var colourPlaneID = 0
                if context.separateColourPlaneFlag { colourPlaneID = Int(try reader.readBits(2, "colour_plane_id")) }
                let frameNum = Int64(try reader.readBits(context.log2MaxFrameNum, "frame_num"))
                var fieldPicFlag = false
                var bottomFieldFlag = false
                if !context.frameMbsOnlyFlag {
                    fieldPicFlag = try reader.readFlag("field_pic_flag")
                    if fieldPicFlag { bottomFieldFlag = try reader.readFlag("bottom_field_flag") }
                }
                var idrPicID: Int64 = 0
                if isIDR { idrPicID = Int64(try reader.readUE("idr_pic_id", max: 65535)) }
                let bottomPresent = context.bottomFieldPicOrderInFramePresentFlag && !fieldPicFlag
                var pocLsb: Int64 = 0
                var deltaBottom: Int64 = 0
                var delta0: Int64 = 0
                var delta1: Int64 = 0
                if context.picOrderCntType == 0 {
                    pocLsb = Int64(try reader.readBits(context.log2MaxPicOrderCntLsb, "pic_order_cnt_lsb"))
                    if bottomPresent { deltaBottom = Int64(try reader.readSE("delta_pic_order_cnt_bottom")) }
                }
                if context.picOrderCntType == 1 && !context.deltaPicOrderAlwaysZeroFlag {
                    delta0 = Int64(try reader.readSE("delta_pic_order_cnt[0]"))
                    if bottomPresent { delta1 = Int64(try reader.readSE("delta_pic_order_cnt[1]")) }
                }
                var redundantPicCnt = 0
                if context.redundantPicCntPresentFlag {
                    redundantPicCnt = try reader.readUE("redundant_pic_cnt", max: 127)
                }
                return SliceIdentity(
                    identity: PrimaryPictureIdentity(
                        frameNum: frameNum, picParameterSetID: ppsID, fieldPicFlag: fieldPicFlag,
                        bottomFieldFlag: bottomFieldFlag,
                        nalRefIdcIsZero: header.nalRefIdc == 0, picOrderCntType: context.picOrderCntType,
                        picOrderCntLsb: pocLsb, deltaPicOrderCntBottom: deltaBottom, deltaPicOrderCnt0: delta0,
                        deltaPicOrderCnt1: delta1, isIDR: isIDR, idrPicID: idrPicID),
                    sliceType: sliceType, redundantPicCnt: redundantPicCnt,
                    position: SlicePosition(firstMbInSlice: Int(firstMbInSlice), colourPlaneID: colourPlaneID))
            }
        }.get()
    }
}

/// Where a slice starts in its picture (7.4.3): first_mb_in_slice, and colour_plane_id for 4:4:4
/// coded as three colour planes (separate_colour_plane_flag), whose slices share addresses.
struct SlicePosition: Hashable, Sendable {
    var firstMbInSlice: Int
    var colourPlaneID: Int
}
