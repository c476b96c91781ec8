/// The VPS, SPS and PPS seen so far in a stream, by id, parsed and raw.
///
/// 7.4.2.4.2: a parameter set with an id replaces the earlier one with that id, and takes effect
/// when a picture activates it. A PPS is checked against its SPS (the bounds of 7.4.3.3 that
/// depend on it) when a slice activates the pair, and the result is kept until either changes.
public struct H265ParameterSetStore: Sendable {
    public enum Change: Sendable, Equatable {
        /// The same bytes as the parameter set already stored under that id.
        case unchanged
        /// No parameter set had that id.
        case added
        /// A different parameter set replaced the one stored under that id.
        case replaced
    }

    private var videoParameterSets: [Int: (raw: [UInt8], parsed: H265VideoParameterSet)] = [:]
    private var sequenceParameterSets: [Int: (raw: [UInt8], parsed: H265SequenceParameterSet)] = [:]
    private var pictureParameterSets: [Int: (raw: [UInt8], parsed: H265PictureParameterSet)] = [:]
    /// PPS ids whose bounds were checked against the SPS stored now.
    private var validatedPictureParameterSetIDs: Set<Int> = []
    /// What slices need of each PPS (0...63, 7.4.3.3.1) and its SPS, by PPS id: kept up to date
    /// as parameter sets arrive so that the per-slice lookup is an index into plain fields, not
    /// a dictionary lookup copying parameter sets (which carry arrays: RPSs, VUI, HRD, scaling
    /// lists).
    private var slicePictureContexts = [H265SlicePictureContext?](repeating: nil, count: 64)
    /// What validating each PPS against its SPS found, by PPS id (see `slicePictureContexts`).
    private var slicePictureValidationErrors = [H265Error?](repeating: nil, count: 64)

    public init() {}

    /// The fields of the PPS `id` and of its SPS that place a slice segment in its picture and
    /// the picture in output order; nil when no PPS has that id.
    public func slicePictureContext(ppsID id: Int) -> H265SlicePictureContext? {
        id >= 0 && id < slicePictureContexts.count ? slicePictureContexts[id] : nil
    }

    private mutating func refreshSlicePictureContext(ppsID id: Int) {
        guard id >= 0 && id < slicePictureContexts.count else { return }
        guard let pps = pictureParameterSets[id]?.parsed else {
            slicePictureContexts[id] = nil
            return
        }
        let sps = sequenceParameterSets[pps.seqParameterSetID]?.parsed
        var context = H265SlicePictureContext(pps: pps, sps: sps)
        slicePictureValidationErrors[id] = nil
        if let sps {
            do throws(H265Error) { try pps.validate(against: sps) } catch {
                slicePictureValidationErrors[id] = error
                context.sequence?.failsValidation = true
            }
        }
        slicePictureContexts[id] = context
    }

    /// Why the PPS `id` cannot be activated with its SPS (7.4.2.4.2): the PPS or its SPS is
    /// missing, or the PPS's bounds that depend on the SPS do not hold (7.4.3.3.1); nil when it
    /// can. The same errors, in the same order, as `activate(pictureParameterSetID:)`.
    public func activationError(ppsID id: Int) -> H265Error? {
        guard let context = slicePictureContext(ppsID: id) else { return .missingParameterSet(kind: "PPS", id: id) }
        guard context.sequence != nil else { return .missingParameterSet(kind: "SPS", id: context.seqParameterSetID) }
        return slicePictureValidationErrors[id]
    }

    public func videoParameterSet(id: Int) -> H265VideoParameterSet? { videoParameterSets[id]?.parsed }
    public func sequenceParameterSet(id: Int) -> H265SequenceParameterSet? { sequenceParameterSets[id]?.parsed }
    public func pictureParameterSet(id: Int) -> H265PictureParameterSet? { pictureParameterSets[id]?.parsed }
    public func rawVideoParameterSet(id: Int) -> [UInt8]? { videoParameterSets[id]?.raw }
    public func rawSequenceParameterSet(id: Int) -> [UInt8]? { sequenceParameterSets[id]?.raw }
    public func rawPictureParameterSet(id: Int) -> [UInt8]? { pictureParameterSets[id]?.raw }

