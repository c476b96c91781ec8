/// Gives an IDR slice another idr_pic_id without coding it again: what a splice of separately
/// encoded pieces needs where an IDR picture of one piece directly follows an IDR picture of the
/// piece before with the same idr_pic_id, which 7.4.3 forbids ("If two consecutive access units
/// in decoding order are both IDR access units, the value of idr_pic_id in the slices of the
/// first such IDR access unit shall differ from the idr_pic_id in the second").
///
/// idr_pic_id is ue(v) in the middle of the slice header (7.3.3), so another value usually has
/// another length and everything after it moves:
/// - CAVLC (entropy_coding_mode_flag 0): slice_data() follows the header bit for bit, so the
///   rest of the slice is shifted and rbsp_slice_trailing_bits are written again (7.3.2.8).
///   The shift must be whole bytes: an I_PCM macroblock's samples start after
///   pcm_alignment_zero_bits at a byte boundary (7.3.5), which a shift of 2 bits would move
///   (the corpus's CVPCMNL1_SVA_C decoded wrong that way). ue(v) codes are 1, 3, 5 ... bits
///   long, so the new value's code must be as long as the old one's, or 8 bits longer or
///   shorter (``replacementID(for:avoiding:)`` picks one: 0 becomes 15, 1 becomes 2);
/// - CABAC: slice_data() starts with cabac_alignment_one_bits up to a byte boundary (7.3.4)
///   and the arithmetic-coded data is byte-aligned, so the new header gets its own alignment
///   bits and the data bytes stay as they are.
/// The header is parsed and written again with the project's own writer; the rewrite is refused
/// unless writing the parsed header with its old idr_pic_id reproduces the slice's header bit
/// for bit (a field the writer does not know would otherwise be lost).
public enum IDRPictureIDRewriting {
    /// Bits of idr_pic_id's ue(v) code for `value` (9.1: 2 * floor(log2(value + 1)) + 1).
    public static func codeLength(_ value: Int) -> Int {
        2 * (Int.bitWidth - 1 - (value + 1).leadingZeroBitCount) + 1
    }

    /// The smallest idr_pic_id other than `current` and those in `avoiding` whose ue(v) code is
    /// as long as `current`'s modulo 8 bits: the rest of a CAVLC slice then moves by whole bytes.
    public static func replacementID(for current: Int, avoiding: Set<Int> = []) -> Int {
        var candidate = 0
        while candidate == current || avoiding.contains(candidate)
            || (codeLength(candidate) - codeLength(current)) % 8 != 0
        {
            candidate += 1
        }
        return candidate
    }

    /// The slice NAL unit `nalUnit` (escaped, header byte included, nal_unit_type 5) with
    /// idr_pic_id `newID`, whose ue(v) code must be as long as the old one's modulo 8 bits
    /// (``replacementID(for:avoiding:)``).
    ///
    /// - Throws: ``H264Error/invalidValue(field:value:)`` for a NAL unit that is not an IDR slice
    ///   or an id beyond 65535; ``H264Error/unsupported(_:)`` when the header cannot be written
    ///   back exactly; parse errors of the header.
    public static func rewrite(
        idrSlice nalUnit: [UInt8], to newID: Int, pictureParameterSets: (Int) -> PictureParameterSet?,
        sequenceParameterSets: (Int) -> SequenceParameterSet?
    ) throws(H264Error) -> [UInt8] {
        guard let first = nalUnit.first, NALUnitHeader(byte: first).nalUnitType.rawValue == 5 else {
            throw H264Error.invalidValue(field: "nal_unit_type", value: Int64(nalUnit.first.map { $0 & 0x1F } ?? 0))
        }
        guard (0...65_535).contains(newID) else {
            throw H264Error.invalidValue(field: "idr_pic_id", value: Int64(newID))
        }
        let header = try SliceHeader.parse(
            nalUnit: nalUnit, pictureParameterSets: pictureParameterSets, sequenceParameterSets: sequenceParameterSets)
        guard (codeLength(newID) - codeLength(header.idrPicID)) % 8 == 0 else {
            throw H264Error.unsupported(
                "rewriting idr_pic_id \(header.idrPicID) to \(newID) would move the slice data by a part of a byte (I_PCM samples are byte-aligned, 7.3.5)"
            )
        }
        guard let pps = pictureParameterSets(header.picParameterSetID),
            let sps = sequenceParameterSets(pps.seqParameterSetID)
        else {
            throw H264Error.missingParameterSet(kind: "PPS", id: header.picParameterSetID)
        }
        // The whole payload unescaped: the slice data moves with the header.
        let rbsp = RBSP.extractRBSP(from: Array(nalUnit[1...]))
        let oldHeaderBits = header.headerBitSize
        var written: BitWriter
        var rewritten: BitWriter
        do throws(H264WritingError) {
            written = try header.write(sequenceParameterSet: sps, pictureParameterSet: pps)
            var changed = header
            changed.idrPicID = newID
            rewritten = try changed.write(sequenceParameterSet: sps, pictureParameterSet: pps)
        } catch {
            throw H264Error.unsupported(
                "rewriting idr_pic_id: the slice header cannot be written back (\(error.description))")
        }
        guard written.bitCount == oldHeaderBits, sameBits(written, rbsp, count: oldHeaderBits) else {
            throw H264Error.unsupported("rewriting idr_pic_id: the slice header is not written back bit for bit")
        }
        if pps.entropyCodingModeFlag {
            // 7.3.4: cabac_alignment_one_bit up to the byte boundary, then byte-aligned CABAC data.
            let dataStart = (oldHeaderBits + 7) / 8
            guard dataStart <= rbsp.count, alignmentBitsAreOnes(rbsp, from: oldHeaderBits, to: dataStart * 8) else {
                throw H264Error.invalidValue(field: "cabac_alignment_one_bit", value: 0)
            }
            while !rewritten.isByteAligned { rewritten.writeFlag(true) }
            rewritten.writeBytes(rbsp[dataStart...])
        } else {
            // 7.3.2.8: slice_data() bit for bit, then rbsp_slice_trailing_bits (the stop bit is
            // the last 1 bit of the RBSP).
            guard let stopBit = lastOneBit(rbsp), stopBit >= oldHeaderBits else {
                throw H264Error.truncated(what: "rbsp_stop_one_bit")
            }
            copyBits(rbsp, from: oldHeaderBits, to: stopBit, into: &rewritten)
            rewritten.writeRBSPTrailingBits()
        }
        return [first] + RBSP.insertEmulationPrevention(rewritten.bytes)
    }

