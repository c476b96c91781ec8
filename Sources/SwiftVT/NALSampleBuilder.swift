import MediaCore
import NALBitstream

/// How an input carries the NAL units of H.264 or H.265 access units.
public enum NALSampleInputFormat: Sendable, Equatable {
    /// Length-prefixed (ISO/IEC 14496-15), parameter sets in codec_data and possibly in band
    /// (`avc`/`avc1`, `hvc1`).
    case lengthPrefixed(nalUnitHeaderLength: Int)
    /// Length-prefixed, parameter sets in band (codec_data optional) (`avc3`, `hev1`).
    case lengthPrefixedWithInBandParameterSets(nalUnitHeaderLength: Int)
    /// Start codes, parameter sets in band (Annex B).
    case byteStream

    /// H.264 `stream-format=avc`.
    public static func avc(nalUnitHeaderLength: Int) -> Self {
        .lengthPrefixed(nalUnitHeaderLength: nalUnitHeaderLength)
    }
    /// H.264 `stream-format=avc3`.
    public static func avc3(nalUnitHeaderLength: Int) -> Self {
        .lengthPrefixedWithInBandParameterSets(nalUnitHeaderLength: nalUnitHeaderLength)
    }
    /// H.265 `stream-format=hvc1`.
    public static func hvc1(nalUnitHeaderLength: Int) -> Self {
        .lengthPrefixed(nalUnitHeaderLength: nalUnitHeaderLength)
    }
    /// H.265 `stream-format=hev1`.
    public static func hev1(nalUnitHeaderLength: Int) -> Self {
        .lengthPrefixedWithInBandParameterSets(nalUnitHeaderLength: nalUnitHeaderLength)
    }

    var nalUnitHeaderLength: Int? {
        switch self {
        case .lengthPrefixed(let length), .lengthPrefixedWithInBandParameterSets(let length): length
        case .byteStream: nil
        }
    }
}

/// What a sample builder noticed about the input that a person should hear about; the access
/// unit was still read.
public enum NALSampleNotice: Sendable, Equatable {
    /// Length-prefixed NAL units under a byte-stream label (a demuxer's avc/hvc1 stream whose
    /// label was rewritten): read as what they are, as libavcodec does. Said once per input.
    case lengthPrefixedUnderByteStreamLabel(nalUnitHeaderLength: Int)
    /// A damaged NAL unit length (bit errors): the access unit ends before it, and the whole NAL
    /// units before it are kept, as libavcodec does. The text is the bitstream error.
    case damagedLength(String, intactBytes: Int)
    /// An SPS that changes the content under its id outside an access unit that may activate it
    /// was ignored: a changed SPS may only be activated at an IDR picture (H.264 7.4.1.2.1) or an
    /// IRAP picture (H.265 7.4.2.4.2), so one elsewhere is damage, and taking it would replace the
    /// decoder and lose every reference picture until the next random access point.
    case sequenceParameterSetChangeIgnored(id: Int)
}

/// One access unit, read.
public struct NALSampleAccessUnit: Sendable {
    /// Length-prefixed bytes with 4-byte lengths, or nil when the input already is that and can
    /// be wrapped as it is (no copy).
    public var convertedBytes: [UInt8]?
    public var notices: [NALSampleNotice]
    /// The parameter sets now describe another format than before this access unit.
    public var formatChanged: Bool
    /// The access unit's SEI NAL units (prefix and suffix, header included), for a caller that
    /// reads SEI messages (H.265's decoded picture hash); views into the bytes read, valid as
    /// long as those are.
    public var seiNALUnitRanges: [Range<Int>] = []
}

/// What differs between H.264 and H.265 for a sample builder: NAL unit types, the parameter-set
/// store and the format description they make.
public protocol NALSampleCodec: Sendable {
    /// The codec's bitstream error.
    associatedtype Failure: NALBitstreamError & Equatable
    init()
    /// The role of a NAL unit (header included) for the builder.
    static func role(of nalUnit: UnsafeRawBufferPointer) -> NALUnitRole
    /// Whether `nalUnit` starts with a plausible NAL unit header: the test that length-prefixed
    /// data under a byte-stream label tiles with real NAL units.
    static func hasPlausibleHeader(_ nalUnit: UnsafeRawBufferPointer) -> Bool
    /// The id of an SPS whose content under that id differs from the stored one (nil when it is
    /// new, the same, or unreadable).
    func changedSequenceParameterSetID(_ nalUnit: UnsafeRawBufferPointer) -> Int?
    /// Stores a parameter set; whether the stored sets changed.
    mutating func store(_ nalUnit: UnsafeRawBufferPointer) throws(Failure) -> Bool
    /// The description every stored parameter set makes now (nil before a usable SPS and PPS).
    func formatDescription() -> FormatDescription?
}