    /// Ids present, in ascending order.
    public var videoParameterSetIDs: [Int] { videoParameterSets.keys.sorted() }
    public var sequenceParameterSetIDs: [Int] { sequenceParameterSets.keys.sorted() }
    public var pictureParameterSetIDs: [Int] { pictureParameterSets.keys.sorted() }

    /// Stores a VPS NAL unit (header included, escaped).
    @discardableResult
    public mutating func storeVideoParameterSet(_ nalUnit: UnsafeRawBufferPointer) throws(H265Error) -> (
        id: Int, change: Change
    ) {
        try Self.store(
            nalUnit, in: &videoParameterSets,
            parse: { nalUnit throws(H265Error) in try H265VideoParameterSet.parse(nalUnit: nalUnit) },
            id: \.videoParameterSetID)
    }

    /// Stores an SPS NAL unit.
    @discardableResult
    public mutating func storeSequenceParameterSet(_ nalUnit: UnsafeRawBufferPointer) throws(H265Error) -> (
        id: Int, change: Change
    ) {
        let stored = try Self.store(
            nalUnit, in: &sequenceParameterSets,
            parse: { nalUnit throws(H265Error) in try H265SequenceParameterSet.parse(nalUnit: nalUnit) },
            id: \.seqParameterSetID)
        if stored.change != .unchanged {
            // The PPSs were checked against the old SPS.
            validatedPictureParameterSetIDs.removeAll()
            for ppsID in 0..<slicePictureContexts.count
            where slicePictureContexts[ppsID]?.seqParameterSetID == stored.id {
                refreshSlicePictureContext(ppsID: ppsID)
            }
        }
        return stored
    }

    /// Stores a PPS NAL unit. Its SPS need not have arrived yet (the H.265 PPS syntax does not
    /// depend on it).
    @discardableResult
    public mutating func storePictureParameterSet(_ nalUnit: UnsafeRawBufferPointer) throws(H265Error) -> (
        id: Int, change: Change
    ) {
        let stored = try Self.store(
            nalUnit, in: &pictureParameterSets,
            parse: { nalUnit throws(H265Error) in try H265PictureParameterSet.parse(nalUnit: nalUnit) },
            id: \.picParameterSetID)
        if stored.change != .unchanged {
            validatedPictureParameterSetIDs.remove(stored.id)
            refreshSlicePictureContext(ppsID: stored.id)
        }
        return stored
    }

    /// Stores a parameter set of one kind under the id `parse` finds in it (7.4.2.4.2: it
    /// replaces the one stored under that id).
    private static func store<Parsed>(
        _ nalUnit: UnsafeRawBufferPointer, in table: inout [Int: (raw: [UInt8], parsed: Parsed)],
        parse: (UnsafeRawBufferPointer) throws(H265Error) -> Parsed, id: (Parsed) -> Int
    ) throws(H265Error) -> (id: Int, change: Change) {
        // Streams repeat their parameter sets before every IRAP picture: the same bytes have the
        // same id, so they need no parsing.
        for (storedID, entry) in table where entry.raw.count == nalUnit.count && entry.raw.elementsEqual(nalUnit) {
            return (storedID, .unchanged)
        }
        let parsed = try parse(nalUnit)
        let parsedID = id(parsed)
        // Copy: parameter sets are small and must outlive the caller's buffer.
        let change: Change = table[parsedID] == nil ? .added : .replaced
        table[parsedID] = (Array(nalUnit), parsed)
        return (parsedID, change)
    }

