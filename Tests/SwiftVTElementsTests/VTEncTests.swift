import CGStreamer
import H264
import SwiftVTTestSupport
import Testing

/// `vtenc` in real pipelines: every property checked on the bitstream with the H264 module, and
/// the output decoded by GStreamer's own avdec_h264.
@Suite("vtenc", .serialized)
struct VTEncTests {
    static let source =
        "videotestsrc num-buffers=60 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"

    struct Picture {
        var sliceKinds: Set<SliceKind>
        var isIDR: Bool
        var entropyCodingModeFlag: Bool
    }

    /// The pictures of an AVCC output, parsed with the H264 module.
    static func pictures(_ result: PipelineResult) throws -> (sps: SequenceParameterSet, pictures: [Picture]) {
        let record = try AVCDecoderConfigurationRecord(
            parsing: try #require(result.caps.first?.codecData, "no codec_data"))
        var store = ParameterSetStore()
        for set in record.sequenceParameterSets {
            _ = try set.withUnsafeBytes { try store.storeSequenceParameterSet($0) }
        }
        for set in record.pictureParameterSets {
            _ = try set.withUnsafeBytes { try store.storePictureParameterSet($0) }
        }
        let sps = try #require(store.sequenceParameterSet(id: store.sequenceParameterSetIDs[0]))
        var pictures: [Picture] = []
        for buffer in result.buffers {
            var kinds = Set<SliceKind>()
            var idr = false
            var cabac = false
            for nal in try H264ParseToAVCCTests.nalUnits(of: buffer) where NALUnitType(rawValue: nal[0]).isVCL {
                let header = try SliceHeader.parse(
                    nalUnit: nal, pictureParameterSets: { store.pictureParameterSet(id: $0) },
                    sequenceParameterSets: { store.sequenceParameterSet(id: $0) })
                kinds.insert(header.sliceKind)
                idr = idr || header.idrPicFlag
                cabac = store.pictureParameterSet(id: header.picParameterSetID)?.entropyCodingModeFlag ?? false
            }
            pictures.append(Picture(sliceKinds: kinds, isIDR: idr, entropyCodingModeFlag: cabac))
        }
        return (sps, pictures)
    }

    @Test(
        "defaults: decodable by avdec_h264, same frame count and timestamps, B-frames with DTS before PTS, key frames flagged"
    )
    func defaults() throws {
        let encoded = runPipeline("\(Self.source) ! vtenc bitrate=800 ! fakesink name=sink")
        #expect(encoded.errors.isEmpty, "\(encoded.errors)")
        #expect(encoded.buffers.count == 60)
        #expect(encoded.caps.first?.description.contains("stream-format=(string)avc") == true)
        let (sps, pictures) = try Self.pictures(encoded)
        #expect(sps.displayWidth == 320 && sps.displayHeight == 240)
        #expect(pictures.first?.isIDR == true)
        #expect(pictures.contains { $0.sliceKinds.contains(.b) })
        #expect(zip(encoded.buffers, pictures).allSatisfy { $0.isDeltaUnit == !$1.isIDR })
        let decodeTimes = encoded.buffers.compactMap(\.dts)
        #expect(decodeTimes.count == 60 && zip(decodeTimes, decodeTimes.dropFirst()).allSatisfy { $0 < $1 })
        #expect(zip(encoded.buffers.compactMap(\.dts), encoded.buffers.compactMap(\.pts)).allSatisfy { $0 <= $1 })
        let raw = runPipeline("\(Self.source) ! fakesink name=sink", keepBytes: false)
        let decoded = runPipeline(
            "\(Self.source) ! vtenc bitrate=800 ! avdec_h264 ! fakesink name=sink", keepBytes: false)
        #expect(decoded.errors.isEmpty)
        // With B-frames the encoder starts PTS at 1000 hours (as x264enc does, so that DTS need not
        // be negative; the segment moves with it): the spacing is what must be kept.
        let decodedTimes = decoded.buffers.compactMap(\.pts)
        let rawTimes = raw.buffers.compactMap(\.pts)
        #expect(decodedTimes.count == 60 && rawTimes.count == 60)
        #expect(decodedTimes.map { $0 - decodedTimes[0] } == rawTimes.map { $0 - rawTimes[0] })
    }

    @Test(
        "allow-frame-reordering=false: no B slices; entropy-mode=cavlc: entropy_coding_mode_flag 0; max-keyframe-interval=10: IDR every 10 frames at most"
    )
    func properties() throws {
        let noB = try Self.pictures(
            runPipeline("\(Self.source) ! vtenc allow-frame-reordering=false ! fakesink name=sink"))
        #expect(!noB.pictures.contains { $0.sliceKinds.contains(.b) })
        let cavlc = try Self.pictures(runPipeline("\(Self.source) ! vtenc entropy-mode=cavlc ! fakesink name=sink"))
        #expect(cavlc.pictures.allSatisfy { !$0.entropyCodingModeFlag })
        let cabac = try Self.pictures(runPipeline("\(Self.source) ! vtenc entropy-mode=cabac ! fakesink name=sink"))
        #expect(cabac.pictures.allSatisfy { $0.entropyCodingModeFlag })
        let keyed = try Self.pictures(
            runPipeline("\(Self.source) ! vtenc max-keyframe-interval=10 ! fakesink name=sink"))
        let idrIndices = keyed.pictures.indices.filter { keyed.pictures[$0].isIDR }
        #expect(idrIndices.first == 0)
        #expect(
            zip(idrIndices, idrIndices.dropFirst()).allSatisfy { $1 - $0 <= 10 }
                && (keyed.pictures.count - (idrIndices.last ?? 0)) <= 10)
    }