/// The role of a NAL unit for a sample builder.
public enum NALUnitRole: Sendable, Equatable {
    case parameterSet
    /// A slice of a picture that may activate a new SPS (H.264: IDR; H.265: IRAP).
    case randomAccessSlice
    case supplementalEnhancementInformation
    case other
}

/// H.264 or H.265 access units as containers and parsers hand them over (Annex B, or
/// length-prefixed with 1-, 2- or 4-byte lengths), in; sample buffers for a
/// ``DecompressionSession`` (4-byte lengths), and the format description the stream's parameter
/// sets make, out. No GStreamer: vtdec feeds it, and so can any other program that reads H.264 or
/// H.265 from a file or the network. ``H264SampleBuilder`` and ``H265SampleBuilder`` are this
/// builder over each codec's NAL unit types and parameter sets.
///
/// It keeps every parameter set the stream has given (codec_data and in band) and says when they
/// describe a new format, so the caller can ask its session ``DecompressionSession/canAccept(_:)``
/// or make a new one.
public struct NALSampleBuilder<Codec: NALSampleCodec>: Sendable {
    public typealias InputFormat = NALSampleInputFormat
    public typealias Notice = NALSampleNotice
    public typealias AccessUnit = NALSampleAccessUnit

    public private(set) var inputFormat = InputFormat.byteStream
    /// The description the parameter sets make (nil before an SPS and a PPS that refers to it).
    public private(set) var formatDescription: FormatDescription?
    private var codec = Codec()
    /// The NAL unit length size of codec_data's record, when there is one.
    private var codecDataNALUnitHeaderLength: Int?
    private var noticedMislabelledInput = false

    public init() {}

    /// New input caps: how frames carry NAL units, and codec_data's parameter sets and length
    /// size. Returns whether the parameter sets now describe another format.
    @discardableResult
    public mutating func setInput(_ format: InputFormat, parameterSets: [[UInt8]], codecDataNALUnitHeaderLength: Int?)
        -> Bool
    {
        inputFormat = format
        self.codecDataNALUnitHeaderLength = codecDataNALUnitHeaderLength
        guard codecDataNALUnitHeaderLength != nil else { return false }
        for set in parameterSets {
            _ = set.withUnsafeBytes { raw in Result { () throws(Codec.Failure) in try codec.store(raw) } }
        }
        return refreshFormat()
    }

