import CFFmpeg
import H264
import H265
import MediaCore
import SwiftVT

/// Keeps one AVFrame (and so the pooled picture under it) alive for as long as the PixelBuffer
/// that wraps its cropped planes.
///
/// `@unchecked Sendable` invariant: `frame` is owned exclusively by this object, never read after
/// init except by `deinit`, which frees it once (from whichever thread drops the last reference).
private final class FrameOwner: @unchecked Sendable {
    private let frame: UnsafeMutablePointer<AVFrame>

    init(_ frame: UnsafeMutablePointer<AVFrame>) { self.frame = frame }

    deinit {
        var frame: UnsafeMutablePointer<AVFrame>? = frame
        av_frame_free(&frame)
    }
}

/// The libavcodec H.264 and H.265 decoders behind ``LibavcodecDecoderFactory``.
///
/// Samples are length-prefixed NAL units and the avcC or hvcC record is the extradata, which is
/// what libavcodec's h264 and hevc decoders read natively, so samples are fed as they are. Pictures are
/// decoded into pooled PixelBuffers (``PooledFrameAllocator``) and handed out cropped per the SPS
/// without a copy: `AV_CODEC_FLAG_UNALIGNED` with `apply_cropping` makes libavcodec offset the
/// data pointers by the exact crop, and the output PixelBuffer wraps those pointers while owning a
/// reference to the frame.
///
/// Timing: libavcodec carries a packet's `pts` to the frame decoded from it, through reordering
/// and frame threads. The pts given to libavcodec is a sequence number, and the sample's exact
/// rational timestamps and frame reference are kept in `timings` (``SampleTimingTable``) under
/// it: MediaTime has no common time base, and a round trip through one would round.
final class LibavcodecDecoder: DecoderBackend {
    private let context: UnsafeMutablePointer<AVCodecContext>
    private let packet: UnsafeMutablePointer<AVPacket>
    /// Receives each frame; its reference is moved to a fresh AVFrame for output.
    private let scratchFrame: UnsafeMutablePointer<AVFrame>
    /// Referenced by `context.opaque`; freed after the context (declared after it, and deinit
    /// frees the context explicitly first).
    private let allocator: PooledFrameAllocator
    private let outputChoice: OutputFormatChoice
    private let rowAlignment: Int
    private let consumer: PixelBufferConsumer?
    /// Pictures converted to NV12/P010 (only used when the caller does not take the native format).
    private var conversionPool: PixelBufferPool?

    private var timings = SampleTimingTable()

