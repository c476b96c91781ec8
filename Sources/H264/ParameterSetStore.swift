/// The SPS and PPS seen so far in a stream, by id, parsed and raw.
///
/// 7.4.1.2.1: a parameter set with an id replaces the earlier one with that id; a PPS is parsed
/// against the SPS it names, so when that SPS changes, the PPS is parsed again from its bytes.
public struct ParameterSetStore: Sendable {
    public enum Change: Sendable, Equatable {
        /// The same bytes as the parameter set already stored under that id.
        case unchanged
        /// No parameter set had that id.
        case added
        /// A different parameter set replaced the one stored under that id.
        case replaced
    }

    private var sequenceParameterSets: [Int: (raw: [UInt8], parsed: SequenceParameterSet)] = [:]
    private var pictureParameterSets: [Int: (raw: [UInt8], parsed: PictureParameterSet?)] = [:]
    /// What reading a slice header's picture identity needs, by PPS id (0...255): a few plain
    /// fields, so the per-slice lookup copies no arrays (SPS/PPS carry scaling lists, HRD...).
    private var identityContexts = [SliceIdentityContext?](repeating: nil, count: 256)

    public init() {}

    public func sequenceParameterSet(id: Int) -> SequenceParameterSet? { sequenceParameterSets[id]?.parsed }
    public func pictureParameterSet(id: Int) -> PictureParameterSet? { pictureParameterSets[id]?.parsed ?? nil }
    public func rawSequenceParameterSet(id: Int) -> [UInt8]? { sequenceParameterSets[id]?.raw }
    public func rawPictureParameterSet(id: Int) -> [UInt8]? { pictureParameterSets[id]?.raw }

    /// Ids present, in ascending order.
    public var sequenceParameterSetIDs: [Int] { sequenceParameterSets.keys.sorted() }
    public var pictureParameterSetIDs: [Int] { pictureParameterSets.keys.sorted() }

    /// The fields of the PPS `id` and its SPS that the slice header's first part depends on.
    public func sliceIdentityContext(ppsID id: Int) -> SliceIdentityContext? {
        id >= 0 && id < identityContexts.count ? identityContexts[id] : nil
    }

    /// The slice identity contexts indexed by PPS id (nil where a PPS or its SPS is missing),
    /// for parsing many slice headers without touching the store's containers.
    func withSliceIdentityContexts<R, E: Error>(_ body: (UnsafeBufferPointer<SliceIdentityContext?>) throws(E) -> R)
        throws(E) -> R
    {
        try identityContexts.withUnsafeBufferPointer { buffer in Result { () throws(E) -> R in try body(buffer) } }
            .get()
    }

    private mutating func refreshIdentityContexts() {
        for id in 0..<identityContexts.count {
            guard let pps = pictureParameterSets[id]?.parsed, let sps = sequenceParameterSet(id: pps.seqParameterSetID)
            else {
                identityContexts[id] = nil
                continue
            }
            identityContexts[id] = SliceIdentityContext(sps: sps, pps: pps)
        }
    }

    /// Stores an SPS NAL unit (header byte included, escaped).
    @discardableResult
    public mutating func storeSequenceParameterSet(_ nalUnit: UnsafeRawBufferPointer) throws(H264Error) -> (
        id: Int, change: Change
    ) {
        let parsed = try SequenceParameterSet.parse(nalUnit: nalUnit)
        let id = Int(parsed.seqParameterSetID)
        if let existing = sequenceParameterSets[id], existing.raw.elementsEqual(nalUnit) {
            return (id, .unchanged)
        }
        let change: Change = sequenceParameterSets[id] == nil ? .added : .replaced
        // Copy: parameter sets are a few bytes and must outlive the caller's buffer.
        sequenceParameterSets[id] = (Array(nalUnit), parsed)
        if change == .replaced {
            // PPSs referring to this SPS were parsed against the old one (7.4.2.2 semantics
            // depend on chroma_format_idc): parse them again, or forget them if they no longer parse.
            for (ppsID, entry) in pictureParameterSets {
                let reparsed = entry.raw.withUnsafeBytes { raw in
                    try? PictureParameterSet.parse(
                        nalUnit: raw, sequenceParameterSets: { self.sequenceParameterSet(id: $0) })
                }
                if let reparsed, Int(reparsed.seqParameterSetID) != id { continue }
                pictureParameterSets[ppsID] = (entry.raw, reparsed)
            }
        }
        if change != .unchanged { refreshIdentityContexts() }
        return (id, change)
    }

    /// Stores a PPS NAL unit. Throws when it cannot be parsed, including when the SPS it names
    /// has not been received.
    @discardableResult
    public mutating func storePictureParameterSet(_ nalUnit: UnsafeRawBufferPointer) throws(H264Error) -> (
        id: Int, change: Change
    ) {
        let parsed = try PictureParameterSet.parse(
            nalUnit: nalUnit, sequenceParameterSets: { self.sequenceParameterSet(id: $0) })
        let id = Int(parsed.picParameterSetID)
        if let existing = pictureParameterSets[id], existing.parsed != nil, existing.raw.elementsEqual(nalUnit) {
            return (id, .unchanged)
        }
        let change: Change = pictureParameterSets[id] == nil ? .added : .replaced
        // Copy: as for the SPS.
        pictureParameterSets[id] = (Array(nalUnit), parsed)
        identityContexts[id] = sequenceParameterSet(id: parsed.seqParameterSetID).map {
            SliceIdentityContext(sps: $0, pps: parsed)
        }
        return (id, change)
    }

    /// Forgets everything (a flush, a new stream).
    public mutating func removeAll() {
        sequenceParameterSets.removeAll()
        pictureParameterSets.removeAll()
        identityContexts = [SliceIdentityContext?](repeating: nil, count: 256)
    }
}
