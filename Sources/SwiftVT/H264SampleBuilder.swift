import H264
import MediaCore

/// H.264 access units as containers and parsers hand them over (Annex B, or length-prefixed with
/// 1-, 2- or 4-byte lengths), in; sample buffers for a ``DecompressionSession`` (4-byte lengths),
/// and the format description the stream's parameter sets make, out. No GStreamer: vtdec feeds
/// it, and so can any other program that reads H.264 from a file or the network.
///
/// It keeps every SPS/PPS the stream has given (codec_data and in band) and says when they
/// describe a new format, so the caller can ask its session ``DecompressionSession/canAccept(_:)``
/// or make a new one.
public struct H264SampleBuilder: Sendable {
    /// How the input carries NAL units.
    public enum InputFormat: Sendable, Equatable {
        /// Length-prefixed, parameter sets in codec_data (and possibly in band).
        case avc(nalUnitHeaderLength: Int)
        /// Length-prefixed, parameter sets in band (codec_data optional).
        case avc3(nalUnitHeaderLength: Int)
        /// Start codes, parameter sets in band (Annex B).
        case byteStream
    }

    /// What the builder noticed about the input that a person should hear about; the access unit
    /// was still read.
    public enum Notice: Sendable, Equatable {
        /// Length-prefixed NAL units under a byte-stream label (a demuxer's avc stream whose
        /// label was rewritten): read as what they are, as libavcodec does. Said once per input.
        case lengthPrefixedUnderByteStreamLabel(nalUnitHeaderLength: Int)
        /// A damaged NAL unit length (bit errors): the access unit ends before it, and the
        /// whole NAL units before it are kept, as libavcodec does.
        case damagedLength(H264Error, intactBytes: Int)
        /// An SPS that changes the content under its id outside an access unit with an IDR
        /// picture was ignored: a changed SPS may only be activated at an IDR picture
        /// (7.4.1.2.1), so one elsewhere is damage, and taking it would replace the decoder and
        /// lose every reference picture until the next IDR.
        case sequenceParameterSetChangeIgnored(id: Int)
    }

    /// One access unit, read.
    public struct AccessUnit: Sendable {
        /// AVCC bytes with 4-byte lengths, or nil when the input already is that and can be
        /// wrapped as it is (no copy).
        public var convertedBytes: [UInt8]?
        public var notices: [Notice]
        /// The parameter sets now describe another format than before this access unit.
        public var formatChanged: Bool
    }

    public private(set) var inputFormat = InputFormat.byteStream
    /// The description the parameter sets make (nil before an SPS and a PPS that refers to it).
    public private(set) var formatDescription: FormatDescription?
    private var parameterSets = ParameterSetStore()
    /// The NAL unit length size of codec_data's avcC record, when there is one.
    private var codecDataNALUnitHeaderLength: Int?
    private var noticedMislabelledInput = false

    public init() {}

    /// New input caps: how frames carry NAL units, and codec_data's record. Returns whether the
    /// parameter sets now describe another format.
    @discardableResult
    public mutating func setInput(_ format: InputFormat, configuration record: AVCDecoderConfigurationRecord?) -> Bool {
        inputFormat = format
        codecDataNALUnitHeaderLength = record?.nalUnitHeaderLength
        guard let record else { return false }
        for set in record.sequenceParameterSets + record.pictureParameterSets {
            _ = set.withUnsafeBytes { raw in Result { () throws(H264Error) in try Self.store(raw, in: &parameterSets) } }
        }
        return refreshFormat()
    }