    init(
        format: FormatDescription, specification: DecoderSpecification, attributes: DestinationImageBufferAttributes
    ) throws(VTError) {
        guard let stream = LibavStream(format) else {
            throw VTError(.unsupportedFormat, "the format description has no avcC or hvcC record")
        }
        let record = stream.configurationRecord
        let choice = OutputFormatChoice(preferences: attributes.pixelFormats)
        if let native = LibavPixelFormat.expectedNative(
            chroma: format.extensions.chromaSubsampling, bitDepth: format.extensions.bitDepth),
            choice.format(forNative: native, fullRange: format.extensions.fullRange ?? false) == nil
        {
            throw VTError(
                .unsupportedFormat,
                reason: .outputPixelFormatsUnavailable(requested: attributes.pixelFormats, decodesTo: native))
        }
        guard let codec = avcodec_find_decoder(stream.codecID) else {
            throw VTError(.unsupportedFormat, "this libavcodec was built without its \(format.codecName) decoder")
        }
        guard let context = avcodec_alloc_context3(codec) else {
            throw VTError(.allocationFailed, "out of memory", operation: "avcodec_alloc_context3")
        }
        var packet = av_packet_alloc()
        var frame = av_frame_alloc()
        var opened = false
        defer {
            if !opened {
                var optionalContext: UnsafeMutablePointer<AVCodecContext>? = context
                avcodec_free_context(&optionalContext)
                av_packet_free(&packet)
                av_frame_free(&frame)
            }
        }
        guard let packet, let frame else {
            throw VTError(.allocationFailed, "out of memory", operation: "av_packet_alloc/av_frame_alloc")
        }
        // Extradata must be av_malloc'd with zeroed padding (libavcodec's bit readers read ahead);
        // avcodec_free_context frees it.
        guard let extradata = av_mallocz(record.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else {
            throw VTError(.allocationFailed, "out of memory", operation: "av_mallocz")
        }
        record.withUnsafeBytes {
            extradata.copyMemory(from: $0.baseAddress ?? UnsafeRawPointer(extradata), byteCount: $0.count)
        }
        context.pointee.extradata = extradata.assumingMemoryBound(to: UInt8.self)
        context.pointee.extradata_size = Int32(clamping: record.count)
        // 0 lets libavcodec pick one thread per core (plus one).
        context.pointee.thread_count = Int32(clamping: specification.threadCount)
        // Frame threads delay each picture by a frame per extra thread; a low-delay decoder
        // (live input) uses slice threads only, as avdec_h264 does when upstream is live.
        context.pointee.thread_type = specification.lowDelay ? FF_THREAD_SLICE : FF_THREAD_FRAME | FF_THREAD_SLICE
        // Exact cropping at any offset: without UNALIGNED libavcodec would round the left/top
        // crop down to keep data pointers aligned, and the picture would not match the SPS.
        context.pointee.flags |= AV_CODEC_FLAG_UNALIGNED
        // Pictures decoded from damaged data or before a recovery point are output (concealed,
        // and reported as corrupt through the frame's flags) rather than dropped, as
        // avdec_h264's output-corrupt=true does: a damaged file keeps its frames.
        context.pointee.flags |= AV_CODEC_FLAG_OUTPUT_CORRUPT
        context.pointee.apply_cropping = 1
        // libavcodec's own log lines (a damaged slice, a picture whose allocation a flush ended)
        // would go to the host application's stderr; the session reports each failure as a
        // frame status, which the element turns into GStreamer messages. Demoted to debug
        // level (AVClass's log_level_offset), as avdec_h264/avdec_h265 route them to
        // GStreamer's debug log: `av_log_set_level(AV_LOG_DEBUG + 16)` shows them again.
        context.pointee.log_level_offset = 48 // AV_LOG_DEBUG: ERROR (16) becomes 64
        // Output order per the spec's bumping process from the first picture: libavcodec
        // otherwise starts with no reorder delay, grows it when a picture arrives out of order,
        // and silently drops that picture (Cisco_Men_whisper_*_Bframe_9 lose 7 of 9 frames).
        // ffmpeg's command line avoids it by probing frames first; here the SPS says it.
        context.pointee.has_b_frames = Int32(stream.reorderDepth)
        let allocator = PooledFrameAllocator(rowAlignment: attributes.rowAlignment, consumer: attributes.consumer)
        allocator.install(in: context)
        try Libav.check(avcodec_open2(context, codec, nil), "avcodec_open2")
        opened = true
        // Bounded only for a consumer that said what it holds (DestinationImageBufferAttributes):
        // a caller keeping every picture would otherwise wait forever. The bound needs
        // libavcodec's real thread count (0 became one per core, plus one), known once the codec
        // is open; get_buffer2 first runs in the first decode.
        if attributes.consumer != nil {
            allocator.maximumBufferCount = Self.pictureBudget(
                dpbSize: stream.dpbSize, threadCount: Int(context.pointee.thread_count),
                frameThreads: context.pointee.active_thread_type & FF_THREAD_FRAME != 0)
        }
        self.context = context
        self.packet = packet
        self.scratchFrame = frame
        self.allocator = allocator
        self.outputChoice = choice
        self.rowAlignment = attributes.rowAlignment
        self.consumer = attributes.consumer
    }

    /// How many pictures libavcodec's decoder may hold at once, which bounds its pool (the
    /// consumer's held count comes on top):
    /// - the DPB (`dpbSize`, ``LibavStream/dpbSize``), which includes the pictures waiting for
    ///   output (H.264 C.4.5.3, H.265 C.5.2.2); 16 for a stream without an SPS yet;
    /// - the picture being decoded;
    /// - with frame threads, each further thread decodes a picture of its own, and its context
    ///   may still reference DPB pictures the newest one has dropped (up to one per thread), so
    ///   two per extra thread;
    /// - two in transit: the picture the session is delivering and one pushed downstream that
    ///   the consumer has not counted (a downstream that keeps more says so in its held count).
    /// Too low a bound would make the decoder wait for itself; too high only costs memory.
    static func pictureBudget(dpbSize dpb: Int, threadCount: Int, frameThreads: Bool) -> Int {
        let extraThreads = frameThreads ? max(0, threadCount - 1) : 0
        return (dpb > 0 ? dpb : 16) + 1 + 2 * extraThreads + 2
    }

    deinit {
        var optionalContext: UnsafeMutablePointer<AVCodecContext>? = context
        // Joins the frame threads; pictures still referenced elsewhere stay valid (they hold
        // their own AVBufferRefs).
        avcodec_free_context(&optionalContext)
        var packet: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&packet)
        var frame: UnsafeMutablePointer<AVFrame>? = scratchFrame
        av_frame_free(&frame)
    }

