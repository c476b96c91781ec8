import CGStreamer
import CSwiftVTShim
import H264
import MediaCore
import NALBitstream
import SoftwareCodecs
import SwiftVT
import Synchronization
import VAAPICodecs

// vtdec's pictures out: the frames the session delivered, finished in order with their
// pictures wrapped (GstVideoMeta) or copied for a downstream that takes none.
extension VTDec {
    /// Finishes the frames the session delivered, in order.
    func outputDelivered() -> GstFlowReturn {
        let frames = delivered.takeAll()
        if consumer.isFlushing {
            // Their pictures go back to the pools; the frames are flushed with the base class's.
            return GST_FLOW_FLUSHING
        }
        var result = GST_FLOW_OK
        for decoded in frames {
            guard let pending = gst_video_decoder_get_frame(decoder, Int32(truncatingIfNeeded: decoded.frameReference))
            else {
                log.debug(object, "frame \(decoded.frameReference) is no longer pending")
                continue
            }
            let frame = CodecFrame(adopting: pending)
            guard let image = decoded.imageBuffer else {
                let message =
                    decoded.status.map { "a frame could not be decoded: \(GStreamerWording.message($0))" }
                    ?? "the decoder dropped a frame"
                if decoded.status != nil {
                    let flow = countError(.stream(GST_STREAM_ERROR_DECODE, message, debug: decoded.status?.description))
                    if flow != GST_FLOW_OK { result = flow }
                }
                _ = frame.drop(by: decoder)
                continue
            }
            if let status = decoded.status {
                // Decoded with errors concealed: counts toward max-errors; the base class
                // discards it when discard-corrupted-frames is set.
                let flow = countError(
                    .stream(
                        GST_STREAM_ERROR_DECODE, "corrupt data in a frame: \(GStreamerWording.message(status))",
                        debug: status.description
                    ))
                if flow != GST_FLOW_OK { result = flow }
                frame.markCorrupted()
            }
            // The picture's time: the sample's, else the one the base class gave the frame.
            let framePTS = frame.presentationTimeStamp
            let pts =
                decoded.presentationTimeStamp.isValid || framePTS == swiftvt_clock_time_none
                ? decoded.presentationTimeStamp : MediaTime(gstreamerNanoseconds: UInt64(framePTS))
            let frameNumber = UInt32(truncatingIfNeeded: decoded.frameReference)
            verifyPictureHash(of: image, frameNumber: frameNumber, presentationTimeStamp: pts)
            let flow = finish(frame, with: image, captions: takeCaptions(frameNumber: frameNumber))
            if flow != GST_FLOW_OK && result == GST_FLOW_OK { result = flow }
        }
        return result
    }

