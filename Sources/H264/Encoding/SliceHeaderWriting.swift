extension SliceHeader {
    /// Writes slice_header() (7.3.3) for a picture using `sps` and `pps`, after the NAL unit
    /// header byte. The result is RBSP bits that do not end on a byte boundary: slice_data()
    /// follows directly (a VA packed slice header, or an encoder appending its macroblocks).
    ///
    /// Field names and presence follow the parser (``parse(rbsp:nalHeader:pictureParameterSets:sequenceParameterSets:)``),
    /// so parsing what this writes gives the same header back.
    public func write(
        sequenceParameterSet sps: SequenceParameterSet, pictureParameterSet pps: PictureParameterSet
    ) throws(H264WritingError) -> BitWriter {
        guard pps.numSliceGroupsMinus1 == 0 else {
            throw H264WritingError("slice header writing does not write slice groups")
        }
        let kind = sliceKind
        var w = BitWriter()
        w.writeUE(UInt32(clamping: firstMbInSlice))
        w.writeUE(UInt32(clamping: sliceType))
        w.writeUE(UInt32(clamping: picParameterSetID))
        if sps.separateColourPlaneFlag { w.writeBits(UInt32(clamping: colourPlaneID), count: 2) }
        w.writeBits(UInt32(truncatingIfNeeded: frameNum), count: sps.log2MaxFrameNumMinus4 + 4)
        if !sps.frameMbsOnlyFlag {
            w.writeFlag(fieldPicFlag)
            if fieldPicFlag { w.writeFlag(bottomFieldFlag) }
        }
        if idrPicFlag { w.writeUE(UInt32(clamping: idrPicID)) }
        let bottomPresent = pps.bottomFieldPicOrderInFramePresentFlag && !fieldPicFlag
        if sps.picOrderCntType == 0 {
            w.writeBits(UInt32(truncatingIfNeeded: picOrderCntLsb), count: sps.log2MaxPicOrderCntLsbMinus4 + 4)
            if bottomPresent { w.writeSE(Int32(clamping: deltaPicOrderCntBottom)) }
        }
        if sps.picOrderCntType == 1 && !sps.deltaPicOrderAlwaysZeroFlag {
            w.writeSE(Int32(clamping: deltaPicOrderCnt0))
            if bottomPresent { w.writeSE(Int32(clamping: deltaPicOrderCnt1)) }
        }
        if pps.redundantPicCntPresentFlag { w.writeUE(UInt32(clamping: redundantPicCnt)) }
        if kind == .b { w.writeFlag(directSpatialMvPredFlag) }
        if kind == .p || kind == .sp || kind == .b {
            w.writeFlag(numRefIdxActiveOverrideFlag)
            if numRefIdxActiveOverrideFlag {
                w.writeUE(UInt32(clamping: numRefIdxL0ActiveMinus1))
                if kind == .b { w.writeUE(UInt32(clamping: numRefIdxL1ActiveMinus1)) }
            }
        }
        // ref_pic_list_modification() (7.3.3.1).
        if !kind.isIntra {
            Self.writeModifications(refPicListModificationFlagL0 ? refPicListModificationL0 : nil, to: &w)
        }
        if kind == .b {
            Self.writeModifications(refPicListModificationFlagL1 ? refPicListModificationL1 : nil, to: &w)
        }
        if (pps.weightedPredFlag && (kind == .p || kind == .sp)) || (pps.weightedBipredIdc == 1 && kind == .b) {
            guard let table = predWeightTable else {
                throw H264WritingError(
                    "the PPS asks for explicit weighted prediction but the slice has no pred_weight_table")
            }
            table.write(to: &w, sliceKind: kind, chromaArrayType: sps.chromaArrayType)
        }
        if nalRefIdc != 0 {
            // dec_ref_pic_marking() (7.3.3.3).
            if idrPicFlag {
                w.writeFlag(noOutputOfPriorPicsFlag)
                w.writeFlag(longTermReferenceFlag)
            } else {
                w.writeFlag(adaptiveRefPicMarkingModeFlag)
                if adaptiveRefPicMarkingModeFlag {
                    for operation in memoryManagementControlOperations {
                        w.writeUE(UInt32(operation.operation))
                        switch operation {
                        case .markShortTermUnused(let difference): w.writeUE(UInt32(clamping: difference))
                        case .markLongTermUnused(let picNum): w.writeUE(UInt32(clamping: picNum))
                        case .assignLongTermFrameIdx(let difference, let index):
                            w.writeUE(UInt32(clamping: difference))
                            w.writeUE(UInt32(clamping: index))
                        case .setMaxLongTermFrameIdx(let plus1): w.writeUE(UInt32(clamping: plus1))
                        case .markAllUnused: break
                        case .markCurrentLongTerm(let index): w.writeUE(UInt32(clamping: index))
                        }
                    }
                    w.writeUE(0) // memory_management_control_operation 0 ends the list
                }
            }
        }
        if pps.entropyCodingModeFlag && !kind.isIntra { w.writeUE(UInt32(clamping: cabacInitIdc)) }
        w.writeSE(Int32(clamping: sliceQpDelta))
        if kind == .sp || kind == .si {
            if kind == .sp { w.writeFlag(spForSwitchFlag) }
            w.writeSE(Int32(clamping: sliceQsDelta))
        }
        if pps.deblockingFilterControlPresentFlag {
            w.writeUE(UInt32(clamping: disableDeblockingFilterIdc))
            if disableDeblockingFilterIdc != 1 {
                w.writeSE(Int32(clamping: sliceAlphaC0OffsetDiv2))
                w.writeSE(Int32(clamping: sliceBetaOffsetDiv2))
            }
        }
        return w
    }

    /// One list's ref_pic_list_modification_flag and operations (nil: flag 0).
    private static func writeModifications(_ list: [RefPicListModification]?, to w: inout BitWriter) {
        w.writeFlag(list != nil)
        guard let list else { return }
        for modification in list {
            w.writeUE(UInt32(clamping: modification.modificationOfPicNumsIdc))
            w.writeUE(UInt32(clamping: modification.value))
        }
        w.writeUE(3) // modification_of_pic_nums_idc 3 ends the list
    }
}

extension PredWeightTable {
    /// pred_weight_table() (7.3.3.2).
    func write(to w: inout BitWriter, sliceKind: SliceKind, chromaArrayType: Int) {
        w.writeUE(UInt32(clamping: lumaLog2WeightDenom))
        if chromaArrayType != 0 { w.writeUE(UInt32(clamping: chromaLog2WeightDenom)) }
        func writeList(_ entries: [Entry]) {
            for entry in entries {
                w.writeFlag(entry.lumaWeightFlag)
                if entry.lumaWeightFlag {
                    w.writeSE(Int32(entry.lumaWeight))
                    w.writeSE(Int32(entry.lumaOffset))
                }
                if chromaArrayType != 0 {
                    w.writeFlag(entry.chromaWeightFlag)
                    if entry.chromaWeightFlag {
                        w.writeSE(Int32(entry.chromaWeightCb))
                        w.writeSE(Int32(entry.chromaOffsetCb))
                        w.writeSE(Int32(entry.chromaWeightCr))
                        w.writeSE(Int32(entry.chromaOffsetCr))
                    }
                }
            }
        }
        writeList(l0)
        if sliceKind == .b { writeList(l1) }
    }
}
