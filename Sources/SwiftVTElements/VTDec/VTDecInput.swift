import CGStreamer
import CSwiftVTShim
import H264
import H265
import MediaCore
import SoftwareCodecs
import SwiftVT
import Synchronization
import VAAPICodecs

// vtdec's input caps and what downstream takes: the caps event, the sink caps query, the
// allocation query, downstream's formats.
extension VTDec {
    // MARK: Input caps

    func setFormat(_ input: UnsafeMutablePointer<GstVideoCodecState>) -> Bool {
        guard let caps = swiftvt_codec_state_caps(input) else { return false }
        if let reason = refusedCaps.reasonPosted(for: caps) {
            // Posted once already: refuse again quietly.
            log.debug(object, "refusing the same caps again: \(reason)")
            return false
        }
        let isH265 =
            gst_caps_get_structure(caps, 0).flatMap { gst_structure_get_name($0) }.map { String(cString: $0) }
            == "video/x-h265"
        let described = isH265 ? h265InputFormat(from: caps) : inputFormat(from: caps)
        switch described {
        case .failure(let message):
            refusedCaps.refuse(caps, with: message, from: object)
            return false
        case .success(let described):
            if let refusal = hardwareRefusal(of: described.configuration) {
                refusedCaps.refuse(caps, with: refusal, from: object)
                return false
            }
            accept(input, described)
            return true
        }
    }

    /// What the caps say about the input: how frames carry NAL units and codec_data's record.
    struct DescribedInput {
        var format: InputFormat
        var configuration: VTDecStreamInput.Configuration
        var streamFormat: String
        var frameRate: FrameRate?
    }

    /// Under hardware=require: the ERROR for a stream no hardware decoder takes, at the caps
    /// rather than at the first frame. H.265 always (no hardware backend decodes it yet); H.264
    /// when codec_data already holds an SPS the device cannot decode (profile, chroma format,
    /// bit depth, interlacing, size); without codec_data the first SPS decides.
    private func hardwareRefusal(of configuration: VTDecStreamInput.Configuration) -> ElementMessage? {
        guard hardware == .require else { return nil }
        guard case .h264(let record) = configuration else {
            return .stream(
                GST_STREAM_ERROR_CODEC_NOT_FOUND,
                "hardware=require, but no hardware decoder in SwiftVT decodes H.265 (its VA-API and NVDEC backends "
                    + "decodes H.264 only). Use hardware=auto to decode H.265 with libavcodec.")
        }
        guard let record,
            let description = try? FormatDescription(
                h264ParameterSets: record.sequenceParameterSets + record.pictureParameterSets),
            let reason = sessions.hardwareFactory.unavailableReason(for: description)
        else { return nil }
        return .stream(
            GST_STREAM_ERROR_CODEC_NOT_FOUND,
            "hardware=require, but no hardware device here can decode this stream: \(GStreamerWording.text(reason)). "
                + "Use hardware=auto (or the vtdec element) to decode it with libavcodec.",
            debug: reason.description)
    }

    /// The caps' stream-format (byte-stream when absent) and codec_data.
    private static func streamFormatAndCodecData(of caps: UnsafeMutablePointer<GstCaps>) -> (String, [UInt8]?) {
        let streamFormat = swiftvt_caps_get_string(caps, "stream-format").map { String(cString: $0) } ?? "byte-stream"
        // Copy: codec_data is a few dozen (avcC) or hundred (hvcC) bytes that must outlive the caps.
        let codecData = swiftvt_caps_get_buffer(caps, "codec_data").flatMap { buffer in
            MappedBytes.withReadableBytes(of: buffer) { Array($0) }
        }
        return (streamFormat, codecData)
    }

    /// The caps' framerate, when it is a positive fraction.
    private func frameRate(of caps: UnsafeMutablePointer<GstCaps>) -> FrameRate? {
        FrameRate(inCaps: caps).flatMap { $0.isKnown ? $0 : nil }
    }