    /// Gives the frame its picture (wrapped or copied, after negotiating a new format) and
    /// finishes it; drops it when that fails.
    private func finish(_ frame: consuming CodecFrame, with image: PixelBuffer, captions: ClosedCaptionData?)
        -> GstFlowReturn
    {
        guard let format = VideoFormatMapping.gstreamerFormat(for: image.pixelFormat) else {
            _ = frame.drop(by: decoder)
            return countError(
                .stream(
                    GST_STREAM_ERROR_FORMAT, "the decoder produced an unsupported pixel format \(image.pixelFormat)"))
        }
        // One lock per picture: whether the caps must change, and what downstream takes.
        let (needed, reference, downstreamAtStart) = state.withLock { state in
            let wanted = (format, image.width, image.height)
            let needed =
                state.negotiated.map { $0.format != wanted.0 || $0.width != wanted.1 || $0.height != wanted.2 } ?? true
            if needed { state.negotiated = wanted }
            return (needed, needed ? state.input?.state : nil, state.downstream)
        }
        var downstream = downstreamAtStart
        if needed {
            guard
                let output = gst_video_decoder_set_output_state(
                    decoder, format, UInt32(image.width), UInt32(image.height), reference?.pointer)
            else {
                _ = frame.drop(by: decoder)
                return GST_FLOW_NOT_NEGOTIATED
            }
            gst_video_codec_state_unref(output)
            guard gst_video_decoder_negotiate(decoder) != 0 else {
                state.withLock { $0.negotiated = nil }
                _ = frame.drop(by: decoder)
                return GST_FLOW_NOT_NEGOTIATED
            }
            log.info(object, "output \(image.width)x\(image.height) \(image.pixelFormat)")
            // Negotiating ran the allocation query: downstream's answer is new.
            downstream = state.withLock { $0.downstream }
        }
        let (useVideoMeta, downstreamPool) = (downstream.supportsVideoMeta, downstream.offersPool)
        if useVideoMeta, let buffer = VideoFormatMapping.wrap(image, format: format) {
            frame.setOutput(buffer)
            return finishAttaching(captions, to: frame)
        }
        if !downstreamPool {
            switch copyForDownstreamWithoutVideoMeta(image, format: format, into: frame) {
            case .copied: return finishAttaching(captions, to: frame)
            case .failed(let flow):
                _ = frame.drop(by: decoder)
                return flow
            case .notPossible: break
            }
        }
        // Copy: downstream cannot take a GstVideoMeta, so it needs GStreamer's default
        // strides and plane offsets, which the decoder's pool buffers do not have; it offered
        // its own pool (or the copy pool's layout is not the default), which is downstream's to bound.
        let allocation = gst_video_decoder_allocate_output_frame(decoder, frame.pointer)
        guard allocation == GST_FLOW_OK else {
            _ = frame.drop(by: decoder)
            return allocation
        }
        guard let output = frame.outputBuffer, let state = gst_video_decoder_get_output_state(decoder) else {
            _ = frame.drop(by: decoder)
            return GST_FLOW_ERROR
        }
        defer { gst_video_codec_state_unref(state) }
        let copied: Void? = MappedBytes.withWritableVideoFrame(of: output, info: swiftvt_codec_state_info(state)) {
            videoFrame in
            for (index, plane) in image.planes.enumerated() {
                guard let destination = swiftvt_video_frame_plane_data(&videoFrame, UInt32(index)) else { continue }
                let stride = Int(swiftvt_video_frame_plane_stride(&videoFrame, UInt32(index)))
                let rowBytes = min(stride, plane.bytesPerRow, VideoFormatMapping.rowBytes(of: image, plane: index))
                for row in 0..<plane.height {
                    (destination + row * stride).copyMemory(
                        from: plane.baseAddress + row * plane.bytesPerRow, byteCount: rowBytes)
                }
            }
        }
        guard copied != nil else {
            _ = frame.drop(by: decoder)
            return GST_FLOW_ERROR
        }
        return finishAttaching(captions, to: frame)
    }

    /// Finishes a frame whose output buffer is set, with its captions as a GstVideoCaptionMeta
    /// (the buffer was made for this frame, so it is writable).
    private func finishAttaching(_ captions: ClosedCaptionData?, to frame: consuming CodecFrame) -> GstFlowReturn {
        if let captions, let output = frame.outputBuffer, gst_mini_object_is_writable(&output.pointee.mini_object) != 0
        {
            CaptionMeta.attach(captions, to: output)
        }
        return frame.finish(by: decoder)
    }

