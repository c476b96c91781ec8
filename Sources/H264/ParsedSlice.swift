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
    static func recoveryFrameCount(inSEI nalUnit: UnsafeRawBufferPointer, parameterSets: ParameterSetStore) throws(H264Error) -> Int? {
        let sei = try SEI.parse(nalUnit: nalUnit, sequenceParameterSets: { parameterSets.sequenceParameterSet(id: $0) })
        for message in sei.messages {
            if case .recoveryPoint(let point) = message { return point.recoveryFrameCnt }
        }
        return nil
    }
}