    /// Whether the first `count` bits of `writer` and `bytes` are equal.
    private static func sameBits(_ writer: BitWriter, _ bytes: [UInt8], count: Int) -> Bool {
        let writtenBytes = writer.bytes
        guard writtenBytes.count * 8 >= count, bytes.count * 8 >= count else { return false }
        for index in 0..<(count / 8) where writtenBytes[index] != bytes[index] { return false }
        let rest = count % 8
        guard rest > 0 else { return true }
        let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - rest))
        return writtenBytes[count / 8] & mask == bytes[count / 8] & mask
    }

    private static func bit(_ bytes: [UInt8], _ position: Int) -> Bool {
        bytes[position >> 3] & (0x80 >> UInt8(position & 7)) != 0
    }

    private static func alignmentBitsAreOnes(_ bytes: [UInt8], from start: Int, to end: Int) -> Bool {
        (start..<end).allSatisfy { bit(bytes, $0) }
    }

    private static func lastOneBit(_ bytes: [UInt8]) -> Int? {
        guard let index = bytes.lastIndex(where: { $0 != 0 }) else { return nil }
        return index * 8 + 7 - bytes[index].trailingZeroBitCount
    }

    /// Appends bits `start..<end` of `bytes` to `writer`: the bits up to the next byte boundary
    /// one by one, then whole bytes.
    private static func copyBits(_ bytes: [UInt8], from start: Int, to end: Int, into writer: inout BitWriter) {
        var position = start
        while position < end && position % 8 != 0 {
            writer.writeFlag(bit(bytes, position))
            position += 1
        }
        while end - position >= 8 {
            writer.writeBits(UInt32(bytes[position >> 3]), count: 8)
            position += 8
        }
        while position < end {
            writer.writeFlag(bit(bytes, position))
            position += 1
        }
    }
}

/// Follows the access units of a spliced stream in decode order (AVCC, the whole stream's
/// parameter sets known) and gives an IDR picture another idr_pic_id where it would repeat the
/// id of the IDR picture before it:
/// - always when the two IDR access units are consecutive (7.4.3): a range re-encoded by a fresh
///   encoder starts at id 0, and the encoder before it may have ended on an IDR picture (a scene
///   cut on its last frame, or its key-frame interval right after one);
/// - also across other pictures where the caller asks (`distinctFromLastIDR`): where two
///   separately encoded chunks meet, a splice keeps the ids apart whether or not the pictures
///   are adjacent.
public struct IDRPictureIDSplicer {
    private let sequenceParameterSets: [Int: SequenceParameterSet]
    private let pictureParameterSets: [Int: PictureParameterSet]
    private let nalUnitHeaderLength: Int
    private var lastIDRPicID: Int?
    private var previousWasIDR = false
    /// IDR access units given another id so far.
    public private(set) var rewrittenCount = 0