    /// How the caps' stream-format, codec_data and framerate describe H.264 input, or the ERROR
    /// for caps that can never be decoded.
    private func inputFormat(from caps: UnsafeMutablePointer<GstCaps>) -> Result<DescribedInput, ElementMessage> {
        let (streamFormat, codecData) = Self.streamFormatAndCodecData(of: caps)
        var record: AVCDecoderConfigurationRecord?
        if let codecData {
            do throws(H264Error) {
                record = try AVCDecoderConfigurationRecord(parsing: codecData)
            } catch {
                let hint =
                    codecData.contains(where: { $0 & 0x1F == 15 })
                    ? " It may describe an SVC/MVC stream (a subset SPS), which vtdec does not decode." : ""
                return .failure(
                    .stream(
                        GST_STREAM_ERROR_FORMAT,
                        "the codec_data in the caps is not a valid avcC record (\(error)).\(hint) Check the demuxer or parser upstream, or let h264parse-to-avcc build codec_data from the stream's SPS/PPS.",
                        debug: "stream-format \(streamFormat), \(codecData.count) bytes"))
            }
        }
        return Self.inputFormat(
            streamFormat, lengthPrefixed: ("avc", "avc3"), nalUnitHeaderLength: record?.nalUnitHeaderLength,
            missingRecord: "the avcC record", parsers: "h264parse or h264parse-to-avcc"
        ).map {
            DescribedInput(
                format: $0, configuration: .h264(record), streamFormat: streamFormat, frameRate: frameRate(of: caps))
        }
    }

    /// H.265 profiles (GStreamer's caps names, A.3) whose pictures SwiftVT has no pixel format
    /// for or libavcodec does not decode: more than 10 bits, the screen content, scalable,
    /// multiview and 3D extensions (Annexes F-I).
    static func undecodableH265Profile(_ profile: String) -> Bool {
        let unsupportedMarks = [
            "-12", "-14", "-16", "screen-extended", "scalable", "multiview", "3d-", "high-throughput"
        ]
        return unsupportedMarks.contains { profile.contains($0) }
    }

    /// How the caps describe H.265 input (stream-format hvc1, hev1 or byte-stream; codec_data
    /// the hvcC record, ISO/IEC 14496-15 8.3.3.1), or the ERROR for caps that can never be decoded.
    private func h265InputFormat(from caps: UnsafeMutablePointer<GstCaps>) -> Result<DescribedInput, ElementMessage> {
        let (streamFormat, codecData) = Self.streamFormatAndCodecData(of: caps)
        if let profile = swiftvt_caps_get_string(caps, "profile").map({ String(cString: $0) }),
            Self.undecodableH265Profile(profile)
        {
            return .failure(
                .stream(
                    GST_STREAM_ERROR_CODEC_NOT_FOUND,
                    "the caps announce H.265 profile \"\(profile)\", which vtdec cannot decode (it decodes Main, Main 10, "
                        + "Main 4:2:2 10, Main 4:4:4 and Main 4:4:4 10, in 8 and 10 bits). Use a decoder for that profile, or "
                        + "encode the stream in one of those profiles.",
                    debug: "stream-format \(streamFormat)"))
        }
        var record: HEVCDecoderConfigurationRecord?
        if let codecData {
            do throws(H265Error) {
                record = try HEVCDecoderConfigurationRecord(parsing: codecData)
                // The record's parameter sets must make a description a decoder can take.
                let description = try FormatDescription(hevcDecoderConfigurationRecord: codecData)
                if let depth = description.extensions.bitDepth, depth != 8 && depth != 10 {
                    return .failure(
                        .stream(
                            GST_STREAM_ERROR_CODEC_NOT_FOUND,
                            "the stream is \(depth)-bit H.265 (codec_data's SPS), and vtdec decodes 8- and 10-bit H.265 only. "
                                + "Use a decoder for that bit depth.",
                            debug: "stream-format \(streamFormat)"))
                }
            } catch {
                return .failure(
                    .stream(
                        GST_STREAM_ERROR_FORMAT,
                        "the codec_data in the caps is not a valid hvcC record with usable VPS/SPS/PPS (\(error)). Check the "
                            + "demuxer or parser upstream (h265parse builds codec_data from the stream's parameter sets).",
                        debug: "stream-format \(streamFormat), \(codecData.count) bytes"))
            }
        }
        return Self.inputFormat(
            streamFormat, lengthPrefixed: ("hvc1", "hev1"), nalUnitHeaderLength: record?.nalUnitHeaderLength,
            missingRecord: "the hvcC record", parsers: "h265parse"
        ).map {
            DescribedInput(
                format: $0, configuration: .h265(record), streamFormat: streamFormat, frameRate: frameRate(of: caps))
        }
    }

