/// The timestamps of one sample (`CMSampleTimingInfo`). Missing values are ``MediaTime/invalid``;
/// an invalid decode timestamp means "decode order equals presentation order".
public struct SampleTimingInfo: Hashable, Sendable {
    public var duration: MediaTime
    public var presentationTimeStamp: MediaTime
    public var decodeTimeStamp: MediaTime

    public init(
        duration: MediaTime = .invalid, presentationTimeStamp: MediaTime, decodeTimeStamp: MediaTime = .invalid
    ) {
        self.duration = duration
        self.presentationTimeStamp = presentationTimeStamp
        self.decodeTimeStamp = decodeTimeStamp
    }

    /// All three times invalid.
    public static let invalid = SampleTimingInfo(
        duration: .invalid, presentationTimeStamp: .invalid, decodeTimeStamp: .invalid)
}

/// How timing is stored for the samples of a buffer.
public enum SampleTimings: Hashable, Sendable {
    /// No timing information.
    case none
    /// One entry for all samples, which are back to back: sample `i` is presented (and decoded)
    /// at the entry's timestamps plus `i * duration`, as CoreMedia extrapolates a single entry.
    case uniform(SampleTimingInfo)
    /// One entry per sample, in decode order.
    case perSample([SampleTimingInfo])
}

/// How sizes are stored for the samples of a data buffer.
public enum SampleSizes: Hashable, Sendable {
    /// Sizes unknown; a one-sample buffer's sample is the whole data buffer.
    case none
    /// Every sample has this many bytes (e.g. PCM frames).
    case uniform(Int)
    /// The size of each sample, in order; they tile the data buffer.
    case perSample([Int])
}

/// Per-sample properties, CoreMedia's sample attachments (`kCMSampleAttachmentKey_*`).
/// The defaults describe an ordinary sync sample.
public struct SampleAttachments: Hashable, Sendable {
    /// The sample is not a sync sample (decoding cannot start at it).
    public var notSync: Bool
    /// Whether the sample needs other samples to decode (P/B frames); nil if unknown.
    public var dependsOnOthers: Bool?
    /// Whether other samples reference this one (reference frames); nil if unknown.
    /// `false` means it can be dropped without affecting anything else.
    public var isDependedOnByOthers: Bool?
    /// Samples later in decode order may have earlier presentation times (B-frame reordering).
    public var earlierDisplayTimesAllowed: Bool
    /// Decode the sample but do not show it (e.g. frames decoded only to reach a seek target).
    public var doNotDisplay: Bool
    /// Show the sample as soon as it is decoded, ignoring its timestamp.
    public var displayImmediately: Bool

    public init(
        notSync: Bool = false, dependsOnOthers: Bool? = nil, isDependedOnByOthers: Bool? = nil,
        earlierDisplayTimesAllowed: Bool = false, doNotDisplay: Bool = false, displayImmediately: Bool = false
    ) {
        self.notSync = notSync
        self.dependsOnOthers = dependsOnOthers
        self.isDependedOnByOthers = isDependedOnByOthers
        self.earlierDisplayTimesAllowed = earlierDisplayTimesAllowed
        self.doNotDisplay = doNotDisplay
        self.displayImmediately = displayImmediately
    }
}

/// A value in ``SampleBufferAttachments/custom``.
public enum AttachmentValue: Hashable, Sendable {
    case bool(Bool)
    case integer(Int)
    case double(Double)
    case string(String)
    case bytes([UInt8])
    case time(MediaTime)
}

/// Properties of a whole buffer (CoreMedia's buffer-level attachments and VideoToolbox frame
/// options). The defaults mean "nothing special".
public struct SampleBufferAttachments: Hashable, Sendable {
    /// The decoder must flush its state before decoding this buffer (a discontinuity: seek,
    /// splice, format change).
    public var resetDecoderBeforeDecoding: Bool
    /// The decoder should output everything it holds after decoding this buffer (end of stream
    /// or segment).
    public var drainAfterDecoding: Bool
    /// Encoder input: code this frame as a key frame (`kVTEncodeFrameOptionKey_ForceKeyFrame`).
    public var forceKeyFrame: Bool
    /// Anything else a layer needs to carry along (e.g. a GStreamer buffer flag) without
    /// MediaCore having to know about it. Keep it small: it is copied with the buffer.
    public var custom: [String: AttachmentValue]

