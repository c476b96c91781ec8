import CGStreamer
import CSwiftVTShim
import MediaCore
import NALBitstream
import Synchronization

/// The captions of the pictures in flight, by frame number: each sample is read for A/53 user
/// data SEI in decoding order, and its picture leaves with a GstVideoCaptionMeta in presentation
/// order, as avdec_h264 attaches the captions libavcodec reads. Streaming thread only, like the
/// sample builder.
struct CaptionBook {
    private var entries: [UInt32: ClosedCaptionData] = [:]

    mutating func note(frameNumber: UInt32, sample: UnsafeRawBufferPointer, description: FormatDescription) {
        let hevc = description.codecType == .hevc || description.codecType == .hevcInBandParameterSets
        guard
            let captions = ClosedCaptionData(
                accessUnit: sample, nalUnitHeaderLength: description.nalUnitHeaderLength, hevc: hevc)
        else { return }
        entries[frameNumber] = captions
        // Pictures the decoder never outputs leave their entry: forget those far behind
        // (reordering spans at most the DPB).
        if entries.count > 256 { entries = entries.filter { $0.key &+ 128 >= frameNumber } }
    }

    mutating func take(frameNumber: UInt32) -> ClosedCaptionData? { entries.removeValue(forKey: frameNumber) }
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
        captions.withLock { $0.note(frameNumber: frameNumber, sample: sample, description: description) }
    }

    /// The captions of a picture the session output; nil when it had none.
    func takeCaptions(frameNumber: UInt32) -> ClosedCaptionData? {
        captions.withLock { $0.take(frameNumber: frameNumber) }
    }
}