    // MARK: DecoderBackend

    func decode(_ sample: SampleBuffer, frameReference: UInt64) throws(VTError) -> [DecodedFrame] {
        var frames: [DecodedFrame] = []
        for index in 0..<sample.sampleCount {
            let timing = (try? sample.timingInfo(at: index)) ?? .invalid
            let data: BlockBuffer
            do {
                data = try sample.sampleData(at: index)
            } catch {
                frames.append(
                    DecodedFrame(
                        status: VTError(.badData, "sample \(index) of the buffer cannot be read: \(error)"),
                        presentationTimeStamp: timing.presentationTimeStamp, duration: timing.duration,
                        frameReference: frameReference))
                continue
            }
            guard !data.isEmpty else { continue }
            let sequenceNumber = timings.takeSequenceNumber()
            if let failure = send(data, pts: sequenceNumber) {
                frames.append(
                    DecodedFrame(
                        status: failure, presentationTimeStamp: timing.presentationTimeStamp, duration: timing.duration,
                        frameReference: frameReference))
            } else {
                timings.record(
                    SampleTimingTable.Timing(
                        presentationTimeStamp: timing.presentationTimeStamp, duration: timing.duration,
                        frameReference: frameReference), for: sequenceNumber)
            }
            receiveFrames(into: &frames, fallbackReference: frameReference)
        }
        try checkFlushingInterruption()
        return frames
    }

    /// A wait for a picture that the consumer's flushing ended fails the decode as a whole: the
    /// pictures decoded meanwhile would be dropped by the flush that follows anyway, and the
    /// errors libavcodec reported for the missing picture are not the stream's fault.
    private func checkFlushingInterruption() throws(VTError) {
        if allocator.takeFlushingInterruption() {
            throw VTError(.flushing, "the consumer is flushing: decoding stopped waiting for an output picture")
        }
    }

    func drain() throws(VTError) -> [DecodedFrame] {
        var frames: [DecodedFrame] = []
        let status = avcodec_send_packet(context, nil)
        if status < 0 && status != cffmpeg_error_eof() {
            // With frame threads the error of a picture still in flight surfaces here; the
            // decoder is draining all the same, so report it and collect what is left.
            frames.append(DecodedFrame(status: Libav.error(status, "avcodec_send_packet (drain)")))
        }
        receiveFrames(into: &frames, fallbackReference: 0)
        // After EOF libavcodec accepts no packets until flushed; flushing after a complete drain
        // drops nothing and keeps the decoder usable, as the protocol promises.
        avcodec_flush_buffers(context)
        timings.removeAll()
        try checkFlushingInterruption()
        return frames
    }

    func flush() {
        avcodec_flush_buffers(context)
        timings.removeAll()
        _ = allocator.takeFlushingInterruption()
        // The DPB just let go of its pictures: after a seek the pool's idle memory is freed
        // rather than kept for a playback that may not resume soon.
        allocator.trimIdle()
        conversionPool?.flush()
    }

    // MARK: Packets in

