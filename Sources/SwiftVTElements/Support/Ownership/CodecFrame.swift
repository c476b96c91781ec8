import CGStreamer
import CSwiftVTShim

/// One reference to a GstVideoCodecFrame, owned: it goes back exactly once, and the type says
/// how. Finishing or dropping the frame hands the reference to the base class
/// (gst_video_decoder_finish_frame and friends take it); letting the value go (its end of scope,
/// or ``release()``) gives the reference back while the base class keeps the frame pending (its
/// own reference in its list), to be finished later by frame number.
///
/// The model is VAPlumbing's `~Copyable` owners of VA objects (VAObjects.swift).
struct CodecFrame: ~Copyable, @unchecked Sendable {
    // Owned, never shared: one reference, handed on once. GstVideoCodecFrame's reference count is
    // atomic, so the reference may be given back on any thread.
    let pointer: UnsafeMutablePointer<GstVideoCodecFrame>

    /// Takes a reference the caller owns: handle_frame's frame (transfer full), or one from
    /// gst_video_decoder_get_frame / gst_video_encoder_get_frame.
    init(adopting pointer: UnsafeMutablePointer<GstVideoCodecFrame>) {
        self.pointer = pointer
    }

    deinit {
        gst_video_codec_frame_unref(pointer)
    }

    /// Gives the reference back now; the frame stays pending in the base class.
    consuming func release() {}

    /// Hands the reference to a call that takes it (transfer full), without giving it back.
    private consuming func take() -> UnsafeMutablePointer<GstVideoCodecFrame> {
        let pointer = self.pointer
        discard self
        return pointer
    }

    // MARK: Decoders

    /// The frame is decoded (its output buffer set): pushed downstream in order.
    consuming func finish(by decoder: UnsafeMutablePointer<GstVideoDecoder>) -> GstFlowReturn {
        gst_video_decoder_finish_frame(decoder, take())
    }

    /// The frame gives no picture: the base class forgets it (and counts it in its QoS).
    consuming func drop(by decoder: UnsafeMutablePointer<GstVideoDecoder>) -> GstFlowReturn {
        gst_video_decoder_drop_frame(decoder, take())
    }

    /// Drops the frame if the base class still has it pending, and gives this reference back:
    /// a decode that failed after the session may already have finished or flushed it.
    consuming func dropIfPending(by decoder: UnsafeMutablePointer<GstVideoDecoder>) {
        if let pending = gst_video_decoder_get_frame(decoder, Int32(bitPattern: systemFrameNumber)) {
            _ = CodecFrame(adopting: pending).drop(by: decoder)
        }
    }

    // MARK: Encoders

    /// The frame is encoded (its output buffer set): pushed downstream in decode order.
    consuming func finish(by encoder: UnsafeMutablePointer<GstVideoEncoder>) -> GstFlowReturn {
        gst_video_encoder_finish_frame(encoder, take())
    }

    // MARK: Fields

    var systemFrameNumber: UInt32 { pointer.pointee.system_frame_number }
    var presentationTimeStamp: GstClockTime { pointer.pointee.pts }
    var duration: GstClockTime { pointer.pointee.duration }
    /// The input buffer, borrowed: the frame holds it.
    var inputBuffer: UnsafeMutablePointer<GstBuffer>? { pointer.pointee.input_buffer }
    var isSyncPoint: Bool { swiftvt_codec_frame_is_sync_point(pointer) != 0 }
    var isForceKeyFrame: Bool { swiftvt_codec_frame_is_force_keyframe(pointer) != 0 }

    /// The output buffer the base class sets in gst_video_decoder_allocate_output_frame, borrowed.
    var outputBuffer: UnsafeMutablePointer<GstBuffer>? { pointer.pointee.output_buffer }

    /// The frame's output; it takes `buffer`'s reference.
    func setOutput(_ buffer: consuming OwnedBuffer) {
        pointer.pointee.output_buffer = buffer.take()
    }

    /// Decoded with errors concealed (GstVideoDecoder's discard-corrupted-frames drops it).
    func markCorrupted() { swiftvt_codec_frame_mark_corrupted(pointer) }

    func setSyncPoint(_ isSyncPoint: Bool) { swiftvt_codec_frame_set_sync_point(pointer, isSyncPoint.gboolean) }

    func setDecodeTimeStamp(_ time: GstClockTime) { pointer.pointee.dts = time }
}
