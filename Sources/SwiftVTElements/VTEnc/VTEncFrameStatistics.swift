import CGStreamer
import CSwiftVTShim
import MediaCore
import SwiftVT

/// One frame's figures as vtenc's `frame-stats` posts them: the element message
/// `vtenc-frame-stats` (what nvh264enc's frame-stats gives a dashboard, and what VideoToolbox
/// reports per frame with CalculateMeanSquaredError).
///
/// Fields: `pts`, `dts` (guint64 nanoseconds, GST_CLOCK_TIME_NONE when unknown), `frame-type`
/// ("IDR", "I", "P", "B"; "unknown" when the backend does not say), `keyframe` (boolean), `qp`
/// (double: the picture-level QP, ``EncodedFrameAnalysis/quantizer``), `bits` (guint64: the bits
/// of the buffer pushed downstream, as muxers store it), and where the encoder measured them
/// `mse-y` and `psnr-y` (doubles: the luma's MSE against the input and its PSNR in dB).
struct FrameStatistics {
    var presentationTimeStamp: MediaTime
    var decodeTimeStamp: MediaTime
    var frameType: String
    var isKeyFrame: Bool
    var quantizer: Double?
    var bits: Int
    var lumaMeanSquaredError: Double?
    var lumaPSNR: Double?

    init(_ frame: EncodedFrame, sample: SampleBuffer, outputBytes: Int, bitDepth: Int) {
        presentationTimeStamp = sample.presentationTimeStamp
        decodeTimeStamp = sample.decodeTimeStamp
        isKeyFrame = sample.isSync
        bits = outputBytes * 8
        quantizer = frame.analysis?.quantizer
        lumaMeanSquaredError = frame.analysis?.lumaMeanSquaredError
        lumaPSNR = frame.analysis?.lumaPSNR(bitDepth: max(8, bitDepth))
        switch frame.analysis?.frameType {
        case .idr?: frameType = "IDR"
        case .intra?: frameType = "I"
        case .predicted?: frameType = "P"
        case .bidirectional?: frameType = "B"
        case nil: frameType = "unknown"
        }
    }

    func post(from encoder: UnsafeMutablePointer<GstVideoEncoder>) {
        guard let structure = gst_structure_new_empty("vtenc-frame-stats") else { return }
        func nanoseconds(_ time: MediaTime) -> guint64 {
            time.isNumeric ? guint64(time.gstreamerNanoseconds) : swiftvt_clock_time_none
        }
        swiftvt_structure_set_uint64(structure, "pts", nanoseconds(presentationTimeStamp))
        swiftvt_structure_set_uint64(structure, "dts", nanoseconds(decodeTimeStamp))
        swiftvt_structure_set_string(structure, "frame-type", frameType)
        swiftvt_structure_set_boolean(structure, "keyframe", isKeyFrame ? 1 : 0)
        if let quantizer { swiftvt_structure_set_double(structure, "qp", quantizer) }
        swiftvt_structure_set_uint64(structure, "bits", guint64(bits))
        if let lumaMeanSquaredError, let lumaPSNR {
            swiftvt_structure_set_double(structure, "mse-y", lumaMeanSquaredError)
            swiftvt_structure_set_double(structure, "psnr-y", lumaPSNR)
        }
        let element = UnsafeMutableRawPointer(encoder).assumingMemoryBound(to: GstElement.self)
        gst_element_post_message(
            element,
            gst_message_new_element(UnsafeMutableRawPointer(encoder).assumingMemoryBound(to: GstObject.self), structure)
        )
    }
}