    /// The PPS `id` and its SPS as a slice activates them (7.4.2.4.2), with the PPS's bounds
    /// that depend on the SPS checked (once per pair).
    public mutating func activate(pictureParameterSetID id: Int) throws(H265Error)
        -> (pps: H265PictureParameterSet, sps: H265SequenceParameterSet)
    {
        guard let pps = pictureParameterSet(id: id) else { throw H265Error.missingParameterSet(kind: "PPS", id: id) }
        guard let sps = sequenceParameterSet(id: pps.seqParameterSetID) else {
            throw H265Error.missingParameterSet(kind: "SPS", id: pps.seqParameterSetID)
        }
        if !validatedPictureParameterSetIDs.contains(id) {
            try pps.validate(against: sps)
            validatedPictureParameterSetIDs.insert(id)
        }
        return (pps, sps)
    }

    /// Forgets everything (a flush, a new stream).
    public mutating func removeAll() {
        videoParameterSets.removeAll()
        sequenceParameterSets.removeAll()
        pictureParameterSets.removeAll()
        validatedPictureParameterSetIDs.removeAll()
        slicePictureContexts = [H265SlicePictureContext?](repeating: nil, count: 64)
        slicePictureValidationErrors = [H265Error?](repeating: nil, count: 64)
    }
}

/// What a slice segment header up to slice_pic_order_cnt_lsb (7.3.6.1) and the activation of its
/// picture's parameter sets (7.4.2.4.2, 8.3.1) read of the PPS the slice names and of that PPS's
/// SPS: a few plain fields, so that finding access units and POCs copies no parameter set.
public struct H265SlicePictureContext: Sendable, Hashable {
    /// pps_seq_parameter_set_id.
    public var seqParameterSetID: Int
    public var dependentSliceSegmentsEnabledFlag: Bool
    public var numExtraSliceHeaderBits: Int
    public var outputFlagPresentFlag: Bool
    public var screenContentCodingExtensionFlag: Bool
    /// The SPS's part; nil while no SPS has the PPS's SPS id.
    public var sequence: Sequence?

    public struct Sequence: Sendable, Hashable {
        public var videoParameterSetID: Int
        public var separateColourPlaneFlag: Bool
        /// PicSizeInCtbsY (7-19).
        public var picSizeInCtbsY: Int
        /// log2_max_pic_order_cnt_lsb_minus4 + 4.
        public var log2MaxPicOrderCntLsb: Int
        /// `H265PictureParameterSet.validate(against:)` finds the pair wrong (the PPS bounds of
        /// 7.4.3.3.1 that depend on the SPS): a picture cannot activate it. The check depends only
        /// on the two parameter sets, so it is made once when either arrives; the error itself is
        /// the store's (``H265ParameterSetStore/activationError(ppsID:)``), which keeps this
        /// struct plain data, copied without reference counting.
        public var failsValidation: Bool

        /// MaxPicOrderCntLsb (7-8).
        public var maxPicOrderCntLsb: Int { 1 << log2MaxPicOrderCntLsb }
    }

    /// The fields of `pps` and `sps`, with `failsValidation` false (the store validates the pair).
    public init(pps: H265PictureParameterSet, sps: H265SequenceParameterSet?) {
        seqParameterSetID = pps.seqParameterSetID
        dependentSliceSegmentsEnabledFlag = pps.dependentSliceSegmentsEnabledFlag
        numExtraSliceHeaderBits = pps.numExtraSliceHeaderBits
        outputFlagPresentFlag = pps.outputFlagPresentFlag
        screenContentCodingExtensionFlag = pps.screenContentCodingExtensionFlag
        sequence = sps.map { sps in
            Sequence(
                videoParameterSetID: sps.videoParameterSetID, separateColourPlaneFlag: sps.separateColourPlaneFlag,
                picSizeInCtbsY: sps.picSizeInCtbsY, log2MaxPicOrderCntLsb: sps.log2MaxPicOrderCntLsb,
                failsValidation: false)
        }
    }
}
