/// Finds complete access units in an Annex B byte stream held by someone else (GstBaseParse's
/// adapter, a memory-mapped file), incrementally: each call continues where the previous one
/// stopped, so every byte is scanned once however the data arrives.
///
/// The caller owns the bytes. It passes all bytes not yet consumed, starting at the beginning of
/// the current access unit; after `.accessUnit(let unit)` it drops `unit.byteCount` bytes from the
/// front, after `.skip(let count)` it drops `count` bytes, and calls again.
public struct AccessUnitSplitter: Sendable {
    /// How the end of the data passed to `next(in:dataEnd:)` relates to the stream's structure.
    public typealias DataEnd = AnnexB.DataEnd

    /// One NAL unit of an access unit, as offsets into the caller's data.
    public struct NALUnit: Hashable, Sendable {
        public var type: NALUnitType
        /// Offset of the NAL unit header byte, relative to the start of the access unit.
        public var offset: Int
        public var length: Int
        public var range: Range<Int> { offset..<(offset + length) }
        /// For SPS/PPS: whether it is new or differs from the stored one with its id.
        public var parameterSetChange: ParameterSetStore.Change?
    }

    public struct Problem: Sendable, Equatable {
        public var nalUnitType: NALUnitType
        public var error: H264Error
    }

    public struct AccessUnit: Sendable {
        /// Bytes from the start of the data that belong to this access unit (start codes and
        /// trailing zeros included): the amount to consume.
        public var byteCount: Int
        /// The usable NAL units, in order; damaged ones are left out and reported in `problems`.
        public var nalUnits: [NALUnit]
        /// The primary coded picture, or nil when the access unit holds none (only parameter
        /// sets, only damaged slices, or only SVC/MVC extension NAL units).
        public var picture: AccessUnitPicture?
        /// NAL units left out, each with what was wrong.
        public var problems: [Problem]
        /// SVC/MVC extension NAL units (types 14, 15, 20) passed over: a base-layer decoder ignores them.
        public var skippedExtensionNALUnitCount: Int
        /// An SPS or PPS in this access unit is new or changed.
        public var parameterSetsChanged: Bool {
            nalUnits.contains { $0.parameterSetChange == .added || $0.parameterSetChange == .replaced }
        }
    }

    public typealias Result = AnnexB.SplitResult<AccessUnit>

    public private(set) var assembler = AccessUnitAssembler()
    private var current = AccessUnit.empty
    /// `current` holds at least one NAL unit (usable or not).
    private var currentHasContent = false
    /// Where the NAL units are in the data (and how far they have been classified).
    private var scan = AnnexBNALUnitScan()
    /// An access-unit boundary that an SPS, PPS or SEI after a picture's slices made, held until
    /// the next slice says whether the picture goes on (the assembler's
    /// `continuesPreviousPicture`): where it is in `current`, and the picture it ended.
    private var tentativeBoundary: TentativeBoundary?

    private struct TentativeBoundary {
        /// Offset of its start code from the start of the access unit.
        var byteOffset: Int
        /// How many NAL units and problems of `current` come before it.
        var nalUnitCount: Int
        var problemCount: Int
        var skippedExtensionNALUnitCount: Int
        var picture: AccessUnitPicture?
    }

    public init() {}

    /// The parameter sets seen so far.
    public var parameterSets: ParameterSetStore { assembler.parameterSets }