    /// The input format a stream-format names, for both codecs: the first of `lengthPrefixed`
    /// (avc, hvc1) carries its parameter sets in codec_data, which must be there
    /// (`nalUnitHeaderLength` is its length size); the second (avc3, hev1) in band, with
    /// codec_data's length size when there is one, else 4; anything else is byte-stream.
    private static func inputFormat(
        _ streamFormat: String, lengthPrefixed names: (outOfBand: String, inBand: String), nalUnitHeaderLength: Int?,
        missingRecord: String, parsers: String
    ) -> Result<InputFormat, ElementMessage> {
        switch streamFormat {
        case names.outOfBand:
            guard let nalUnitHeaderLength else {
                return .failure(
                    .stream(
                        GST_STREAM_ERROR_FORMAT,
                        "stream-format=\(streamFormat) needs codec_data (\(missingRecord)) in the caps, and there is none. Put \(parsers) in front of vtdec."
                    ))
            }
            return .success(.lengthPrefixed(nalUnitHeaderLength: nalUnitHeaderLength))
        case names.inBand:
            return .success(.lengthPrefixedWithInBandParameterSets(nalUnitHeaderLength: nalUnitHeaderLength ?? 4))
        default:
            return .success(.byteStream)
        }
    }

    private func accept(_ input: UnsafeMutablePointer<GstVideoCodecState>, _ described: DescribedInput) {
        let reference = CodecStateReference(input)
        state.withLock { $0.input = InputCaps(state: reference, frameRate: described.frameRate) }
        // New codec_data (a resolution change, new PPSs): the next frame checks whether the
        // running session can take it. A change of codec starts a new builder.
        self.input.withLock { $0.setInput(described.format, configuration: described.configuration) }
        log.info(
            object,
            "input: \(described.configuration.codecName), stream-format \(described.streamFormat)\(described.configuration.summary)"
        )
        // The session follows on the first frame, once the parameter sets are known.
    }

    /// The sink caps query: GstVideoDecoder's proxy of downstream's caps, without the fields that
    /// say nothing about the H.264 stream. A downstream that takes any size (fakesink, a src
    /// template of ranges) would otherwise add width/height/framerate *ranges*, and an upstream
    /// capsfilter such as `video/x-h264,stream-format=byte-stream,alignment=au` then fails with
    /// "Output caps are unfixed" where avdec_h264 decodes (its src template has no such ranges).
    /// Fixed values that downstream really demands are kept.
    func sinkCaps(filter: UnsafeMutablePointer<GstCaps>?) -> UnsafeMutablePointer<GstCaps>? {
        guard let proxied = gst_video_decoder_proxy_getcaps(decoder, nil, filter) else { return nil }
        if gst_caps_is_any(proxied) != 0 || gst_caps_is_empty(proxied) != 0 { return proxied }
        // gst_caps_make_writable (a macro): a copy when the caps are shared.
        guard
            let writable = gst_mini_object_make_writable(
                UnsafeMutableRawPointer(proxied).assumingMemoryBound(to: GstMiniObject.self))
        else { return nil }
        let caps = UnsafeMutableRawPointer(writable).assumingMemoryBound(to: GstCaps.self)
        for index in 0..<gst_caps_get_size(caps) {
            guard let structure = gst_caps_get_structure(caps, index) else { continue }
            for field in ["width", "height", "framerate", "pixel-aspect-ratio"] {
                if let value = gst_structure_get_value(structure, field), gst_value_is_fixed(value) == 0 {
                    gst_structure_remove_field(structure, field)
                }
            }
        }
        guard let simplified = gst_caps_simplify(caps) else { return nil }
        guard let filter else { return simplified }
        // Removing fields widened the caps: the answer must still lie within the query's filter.
        defer { gst_caps_unref(simplified) }
        return gst_caps_intersect_full(filter, simplified, GST_CAPS_INTERSECT_FIRST)
    }

