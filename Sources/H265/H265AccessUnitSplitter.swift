/// Finds complete access units (7.4.2.4.4) in an H.265 Annex B byte stream held by someone else
/// (GstBaseParse's adapter, a memory-mapped file), incrementally: each call continues where the
/// previous one stopped, so every byte is scanned once however the data arrives.
///
/// The caller owns the bytes. It passes all bytes not yet consumed, starting at the beginning of
/// the current access unit; after `.accessUnit(let unit)` it drops `unit.byteCount` bytes from the
/// front, after `.skip(let count)` it drops `count` bytes, and calls again.
///
/// NAL units of layers above the base layer (nuh_layer_id > 0, 7.4.2.2) are passed over and
/// counted: a base-layer decoder ignores them. Damaged NAL units are left out and reported.
public struct H265AccessUnitSplitter: Sendable {
    /// How the end of the data passed to `next(in:dataEnd:)` relates to the stream's structure.
    public typealias DataEnd = AnnexB.DataEnd

    /// One NAL unit of an access unit, as offsets into the caller's data.
    public struct NALUnit: Hashable, Sendable {
        public var type: H265NALUnitType
        /// Offset of the first NAL unit header byte, relative to the start of the access unit.
        public var offset: Int
        public var length: Int
        public var range: Range<Int> { offset..<(offset &+ length) }
        /// For VPS/SPS/PPS: whether it is new or differs from the stored one with its id.
        public var parameterSetChange: H265ParameterSetStore.Change?
    }

    public struct Problem: Sendable, Equatable {
        /// nil when the NAL unit header itself is broken.
        public var nalUnitType: H265NALUnitType?
        public var error: H265Error
    }

    public struct AccessUnit: Sendable {
        /// Bytes from the start of the data that belong to this access unit (start codes and
        /// trailing zeros included): the amount to consume.
        public var byteCount: Int
        /// The usable NAL units of the base layer, in order.
        public var nalUnits: [NALUnit]
        /// The coded picture, or nil when the access unit holds none (only parameter sets, only
        /// damaged slices, or only NAL units of other layers).
        public var picture: H265AccessUnitPicture?
        /// NAL units left out, each with what was wrong.
        public var problems: [Problem]
        /// NAL units with nuh_layer_id > 0 passed over (7.4.2.2: ignored by the base layer).
        public var skippedLayerNALUnitCount: Int
        /// A VPS, SPS or PPS in this access unit is new or changed.
        public var parameterSetsChanged: Bool {
            nalUnits.contains { $0.parameterSetChange == .added || $0.parameterSetChange == .replaced }
        }

        static let empty = AccessUnit(
            byteCount: 0, nalUnits: [], picture: nil, problems: [], skippedLayerNALUnitCount: 0)
    }

    public typealias Result = AnnexB.SplitResult<AccessUnit>

    /// Reads what finds access units and POCs, no more (``H265AccessUnitAssembler/Depth``).
    public private(set) var assembler = H265AccessUnitAssembler(depth: .accessUnits)
    private var current = AccessUnit.empty
    /// `current` holds at least one NAL unit (usable or not).
    private var currentHasContent = false
    /// Where the NAL units are in the data (and how far they have been classified).
    private var scan = AnnexBNALUnitScan()

    public init() {}

    /// The parameter sets seen so far.
    public var parameterSets: H265ParameterSetStore { assembler.parameterSets }

    /// Forgets the partial access unit and the POC history (flush, seek, discontinuity); the next
    /// IRAP picture starts a coded video sequence. Parameter sets are kept.
    public mutating func reset() {
        assembler.reset()
        current = .empty
        currentHasContent = false
        scan.reset()
    }

    /// Looks for the next complete access unit in `data` (see the type's comment).
    public mutating func next(in data: UnsafeRawBufferPointer, dataEnd: DataEnd) -> Result {
        while true {
            let codeStart: Int
            let payloadStart: Int
            let nalEnd: Int
            switch scan.next(in: data, dataEnd: dataEnd, hasBegun: currentHasContent) {
            case .skip(let count): return .skip(count)
            case .needMoreData: return .needMoreData
            case .endOfData: return .accessUnit(finishCurrent(byteCount: data.count))
            case .nalUnit(let start, let payload):
                (codeStart, payloadStart, nalEnd) = (start, payload.lowerBound, payload.upperBound)
            }
            let nalUnit = UnsafeRawBufferPointer(rebasing: data[payloadStart..<nalEnd])
            var step = assembler.push(nalUnit: nalUnit)
            let layerID = nalUnit.count >= 2 ? Int(nalUnit[0] & 1) << 5 | Int(nalUnit[1] >> 3) : 0
            if step.startsNewAccessUnit && currentHasContent {
                // This NAL unit begins the next access unit: everything before its start code is
                // the access unit to hand out, and the offsets move to the next one.
                // Swapped out, not copied (a copy retains the access unit's arrays, and the
                // reset releases them again).
                var finished = AccessUnit.empty
                swap(&finished, &current)
                finished.byteCount = codeStart
                finished.picture = step.completedPicture.take()
                // One allocation for the next access unit's NAL units instead of one per
                // doubling (a picture of 4 slices with its SEI and parameter sets holds ~8).
                current.nalUnits.reserveCapacity(8)
                record(step, layerID: layerID, at: payloadStart &- codeStart, length: nalEnd &- payloadStart)
                currentHasContent = true
                scan.classifiedUpTo = nalEnd &- codeStart
                return .accessUnit(finished)
            }
            record(step, layerID: layerID, at: payloadStart, length: nalEnd &- payloadStart)
            currentHasContent = true
            scan.classifiedUpTo = nalEnd
        }
    }

    private mutating func finishCurrent(byteCount: Int) -> AccessUnit {
        var finished = AccessUnit.empty
        swap(&finished, &current)
        finished.byteCount = byteCount
        finished.picture = assembler.finish()
        currentHasContent = false
        scan.reset()
        return finished
    }

    private mutating func record(_ step: H265AccessUnitAssemblyStep, layerID: Int, at offset: Int, length: Int) {
        if let problem = step.problem {
            current.problems.append(Problem(nalUnitType: step.nalUnitType, error: problem))
        } else if layerID > 0 {
            current.skippedLayerNALUnitCount &+= 1
        } else if let type = step.nalUnitType {
            current.nalUnits.append(
                NALUnit(
                    type: type, offset: offset, length: length, parameterSetChange: step.parameterSetChange))
        }
    }
}
