import CGStreamer
import H264
import SwiftVTTestSupport
import Testing

/// `vtdec` in real pipelines: decoded pictures against the corpus's reference MD5s.
@Suite("vtdec", .serialized)
struct VTDecTests {
    static let toI420 = "videoconvert ! video/x-raw,format=I420 ! fakesink name=sink sync=false"

    /// MD5 of the decoded I420 pictures, one digest per caps segment.
    static func digests(_ result: PipelineResult) -> [String] {
        H264ParseToAVCCTests.decodedDigests(of: result)
    }

    @Test(
        "every undamaged corpus stream decodes to MANIFEST's ref_md5 (exact cropping), through h264parse-to-avcc and through h264parse",
        .requiresCorpus)
    func corpusStreams() throws {
        guard let manifest = Corpus.manifest() else { return }
        var checked = 0
        var failures: [String] = []
        for entry in manifest where !entry.isDamaged {
            let path = try #require(Corpus.path(of: entry))
            for parser in ["h264parse-to-avcc", "h264parse"] {
                let result = runPipeline("filesrc location=\(path) ! \(parser) ! vtdec ! \(Self.toI420)")
                #expect(result.errors.isEmpty, "\(entry.file) via \(parser): \(result.errors)")
                #expect(
                    result.buffers.count == entry.frames, "\(entry.file) via \(parser): \(result.buffers.count) frames")
                let digest = Self.digests(result)
                if digest != [entry.referenceMD5] { failures.append("\(entry.file) via \(parser): \(digest)") }
            }
            checked += 1
        }
        #expect(failures.isEmpty, "\(failures)")
        #expect(checked >= 20)
    }

    @Test("byte-stream input straight from an AU-aligned parser, and avc from qtdemux", .requiresCorpus)
    func otherInputs() throws {
        let entry = try #require(Corpus.entry("Cisco_Men_whisper_640x320_CABAC_Bframe_9.264"))
        let path = try #require(Corpus.path(of: entry))
        let byteStream = runPipeline(
            "filesrc location=\(path) ! h264parse ! video/x-h264,stream-format=byte-stream,alignment=au ! vtdec ! \(Self.toI420)"
        )
        #expect(Self.digests(byteStream) == [entry.referenceMD5])
        let output = try #require(temporaryFile(named: "in.mp4", contents: []))
        defer { removeTemporaryFile(output) }
        _ = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! mp4mux ! filesink location=\(output)")
        let demuxed = runPipeline("filesrc location=\(output) ! qtdemux ! vtdec ! \(Self.toI420)")
        #expect(Self.digests(demuxed) == [entry.referenceMD5])
    }

    @Test(
        "two resolutions in a row: the decoder drains, starts a new session and renegotiates; both references in order",
        .requiresCorpus)
    func resolutionChange() throws {
        let first = try #require(Corpus.entry("BA_MW_D.264"))
        let second = try #require(Corpus.entry("Cisco_Men_whisper_640x320_CAVLC_Bframe_9.264"))
        let joined = try #require(Corpus.bytes(of: first)) + (try #require(Corpus.bytes(of: second)))
        let path = try #require(temporaryFile(named: "joined.264", contents: joined))
        defer { removeTemporaryFile(path) }
        let result = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! vtdec ! \(Self.toI420)")
        #expect(result.errors.isEmpty)
        #expect(result.buffers.count == first.frames + second.frames)
        #expect(result.caps.compactMap(\.width) == [176, 640])
        #expect(Self.digests(result) == [first.referenceMD5, second.referenceMD5])
    }

    @Test(
        "hardware=require without a VA device: the state change fails with one clear error naming what was tried",
        .requiresCorpus)
    func hardwareRequired() throws {
        let entry = try #require(Corpus.entry("BA_MW_D.264"))
        let path = try #require(Corpus.path(of: entry))
        for element in ["vtdec hardware=require", "vtdec_hw"] {
            // Named, so that the message's first word (the posting instance's name) is known.
            let name = "decoder"
            let result = runPipeline(
                "filesrc location=\(path) ! h264parse-to-avcc ! \(element) name=\(name) ! fakesink name=sink",
                timeout: 30)
            #expect(result.ended)
            let error = try #require(result.errors.first, "\(element) did not fail")
            // At the state change, before any data: one ERROR, nothing decoded, the element's
            // name and property, the displays tried, what to do.
            #expect(result.errors.count == 1, "\(result.errors)")
            #expect(result.buffers.isEmpty)
            #expect(error.hasPrefix("\(name): hardware=require, but no hardware device here decodes H.264"), "\(error)")
            #expect(error.contains("tried:"), "\(error)")
            #expect(error.contains("Use hardware=auto"), "\(error)")
            #expect(!error.contains("hardwarePolicy"), "\(error)")
        }
        let software = runPipeline(
            "filesrc location=\(path) ! h264parse-to-avcc ! vtdec hardware=disable ! \(Self.toI420)")
        #expect(Self.digests(software) == [entry.referenceMD5])
    }

    @Test("avc caps without codec_data: a not-negotiated error that says what is missing")
    func missingCodecData() {
        let result = runPipeline(
            "videotestsrc num-buffers=5 ! x264enc ! capssetter replace=true caps=\"video/x-h264,stream-format=avc,alignment=au,width=320,height=240,framerate=30/1\" ! vtdec ! fakesink name=sink",
            timeout: 30)
        #expect(result.ended)
        #expect(result.errors.first?.contains("codec_data") == true, "\(result.errors)")
    }

    @Test(
        "damaged streams and 100 bit-flipped variants: every pipeline ends, errors are counted, no crash",
        .requiresCorpus)
    func damagedInput() throws {
        guard let manifest = Corpus.manifest() else { return }
        for entry in manifest where entry.isDamaged {
            let path = try #require(Corpus.path(of: entry))
            let result = runPipeline(
                "filesrc location=\(path) ! h264parse-to-avcc ! vtdec max-errors=-1 ! fakesink name=sink", timeout: 60,
                keepBytes: false)
            #expect(result.ended, "\(entry.file)")
        }
        let sources = manifest.filter { !$0.isDamaged && $0.bytes < 700_000 }
        var generator = SeededGenerator(seed: 11)
        var warned = 0
        for variant in 0..<100 {
            let entry = sources[variant % sources.count]
            var bytes = try #require(Corpus.bytes(of: entry))
            for _ in 0..<(1 + variant % 30) {
                let index = Int.random(in: 0..<bytes.count, using: &generator)
                bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
            }
            let path = try #require(temporaryFile(named: "variant.264", contents: bytes))
            defer { removeTemporaryFile(path) }
            let result = runPipeline(
                "filesrc location=\(path) ! h264parse-to-avcc ! vtdec max-errors=-1 ! fakesink name=sink", timeout: 60,
                keepBytes: false)
            #expect(result.ended, "variant \(variant) of \(entry.file) did not end")
            if !result.warnings.isEmpty { warned += 1 }
        }
        print("vtdec damaged variants: \(warned) of 100 reported decoding errors")
    }
}

