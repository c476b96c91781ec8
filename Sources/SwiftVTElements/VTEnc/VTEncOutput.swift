import CGStreamer
import CSwiftVTShim
import H264
import H265
import MediaCore
import SwiftVT
import Synchronization

// vtenc's access units out: the frames the session delivered, finished in decode order, and the
// output caps made from the encoder's parameter sets (SPS/PPS; HEVC: VPS/SPS/PPS) when they change.
extension VTEnc {
    /// Finishes the frames the session delivered, in decode order.
    func outputDelivered() -> GstFlowReturn {
        let frames = delivered.takeAll()
        guard !frames.isEmpty else { return GST_FLOW_OK }
        let streamFormat = state.withLock { $0.encoding?.streamFormat } ?? .h264(.avc)
        let (postsStatistics, delimitedH264, delimitedH265) = withSettings {
            ($0.frameStatistics, $0.accessUnitDelimiters, $0.hevcAccessUnitDelimiters)
        }
        let delimited: Bool
        switch streamFormat {
        case .h264: delimited = delimitedH264
        case .h265: delimited = delimitedH265
        }
        let bitDepth = state.withLock { $0.encoding?.pixelFormat.bitDepth } ?? 8
        for encoded in frames {
            guard let pending = gst_video_encoder_get_frame(encoder, Int32(truncatingIfNeeded: encoded.frameReference))
            else {
                continue
            }
            // Finished below; on the ways out before that the reference goes back and the frame
            // stays pending (the error stops the stream).
            let frame = CodecFrame(adopting: pending)
            guard let sample = encoded.sampleBuffer, let description = sample.formatDescription else {
                let text =
                    encoded.status.map { "a frame could not be encoded: \(GStreamerWording.message($0))" }
                    ?? "the encoder dropped a frame"
                ElementMessage.stream(GST_STREAM_ERROR_ENCODE, text, debug: encoded.status?.description).post(
                    from: object, isError: true)
                return GST_FLOW_ERROR
            }
            if case .failed(let flow, let message)? = negotiateIfNeeded(description) {
                guard let message else { return flow }
                // Posted here: GST_FLOW_ERROR says so (GStreamer's convention), so finish()
                // does not post a second one for the same failure.
                message.post(from: object, isError: true)
                return GST_FLOW_ERROR
            }
            let isKey = sample.isSync
            guard
                let buffer = Self.outputBuffer(
                    sample, description: description, streamFormat: streamFormat, isKeyFrame: isKey,
                    delimited: delimited)
            else {
                return GST_FLOW_ERROR
            }
            if postsStatistics {
                FrameStatistics(encoded, sample: sample, outputBytes: buffer.size, bitDepth: bitDepth).post(
                    from: encoder)
            }
            frame.setOutput(buffer)
            frame.setSyncPoint(isKey)
            if sample.decodeTimeStamp.isNumeric, frame.presentationTimeStamp != swiftvt_clock_time_none {
                frame.setDecodeTimeStamp(GstClockTime(sample.decodeTimeStamp.gstreamerNanoseconds))
            }
            let flow = frame.finish(by: encoder)
            if flow != GST_FLOW_OK { return flow }
        }
        return GST_FLOW_OK
    }

    enum Negotiation {
        case done
        /// The flow to return and the ERROR to post (nil when there is nothing to say).
        case failed(GstFlowReturn, ElementMessage?)
    }

