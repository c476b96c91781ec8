/// Reference picture list construction for frames (8.2.4): initialisation (8.2.4.2.1 for P and
/// SP slices, 8.2.4.2.3 for B slices) and modification (8.2.4.3).
public enum H264ReferencePictureLists {
    /// The initial RefPicList0 of a P or SP slice (8.2.4.2.1): short-term frames by descending
    /// PicNum, then long-term frames by ascending LongTermPicNum.
    public static func initialPList(shortTerm: [H264Picture], longTerm: [H264Picture]) -> [H264Picture] {
        shortTerm.sorted { $0.picNum > $1.picNum }
            + longTerm.sorted { ($0.longTermPicNum ?? 0) < ($1.longTermPicNum ?? 0) }
    }

    /// The initial RefPicList0 and RefPicList1 of a B slice (8.2.4.2.3): short-term frames
    /// before the current picture in output order by descending POC, then those after it by
    /// ascending POC (list 1 the other way round), then long-term frames by ascending
    /// LongTermPicNum. When list 1 has more than one entry and equals list 0, its first two
    /// entries are swapped.
    public static func initialBLists(
        shortTerm: [H264Picture], longTerm: [H264Picture], currentPicOrderCnt: Int
    ) -> (list0: [H264Picture], list1: [H264Picture]) {
        let before = shortTerm.filter { $0.picOrderCnt <= currentPicOrderCnt }.sorted {
            $0.picOrderCnt > $1.picOrderCnt
        }
        let after = shortTerm.filter { $0.picOrderCnt > currentPicOrderCnt }.sorted { $0.picOrderCnt < $1.picOrderCnt }
        let long = longTerm.sorted { ($0.longTermPicNum ?? 0) < ($1.longTermPicNum ?? 0) }
        let list0 = before + after + long
        var list1 = after + before + long
        if list1.count > 1 && zip(list0, list1).allSatisfy({ $0 === $1 }) {
            list1.swapAt(0, 1)
        }
        return (list0, list1)
    }

    /// 8.2.4.3: applies ref_pic_list_modification() to an initial list and returns the final
    /// list of exactly `activeCount` entries (num_ref_idx_lX_active_minus1 + 1). Initial lists
    /// longer than that are truncated (8.2.4.2); missing entries are nil ("no reference
    /// picture"). A modification naming a picture that is not in the DPB (a damaged stream)
    /// leaves a nil entry at its index.
    public static func modifiedList(
        initial: [H264Picture], modifications: [RefPicListModification], activeCount: Int,
        currPicNum: Int, maxPicNum: Int, shortTerm: [H264Picture], longTerm: [H264Picture]
    ) -> [H264Picture?] {
        guard activeCount > 0 else { return [] }
        // The list is one entry longer during modification (8-37, 8-38).
        var list: [H264Picture?] = Array(initial.prefix(activeCount))
        list += [H264Picture?](repeating: nil, count: activeCount + 1 - list.count)
        var picNumPred = currPicNum
        var refIdx = 0
        for modification in modifications where refIdx < activeCount {
            let picture: H264Picture?
            // Whether an entry is the inserted picture, for the compaction loop: PicNumF and
            // LongTermPicNumF (8-37, 8-38) are the picture's number when it is of the right
            // kind, and never match otherwise.
            let isInserted: (H264Picture?) -> Bool
            switch modification.modificationOfPicNumsIdc {
            case 0, 1:
                // 8.2.4.3.1: short-term picture by a PicNum difference (8-34 ... 8-36).
                let difference = modification.value + 1
                var picNumNoWrap: Int
                if modification.modificationOfPicNumsIdc == 0 {
                    picNumNoWrap = picNumPred - difference
                    if picNumNoWrap < 0 { picNumNoWrap += maxPicNum }
                } else {
                    picNumNoWrap = picNumPred + difference
                    if picNumNoWrap >= maxPicNum { picNumNoWrap -= maxPicNum }
                }
                picNumPred = picNumNoWrap
                let picNum = picNumNoWrap > currPicNum ? picNumNoWrap - maxPicNum : picNumNoWrap
                picture = shortTerm.first { $0.picNum == picNum }
                isInserted = { entry in entry.map { $0.isShortTermReference && $0.picNum == picNum } ?? false }
            case 2:
                // 8.2.4.3.2: long-term picture by LongTermPicNum.
                let longTermPicNum = modification.value
                picture = longTerm.first { $0.longTermPicNum == longTermPicNum }
                isInserted = { entry in entry.map { $0.longTermPicNum == longTermPicNum } ?? false }
            default:
                continue
            }
            // Shift the tail, insert, then drop the later duplicate of the inserted picture.
            for index in stride(from: activeCount, to: refIdx, by: -1) {
                list[index] = list[index - 1]
            }
            list[refIdx] = picture
            refIdx += 1
            var next = refIdx
            for index in refIdx...activeCount where !isInserted(list[index]) {
                list[next] = list[index]
                next += 1
            }
            while next <= activeCount {
                list[next] = nil
                next += 1
            }
        }
        return Array(list.prefix(activeCount))
    }
}
