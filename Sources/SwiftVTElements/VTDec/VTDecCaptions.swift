import CGStreamer
import CSwiftVTShim
import MediaCore
import NALBitstream
import Synchronization

/// What vtdec keeps of a picture from its sample (read in decoding order) until the session
/// outputs it (presentation order), by frame number: its captions, its expected picture hash.
/// Pictures the decoder never outputs (RASL pictures after a CRA it started at, frames it
/// dropped) leave their entry: those far behind are forgotten, as the session forgets them
/// (reordering spans at most the DPB). Streaming thread only, like the sample builder.
struct PerPictureValues<Value: Sendable>: Sendable {
    private var entries: [UInt32: Value] = [:]

    mutating func set(_ value: Value, for frameNumber: UInt32) {
        entries[frameNumber] = value
        if entries.count > 256 { entries = entries.filter { $0.key &+ 128 >= frameNumber } }
    }

    mutating func take(_ frameNumber: UInt32) -> Value? { entries.removeValue(forKey: frameNumber) }
}

extension VTDec {
    /// Before a sample goes to the session: its captions. A frame whose input buffer carries
    /// caption metas already (h264parse and h265parse extract them) keeps those: the base class
    /// copies them to the output, so none are read here, or they would come out twice.
    func noteCaptions(
        frameNumber: UInt32, input: UnsafeMutablePointer<GstBuffer>?, sample: UnsafeRawBufferPointer,
        description: FormatDescription
    ) {
        if let input, CaptionMeta.has(input) { return }
        // Read in the sample's A/53 user data SEI, as avdec_h264 attaches what libavcodec reads.
        guard
            let read = ClosedCaptionData(
                accessUnit: sample, nalUnitHeaderLength: description.nalUnitHeaderLength,
                hevc: description.codecType.isHEVC)
        else { return }
        captions.withLock { $0.set(read, for: frameNumber) }
    }

    /// The captions of a picture the session output; nil when it had none.
    func takeCaptions(frameNumber: UInt32) -> ClosedCaptionData? {
        captions.withLock { $0.take(frameNumber) }
    }
}