    /// Output caps from the parameter sets: profile and level for everyone (and tier for HEVC),
    /// codec_data for avc, hvc1 and hev1. nil when the caps sent last still hold.
    func negotiateIfNeeded(_ description: FormatDescription) -> Negotiation? {
        let encoding = state.withLock { state -> Encoding? in
            guard var encoding = state.encoding, encoding.negotiatedParameterSets != description.parameterSets else {
                return nil
            }
            encoding.negotiatedParameterSets = description.parameterSets
            state.encoding = encoding
            return encoding
        }
        guard let encoding else { return nil }
        let (streamFormat, reference) = (encoding.streamFormat, encoding.inputState)
        let info = swiftvt_codec_state_info(reference.pointer)
        let pixelAspectRatio = info.map { ($0.pointee.par_n, $0.pointee.par_d) }
        let made: UnsafeMutablePointer<GstCaps>?
        switch streamFormat {
        case .h264(let format):
            made = H264Output.caps(
                description, streamFormat: format, width: encoding.width, height: encoding.height,
                frameRate: encoding.frameRate, pixelAspectRatio: pixelAspectRatio, downstream: encoding.downstream)
        case .h265(let format):
            // The labels downstream takes, or why none fits: said at the caps, with what to do.
            var labels: (profile: String?, level: String?) = (nil, nil)
            if let constraints = encoding.hevcDownstream, let spsBytes = description.hevcSequenceParameterSets.first,
                let sps = try? H265SequenceParameterSet.parse(nalUnit: spsBytes)
            {
                do throws(DownstreamRefusal) {
                    labels = try constraints.labels(for: sps, format: encoding.pixelFormat)
                } catch {
                    state.withLock { $0.encoding?.negotiatedParameterSets = nil }
                    return .failed(
                        GST_FLOW_NOT_NEGOTIATED,
                        .stream(
                            GST_STREAM_ERROR_FORMAT,
                            "cannot encode \(encoding.width)x\(encoding.height) \(GStreamerWording.name(of: encoding.pixelFormat)) for downstream: \(error.reason)"
                        ))
                }
            }
            made = H265Output.caps(
                description, streamFormat: format, frameRate: encoding.frameRate, pixelAspectRatio: pixelAspectRatio,
                profile: labels.profile, level: labels.level)
        }
        guard let caps = made else {
            return .failed(
                GST_FLOW_ERROR,
                .stream(GST_STREAM_ERROR_FORMAT, "the encoder's parameter sets make no \(codecName) caps"))
        }
        let summary = Self.capsSummary(caps)
        // Checked before the caps event: GstVideoEncoder's negotiation reports success for a
        // sticky caps event the peer refused, and the refusal would only show as a bare
        // not-negotiated flow at the first buffer.
        let accepted = swiftvt_pad_peer_accepts_caps(swiftvt_video_encoder_src_pad(encoder), caps) != 0
        guard accepted, let output = gst_video_encoder_set_output_state(encoder, caps, reference.pointer) else {
            if !accepted { gst_caps_unref(caps) } // set_output_state took it otherwise
            state.withLock { $0.encoding?.negotiatedParameterSets = nil }
            let peer = swiftvt_pad_peer_caps_string(swiftvt_video_encoder_src_pad(encoder))
            defer { g_free(peer) }
            return .failed(
                GST_FLOW_NOT_NEGOTIATED,
                .stream(
                    GST_STREAM_ERROR_FORMAT,
                    "downstream does not accept the stream this encoder makes (\(summary)); downstream takes \(peer.map { String(cString: $0) } ?? "nothing")"
                ))
        }
        gst_video_codec_state_unref(output)
        guard gst_video_encoder_negotiate(encoder) != 0 else {
            state.withLock { $0.encoding?.negotiatedParameterSets = nil }
            return .failed(
                GST_FLOW_NOT_NEGOTIATED,
                .stream(GST_STREAM_ERROR_FORMAT, "downstream refused the \(codecName) caps (\(summary))"))
        }
        log.info(object, "output caps negotiated (\(streamFormat.name))")
        return .done
    }

    /// The codec's name in messages.
    private var codecName: String { codecType == .hevc ? "H.265" : "H.264" }

    /// The caps as text without codec_data, for messages.
    private static func capsSummary(_ caps: UnsafeMutablePointer<GstCaps>) -> String {
        guard let copy = gst_caps_copy(caps) else { return "video caps" }
        defer { gst_caps_unref(copy) }
        if gst_caps_get_size(copy) > 0 { gst_structure_remove_field(gst_caps_get_structure(copy, 0), "codec_data") }
        guard let text = gst_caps_to_string(copy) else { return "video caps" }
        defer { g_free(text) }
        return String(cString: text)
    }