    @Test("downstream asking for constrained-baseline gets profile_idc 66 with constraint_set1, no B slices, CAVLC")
    func constrainedBaseline() throws {
        let result = runPipeline(
            "\(Self.source) ! vtenc ! video/x-h264,profile=constrained-baseline ! fakesink name=sink")
        #expect(result.errors.isEmpty, "\(result.errors)")
        let (sps, pictures) = try Self.pictures(result)
        #expect(sps.profileIdc == 66 && sps.constraintSet1Flag)
        #expect(result.caps.first?.description.contains("profile=(string)constrained-baseline") == true)
        #expect(pictures.allSatisfy { !$0.sliceKinds.contains(.b) && !$0.entropyCodingModeFlag })
    }

    @Test(
        "byte-stream output: an access unit delimiter first in every access unit, then SPS and PPS before every IDR, start codes, decodable"
    )
    func byteStream() throws {
        let result = runPipeline(
            "\(Self.source) ! vtenc max-keyframe-interval=20 ! video/x-h264,stream-format=byte-stream ! fakesink name=sink"
        )
        #expect(result.errors.isEmpty)
        var idrCount = 0
        for buffer in result.buffers {
            let types = AnnexB.nalUnits(in: buffer.bytes).map { buffer.bytes[$0.payloadOffset] & 0x1F }
            // 7.4.1.2.3: the AUD first (as x264enc writes it; H.222.0 asks for it in TS).
            #expect(types.first == 9, "an access unit without its delimiter first: \(types)")
            if types.contains(5) {
                idrCount += 1
                #expect(types.starts(with: [9, 7, 8]), "an IDR access unit without SPS/PPS in front: \(types)")
            }
        }
        #expect(idrCount >= 3)
        let decoded = runPipeline(
            "\(Self.source) ! vtenc ! video/x-h264,stream-format=byte-stream ! h264parse ! avdec_h264 ! fakesink name=sink",
            keepBytes: false)
        #expect(decoded.buffers.count == 60)
    }

    @Test("realtime=true: no frame held beyond the reported latency (output follows input with no reordering delay)")
    func realtime() throws {
        let result = runPipeline("\(Self.source) ! vtenc realtime=true ! fakesink name=sink")
        let (_, pictures) = try Self.pictures(result)
        #expect(!pictures.contains { $0.sliceKinds.contains(.b) })
        #expect(result.buffers.allSatisfy { $0.dts == $0.pts })
    }

    @Test("mp4mux output decodes with qtdemux ! avdec_h264 to every frame")
    func movieFile() throws {
        let output = try #require(temporaryFile(named: "vtenc.mp4", contents: []))
        defer { removeTemporaryFile(output) }
        let mux = runPipeline("\(Self.source) ! vtenc bitrate=600 ! mp4mux ! filesink location=\(output)")
        #expect(mux.reachedEndOfStream && mux.errors.isEmpty)
        let decoded = runPipeline(
            "filesrc location=\(output) ! qtdemux ! avdec_h264 ! fakesink name=sink", keepBytes: false)
        #expect(decoded.buffers.count == 60)
    }

