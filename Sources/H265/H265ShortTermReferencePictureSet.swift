/// st_ref_pic_set(stRpsIdx), 7.3.7 / 7.4.8: a short-term reference picture set, the pictures
/// before (S0, negative POC deltas) and after (S1, positive deltas) the current one that are kept
/// for reference, resolved into the derived lists of 7.4.8 whether it was coded directly or
/// predicted from another set (inter_ref_pic_set_prediction_flag).
public struct H265ShortTermReferencePictureSet: Hashable, Sendable {
    /// How a set predicted from another one was coded (7.3.7), kept so that a writer can send it
    /// the same way; nil for a set coded directly.
    public struct InterSetPrediction: Hashable, Sendable {
        /// delta_idx_minus1 (sent only for the set in a slice header; 0 otherwise).
        public var deltaIdxMinus1 = 0
        public var deltaRpsSign = false
        /// abs_delta_rps_minus1, 0...2^15 - 1.
        public var absDeltaRpsMinus1 = 0
        /// used_by_curr_pic_flag[j] for j = 0...NumDeltaPocs[RefRpsIdx].
        public var usedByCurrPicFlags: [Bool] = []
        /// use_delta_flag[j] (inferred 1 where not sent, i.e. where used_by_curr_pic_flag is 1).
        public var useDeltaFlags: [Bool] = []

        public init() {}

        /// deltaRps (7-60).
        public var deltaRps: Int { (deltaRpsSign ? -1 : 1) &* (absDeltaRpsMinus1 &+ 1) }
    }

    /// Set when inter_ref_pic_set_prediction_flag was 1.
    public var prediction: InterSetPrediction?
    /// DeltaPocS0[i]: negative, in decreasing order (the nearest picture first).
    public var deltaPocS0: [Int32] = []
    /// UsedByCurrPicS0[i].
    public var usedByCurrPicS0: [Bool] = []
    /// DeltaPocS1[i]: positive, in increasing order.
    public var deltaPocS1: [Int32] = []
    /// UsedByCurrPicS1[i].
    public var usedByCurrPicS1: [Bool] = []

    public init() {}

    /// A set coded directly (inter_ref_pic_set_prediction_flag 0).
    public init(negative: [(delta: Int32, used: Bool)], positive: [(delta: Int32, used: Bool)]) {
        deltaPocS0 = negative.map(\.delta)
        usedByCurrPicS0 = negative.map(\.used)
        deltaPocS1 = positive.map(\.delta)
        usedByCurrPicS1 = positive.map(\.used)
    }

    /// NumNegativePics.
    public var numNegativePics: Int { deltaPocS0.count }
    /// NumPositivePics.
    public var numPositivePics: Int { deltaPocS1.count }
    /// NumDeltaPocs = NumNegativePics + NumPositivePics (7-71).
    public var numDeltaPocs: Int { deltaPocS0.count &+ deltaPocS1.count }
    /// The pictures of the set the current picture may use for inter prediction (the part of
    /// NumPicTotalCurr, 7-55, that short-term pictures contribute).
    public var usedByCurrentPictureCount: Int {
        usedByCurrPicS0.lazy.filter { $0 }.count &+ usedByCurrPicS1.lazy.filter { $0 }.count
    }