    /// Reads one access unit's bytes: stores its parameter sets and gives its NAL units as the
    /// session's samples carry them.
    ///
    /// - Throws: the ``H264Error`` of a damaged access unit with no whole NAL unit before the damage.
    public mutating func read(_ bytes: UnsafeRawBufferPointer) throws(H264Error) -> AccessUnit {
        // The parameter sets are stored once the slices are known: whether the access unit holds
        // an IDR picture decides about a changed SPS.
        var sets: [UnsafeRawBufferPointer] = []
        var holdsIDRPicture = false
        func note(_ nal: UnsafeRawBufferPointer) {
            guard let header = nal.first else { return }
            let type = NALUnitType(rawValue: header)
            if type == .sequenceParameterSet || type == .pictureParameterSet {
                sets.append(nal)
            } else if header & 0x1F == 5 {
                holdsIDRPicture = true  // nal_unit_type 5: a slice of an IDR picture
            }
        }
        var notices: [Notice] = []
        var format = inputFormat
        if format == .byteStream, let length = Self.lengthPrefixTiling(bytes, nalUnitHeaderLength: codecDataNALUnitHeaderLength) {
            if !noticedMislabelledInput {
                noticedMislabelledInput = true
                notices.append(.lengthPrefixedUnderByteStreamLabel(nalUnitHeaderLength: length))
            }
            format = .avc3(nalUnitHeaderLength: length)
        }
        switch format {
        case .avc(let length), .avc3(let length):
            var intactEnd = 0
            var damage: H264Error?
            do {
                try AVCC.forEachNALUnit(in: bytes, nalUnitHeaderLength: length) { range in
                    note(UnsafeRawBufferPointer(rebasing: bytes[range]))
                    intactEnd = range.upperBound
                }
            } catch {
                damage = error as? H264Error ?? .truncated(what: "a NAL unit length")
            }
            if let damage {
                guard intactEnd > 0 else { throw damage }
                notices.append(.damagedLength(damage, intactBytes: intactEnd))
            }
            let changed = store(sets, holdsIDRPicture: holdsIDRPicture, notices: &notices)
            if length == 4 && damage == nil { return AccessUnit(convertedBytes: nil, notices: notices, formatChanged: changed) }
            // Copy: the session's samples use 4-byte lengths (1- and 2-byte ones are re-framed),
            // and a damaged sample must end before its damaged length.
            let intact = UnsafeRawBufferPointer(rebasing: bytes[0..<intactEnd])
            var converted: [UInt8] = []
            converted.reserveCapacity(intact.count + 16)
            _ = try? AVCC.forEachNALUnit(in: intact, nalUnitHeaderLength: length) { range in
                AVCC.appendLengthPrefixed(nalUnit: UnsafeRawBufferPointer(rebasing: intact[range]), to: &converted)
            }
            return AccessUnit(convertedBytes: converted, notices: notices, formatChanged: changed)
        case .byteStream:
            AnnexB.forEachNALUnit(in: bytes) { unit in note(UnsafeRawBufferPointer(rebasing: bytes[unit.payloadRange])) }
            let changed = store(sets, holdsIDRPicture: holdsIDRPicture, notices: &notices)
            var converted: [UInt8] = []
            // Copy: start codes become 4-byte lengths (the AVCC samples the session decodes).
            _ = try? AVCC.appendLengthPrefixed(fromAnnexB: bytes, nalUnitHeaderLength: 4, to: &converted)
            return AccessUnit(convertedBytes: converted, notices: notices, formatChanged: changed)
        }
    }

    /// The sample for the session: `inBandParameterSets` (a running session that accepted a new
    /// description learns them before this frame), then the access unit's bytes (converted, or
    /// the `original` block wrapping the input without a copy).
    public static func sampleBuffer(
        _ unit: AccessUnit, original: @autoclosure () -> BlockBuffer, inBandParameterSets: [[UInt8]],
        formatDescription: FormatDescription, timing: SampleTimingInfo, isSync: Bool
    ) throws(SampleBufferError) -> SampleBuffer {
        var data = BlockBuffer()
        if !inBandParameterSets.isEmpty {
            var prefix: [UInt8] = []
            for set in inBandParameterSets { set.withUnsafeBytes { AVCC.appendLengthPrefixed(nalUnit: $0, to: &prefix) } }
            data.append(BlockBuffer(prefix))
        }
        if let converted = unit.convertedBytes {
            data.append(BlockBuffer(converted))
        } else {
            data.append(original())
        }
        var attachments = SampleAttachments()
        attachments.notSync = !isSync
        return try SampleBuffer(
            dataBuffer: data, formatDescription: formatDescription, sampleCount: 1, timings: .uniform(timing),
            sizes: .uniform(data.count), sampleAttachments: [attachments])
    }

