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

        static let empty = AccessUnit(byteCount: 0, nalUnits: [], picture: nil, problems: [], skippedLayerNALUnitCount: 0)
    }

    public typealias Result = AnnexB.SplitResult<AccessUnit>

    /// Reads what finds access units and POCs, no more (``H265AccessUnitAssembler/Depth``).
    public private(set) var assembler = H265AccessUnitAssembler(depth: .accessUnits)
    private var current = AccessUnit.empty
    /// `current` holds at least one NAL unit (usable or not).
    private var currentHasContent = false
    /// Offset up to which the data has been classified: the end of the last NAL unit pushed.
    private var classifiedUpTo = 0
    /// Where the search for the end of the open NAL unit resumes, so that bytes are scanned once
    /// when a large NAL unit arrives in many pieces.
    private var endSearchFrom = 0

    public init() {}

    /// The parameter sets seen so far.
    public var parameterSets: H265ParameterSetStore { assembler.parameterSets }

    /// Forgets the partial access unit and the POC history (flush, seek, discontinuity); the next
    /// IRAP picture starts a coded video sequence. Parameter sets are kept.
    public mutating func reset() {
        assembler.reset()
        current = .empty
        currentHasContent = false
        classifiedUpTo = 0
        endSearchFrom = 0
    }

    /// Looks for the next complete access unit in `data` (see the type's comment).
    public mutating func next(in data: UnsafeRawBufferPointer, dataEnd: DataEnd) -> Result {
        while true {
            guard let code = AnnexB.findStartCode(in: data, from: classifiedUpTo) else {
                if !currentHasContent {
                    // No NAL unit has begun: all is garbage but the last two bytes, which may
                    // begin a start code that the next data completes.
                    let garbage = dataEnd == .accessUnitBoundary ? data.count : max(0, data.count &- 2)
                    return garbage > 0 ? .skip(garbage) : .needMoreData
                }
                if dataEnd == .accessUnitBoundary { return .accessUnit(finishCurrent(byteCount: data.count)) }
                return .needMoreData
            }
            // A zero_byte in front makes it a four-byte start code (B.2.1).
            let codeStart = code > classifiedUpTo && data[code &- 1] == 0 ? code &- 1 : code
            if !currentHasContent && codeStart > 0 { return .skip(codeStart) }
            let payloadStart = code &+ 3
            let end: Int
            if let nextCode = AnnexB.findStartCode(in: data, from: max(payloadStart, endSearchFrom)) {
                end = nextCode
            } else if dataEnd != .streamContinues {
                end = data.count
            } else {
                endSearchFrom = max(payloadStart, data.count &- 2)
                return .needMoreData
            }
            endSearchFrom = 0
            // trailing_zero_8bits and the next start code's zero_byte belong to no NAL unit (B.2.1).
            var nalEnd = end
            while nalEnd > payloadStart && data[nalEnd &- 1] == 0 { nalEnd &-= 1 }
            guard nalEnd > payloadStart else {
                classifiedUpTo = end
                continue
            }
            let nalUnit = UnsafeRawBufferPointer(rebasing: data[payloadStart..<nalEnd])
            let step = assembler.push(nalUnit: nalUnit)
            let layerID = nalUnit.count >= 2 ? Int(nalUnit[0] & 1) << 5 | Int(nalUnit[1] >> 3) : 0
            if step.startsNewAccessUnit && currentHasContent {
                // This NAL unit begins the next access unit: everything before its start code is
                // the access unit to hand out, and the offsets move to the next one.
                var finished = current
                finished.byteCount = codeStart
                finished.picture = step.completedPicture
                current = .empty
                record(step, layerID: layerID, at: payloadStart &- codeStart, length: nalEnd &- payloadStart)
                currentHasContent = true
                classifiedUpTo = nalEnd &- codeStart
                return .accessUnit(finished)
            }
            record(step, layerID: layerID, at: payloadStart, length: nalEnd &- payloadStart)
            currentHasContent = true
            classifiedUpTo = nalEnd
        }
    }

    private mutating func finishCurrent(byteCount: Int) -> AccessUnit {
        var finished = current
        finished.byteCount = byteCount
        finished.picture = assembler.finish()
        current = .empty
        currentHasContent = false
        classifiedUpTo = 0
        endSearchFrom = 0
        return finished
    }

    private mutating func record(_ step: H265AccessUnitAssemblyStep, layerID: Int, at offset: Int, length: Int) {
        if let problem = step.problem {
            current.problems.append(Problem(nalUnitType: step.nalUnitType, error: problem))
        } else if layerID > 0 {
            current.skippedLayerNALUnitCount &+= 1
        } else if let type = step.nalUnitType {
            current.nalUnits.append(NALUnit(
                type: type, offset: offset, length: length, parameterSetChange: step.parameterSetChange))
        }
    }
}