    /// st_ref_pic_set(stRpsIdx), 7.3.7.
    ///
    /// - Parameters:
    ///   - index: stRpsIdx: the set's place in the SPS, or num_short_term_ref_pic_sets for the
    ///     set a slice header carries.
    ///   - candidates: the SPS's sets 0...index - 1 (those decoded so far), which a predicted set
    ///     may refer to.
    ///   - numShortTermRefPicSets: num_short_term_ref_pic_sets of the SPS.
    ///   - maxDecPicBufferingMinus1: sps_max_dec_pic_buffering_minus1[sps_max_sub_layers_minus1],
    ///     which bounds how many pictures a set holds (7.4.8).
    static func parse(
        _ r: inout H265BitReader, index: Int, candidates: [H265ShortTermReferencePictureSet],
        numShortTermRefPicSets: Int, maxDecPicBufferingMinus1: Int
    ) throws(H265Error) -> H265ShortTermReferencePictureSet {
        var set = H265ShortTermReferencePictureSet()
        let predicted = index != 0 ? try r.readFlag("inter_ref_pic_set_prediction_flag") : false
        if predicted {
            var prediction = InterSetPrediction()
            if index == numShortTermRefPicSets {
                // 7.4.8: 0...stRpsIdx - 1, so RefRpsIdx is one of the SPS's sets.
                prediction.deltaIdxMinus1 = try r.readUE("delta_idx_minus1", max: index &- 1)
            }
            let referenceIndex = index &- (prediction.deltaIdxMinus1 &+ 1)
            guard candidates.indices.contains(referenceIndex) else {
                throw H265Error.invalidValue(field: "delta_idx_minus1", value: Int64(prediction.deltaIdxMinus1))
            }
            let reference = candidates[referenceIndex]
            prediction.deltaRpsSign = try r.readFlag("delta_rps_sign")
            // 7.4.8: abs_delta_rps_minus1 in 0...2^15 - 1.
            prediction.absDeltaRpsMinus1 = try r.readUE("abs_delta_rps_minus1", max: (1 << 15) &- 1)
            for _ in 0...reference.numDeltaPocs {
                let used = try r.readFlag("used_by_curr_pic_flag")
                prediction.usedByCurrPicFlags.append(used)
                // use_delta_flag is inferred 1 when absent (7.4.8).
                prediction.useDeltaFlags.append(used ? true : try r.readFlag("use_delta_flag"))
            }
            set = derived(from: reference, prediction: prediction)
        } else {
            // 7.4.8: num_negative_pics in 0...sps_max_dec_pic_buffering_minus1, and
            // num_positive_pics in 0...sps_max_dec_pic_buffering_minus1 - num_negative_pics.
            let negativeCount = try r.readUE("num_negative_pics", max: maxDecPicBufferingMinus1)
            let positiveCount = try r.readUE("num_positive_pics", max: maxDecPicBufferingMinus1 &- negativeCount)
            var poc: Int32 = 0
            for _ in 0..<negativeCount {
                // 7.4.8: delta_poc_s0_minus1 in 0...2^15 - 1 (7-65: each a step further back).
                let step = try r.readUE("delta_poc_s0_minus1", max: (1 << 15) &- 1)
                poc &-= Int32(step &+ 1)
                set.deltaPocS0.append(poc)
                set.usedByCurrPicS0.append(try r.readFlag("used_by_curr_pic_s0_flag"))
            }
            poc = 0
            for _ in 0..<positiveCount {
                let step = try r.readUE("delta_poc_s1_minus1", max: (1 << 15) &- 1)
                poc &+= Int32(step &+ 1)
                set.deltaPocS1.append(poc)
                set.usedByCurrPicS1.append(try r.readFlag("used_by_curr_pic_s1_flag"))
            }
        }
        // A predicted set must fit the DPB as a directly coded one does (the bounds of
        // num_negative_pics and num_positive_pics, 7.4.8; 8.3.2 limits the RPS to
        // sps_max_dec_pic_buffering_minus1 pictures).
        if set.numDeltaPocs > maxDecPicBufferingMinus1 {
            throw H265Error.invalidValue(field: "NumDeltaPocs[\(index)]", value: Int64(set.numDeltaPocs))
        }
        return set
    }

