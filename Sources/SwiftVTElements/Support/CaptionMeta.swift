import CGStreamer
import CSwiftVTShim
import NALBitstream

/// GstVideoCaptionMeta on buffers as SwiftVT's caption data: what vtenc reads from its input
/// frames (written as A/53 SEI) and vtdec attaches to its output frames (read from A/53 SEI), as
/// x264enc and avdec_h264 do, in GStreamer's CEA-708 cc_data layout (CEA708_RAW).
enum CaptionMeta {
    /// Every caption meta of `buffer`, in order, as cc_data triplets; nil when it has none. The
    /// types GStreamer carries are all read (CEA-708 raw and CDP, CEA-608 raw and S334-1A); a
    /// meta whose bytes are not its type's layout is left out, and `malformed` says so.
    static func read(_ buffer: UnsafeMutablePointer<GstBuffer>) -> (captions: ClosedCaptionData?, malformed: Bool) {
        var state: gpointer?
        var captions = ClosedCaptionData(triplets: [])
        var malformed = false
        while let meta = swiftvt_buffer_next_caption_meta(buffer, &state) {
            let layout: ClosedCaptionData.Layout
            switch meta.pointee.caption_type {
            case GST_VIDEO_CAPTION_TYPE_CEA708_RAW: layout = .cea708Triplets
            case GST_VIDEO_CAPTION_TYPE_CEA708_CDP: layout = .cea708DistributionPacket
            case GST_VIDEO_CAPTION_TYPE_CEA608_RAW: layout = .cea608Pairs
            case GST_VIDEO_CAPTION_TYPE_CEA608_S334_1A: layout = .cea608LineTriplets
            default:
                malformed = true
                continue
            }
            let bytes = UnsafeBufferPointer(start: meta.pointee.data, count: Int(meta.pointee.size))
            guard let data = ClosedCaptionData(layout, bytes: bytes) else {
                malformed = true
                continue
            }
            captions.append(data)
        }
        return (captions.isEmpty ? nil : captions, malformed)
    }

    static func has(_ buffer: UnsafeMutablePointer<GstBuffer>) -> Bool {
        var state: gpointer?
        return swiftvt_buffer_next_caption_meta(buffer, &state) != nil
    }

    /// Attaches the triplets as one CEA708_RAW meta (the buffer must be writable).
    static func attach(_ captions: ClosedCaptionData, to buffer: UnsafeMutablePointer<GstBuffer>) {
        captions.triplets.withUnsafeBufferPointer { bytes in
            _ = gst_buffer_add_video_caption_meta(
                buffer, GST_VIDEO_CAPTION_TYPE_CEA708_RAW, bytes.baseAddress, gsize(bytes.count))
        }
    }
}