    // MARK: Downstream

    /// Downstream's answer to the allocation query. Without GstVideoMeta, pictures are copied:
    /// into downstream's pool when it offers one, else into vtdec's own bounded copy pool
    /// (``copyForDownstreamWithoutVideoMeta(_:format:into:)``), which grows for a downstream that
    /// keeps pictures where a GstBufferPool at its maximum would block.
    func decideAllocation(_ query: UnsafeMutablePointer<GstQuery>) -> Bool {
        var downstreamMinimum: guint = 0
        var downstreamPool: UnsafeMutablePointer<GstBufferPool>?
        if gst_query_get_n_allocation_pools(query) > 0 {
            gst_query_parse_nth_allocation_pool(query, 0, &downstreamPool, nil, &downstreamMinimum, nil)
        }
        noteAllocation(
            downstreamSupportsVideoMeta: gst_query_find_allocation_meta(query, swiftvt_video_meta_api_type(), nil) != 0,
            downstreamMinimumBuffers: Int(downstreamMinimum), downstreamOffersPool: downstreamPool != nil)
        if let downstreamPool { gst_object_unref(downstreamPool) }
        return parent.decideAllocation(query)
    }

    private func noteAllocation(
        downstreamSupportsVideoMeta: Bool, downstreamMinimumBuffers: Int, downstreamOffersPool: Bool
    ) {
        state.withLock {
            $0.downstream = DownstreamAllocation(
                supportsVideoMeta: downstreamSupportsVideoMeta, offersPool: downstreamOffersPool)
        }
        // Downstream keeps this many of the pictures it receives (a sink's last sample, an
        // encoder's lookahead): the pools must not wait for those.
        consumer.setHeldBufferCount(downstreamMinimumBuffers)
        log.debug(
            object,
            "downstream \(downstreamSupportsVideoMeta ? "takes" : "does not take") GstVideoMeta, keeps \(downstreamMinimumBuffers) buffers"
        )
    }

    /// A downstream that renegotiated while playing (a RECONFIGURE event: a capsfilter now asking
    /// for NV12) gets the formats it takes now from the next picture on: the decoders read the
    /// consumer's preferences for every picture, and a new format renegotiates in `finish`. The
    /// flag is set again for the base class, which renegotiates its allocation on it.
    func followDownstreamFormats() {
        let pad = swiftvt_video_decoder_src_pad(decoder)
        guard gst_pad_check_reconfigure(pad) != 0 else { return }
        gst_pad_mark_reconfigure(pad)
        guard let description = state.withLock({ $0.session?.formatDescription }) else { return }
        let formats = preferredPixelFormats(for: description)
        if formats != consumer.pixelFormatPreferences {
            consumer.setPixelFormatPreferences(formats)
            log.info(object, "downstream renegotiated: output formats now \(formats)")
        }
    }

    /// The output formats, most preferred first: the decoder's native format when downstream
    /// takes it (or takes anything), else the formats downstream lists that SwiftVT can convert to.
    /// A VA-API device decodes into NV12 surfaces: where downstream takes NV12 as well as the
    /// native I420, NV12 is offered after it, so the hardware path reads pictures back without
    /// de-interleaving them (the libavcodec path keeps the first, its native format).
    func preferredPixelFormats(for description: FormatDescription) -> [PixelFormat] {
        let native = Self.nativePixelFormat(for: description)
        let surfaceFormat: [PixelFormat] = native == .i420 ? [.nv12VideoRange] : []
        guard let names = swiftvt_pad_peer_video_formats(swiftvt_video_decoder_src_pad(decoder)) else {
            return [native] + surfaceFormat
        }
        defer { g_strfreev(names) }
        var accepted: [PixelFormat] = []
        var index = 0
        while let name = names[index] {
            if let format = VideoFormatMapping.pixelFormat(gstreamerName: String(cString: name)),
                !accepted.contains(format)
            {
                accepted.append(format)
            }
            index += 1
        }
        if accepted.isEmpty { return [native] + surfaceFormat }
        if accepted.contains(native) { return [native] + (accepted.contains(.nv12VideoRange) ? surfaceFormat : []) }
        return accepted
    }