    /// The derivation of 7.4.8 (equations 7-61 and 7-62) for a set predicted from `reference`.
    static func derived(
        from reference: H265ShortTermReferencePictureSet, prediction: InterSetPrediction
    ) -> H265ShortTermReferencePictureSet {
        var set = H265ShortTermReferencePictureSet()
        set.prediction = prediction
        let deltaRps = Int32(truncatingIfNeeded: prediction.deltaRps)
        let negative = reference.numNegativePics
        let all = reference.numDeltaPocs
        let used = prediction.usedByCurrPicFlags
        let useDelta = prediction.useDeltaFlags
        // The flag lists hold NumDeltaPocs[RefRpsIdx] + 1 entries (the parser reads that many);
        // index all of them through `flag` so that a shorter list from a caller cannot trap.
        func flag(_ flags: [Bool], _ index: Int) -> Bool { flags.indices.contains(index) ? flags[index] : false }
        // 7-61: S0, from the reference's S1 (farthest first), the reference picture itself, then
        // the reference's S0.
        for j in stride(from: reference.numPositivePics &- 1, through: 0, by: -1) {
            let dPoc = reference.deltaPocS1[j] &+ deltaRps
            if dPoc < 0 && flag(useDelta, negative &+ j) {
                set.deltaPocS0.append(dPoc)
                set.usedByCurrPicS0.append(flag(used, negative &+ j))
            }
        }
        if deltaRps < 0 && flag(useDelta, all) {
            set.deltaPocS0.append(deltaRps)
            set.usedByCurrPicS0.append(flag(used, all))
        }
        for j in 0..<negative {
            let dPoc = reference.deltaPocS0[j] &+ deltaRps
            if dPoc < 0 && flag(useDelta, j) {
                set.deltaPocS0.append(dPoc)
                set.usedByCurrPicS0.append(flag(used, j))
            }
        }
        // 7-62: S1, from the reference's S0 (farthest first), the reference picture, then its S1.
        for j in stride(from: negative &- 1, through: 0, by: -1) {
            let dPoc = reference.deltaPocS0[j] &+ deltaRps
            if dPoc > 0 && flag(useDelta, j) {
                set.deltaPocS1.append(dPoc)
                set.usedByCurrPicS1.append(flag(used, j))
            }
        }
        if deltaRps > 0 && flag(useDelta, all) {
            set.deltaPocS1.append(deltaRps)
            set.usedByCurrPicS1.append(flag(used, all))
        }
        for j in 0..<reference.numPositivePics {
            let dPoc = reference.deltaPocS1[j] &+ deltaRps
            if dPoc > 0 && flag(useDelta, negative &+ j) {
                set.deltaPocS1.append(dPoc)
                set.usedByCurrPicS1.append(flag(used, negative &+ j))
            }
        }
        return set
    }

    /// Writes st_ref_pic_set(index) back: as `prediction` says (its flags must match the set it
    /// refers to), or coded directly.
    public func write(to w: inout BitWriter, index: Int, numShortTermRefPicSets: Int) {
        if index != 0 { w.writeFlag(prediction != nil) }
        if let prediction, index != 0 {
            if index == numShortTermRefPicSets { w.writeUE(UInt32(truncatingIfNeeded: prediction.deltaIdxMinus1)) }
            w.writeFlag(prediction.deltaRpsSign)
            w.writeUE(UInt32(truncatingIfNeeded: prediction.absDeltaRpsMinus1))
            for (j, used) in prediction.usedByCurrPicFlags.enumerated() {
                w.writeFlag(used)
                if !used {
                    w.writeFlag(prediction.useDeltaFlags.indices.contains(j) ? prediction.useDeltaFlags[j] : true)
                }
            }
            return
        }
        w.writeUE(UInt32(truncatingIfNeeded: numNegativePics))
        w.writeUE(UInt32(truncatingIfNeeded: numPositivePics))
        var previous: Int32 = 0
        for (delta, used) in zip(deltaPocS0, usedByCurrPicS0) {
            w.writeUE(UInt32(truncatingIfNeeded: previous &- delta &- 1))
            w.writeFlag(used)
            previous = delta
        }
        previous = 0
        for (delta, used) in zip(deltaPocS1, usedByCurrPicS1) {
            w.writeUE(UInt32(truncatingIfNeeded: delta &- previous &- 1))
            w.writeFlag(used)
            previous = delta
        }
    }
}