    /// Forgets the partial access unit and the POC history (flush, seek, discontinuity).
    /// Parameter sets are kept.
    public mutating func reset() {
        assembler.reset()
        current = .empty
        currentHasContent = false
        scan.reset()
        tentativeBoundary = nil
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
            case .endOfData:
                // Upstream says the access unit ends here; a held boundary stands (what
                // follows it is an access unit of its own, without a picture).
                if let boundary = tentativeBoundary { return .accessUnit(confirm(boundary)) }
                return .accessUnit(finishCurrent(byteCount: data.count))
            case .nalUnit(let start, let payload):
                (codeStart, payloadStart, nalEnd) = (start, payload.lowerBound, payload.upperBound)
            }
            let step = assembler.push(nalUnit: UnsafeRawBufferPointer(rebasing: data[payloadStart..<nalEnd]))
            if let boundary = tentativeBoundary {
                if step.continuesPreviousPicture {
                    // The picture goes on: the parameter sets or SEI stay inside its access unit.
                    tentativeBoundary = nil
                } else if !Self.holdsBoundary(step.nalUnitType) {
                    // A new picture (or a delimiter): the held boundary was the end. The NAL
                    // unit is classified again from the new access unit's start.
                    return .accessUnit(confirm(boundary, movingAlong: (step, payloadStart..<nalEnd)))
                }
            }
            if step.startsNewAccessUnit && currentHasContent && Self.holdsBoundary(step.nalUnitType) {
                tentativeBoundary = TentativeBoundary(
                    byteOffset: codeStart, nalUnitCount: current.nalUnits.count, problemCount: current.problems.count,
                    skippedExtensionNALUnitCount: current.skippedExtensionNALUnitCount, picture: step.completedPicture)
                record(step, at: payloadStart, length: nalEnd - payloadStart)
                scan.classifiedUpTo = nalEnd
                continue
            }
            if step.startsNewAccessUnit && currentHasContent {
                // This NAL unit begins the next access unit: everything before its start code is
                // the access unit to hand out, and the offsets move to the next one.
                var finished = current
                finished.byteCount = codeStart
                finished.picture = step.completedPicture
                current = .empty
                record(step, at: payloadStart - codeStart, length: nalEnd - payloadStart)
                currentHasContent = true
                scan.classifiedUpTo = nalEnd - codeStart
                return .accessUnit(finished)
            }
            record(step, at: payloadStart, length: nalEnd - payloadStart)
            currentHasContent = true
            scan.classifiedUpTo = nalEnd
        }
    }

    /// NAL units whose boundary is held: SPS, PPS and SEI may sit between two slices of one
    /// picture in streams from RTP payloaders; an access unit delimiter may not.
    private static func holdsBoundary(_ type: NALUnitType) -> Bool {
        type == .sequenceParameterSet || type == .pictureParameterSet || type == .sei
    }

    /// Ends the access unit at the held boundary: what was recorded after it (and the NAL unit
    /// just pushed, when given, with its payload range) moves to the next access unit, with
    /// offsets from that one's start.
    private mutating func confirm(
        _ boundary: TentativeBoundary, movingAlong pushed: (step: AccessUnitAssemblyStep, payload: Range<Int>)? = nil
    ) -> AccessUnit {
        tentativeBoundary = nil
        var finished = current
        finished.byteCount = boundary.byteOffset
        finished.picture = boundary.picture
        finished.nalUnits = Array(current.nalUnits[..<boundary.nalUnitCount])
        finished.problems = Array(current.problems[..<boundary.problemCount])
        finished.skippedExtensionNALUnitCount = boundary.skippedExtensionNALUnitCount
        var next = AccessUnit.empty
        next.nalUnits = current.nalUnits[boundary.nalUnitCount...].map { unit in
            var moved = unit
            moved.offset -= boundary.byteOffset
            return moved
        }
        next.problems = Array(current.problems[boundary.problemCount...])
        next.skippedExtensionNALUnitCount = current.skippedExtensionNALUnitCount - boundary.skippedExtensionNALUnitCount
        current = next
        currentHasContent = true
        scan.classifiedUpTo -= boundary.byteOffset
        if let pushed {
            record(pushed.step, at: pushed.payload.lowerBound - boundary.byteOffset, length: pushed.payload.count)
            scan.classifiedUpTo = pushed.payload.upperBound - boundary.byteOffset
        }
        return finished
    }

    private mutating func finishCurrent(byteCount: Int) -> AccessUnit {
        var finished = current
        finished.byteCount = byteCount
        finished.picture = assembler.finish()
        current = .empty
        currentHasContent = false
        scan.reset()
        return finished
    }

    private mutating func record(_ step: AccessUnitAssemblyStep, at offset: Int, length: Int) {
        if let problem = step.problem {
            current.problems.append(Problem(nalUnitType: step.nalUnitType, error: problem))
        } else if step.nalUnitType.isScalableOrMultiviewExtension {
            current.skippedExtensionNALUnitCount += 1
        } else {
            current.nalUnits.append(
                NALUnit(
                    type: step.nalUnitType, offset: offset, length: length, parameterSetChange: step.parameterSetChange)
            )
        }
    }
}

extension AccessUnitSplitter.AccessUnit {
    static let empty = AccessUnitSplitter.AccessUnit(
        byteCount: 0, nalUnits: [], picture: nil, problems: [], skippedExtensionNALUnitCount: 0)
}