    public init(
        resetDecoderBeforeDecoding: Bool = false, drainAfterDecoding: Bool = false, forceKeyFrame: Bool = false,
        custom: [String: AttachmentValue] = [:]
    ) {
        self.resetDecoderBeforeDecoding = resetDecoderBeforeDecoding
        self.drainAfterDecoding = drainAfterDecoding
        self.forceKeyFrame = forceKeyFrame
        self.custom = custom
    }
}

/// Why a ``SampleBuffer`` could not be made or queried.
public enum SampleBufferError: Error, Hashable, Sendable {
    case negativeSampleCount(Int)
    /// Per-sample timing must have exactly one entry per sample.
    case timingCountMismatch(sampleCount: Int, timingCount: Int)
    /// Per-sample sizes must have exactly one entry per sample.
    case sizeCountMismatch(sampleCount: Int, sizeCount: Int)
    case negativeSampleSize(index: Int, size: Int)
    /// The sample sizes must add up to the data buffer's size; `totalSize` is nil when the sum
    /// overflows.
    case sampleSizesDoNotMatchData(totalSize: Int?, dataSize: Int)
    /// Per-sample attachments must be empty (all defaults) or have one entry per sample.
    case attachmentCountMismatch(sampleCount: Int, attachmentCount: Int)
    /// The format description's media type or dimensions disagree with the image buffer.
    case formatDescriptionMismatch
    case sampleIndexOutOfRange(index: Int, sampleCount: Int)
    /// The buffer has several samples but no sizes, so one sample's size or bytes are unknown.
    case sampleSizesUnavailable
}

/// Media samples with their format and timing: CoreMedia's `CMSampleBuffer`.
///
/// Either compressed data (``Content/data(_:)``, one or more samples in a ``BlockBuffer``, e.g.
/// one H.264 access unit) or one decoded picture (``Content/image(_:)``).
///
/// A struct rather than a class (CMSampleBuffer is a reference type): everything heavy in it is
/// already shared by reference (the block buffer's blocks, the pixel buffer), so a copy costs a
/// few retains, and value semantics mean attachments can be edited on one copy without locks
/// and without surprising the other holders. It is `Sendable` because all its parts are.
///
/// Invariants checked at init: sizes, timings and attachments are consistent with
/// ``sampleCount`` and the sizes add up to the data size.
public struct SampleBuffer: Sendable {
    public enum Content: Sendable {
        case data(BlockBuffer)
        case image(PixelBuffer)
    }

    public let content: Content
    public let formatDescription: FormatDescription?
    public let sampleCount: Int
    public let timings: SampleTimings
    public let sizes: SampleSizes
    /// Empty (every sample has default attachments) or one entry per sample.
    public private(set) var sampleAttachments: [SampleAttachments]
    public var attachments: SampleBufferAttachments

    /// A buffer of `sampleCount` compressed samples stored back to back in `dataBuffer`.
    ///
    /// - Throws: ``SampleBufferError`` when counts disagree with `sampleCount` or the sizes do not
    ///   add up to `dataBuffer.count`.
    public init(
        dataBuffer: BlockBuffer, formatDescription: FormatDescription?, sampleCount: Int = 1,
        timings: SampleTimings = .none, sizes: SampleSizes = .none,
        sampleAttachments: [SampleAttachments] = [], attachments: SampleBufferAttachments = SampleBufferAttachments()
    ) throws(SampleBufferError) {
        guard sampleCount >= 0 else { throw .negativeSampleCount(sampleCount) }
        try Self.validate(timings: timings, sampleCount: sampleCount)
        try Self.validate(sampleAttachments: sampleAttachments, sampleCount: sampleCount)
        switch sizes {
        case .none:
            break
        case .uniform(let size):
            guard size >= 0 else { throw .negativeSampleSize(index: 0, size: size) }
            let (total, overflow) = size.multipliedReportingOverflow(by: sampleCount)
            guard !overflow, total == dataBuffer.count else {
                throw .sampleSizesDoNotMatchData(totalSize: overflow ? nil : total, dataSize: dataBuffer.count)
            }
        case .perSample(let list):
            guard list.count == sampleCount else {
                throw .sizeCountMismatch(sampleCount: sampleCount, sizeCount: list.count)
            }
            var total = 0
            var overflowed = false
            for (index, size) in list.enumerated() {
                guard size >= 0 else { throw .negativeSampleSize(index: index, size: size) }
                let (sum, overflow) = total.addingReportingOverflow(size)
                overflowed = overflowed || overflow
                total = sum
            }
            guard !overflowed, total == dataBuffer.count else {
                throw .sampleSizesDoNotMatchData(totalSize: overflowed ? nil : total, dataSize: dataBuffer.count)
            }
        }
        self.content = .data(dataBuffer)
        self.formatDescription = formatDescription
        self.sampleCount = sampleCount
        self.timings = timings
        self.sizes = sizes
        self.sampleAttachments = sampleAttachments
        self.attachments = attachments
    }