    /// - Parameter parameterSets: the stream's SPS and PPS NAL units (escaped, header byte included).
    /// - Throws: when a parameter set cannot be parsed.
    public init(parameterSets: [[UInt8]], nalUnitHeaderLength: Int) throws(H264Error) {
        var sequences: [Int: SequenceParameterSet] = [:]
        var pictures: [Int: PictureParameterSet] = [:]
        for nalUnit in parameterSets
        where nalUnit.first.map({ NALUnitType(rawValue: $0) == .sequenceParameterSet }) ?? false {
            let sps = try SequenceParameterSet.parse(nalUnit: nalUnit)
            sequences[sps.seqParameterSetID] = sps
        }
        for nalUnit in parameterSets
        where nalUnit.first.map({ NALUnitType(rawValue: $0) == .pictureParameterSet }) ?? false {
            let pps = try PictureParameterSet.parse(nalUnit: nalUnit) { sequences[$0] }
            pictures[pps.picParameterSetID] = pps
        }
        sequenceParameterSets = sequences
        pictureParameterSets = pictures
        self.nalUnitHeaderLength = nalUnitHeaderLength
    }

    /// A splicer whose stream goes on right after an IDR access unit with idr_pic_id
    /// `previousIDRPictureID` coded under other parameter sets (an encoder restarted after it).
    public init(parameterSets: [[UInt8]], nalUnitHeaderLength: Int, followingIDRPictureID previousIDRPictureID: Int)
        throws(H264Error)
    {
        try self.init(parameterSets: parameterSets, nalUnitHeaderLength: nalUnitHeaderLength)
        lastIDRPicID = previousIDRPictureID
        previousWasIDR = true
    }

    /// idr_pic_id of the access unit's first IDR slice under these parameter sets; nil when it
    /// has none.
    public func idrPictureID(of unit: UnsafeRawBufferPointer) throws(H264Error) -> Int? {
        try idrPicID(of: unit)
    }

    /// The next access unit: nil when it goes out as it is, otherwise the access unit laid out
    /// again with the new id in every IDR slice (the slices change length, so the unit is copied).
    public mutating func next(_ unit: UnsafeRawBufferPointer, distinctFromLastIDR: Bool = false) throws(H264Error)
        -> [UInt8]?
    {
        guard let id = try idrPicID(of: unit) else {
            previousWasIDR = false
            return nil
        }
        defer { previousWasIDR = true }
        guard let last = lastIDRPicID, id == last, previousWasIDR || distinctFromLastIDR else {
            lastIDRPicID = id
            return nil
        }
        let newID = IDRPictureIDRewriting.replacementID(for: id, avoiding: [last])
        var result: [UInt8] = []
        result.reserveCapacity(unit.count + 16)
        try forEachNALUnit(in: unit) { (range) throws(H264Error) in
            var nalUnit = Array(unit[range])
            if nalUnit[0] & 0x1F == 5 {
                nalUnit = try IDRPictureIDRewriting.rewrite(
                    idrSlice: nalUnit, to: newID, pictureParameterSets: { pictureParameterSets[$0] },
                    sequenceParameterSets: { sequenceParameterSets[$0] })
            }
            let length = nalUnit.count
            for shift in stride(from: 8 * (nalUnitHeaderLength - 1), through: 0, by: -8) {
                result.append(UInt8(truncatingIfNeeded: length >> shift))
            }
            result += nalUnit
        }
        lastIDRPicID = newID
        rewrittenCount += 1
        return result
    }

    /// idr_pic_id of the access unit's first IDR slice; nil when it has none.
    private func idrPicID(of unit: UnsafeRawBufferPointer) throws(H264Error) -> Int? {
        var found: Int?
        try forEachNALUnit(in: unit) { (range) throws(H264Error) in
            guard found == nil, unit[range.lowerBound] & 0x1F == 5 else { return }
            found = try SliceHeader.parse(
                nalUnit: UnsafeRawBufferPointer(rebasing: unit[range]),
                pictureParameterSets: { pictureParameterSets[$0] },
                sequenceParameterSets: { sequenceParameterSets[$0] }
            ).idrPicID
        }
        return found
    }

    private func forEachNALUnit(in unit: UnsafeRawBufferPointer, _ body: (Range<Int>) throws(H264Error) -> Void)
        throws(H264Error)
    {
        do {
            try AVCC.forEachNALUnit(in: unit, nalUnitHeaderLength: nalUnitHeaderLength) { range in try body(range) }
        } catch let error as H264Error {
            throw error
        } catch {
            throw H264Error.malformedFraming("\(error)")
        }
    }
}