    /// Sends one access unit; returns the failure to report for it, if any.
    private func send(_ data: BlockBuffer, pts: Int64) -> VTError? {
        av_packet_unref(packet)
        guard data.count <= Int(Int32.max) - Int(AV_INPUT_BUFFER_PADDING_SIZE) else {
            return VTError(.badData, "a \(data.count)-byte access unit is larger than libavcodec accepts")
        }
        // One copy, into a padded, reference-counted packet. libavcodec's readers run up to
        // AV_INPUT_BUFFER_PADDING_SIZE bytes past the end and need them zeroed, which a
        // BlockBuffer over the caller's memory cannot promise, so a zero-copy wrap of it would
        // be incorrect; and a packet without a buffer is copied by avcodec_send_packet anyway.
        // Copying here also gathers a multi-block buffer in the same single pass.
        let status = av_new_packet(packet, Int32(data.count))
        guard status >= 0, let destination = cffmpeg_packet_data(packet) else {
            return Libav.error(status < 0 ? status : cffmpeg_error_no_memory(), "av_new_packet")
        }
        var written = 0
        data.forEachSegment { segment in
            guard let base = segment.baseAddress else { return }
            (destination + written).update(from: base.assumingMemoryBound(to: UInt8.self), count: segment.count)
            written += segment.count
        }
        packet.pointee.pts = pts
        packet.pointee.dts = cffmpeg_no_pts()
        var sent = avcodec_send_packet(context, packet)
        if sent == cffmpeg_error_again() {
            // Not expected (frames are received after every packet), but the API allows it:
            // the caller must read output first. Nothing is lost; it is read after the retry.
            var pending: [DecodedFrame] = []
            receiveFrames(into: &pending, fallbackReference: 0)
            stash.append(contentsOf: pending)
            sent = avcodec_send_packet(context, packet)
        }
        return sent < 0 ? Libav.error(sent, "avcodec_send_packet") : nil
    }

    /// Frames received while retrying a send, delivered with the next batch.
    private var stash: [DecodedFrame] = []

    // MARK: Frames out

    private func receiveFrames(into frames: inout [DecodedFrame], fallbackReference: UInt64) {
        if !stash.isEmpty {
            frames += stash
            stash.removeAll()
        }
        // libavcodec may report an error for one picture and still have others; keep reading,
        // but not forever if it repeats itself.
        var errors = 0
        while errors < 16 {
            let status = avcodec_receive_frame(context, scratchFrame)
            if status == cffmpeg_error_again() || status == cffmpeg_error_eof() { return }
            if status < 0 {
                errors += 1
                frames.append(
                    DecodedFrame(
                        status: Libav.error(status, "avcodec_receive_frame"), frameReference: fallbackReference))
                continue
            }
            frames.append(output(scratchFrame))
        }
    }

    /// Turns the decoded frame in `decoded` into a DecodedFrame (moving its references out).
    private func output(_ decoded: UnsafeMutablePointer<AVFrame>) -> DecodedFrame {
        let noPTS = cffmpeg_no_pts()
        let pts = decoded.pointee.pts != noPTS ? decoded.pointee.pts : decoded.pointee.best_effort_timestamp
        let timing = timings.take(framePTS: pts)
        var result = DecodedFrame(
            presentationTimeStamp: timing?.presentationTimeStamp ?? .invalid, duration: timing?.duration ?? .invalid,
            frameReference: timing?.frameReference ?? 0)
        let flags = decoded.pointee.flags
        let errorFlags = decoded.pointee.decode_error_flags
        if errorFlags != 0 || flags & AV_FRAME_FLAG_CORRUPT != 0 {
            result.status = VTError(
                .badData,
                "the picture was decoded from damaged data and concealed (decode_error_flags 0x"
                    + String(errorFlags, radix: 16) + "); it is output as libavcodec repaired it",
                backendStatus: errorFlags, operation: "avcodec_receive_frame")
        }
        let formatCode = decoded.pointee.format
        guard let native = LibavPixelFormat.native(formatCode) else {
            av_frame_unref(decoded)
            result.status = VTError(
                .unsupportedFormat,
                "libavcodec decoded to \(LibavPixelFormat.name(formatCode)), which SwiftVT has no pixel format for "
                    + "(8- and 10-bit YUV only)")
            return result
        }
        guard let owned = av_frame_alloc() else {
            av_frame_unref(decoded)
            result.status = VTError(.allocationFailed, "out of memory", operation: "av_frame_alloc")
            return result
        }
        av_frame_move_ref(owned, decoded)
        let attachments = Self.attachments(of: owned)
        let picture: PixelBuffer
        do {
            picture = try Self.wrap(owned, as: native, attachments: attachments)
        } catch {
            result.status = error
            return result
        }
        // The consumer's formats of now (a downstream that renegotiated) before the session's.
        let choice = consumer?.pixelFormatPreferences.map { OutputFormatChoice(preferences: $0) } ?? outputChoice
        guard let target = choice.format(forNative: native, fullRange: attachments.fullRange ?? false) else {
            result.status = VTError(.unsupportedFormat, reason: .decodedFormatChanged(to: native))
            return result
        }
        if target == native {
            result.imageBuffer = picture
        } else {
            do {
                result.imageBuffer = try converted(picture, to: target)
                result.infoFlags.insert(.imageBufferModifiable)
            } catch {
                result.status = error
            }
        }
        return result
    }