    /// Copies a picture for a downstream that takes no GstVideoMeta and offered no pool into a
    /// buffer of the element's own copy pool, laid out as GStreamer's default for the format
    /// (rows on 4 bytes, planes back to back: GstVideoInfo's strides and offsets, checked), and
    /// wraps it. The copy pool is bounded like the decoder's (back pressure on a slow consumer)
    /// and grows like it for a consumer that keeps pictures (an application holding its last K
    /// samples), where GStreamer's own pool would block for ever at its maximum.
    /// `.notPossible` where the layout differs from the output state's (the base class's path
    /// then copies).
    private func copyForDownstreamWithoutVideoMeta(
        _ image: PixelBuffer, format: GstVideoFormat, into frame: borrowing CodecFrame
    ) -> CopyOutcome {
        let attributes = PixelBufferPool.Attributes(
            width: image.width, height: image.height, pixelFormat: image.pixelFormat, rowAlignment: 4,
            maximumBufferCount: Self.copyPoolSlack)
        let pool: PixelBufferPool? = copyPool.withLock { current in
            if let existing = current, existing.attributes == attributes { return existing }
            current?.invalidate()
            current = try? PixelBufferPool(attributes: attributes, consumer: consumer)
            return current
        }
        guard let pool else { return .notPossible }
        let destination: PixelBuffer
        do {
            destination = try pool.makePixelBuffer()
        } catch {
            if case .flushing = error { return .failed(GST_FLOW_FLUSHING) }
            log.warning(object, "no picture for the copy: \(error)")
            return .failed(GST_FLOW_ERROR)
        }
        guard layoutMatchesOutputState(destination) else {
            log.debug(
                object,
                "the copy pool's layout is not GStreamer's default for this format: copying into the base class's pool")
            return .notPossible
        }
        // Copy: downstream cannot take a GstVideoMeta, so it needs GStreamer's default strides and
        // plane offsets, which the decoder's pool buffers (rows aligned for SIMD) do not have.
        for (index, plane) in image.planes.enumerated() where index < destination.planes.count {
            let target = destination.planes[index]
            let rowBytes = min(
                target.bytesPerRow, plane.bytesPerRow, VideoFormatMapping.rowBytes(of: image, plane: index))
            for row in 0..<min(plane.height, target.height) {
                let destination = target.baseAddress + row * target.bytesPerRow
                destination.copyMemory(from: plane.baseAddress + row * plane.bytesPerRow, byteCount: rowBytes)
                // The row's padding (at most 3 bytes) is zeroed: a downstream without GstVideoMeta
                // writes whole rows (a file), which must not carry the pool's earlier contents.
                if target.bytesPerRow > rowBytes {
                    (destination + rowBytes).initializeMemory(
                        as: UInt8.self, repeating: 0, count: target.bytesPerRow - rowBytes)
                }
            }
        }
        guard let buffer = VideoFormatMapping.wrap(destination, format: format, coveringWholeRows: true) else {
            return .notPossible
        }
        frame.setOutput(buffer)
        return .copied
    }

    private enum CopyOutcome {
        /// The frame's output buffer is set.
        case copied
        case failed(GstFlowReturn)
        case notPossible
    }

    /// Pictures the copy pool may have outside its own beyond what downstream announced: the one
    /// being copied into, the one being pushed, and a sink's last sample and the one it renders
    /// (basesink keeps the last sample without counting it in min_buffers).
    private static let copyPoolSlack = 4

    /// Whether a copy-pool picture has exactly the strides, plane offsets and size the output
    /// state's GstVideoInfo gives (what a downstream without GstVideoMeta assumes).
    private func layoutMatchesOutputState(_ picture: PixelBuffer) -> Bool {
        guard let state = gst_video_decoder_get_output_state(decoder) else { return false }
        defer { gst_video_codec_state_unref(state) }
        let info = swiftvt_codec_state_info(state).pointee
        let planeCount = Int(info.finfo.pointee.n_planes)
        guard planeCount == picture.planes.count, let first = picture.planes.first else { return false }
        let base = UInt(bitPattern: first.baseAddress)
        var end = base
        let strides = withUnsafeBytes(of: info.stride) { Array($0.bindMemory(to: gint.self)) }
        let offsets = withUnsafeBytes(of: info.offset) { Array($0.bindMemory(to: gsize.self)) }
        for (index, plane) in picture.planes.enumerated() {
            let offset = UInt(bitPattern: plane.baseAddress) - base
            guard Int(strides[index]) == plane.bytesPerRow, UInt(offsets[index]) == offset else { return false }
            end = max(end, UInt(bitPattern: plane.baseAddress) + UInt(plane.bytesPerRow * plane.height))
        }
        return UInt(info.size) == end - base
    }
}