    @Test("impossible sizes and settings: clear errors")
    func impossibleInput() {
        let odd = runPipeline(
            "videotestsrc num-buffers=5 ! video/x-raw,format=I420,width=321,height=241 ! vtenc ! fakesink name=sink",
            timeout: 30)
        #expect(odd.ended && !odd.errors.isEmpty, "odd 4:2:0 size was accepted")
        let cbr = runPipeline("\(Self.source) ! vtenc rate-control=cbr ! fakesink name=sink", timeout: 30)
        #expect(cbr.errors.first?.contains("bitrate") == true, "\(cbr.errors)")
        let limits = runPipeline("\(Self.source) ! vtenc data-rate-limits=nonsense ! fakesink name=sink", timeout: 30)
        #expect(limits.errors.first?.contains("data-rate-limits") == true, "\(limits.errors)")
        let hardware = runPipeline("\(Self.source) ! vtenc_h264_hw name=encoder ! fakesink name=sink", timeout: 30)
        // No VA device in this run: the state change fails with one error saying hardware=require
        // found no device that encodes H.264, and nothing is encoded.
        #expect(hardware.errors.count == 1, "\(hardware.errors)")
        #expect(hardware.buffers.isEmpty)
        #expect(
            hardware.errors.first?.hasPrefix("encoder: hardware=require, but no VA-API device here encodes H.264")
                == true,
            "\(hardware.errors)")
    }

    @Test("a force-key-unit request from downstream gives an IDR at that frame")
    func forcedKeyFrame() throws {
        // 150 frames: prerolling fills the encoder's lookahead (about 50 frames with the default
        // settings) before the request can be sent, so it asks for a later frame.
        let source =
            "videotestsrc num-buffers=150 pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=30/1"
        let result = runPipeline(
            "\(source) ! vtenc name=enc max-keyframe-interval=1000 ! fakesink name=sink"
        ) { pipeline in
            let bin = UnsafeMutableRawPointer(pipeline).assumingMemoryBound(to: GstBin.self)
            guard let encoder = gst_bin_get_by_name(bin, "enc") else { return }
            defer { gst_object_unref(encoder) }
            // Running time of frame 97 at 30 fps.
            let runningTime = GstClockTime(97) * GstClockTime(1_000_000_000) / 30
            if let pad = gst_element_get_static_pad(encoder, "src") {
                _ = gst_pad_send_event(pad, gst_video_event_new_upstream_force_key_unit(runningTime, 1, 1))
                gst_object_unref(pad)
            }
        }
        #expect(result.errors.isEmpty)
        let (_, pictures) = try Self.pictures(result)
        #expect(pictures.count == 150)
        // Decode order differs from presentation order; find the IDRs by their output PTS rank.
        let keyTimes = zip(result.buffers, pictures).filter { $1.isIDR }.compactMap { $0.0.pts }
        let allTimes = result.buffers.compactMap(\.pts).sorted()
        let keyIndices = keyTimes.compactMap { allTimes.firstIndex(of: $0) }
        #expect(keyIndices == [0, 97], "IDRs at presentation positions \(keyIndices)")
    }

    @Test("an input resolution change mid-stream: the encoder drains, starts a new session and sends new codec_data")
    func resolutionChange() throws {
        let result = runPipeline(
            "concat name=c ! vtenc ! fakesink name=sink "
                + "videotestsrc num-buffers=20 ! video/x-raw,format=I420,width=320,height=240,framerate=30/1 ! c. "
                + "videotestsrc num-buffers=20 ! video/x-raw,format=I420,width=160,height=120,framerate=30/1 ! c.")
        #expect(result.errors.isEmpty, "\(result.errors)")
        #expect(result.buffers.count == 40)
        #expect(result.caps.compactMap(\.width) == [320, 160])
        #expect(Set(result.caps.compactMap(\.codecData)).count == 2)
        #expect(result.buffers.count > 20 && !result.buffers[20].isDeltaUnit)
    }
}
