import H264
import MediaCore
import SwiftVTFileSupport

/// Writes a compression session's samples (AVCC: 4-byte lengths, parameter sets in the format
/// description) as an H.264 Annex B byte stream, the way the seed's output callback does for the
/// network: SPS and PPS before every key frame, so a receiver can start at any of them, and a
/// start code in place of each length prefix (Annex B.1).
///
/// Apple: `CMSampleBufferGetSampleAttachmentsArray` / `kCMSampleAttachmentKey_NotSync`,
/// `CMVideoFormatDescriptionGetH264ParameterSetAtIndex`, `CMBlockBufferGetDataPointer`.
public struct AnnexBSampleWriter {
    private static let startCode: [UInt8] = [0, 0, 0, 1]
    public private(set) var keyFrames = 0
    public private(set) var frames = 0
    public private(set) var payloadBytes = 0

    public init() {}

    /// Appends `sample` to `file`; false when the file could not be written.
    public mutating func write(_ sample: SampleBuffer, to file: OutputFile) throws -> Bool {
        guard let data = sample.dataBuffer else { return true }
        var ok = true
        if sample.isSync, let format = sample.formatDescription {
            keyFrames += 1
            for parameterSet in format.h264SequenceParameterSets + format.h264PictureParameterSets {
                ok = ok && file.write(Self.startCode) && file.write(parameterSet)
            }
        }
        try data.withContiguousBytes { avcc in
            try AVCC.forEachNALUnit(in: avcc, nalUnitHeaderLength: 4) { range in
                ok = ok && file.write(Self.startCode) && file.write(UnsafeRawBufferPointer(rebasing: avcc[range]))
            }
        }
        frames += 1
        payloadBytes += data.count
        return ok
    }
}