@Suite("vtdec: seeking", .serialized)
struct VTDecSeekTests {
    @Test(
        "an MP4 made with mp4mux from a corpus stream, seeked to the middle: exactly the frames from the next key frame on, no stale frame",
        .requiresCorpus)
    func seekToTheMiddle() throws {
        let entry = try #require(Corpus.entry("test_cif_I_CABAC_slice.264"))
        let path = try #require(Corpus.path(of: entry))
        let movie = try #require(temporaryFile(named: "seek.mp4", contents: []))
        defer { removeTemporaryFile(movie) }
        let mux = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! mp4mux ! filesink location=\(movie)")
        #expect(mux.reachedEndOfStream)
        let decode =
            "filesrc location=\(movie) ! qtdemux ! vtdec ! videoconvert ! video/x-raw,format=I420 ! fakesink name=sink sync=false"
        let whole = runPipeline(decode)
        #expect(whole.buffers.count == entry.frames)
        let middle = try #require(whole.buffers[entry.frames / 2].pts)
        let seeked = runPipeline(decode, seekTo: middle)
        #expect(seeked.errors.isEmpty, "\(seeked.errors)")
        let first = try #require(seeked.buffers.first)
        // The key frame at or after the middle, from the whole decode.
        let keyFrameIndex = try #require(
            whole.buffers.indices.first { index in
                (whole.buffers[index].pts ?? 0) >= middle && !whole.buffers[index].isDeltaUnit
            })
        #expect(first.pts == whole.buffers[keyFrameIndex].pts, "first frame after the seek is not the next key frame")
        let expected = Array(whole.buffers[keyFrameIndex...])
        #expect(seeked.buffers.count == expected.count)
        for (index, (got, want)) in zip(seeked.buffers, expected).enumerated() {
            #expect(
                got.pts == want.pts && got.bytes == want.bytes,
                "frame \(index) after the seek differs (stale or wrong picture)")
            if got.bytes != want.bytes { break }
        }
    }
}