    /// The access unit as GStreamer wants it, copied once straight into the output buffer: the
    /// session's sample lives in Swift memory that GStreamer cannot own, and the output also
    /// starts with an access unit delimiter (7.3.2.4), as x264enc's (its `aud` property, on by
    /// default, in avc and byte-stream alike; H.222.0 2.14 asks for one before every access unit
    /// in MPEG-TS). Byte-stream output also rewrites lengths as start codes and puts SPS/PPS in
    /// front of every IDR (H.264 Annex B, the form rtph264pay and MPEG-TS expect); avc3 keeps the
    /// lengths and puts the SPS/PPS in front of every IDR too.
    ///
    /// HEVC has no delimiter added (x265enc writes none either; 7.4.2.4.4 makes it optional):
    /// hvc1 is the sample as it stands, copied once for the reason above; hev1 and byte-stream are
    /// laid out by ``H265Output/AccessUnitLayout``.
    /// `delimited`: an access unit delimiter first (H.264's `aud`, on by default as x264enc's).
    private static func outputBuffer(
        _ sample: SampleBuffer, description: FormatDescription, streamFormat format: StreamFormat, isKeyFrame: Bool,
        delimited: Bool
    ) -> OwnedBuffer? {
        guard let data = sample.dataBuffer else { return nil }
        let streamFormat: H264Output.StreamFormat
        switch format {
        case .h264(let h264): streamFormat = h264
        case .h265(let h265):
            return hevcOutputBuffer(
                data, description: description, streamFormat: h265, isKeyFrame: isKeyFrame, delimited: delimited)
        }
        // The reference leaves the closure as a pointer (a closure of BlockBuffer cannot return a
        // noncopyable value) and is adopted again at once.
        let made = data.withContiguousBytes { avcc -> UnsafeMutablePointer<GstBuffer>? in
            var layout: H264Output.AnnexBLayout?
            var prefix: [UInt8] = []
            if streamFormat != .avc {
                // byte-stream, or avc3: the lengths kept, the SPS/PPS in band before each IDR.
                guard
                    let annexB = H264Output.AnnexBLayout(
                        avcc, description: description, isKeyFrame: isKeyFrame, delimited: delimited,
                        startCodes: streamFormat == .byteStream)
                else { return nil }
                layout = annexB
            } else if delimited {
                guard let delimiter = H264Output.delimiterPrefix(avcc, description: description) else { return nil }
                prefix = delimiter
            }
            let size = layout?.size ?? prefix.count + avcc.count
            guard let buffer = OwnedBuffer(allocating: size) else { return nil }
            let written: Void? = buffer.withWritableBytes { output in
                if let layout {
                    layout.write(avcc, into: output)
                } else {
                    output.copyBytes(from: prefix)
                    UnsafeMutableRawBufferPointer(rebasing: output[prefix.count...]).copyMemory(from: avcc)
                }
            }
            guard written != nil else { return nil }
            return buffer.take()
        }
        return made.map(OwnedBuffer.init(adopting:))
    }

    /// An HEVC access unit in `streamFormat` (see ``outputBuffer(_:description:streamFormat:isKeyFrame:delimited:)``).
    private static func hevcOutputBuffer(
        _ data: BlockBuffer, description: FormatDescription, streamFormat: H265Output.StreamFormat, isKeyFrame: Bool,
        delimited: Bool
    ) -> OwnedBuffer? {
        let made = data.withContiguousBytes { sample -> UnsafeMutablePointer<GstBuffer>? in
            var layout: H265Output.AccessUnitLayout?
            if streamFormat != .hvc1 || delimited {
                // hvc1 with a delimiter: the sample's units after it, parameter sets not in band.
                guard
                    let rewritten = H265Output.AccessUnitLayout(
                        sample, description: description, isKeyFrame: isKeyFrame && streamFormat != .hvc1,
                        startCodes: streamFormat == .byteStream, delimited: delimited)
                else { return nil }
                layout = rewritten
            }
            guard let buffer = OwnedBuffer(allocating: layout?.size ?? sample.count) else { return nil }
            let written: Void? = buffer.withWritableBytes { output in
                if let layout {
                    layout.write(sample, into: output)
                } else {
                    UnsafeMutableRawBufferPointer(rebasing: output[0..<sample.count]).copyMemory(from: sample)
                }
            }
            guard written != nil else { return nil }
            return buffer.take()
        }
        return made.map(OwnedBuffer.init(adopting:))
    }
}