    /// The cropped picture of `frame` as a PixelBuffer over libavcodec's planes; the buffer owns
    /// `frame` (freed when the buffer goes away), also when this throws.
    private static func wrap(
        _ frame: UnsafeMutablePointer<AVFrame>, as format: PixelFormat, attachments: PixelBufferAttachments
    ) throws(VTError) -> PixelBuffer {
        let owner = FrameOwner(frame)
        var planes: [PixelBuffer.ExternalPlane] = []
        for index in 0..<format.planeCount {
            guard let data = cffmpeg_frame_data(frame, Int32(index)) else {
                throw VTError(.decoderFailed, "libavcodec returned a picture without plane \(index)")
            }
            planes.append(
                PixelBuffer.ExternalPlane(
                    baseAddress: UnsafeMutableRawPointer(data),
                    bytesPerRow: Int(cffmpeg_frame_linesize(frame, Int32(index)))))
        }
        do {
            return try PixelBuffer(
                width: Int(frame.pointee.width), height: Int(frame.pointee.height), pixelFormat: format,
                externalPlanes: planes, attachments: attachments, release: { withExtendedLifetime(owner) {} })
        } catch {
            throw VTError(.decoderFailed, "libavcodec returned a picture SwiftVT cannot describe: \(error)")
        }
    }

    private func converted(_ picture: PixelBuffer, to format: PixelFormat) throws(VTError) -> PixelBuffer {
        // As many as the decoder may output in one call (a drain outputs every picture it
        // held), all converted before the caller sees any: the decoder's own budget (0, no
        // bound, without a consumer); plus what the consumer holds. Fewer would make a drain
        // wait for itself.
        let budget = allocator.maximumBufferCount
        let attributes = PixelBufferPool.Attributes(
            width: picture.width, height: picture.height, pixelFormat: format, rowAlignment: rowAlignment,
            maximumBufferCount: budget > 0 ? budget : nil)
        if conversionPool?.attributes != attributes {
            conversionPool?.invalidate()
            do {
                conversionPool = try PixelBufferPool(attributes: attributes, consumer: consumer)
            } catch {
                throw VTError(.allocationFailed, reason: .outputPicturesUnavailable(format, detail: "\(error)"))
            }
        }
        guard let pool = conversionPool else {
            throw VTError(.allocationFailed, reason: .outputPicturesUnavailable(format, detail: nil))
        }
        let destination: PixelBuffer
        do {
            // May wait for downstream to give a converted picture back.
            destination = try pool.makePixelBuffer()
        } catch .flushing {
            throw VTError(.flushing, "the consumer is flushing: conversion stopped waiting for an output picture")
        } catch {
            throw VTError(.allocationFailed, reason: .outputPicturesUnavailable(format, detail: "\(error)"))
        }
        BiPlanarConversion.convert(from: picture, to: destination)
        var attachments = picture.attachments
        attachments.fullRange = format.isFullRange
        destination.setAttachments(attachments)
        return destination
    }