    /// Reads one access unit's bytes: stores its parameter sets and gives its NAL units as the
    /// session's samples carry them.
    ///
    /// - Throws: the codec's error for a damaged access unit with no whole NAL unit before the damage.
    public mutating func read(_ bytes: UnsafeRawBufferPointer) throws(Codec.Failure) -> AccessUnit {
        // The parameter sets are stored once the slices are known: whether the access unit holds
        // a random access picture decides about a changed SPS.
        var sets: [UnsafeRawBufferPointer] = []
        var seiRanges: [Range<Int>] = []
        var holdsRandomAccessPicture = false
        /// Notes one NAL unit; `outputRange` is where it will be in the sample's bytes.
        func note(_ range: Range<Int>, outputRange: Range<Int>) {
            let nal = UnsafeRawBufferPointer(rebasing: bytes[range])
            switch Codec.role(of: nal) {
            case .parameterSet: sets.append(nal)
            case .randomAccessSlice: holdsRandomAccessPicture = true
            case .supplementalEnhancementInformation: seiRanges.append(outputRange)
            case .other: break
            }
        }
        var notices: [Notice] = []
        var format = inputFormat
        if format == .byteStream,
            let length = Self.lengthPrefixTiling(bytes, nalUnitHeaderLength: codecDataNALUnitHeaderLength)
        {
            if !noticedMislabelledInput {
                noticedMislabelledInput = true
                notices.append(.lengthPrefixedUnderByteStreamLabel(nalUnitHeaderLength: length))
            }
            format = .lengthPrefixedWithInBandParameterSets(nalUnitHeaderLength: length)
        }
        guard let length = format.nalUnitHeaderLength else {
            // Each NAL unit moves to after a 4-byte length in the converted bytes.
            var outputOffset = 0
            AnnexB.forEachNALUnit(in: bytes) { unit in
                note(unit.payloadRange, outputRange: (outputOffset + 4)..<(outputOffset + 4 + unit.payloadLength))
                outputOffset += 4 + unit.payloadLength
            }
            let changed = store(sets, holdsRandomAccessPicture: holdsRandomAccessPicture, notices: &notices)
            var converted: [UInt8] = []
            // Copy: start codes become 4-byte lengths (the length-prefixed samples the session decodes).
            _ = try? LengthPrefixedNALUnits.appendLengthPrefixed(
                fromAnnexB: bytes, nalUnitHeaderLength: 4, to: &converted, reporting: Codec.Failure.self)
            return AccessUnit(
                convertedBytes: converted, notices: notices, formatChanged: changed, seiNALUnitRanges: seiRanges)
        }
        var intactEnd = 0
        var damage: Codec.Failure?
        do {
            // With 4-byte lengths and no damage the bytes are the sample; otherwise the SEI
            // ranges are found again in the converted bytes below.
            try LengthPrefixedNALUnits.forEachNALUnit(
                in: bytes, nalUnitHeaderLength: length, reporting: Codec.Failure.self
            ) { range in
                note(range, outputRange: range)
                intactEnd = range.upperBound
            }
        } catch {
            damage = error as? Codec.Failure ?? .truncated(what: "a NAL unit length")
        }
        if let damage {
            guard intactEnd > 0 else { throw damage }
            notices.append(.damagedLength("\(damage)", intactBytes: intactEnd))
        }
        let changed = store(sets, holdsRandomAccessPicture: holdsRandomAccessPicture, notices: &notices)
        if length == 4 && damage == nil {
            return AccessUnit(
                convertedBytes: nil, notices: notices, formatChanged: changed, seiNALUnitRanges: seiRanges)
        }
        // Copy: the session's samples use 4-byte lengths (1- and 2-byte ones are re-framed),
        // and a damaged sample must end before its damaged length.
        let intact = UnsafeRawBufferPointer(rebasing: bytes[0..<intactEnd])
        var converted: [UInt8] = []
        converted.reserveCapacity(intact.count + 16)
        seiRanges.removeAll()
        _ = try? LengthPrefixedNALUnits.forEachNALUnit(
            in: intact, nalUnitHeaderLength: length, reporting: Codec.Failure.self
        ) { range in
            let nal = UnsafeRawBufferPointer(rebasing: intact[range])
            let start = converted.count + 4
            if Codec.role(of: nal) == .supplementalEnhancementInformation {
                seiRanges.append(start..<(start + nal.count))
            }
            LengthPrefixedNALUnits.appendLengthPrefixed(nalUnit: nal, to: &converted)
        }
        return AccessUnit(
            convertedBytes: converted, notices: notices, formatChanged: changed, seiNALUnitRanges: seiRanges)
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
            for set in inBandParameterSets {
                set.withUnsafeBytes { LengthPrefixedNALUnits.appendLengthPrefixed(nalUnit: $0, to: &prefix) }
            }
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
    /// units whose header is plausible (``NALSampleCodec/hasPlausibleHeader(_:)``). Not a
    /// start-code test: a 4-byte length of 256-511 begins with 00 00 01 too. Annex B data does
    /// not tile: after its first "length" (the start code, 1) the next four bytes (NAL header and
    /// payload) make a length that runs past the end or misses it. nil for Annex B.
    public static func lengthPrefixTiling(_ bytes: UnsafeRawBufferPointer, nalUnitHeaderLength: Int?) -> Int? {
        guard bytes.count >= 5 else { return nil }
        let length = nalUnitHeaderLength ?? 4
        var plausible = true
        var units = 0
        do {
            try LengthPrefixedNALUnits.forEachNALUnit(
                in: bytes, nalUnitHeaderLength: length, reporting: Codec.Failure.self
            ) { range in
                if !Codec.hasPlausibleHeader(UnsafeRawBufferPointer(rebasing: bytes[range])) { plausible = false }
                units += 1
            }
        } catch {
            return nil
        }
        return plausible && units > 0 ? length : nil
    }

    // MARK: Parameter sets

    private mutating func store(
        _ sets: [UnsafeRawBufferPointer], holdsRandomAccessPicture: Bool, notices: inout [Notice]
    ) -> Bool {
        var changed = false
        for nal in sets {
            if !holdsRandomAccessPicture, let id = codec.changedSequenceParameterSetID(nal) {
                notices.append(.sequenceParameterSetChangeIgnored(id: id))
                continue
            }
            if (try? codec.store(nal)) == true { changed = true }
        }
        return changed ? refreshFormat() : false
    }

    /// After new or changed parameter sets: the description they make now. True when it changed.
    private mutating func refreshFormat() -> Bool {
        guard let description = codec.formatDescription(), description != formatDescription else { return false }
        formatDescription = description
        return true
    }
}

extension NALSampleBuilder {
    /// The frames a decoder holds before a picture comes out: the stream's reorder depth
    /// (`reorderDepth`, from the SPS) plus a frame per extra frame thread (`frameThreads`:
    /// libavcodec's frame threading, which a low-delay or hardware decoder does not use). The
    /// one rule for both codecs.
    public static func decoderDelay(reorderDepth: Int, frameThreads: Int) -> Int {
        reorderDepth + max(0, frameThreads - 1)
    }
}