    /// The NAL unit length size of bytes that, labelled Annex B, hold length-prefixed NAL units
    /// instead: the lengths (codec_data's size, else 4 bytes) tile the bytes exactly with NAL
    /// units whose header is plausible (forbidden_zero_bit 0, 7.4.1; a type 1-23). Not a
    /// start-code test: a 4-byte length of 256-511 begins with 00 00 01 too. Annex B data does
    /// not tile: after its first "length" (the start code, 1) the next four bytes (NAL header and
    /// payload) make a length that runs past the end or misses it. nil for Annex B.
    public static func lengthPrefixTiling(_ bytes: UnsafeRawBufferPointer, nalUnitHeaderLength: Int?) -> Int? {
        guard bytes.count >= 5 else { return nil }
        let length = nalUnitHeaderLength ?? 4
        var plausible = true
        var units = 0
        do {
            try AVCC.forEachNALUnit(in: bytes, nalUnitHeaderLength: length) { range in
                let header = bytes[range.lowerBound]
                let type = header & 0x1F
                if header & 0x80 != 0 || type == 0 || type > 23 { plausible = false }
                units += 1
            }
        } catch {
            return nil
        }
        return plausible && units > 0 ? length : nil
    }

    // MARK: Parameter sets

    private mutating func store(_ sets: [UnsafeRawBufferPointer], holdsIDRPicture: Bool, notices: inout [Notice]) -> Bool {
        var changed = false
        for nal in sets {
            if !holdsIDRPicture, NALUnitType(rawValue: nal[0]) == .sequenceParameterSet,
                let parsed = try? SequenceParameterSet.parse(nalUnit: nal),
                let current = parameterSets.rawSequenceParameterSet(id: parsed.seqParameterSetID),
                !current.elementsEqual(nal)
            {
                notices.append(.sequenceParameterSetChangeIgnored(id: parsed.seqParameterSetID))
                continue
            }
            if ((try? Self.store(nal, in: &parameterSets)) ?? .unchanged) != .unchanged { changed = true }
        }
        return changed ? refreshFormat() : false
    }

    @discardableResult
    private static func store(_ nal: UnsafeRawBufferPointer, in store: inout ParameterSetStore) throws(H264Error) -> ParameterSetStore.Change {
        switch nal.first.map({ NALUnitType(rawValue: $0) }) {
        case .sequenceParameterSet?: return try store.storeSequenceParameterSet(nal).change
        case .pictureParameterSet?: return try store.storePictureParameterSet(nal).change
        default: return .unchanged
        }
    }

    /// After new or changed parameter sets: the description they make now. True when it changed.
    private mutating func refreshFormat() -> Bool {
        let sets = parameterSets.sequenceParameterSetIDs.compactMap { parameterSets.rawSequenceParameterSet(id: $0) }
            + parameterSets.pictureParameterSetIDs.compactMap { id in
                parameterSets.pictureParameterSet(id: id) != nil ? parameterSets.rawPictureParameterSet(id: id) : nil
            }
        guard let description = try? FormatDescription(h264ParameterSets: sets), description != formatDescription else { return false }
        formatDescription = description
        return true
    }
}

extension H264SampleBuilder {
    /// The frames a decoder of `description` holds before a picture comes out: the stream's
    /// reorder depth (max_num_reorder_frames, E.2.1; 0 where pictures cannot be reordered), plus
    /// a frame per extra frame thread (`frameThreads`: libavcodec's frame threading, which a
    /// low-delay or hardware decoder does not use). nil without a readable SPS.
    public static func decoderDelay(for description: FormatDescription, frameThreads: Int) -> Int? {
        guard let depth = description.h264OutputReorderDepth else { return nil }
        return depth + max(0, frameThreads - 1)
    }
}