    static func nativePixelFormat(for description: FormatDescription) -> PixelFormat {
        let tenBit = (description.extensions.bitDepth ?? 8) > 8
        switch description.extensions.chromaSubsampling {
        case .yuv422?: return tenBit ? .i422TenBit : .i422
        case .yuv444?: return tenBit ? .i444TenBit : .i444
        default: return tenBit ? .i420TenBit : .i420
        }
    }
}

/// The sample builder of the codec the caps name: vtdec reads H.264 or H.265.
enum VTDecStreamInput: Sendable {
    case h264(H264SampleBuilder)
    case h265(H265SampleBuilder)

    /// codec_data's record, of the codec the caps name.
    enum Configuration {
        case h264(AVCDecoderConfigurationRecord?)
        case h265(HEVCDecoderConfigurationRecord?)

        var codecName: String {
            switch self {
            case .h264: "H.264"
            case .h265: "H.265"
            }
        }

        /// For the log: what codec_data holds.
        var summary: String {
            switch self {
            case .h264(let record?):
                ", codec_data with \(record.sequenceParameterSets.count) SPS and \(record.pictureParameterSets.count) PPS"
            case .h265(let record?):
                ", codec_data with \(record.videoParameterSets.count) VPS, \(record.sequenceParameterSets.count) SPS and "
                    + "\(record.pictureParameterSets.count) PPS"
            default: ""
            }
        }
    }

    var formatDescription: FormatDescription? {
        switch self {
        case .h264(let builder): builder.formatDescription
        case .h265(let builder): builder.formatDescription
        }
    }

    /// New caps: a builder of their codec (kept when the codec stays) told the input format.
    mutating func setInput(_ format: NALSampleInputFormat, configuration: Configuration) {
        switch (self, configuration) {
        case (.h264(var builder), .h264(let record)):
            builder.setInput(format, configuration: record)
            self = .h264(builder)
        case (.h265(var builder), .h265(let record)):
            builder.setInput(format, configuration: record)
            self = .h265(builder)
        case (_, .h264(let record)):
            var builder = H264SampleBuilder()
            builder.setInput(format, configuration: record)
            self = .h264(builder)
        case (_, .h265(let record)):
            var builder = H265SampleBuilder()
            builder.setInput(format, configuration: record)
            self = .h265(builder)
        }
    }

    /// A damaged access unit with no whole NAL unit before the damage, in words.
    struct Damage: Error, CustomStringConvertible {
        var description: String
    }

    /// Reads one access unit.
    mutating func read(_ bytes: UnsafeRawBufferPointer) -> Result<NALSampleAccessUnit, Damage> {
        switch self {
        case .h264(var builder):
            defer { self = .h264(builder) }
            return Result { () throws(H264Error) in try builder.read(bytes) }.mapError { Damage(description: "\($0)") }
        case .h265(var builder):
            defer { self = .h265(builder) }
            return Result { () throws(H265Error) in try builder.read(bytes) }.mapError { Damage(description: "\($0)") }
        }
    }

    /// The frames the decoder holds before a picture comes out (the builders' rule).
    static func decoderDelay(for description: FormatDescription, frameThreads: Int) -> Int? {
        switch description.codecType {
        case .hevc, .hevcInBandParameterSets:
            H265SampleBuilder.decoderDelay(for: description, frameThreads: frameThreads)
        default: H264SampleBuilder.decoderDelay(for: description, frameThreads: frameThreads)
        }
    }
}