    /// Colour description of the picture (H.273 code points; libavcodec's enums use the same
    /// numbers). "Unspecified" becomes nil, as the stream did not say.
    private static func attachments(of frame: UnsafeMutablePointer<AVFrame>) -> PixelBufferAttachments {
        var attachments = PixelBufferAttachments()
        let primaries = frame.pointee.color_primaries.rawValue
        if primaries != AVCOL_PRI_UNSPECIFIED.rawValue, primaries != AVCOL_PRI_RESERVED0.rawValue, primaries <= 255 {
            attachments.colorPrimaries = ColorPrimaries(rawValue: UInt8(primaries))
        }
        let transfer = frame.pointee.color_trc.rawValue
        if transfer != AVCOL_TRC_UNSPECIFIED.rawValue, transfer != AVCOL_TRC_RESERVED0.rawValue, transfer <= 255 {
            attachments.transferFunction = TransferFunction(rawValue: UInt8(transfer))
        }
        let matrix = frame.pointee.colorspace.rawValue
        if LibavPixelFormat.isRGB(frame.pointee.format) {
            attachments.yCbCrMatrix = .identity
        } else if matrix != AVCOL_SPC_UNSPECIFIED.rawValue, matrix <= 255 {
            attachments.yCbCrMatrix = YCbCrMatrix(rawValue: UInt8(matrix))
        }
        switch frame.pointee.color_range {
        case AVCOL_RANGE_JPEG: attachments.fullRange = true
        case AVCOL_RANGE_MPEG: attachments.fullRange = false
        default: attachments.fullRange = LibavPixelFormat.isFullRangeFormat(frame.pointee.format) ? true : nil
        }
        // AVChromaLocation is H.273's chroma_sample_loc_type plus one (0 = unspecified).
        let location = frame.pointee.chroma_location.rawValue
        if location != AVCHROMA_LOC_UNSPECIFIED.rawValue, location <= 6 {
            attachments.chromaLocation = ChromaLocation(rawValue: UInt8(location - 1))
        }
        let aspect = frame.pointee.sample_aspect_ratio
        if aspect.num > 0, aspect.den > 0 {
            attachments.pixelAspectRatio = PixelAspectRatio(horizontalSpacing: aspect.num, verticalSpacing: aspect.den)
        }
        return attachments
    }
}

/// What the decoder needs to know of a stream that depends on its codec: libavcodec's decoder,
/// the extradata, and the SPS's reorder depth and DPB size.
struct LibavStream {
    var codecID: AVCodecID
    /// The avcC or hvcC record (ISO/IEC 14496-15 5.3.3.1, 8.3.3.1), libavcodec's extradata.
    var configurationRecord: [UInt8]
    /// How many pictures may precede a picture in decode order and follow it in output order,
    /// over the description's SPSs: H.264's ``SequenceParameterSet/outputReorderDepth`` (should a
    /// Baseline stream still reorder P pictures by POC, libavcodec grows its delay as it goes),
    /// H.265's sps_max_num_reorder_pics (7.4.3.2.1).
    var reorderDepth = 0
    /// The DPB in frames: H.264 max_dec_frame_buffering or the level's MaxDpbFrames (A.3.1 item
    /// h, E.2.1); H.265 sps_max_dec_pic_buffering_minus1 + 1 (7.4.3.2.1). 0 without an SPS.
    var dpbSize = 0

    init?(_ format: FormatDescription) {
        if let record = format.hevcDecoderConfigurationRecord {
            codecID = AV_CODEC_ID_HEVC
            configurationRecord = record
            reorderDepth = format.hevcOutputReorderDepth ?? 0
            for nal in format.hevcSequenceParameterSets {
                guard let sps = try? H265SequenceParameterSet.parse(nalUnit: nal) else { continue }
                dpbSize = max(dpbSize, sps.maxDecPicBufferingMinus1 + 1)
            }
        } else if let record = format.avcDecoderConfigurationRecord {
            codecID = AV_CODEC_ID_H264
            configurationRecord = record
            reorderDepth = format.h264OutputReorderDepth ?? 0
            for nal in format.h264SequenceParameterSets {
                guard let sps = try? SequenceParameterSet.parse(nalUnit: nal) else { continue }
                dpbSize = max(dpbSize, sps.maxDpbFrames)
            }
        } else {
            return nil
        }
    }
}