    /// A buffer holding one decoded picture.
    ///
    /// - Throws: ``SampleBufferError/formatDescriptionMismatch`` when `formatDescription` is not
    ///   video or its dimensions differ from the picture's.
    public init(
        imageBuffer: PixelBuffer, formatDescription: FormatDescription?, timing: SampleTimingInfo,
        sampleAttachments: SampleAttachments? = nil, attachments: SampleBufferAttachments = SampleBufferAttachments()
    ) throws(SampleBufferError) {
        if let formatDescription {
            guard formatDescription.mediaType == .video,
                Int(formatDescription.dimensions.width) == imageBuffer.width,
                Int(formatDescription.dimensions.height) == imageBuffer.height
            else { throw .formatDescriptionMismatch }
        }
        self.content = .image(imageBuffer)
        self.formatDescription = formatDescription
        self.sampleCount = 1
        self.timings = .uniform(timing)
        self.sizes = .none
        self.sampleAttachments = sampleAttachments.map { [$0] } ?? []
        self.attachments = attachments
    }

    private static func validate(timings: SampleTimings, sampleCount: Int) throws(SampleBufferError) {
        if case .perSample(let list) = timings, list.count != sampleCount {
            throw .timingCountMismatch(sampleCount: sampleCount, timingCount: list.count)
        }
    }

    private static func validate(
        sampleAttachments: [SampleAttachments], sampleCount: Int
    ) throws(SampleBufferError) {
        guard sampleAttachments.isEmpty || sampleAttachments.count == sampleCount else {
            throw .attachmentCountMismatch(sampleCount: sampleCount, attachmentCount: sampleAttachments.count)
        }
    }

    // MARK: Content

    /// The compressed data, nil for an image buffer.
    public var dataBuffer: BlockBuffer? {
        if case .data(let buffer) = content { return buffer }
        return nil
    }

    /// The decoded picture, nil for a data buffer.
    public var imageBuffer: PixelBuffer? {
        if case .image(let buffer) = content { return buffer }
        return nil
    }

    /// Total bytes of sample data (0 for an image buffer).
    public var totalSampleSize: Int { dataBuffer?.count ?? 0 }

    // MARK: Timing

    /// The timing of sample `index`: the stored entry, the single entry extrapolated by
    /// `index * duration` (see ``SampleTimings/uniform(_:)``), or all-invalid times when the
    /// buffer has no timing.
    ///
    /// - Throws: ``SampleBufferError/sampleIndexOutOfRange(index:sampleCount:)``.
    public func timingInfo(at index: Int) throws(SampleBufferError) -> SampleTimingInfo {
        try checkIndex(index)
        switch timings {
        case .none:
            return .invalid
        case .uniform(let timing):
            guard index > 0 else { return timing }
            let offset = timing.duration.multiplied(by: index)
            return SampleTimingInfo(
                duration: timing.duration,
                presentationTimeStamp: timing.presentationTimeStamp + offset,
                decodeTimeStamp: timing.decodeTimeStamp + offset)
        case .perSample(let list):
            return list[index]
        }
    }

    /// The earliest presentation timestamp of all samples (B-frames make the first in decode
    /// order not the earliest); ``MediaTime/invalid`` if none is known.
    public var presentationTimeStamp: MediaTime {
        switch timings {
        case .none: return .invalid
        case .uniform(let timing): return timing.presentationTimeStamp
        case .perSample(let list):
            // MediaTime orders invalid above every valid time, so min() skips missing stamps.
            return list.lazy.map(\.presentationTimeStamp).min() ?? .invalid
        }
    }

    /// The earliest decode timestamp of all samples; ``MediaTime/invalid`` if none is known.
    public var decodeTimeStamp: MediaTime {
        switch timings {
        case .none: return .invalid
        case .uniform(let timing): return timing.decodeTimeStamp
        case .perSample(let list): return list.lazy.map(\.decodeTimeStamp).min() ?? .invalid
        }
    }

    /// The decode timestamp, or the presentation timestamp when the decode timestamp is not set
    /// (streams without reordering often omit it).
    public var decodeTimeStampOrPresentationTimeStamp: MediaTime {
        let decode = decodeTimeStamp
        return decode.isValid ? decode : presentationTimeStamp
    }

    /// The sum of all sample durations; ``MediaTime/invalid`` if any is unknown.
    public var duration: MediaTime {
        switch timings {
        case .none: return .invalid
        case .uniform(let timing): return timing.duration.multiplied(by: sampleCount)
        case .perSample(let list): return list.reduce(MediaTime.zero) { $0 + $1.duration }
        }
    }

    /// `[presentationTimeStamp, presentationTimeStamp + duration)`, the span the samples cover
    /// on the presentation timeline.
    public var presentationTimeRange: MediaTimeRange {
        MediaTimeRange(start: presentationTimeStamp, duration: duration)
    }

    // MARK: Sizes and data

    /// The size in bytes of sample `index`. A one-sample data buffer without sizes returns the
    /// whole data size.
    ///
    /// - Throws: ``SampleBufferError/sampleIndexOutOfRange(index:sampleCount:)``, or
    ///   ``SampleBufferError/sampleSizesUnavailable`` when sizes are unknown (several samples
    ///   without sizes, or an image buffer).
    public func sampleSize(at index: Int) throws(SampleBufferError) -> Int {
        try sampleByteRange(at: index).count
    }

    /// The bytes of sample `index`, sharing the data buffer's memory.
    ///
    /// - Throws: as ``sampleSize(at:)``.
    public func sampleData(at index: Int) throws(SampleBufferError) -> BlockBuffer {
        let range = try sampleByteRange(at: index)
        guard let dataBuffer else { throw .sampleSizesUnavailable }
        do {
            return try dataBuffer.slice(range)
        } catch {
            // Unreachable: init checked that the sizes tile the data buffer.
            throw .sampleSizesUnavailable
        }
    }

    private func sampleByteRange(at index: Int) throws(SampleBufferError) -> Range<Int> {
        try checkIndex(index)
        guard let dataBuffer else { throw .sampleSizesUnavailable }
        switch sizes {
        case .none:
            guard sampleCount == 1 else { throw .sampleSizesUnavailable }
            return 0..<dataBuffer.count
        case .uniform(let size):
            // index * size <= sampleCount * size == data size, checked at init: no overflow.
            return index * size..<(index + 1) * size
        case .perSample(let list):
            let start = list[..<index].reduce(0, +)
            return start..<start + list[index]
        }
    }

    // MARK: Attachments

    /// The attachments of sample `index` (defaults when none were set).
    ///
    /// - Throws: ``SampleBufferError/sampleIndexOutOfRange(index:sampleCount:)``.
    public func attachments(forSampleAt index: Int) throws(SampleBufferError) -> SampleAttachments {
        try checkIndex(index)
        return sampleAttachments.isEmpty ? SampleAttachments() : sampleAttachments[index]
    }

    /// Replaces the attachments of sample `index`.
    ///
    /// - Throws: ``SampleBufferError/sampleIndexOutOfRange(index:sampleCount:)``.
    public mutating func setAttachments(
        _ sampleAttachments: SampleAttachments, forSampleAt index: Int
    ) throws(SampleBufferError) {
        try checkIndex(index)
        if self.sampleAttachments.isEmpty {
            self.sampleAttachments = Array(repeating: SampleAttachments(), count: sampleCount)
        }
        self.sampleAttachments[index] = sampleAttachments
    }

    /// Whether decoding can start at this buffer: its first sample is not marked ``SampleAttachments/notSync``.
    /// True for an empty buffer or one without attachments, as in CoreMedia.
    public var isSync: Bool {
        !(sampleAttachments.first?.notSync ?? false)
    }

    private func checkIndex(_ index: Int) throws(SampleBufferError) {
        guard index >= 0, index < sampleCount else {
            throw .sampleIndexOutOfRange(index: index, sampleCount: sampleCount)
        }
    }
}
