import H264
import SwiftVTTestSupport
import Testing

/// `h264parse-to-avcc` in real pipelines, against GStreamer's own `h264parse` and `avdec_h264`.
@Suite("h264parse-to-avcc", .serialized)
struct H264ParseToAVCCTests {
    /// The NAL units of an AVCC access unit.
    static func nalUnits(of buffer: CapturedBuffer, lengthSize: Int = 4) throws -> [[UInt8]] {
        try buffer.bytes.withUnsafeBytes { try AVCC.nalUnitRanges(in: $0, nalUnitHeaderLength: lengthSize) }
            .map { Array(buffer.bytes[$0]) }
    }

    static func vclNALUnits(of buffer: CapturedBuffer, lengthSize: Int = 4) throws -> [[UInt8]] {
        try nalUnits(of: buffer, lengthSize: lengthSize).filter { NALUnitType(rawValue: $0[0]).isVCL }
    }

    /// MD5 of decoded I420 pictures, one digest per caps segment.
    static func decodedDigests(of result: PipelineResult) -> [String] {
        var digests: [String] = []
        var hash = MD5()
        var currentCaps = -1
        for buffer in result.buffers {
            if buffer.capsIndex != currentCaps && currentCaps >= 0 {
                digests.append(hash.finalize())
                hash = MD5()
            }
            currentCaps = buffer.capsIndex
            hash.update(buffer.bytes)
        }
        digests.append(hash.finalize())
        return digests
    }

    static let decodeToI420 = "avdec_h264 ! videoconvert ! video/x-raw,format=I420 ! fakesink name=sink sync=false"

    @Test(
        "every undamaged corpus stream: same access units as h264parse, VCL NAL units byte-identical, same parameter sets, avdec_h264 decodes to MANIFEST's avdec_md5",
        .requiresCorpus)
    func corpusStreamsAgainstH264Parse() throws {
        guard let manifest = Corpus.manifest() else { return }
        var compared = 0
        for entry in manifest where !entry.isDamaged {
            let path = try #require(Corpus.path(of: entry))
            let ours = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink sync=false")
            let reference = runPipeline(
                "filesrc location=\(path) ! h264parse ! video/x-h264,stream-format=avc,alignment=au ! fakesink name=sink sync=false"
            )
            #expect(ours.ended && ours.errors.isEmpty, "\(entry.file): \(ours.errors)")
            #expect(
                ours.buffers.count == reference.buffers.count,
                "\(entry.file): \(ours.buffers.count) access units, h264parse \(reference.buffers.count)")
            #expect(ours.buffers.count == entry.frames, "\(entry.file)")
            let ourRecord = try AVCDecoderConfigurationRecord(parsing: try #require(ours.caps.first?.codecData))
            let referenceRecord = try AVCDecoderConfigurationRecord(
                parsing: try #require(reference.caps.last?.codecData))
            #expect(Set(ourRecord.sequenceParameterSets) == Set(referenceRecord.sequenceParameterSets), "\(entry.file)")
            #expect(Set(ourRecord.pictureParameterSets) == Set(referenceRecord.pictureParameterSets), "\(entry.file)")
            for (index, (mine, theirs)) in zip(ours.buffers, reference.buffers).enumerated() {
                let same =
                    try Self.vclNALUnits(of: mine)
                    == Self.vclNALUnits(of: theirs, lengthSize: referenceRecord.nalUnitHeaderLength)
                #expect(same, "\(entry.file): access unit \(index) differs in its VCL NAL units")
                if !same { break }
            }
            #expect(
                ours.buffers.allSatisfy { $0.pts != nil && $0.duration != nil }, "\(entry.file): missing timestamps")
            let decoded = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! \(Self.decodeToI420)")
            #expect(Self.decodedDigests(of: decoded) == [entry.avdecMD5], "\(entry.file)")
            compared += 1
        }
        #expect(compared >= 20)
    }

    @Test("unaligned input in small pieces gives the same access units as whole-file input", .requiresCorpus)
    func unalignedInput() throws {
        let entry = try #require(Corpus.entry("CI_MW_D.264"))
        let path = try #require(Corpus.path(of: entry))
        let whole = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink")
        for blockSize in [7, 333, 4096] {
            let pieces = runPipeline(
                "filesrc location=\(path) blocksize=\(blockSize) ! h264parse-to-avcc ! fakesink name=sink")
            #expect(pieces.buffers.map(\.bytes) == whole.buffers.map(\.bytes), "blocksize \(blockSize)")
        }
    }

    @Test(
        "two streams of different resolution in a row: new caps with new codec_data before the first access unit of each; decoding gives both references in order",
        .requiresCorpus)
    func resolutionChange() throws {
        let first = try #require(Corpus.entry("BA_MW_D.264"))
        let second = try #require(Corpus.entry("Cisco_Men_whisper_640x320_CAVLC_Bframe_9.264"))
        let joined = try #require(Corpus.bytes(of: first)) + (try #require(Corpus.bytes(of: second)))
        let path = try #require(temporaryFile(named: "joined.264", contents: joined))
        defer { removeTemporaryFile(path) }

        let parsed = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink")
        #expect(parsed.errors.isEmpty)
        #expect(parsed.buffers.count == first.frames + second.frames)
        let sizes = parsed.caps.map { ($0.width ?? 0, $0.height ?? 0) }
        #expect(sizes.first! == (176, 144) && sizes.last! == (640, 320), "\(sizes)")
        let codecData = Set(parsed.caps.compactMap(\.codecData))
        #expect(codecData.count >= 2)
        // The caps for the second stream arrive exactly before its first access unit, which is an IDR.
        let switchCaps = try #require(parsed.caps.last { $0.width == 640 })
        #expect(switchCaps.bufferIndex == first.frames)
        let firstOfSecond = parsed.buffers[first.frames]
        #expect(!firstOfSecond.isDeltaUnit)
        // The new codec_data carries the new SPS.
        let record = try AVCDecoderConfigurationRecord(parsing: try #require(switchCaps.codecData))
        let newSPS = try #require(
            record.sequenceParameterSets.compactMap { try? SequenceParameterSet.parse(nalUnit: $0) }
                .first { $0.displayWidth == 640 })
        #expect(newSPS.displayHeight == 320)

        let decoded = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! \(Self.decodeToI420)")
        #expect(Self.decodedDigests(of: decoded) == [first.avdecMD5, second.avdecMD5])
    }

    @Test(
        "B-frame streams without upstream timestamps: PTS on every access unit, strictly ordered by POC within each GOP, DTS increasing and never after PTS",
        .requiresCorpus,
        arguments: ["Cisco_Men_whisper_640x320_CABAC_Bframe_9.264", "VID_1280x720_cabac_temporal_direct.264"])
    func derivedTimestamps(file: String) throws {
        let entry = try #require(Corpus.entry(file))
        let path = try #require(Corpus.path(of: entry))
        let result = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink")
        #expect(result.buffers.count == entry.frames)
        // POC and epoch of each output access unit, from the H264 module's own parse.
        var assembler = AccessUnitAssembler()
        let record = try AVCDecoderConfigurationRecord(parsing: try #require(result.caps.first?.codecData))
        for set in record.sequenceParameterSets + record.pictureParameterSets {
            _ = set.withUnsafeBytes { assembler.push(nalUnit: $0) }
        }
        var pictures: [AccessUnitPicture] = []
        for buffer in result.buffers {
            for nal in try Self.nalUnits(of: buffer) {
                if let picture = nal.withUnsafeBytes({ assembler.push(nalUnit: $0) }).completedPicture {
                    pictures.append(picture)
                }
            }
        }
        if let last = assembler.finish() { pictures.append(last) }
        #expect(pictures.count == result.buffers.count)
        #expect(pictures.contains { $0.containsBSlices })
        let timestamps = result.buffers.compactMap(\.pts)
        #expect(timestamps.count == result.buffers.count, "an access unit has no PTS")
        var byGroup: [Int: [(poc: Int64, pts: UInt64)]] = [:]
        for (picture, pts) in zip(pictures, timestamps) {
            byGroup[picture.pictureOrderCountEpoch, default: []].append((picture.pictureOrderCount.picOrderCnt, pts))
        }
        for (epoch, group) in byGroup {
            let inPOCOrder = group.sorted { $0.poc < $1.poc }.map(\.pts)
            #expect(
                zip(inPOCOrder, inPOCOrder.dropFirst()).allSatisfy { $0 < $1 },
                "GOP \(epoch): PTS not increasing with POC")
        }
        let decodeTimes = result.buffers.compactMap(\.dts)
        #expect(decodeTimes.count == result.buffers.count)
        #expect(zip(decodeTimes, decodeTimes.dropFirst()).allSatisfy { $0 < $1 })
        #expect(zip(decodeTimes, timestamps).allSatisfy { $0 <= $1 })
    }

    @Test("upstream timestamps are kept (x264enc with B-frames)")
    func upstreamTimestampsKept() {
        let source =
            "videotestsrc num-buffers=40 ! video/x-raw,width=320,height=240,framerate=25/1 ! x264enc bframes=2 speed-preset=ultrafast"
        let encoded = runPipeline(
            "\(source) ! video/x-h264,stream-format=byte-stream ! fakesink name=sink", keepBytes: false)
        let parsed = runPipeline(
            "\(source) ! video/x-h264,stream-format=byte-stream ! h264parse-to-avcc ! fakesink name=sink",
            keepBytes: false)
        #expect(parsed.errors.isEmpty)
        #expect(parsed.buffers.count == 40)
        #expect(parsed.buffers.map(\.pts) == encoded.buffers.map(\.pts))
        #expect(parsed.buffers.map(\.dts) == encoded.buffers.map(\.dts))
        // Key frames exactly where x264enc put them.
        #expect(parsed.buffers.map(\.isDeltaUnit) == encoded.buffers.map(\.isDeltaUnit))
    }

    @Test(
        "upstream's framerate wins over the VUI's, as in h264parse; the VUI's is the fallback; durations and derived timestamps follow the rate chosen"
    )
    func upstreamFrameRateWins() throws {
        // x264enc writes VUI timing for 25 frames/s (E.2.1); no B-frames, so output order is
        // decoding order and the derived timestamps are i x the frame duration.
        let encoded = runPipeline(
            "videotestsrc num-buffers=20 ! video/x-raw,width=320,height=240,framerate=25/1 ! x264enc bframes=0 speed-preset=ultrafast "
                + "! video/x-h264,stream-format=byte-stream ! fakesink name=sink")
        #expect(encoded.buffers.count == 20)
        let path = try #require(temporaryFile(named: "vui25.h264", contents: encoded.buffers.flatMap(\.bytes)))
        defer { removeTemporaryFile(path) }

        func framerate(_ result: PipelineResult) -> String? {
            let marker = "framerate=(fraction)"
            guard let caps = result.caps.last?.description,
                let start = caps.indices.first(where: { caps[$0...].hasPrefix(marker) })
            else { return nil }
            return String(caps[start...].dropFirst(marker.count).prefix { $0.isNumber || $0 == "/" })
        }
        // filesrc gives no timestamps: the parser derives them from the rate it chose. The queue
        // puts the parser in push mode, where the capsfilter's caps reach it (pulling from
        // filesrc, a parser sees no upstream caps at all).
        let upstream50 = "filesrc location=\(path) ! queue ! video/x-h264,stream-format=byte-stream,framerate=50/1"
        let ours = runPipeline("\(upstream50) ! h264parse-to-avcc ! fakesink name=sink", keepBytes: false)
        let peer = runPipeline(
            "\(upstream50) ! h264parse ! video/x-h264,stream-format=avc,alignment=au ! fakesink name=sink",
            keepBytes: false)
        #expect(ours.reachedEndOfStream && ours.errors.isEmpty, "\(ours.errors)")
        #expect(framerate(ours) == "50/1")
        #expect(framerate(peer) == "50/1", "h264parse: \(String(describing: peer.caps.last?.description))")
        #expect(ours.buffers.count == 20)
        #expect(ours.buffers.allSatisfy { $0.duration == 20_000_000 }, "\(ours.buffers.map(\.duration))")
        #expect(ours.buffers.map(\.pts) == (0..<20).map { UInt64($0) * 20_000_000 }, "\(ours.buffers.map(\.pts))")

        // Without a rate upstream, the VUI's.
        let vuiOnly = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink", keepBytes: false)
        #expect(framerate(vuiOnly) == "25/1")
        #expect(vuiOnly.buffers.allSatisfy { $0.duration == 40_000_000 })
        #expect(vuiOnly.buffers.map(\.pts) == (0..<20).map { UInt64($0) * 40_000_000 })
    }

    @Test("stream-format=avc3 keeps the parameter sets in band; avc leaves them to codec_data", .requiresCorpus)
    func avc3() throws {
        let entry = try #require(Corpus.entry("VID_1280x720_cabac_temporal_direct.264"))
        let path = try #require(Corpus.path(of: entry))
        let source = try #require(Corpus.bytes(of: entry))
        let sourceSPSCount = AnnexB.nalUnits(in: source).filter { source[$0.payloadOffset] & 0x1F == 7 }.count
        let avc3 = runPipeline(
            "filesrc location=\(path) ! h264parse-to-avcc ! video/x-h264,stream-format=avc3 ! fakesink name=sink")
        let avc = runPipeline(
            "filesrc location=\(path) ! h264parse-to-avcc ! video/x-h264,stream-format=avc ! fakesink name=sink")
        #expect(avc3.caps.first?.description.contains("stream-format=(string)avc3") == true)
        let inBand = try avc3.buffers.map { try Self.nalUnits(of: $0).filter { $0[0] & 0x1F == 7 }.count }.reduce(0, +)
        #expect(inBand == sourceSPSCount && sourceSPSCount >= 2)
        #expect(try avc.buffers.allSatisfy { try !Self.nalUnits(of: $0).contains { [7, 8].contains($0[0] & 0x1F) } })
        #expect(avc.buffers.count == avc3.buffers.count)
    }

    @Test("mp4mux accepts the output and the file decodes to the reference", .requiresCorpus)
    func muxesToMP4() throws {
        let entry = try #require(Corpus.entry("Cisco_Men_whisper_640x320_CABAC_Bframe_9.264"))
        let path = try #require(Corpus.path(of: entry))
        let output = try #require(temporaryFile(named: "out.mp4", contents: []))
        defer { removeTemporaryFile(output) }
        let mux = runPipeline("filesrc location=\(path) ! h264parse-to-avcc ! mp4mux ! filesink location=\(output)")
        #expect(mux.reachedEndOfStream && mux.errors.isEmpty, "\(mux.errors)")
        let decoded = runPipeline("filesrc location=\(output) ! qtdemux ! \(Self.decodeToI420)")
        #expect(Self.decodedDigests(of: decoded) == [entry.avdecMD5])
    }
}

/// Damaged and hostile input: every pipeline ends, with EOS or a clear error, and never crashes.
@Suite("h264parse-to-avcc: damaged input", .serialized)
struct H264ParseToAVCCDamagedInputTests {
    static let timeLimit = 30.0

    @Test("the corpus's damaged streams end within the time limit", .requiresCorpus)
    func damagedCorpusStreams() throws {
        guard let manifest = Corpus.manifest() else { return }
        for entry in manifest where entry.isDamaged {
            let path = try #require(Corpus.path(of: entry))
            let result = runPipeline(
                "filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink", timeout: Self.timeLimit)
            #expect(result.ended, "\(entry.file) did not end")
            if entry.file == "sps_subsetsps_bothVUI.264" {
                #expect(result.errors.first?.contains("no base-layer (AVC) picture") == true, "\(result.errors)")
                #expect(result.buffers.isEmpty)
            } else {
                #expect(result.errors.isEmpty, "\(entry.file): \(result.errors)")
                #expect(!result.buffers.isEmpty)
            }
        }
    }

    @Test("an IDR missing at the start: access units before the first IDR are skipped with a warning", .requiresCorpus)
    func leadingNonRandomAccessPictures() throws {
        let entry = try #require(Corpus.entry("BA_MW_D.264"))
        var bytes = try #require(Corpus.bytes(of: entry))
        // Cut the stream after its parameter sets and first IDR picture, keep SPS/PPS in front.
        let units = AnnexB.nalUnits(in: bytes)
        let firstNonIDR = try #require(units.firstIndex { bytes[$0.payloadOffset] & 0x1F == 1 })
        let idr = try #require(units.firstIndex { bytes[$0.payloadOffset] & 0x1F == 5 })
        let header = Array(bytes[..<units[idr].startCodeOffset])
        bytes = header + Array(bytes[units[firstNonIDR].startCodeOffset...])
        let path = try #require(temporaryFile(named: "no-idr.264", contents: bytes))
        defer { removeTemporaryFile(path) }
        let result = runPipeline(
            "filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink", timeout: Self.timeLimit)
        #expect(result.ended)
        #expect(
            result.warnings.contains { $0.contains("before the first IDR or recovery-point picture") },
            "\(result.warnings)")
        #expect(result.buffers.first.map { !$0.isDeltaUnit } ?? true)
    }

    @Test("random bytes: a clear error, no output")
    func randomBytes() throws {
        var generator = SeededGenerator(seed: 99)
        let bytes = (0..<50_000).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let path = try #require(temporaryFile(named: "random.264", contents: bytes))
        defer { removeTemporaryFile(path) }
        let result = runPipeline(
            "filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink", timeout: Self.timeLimit)
        #expect(result.ended)
        #expect(result.errors.first?.contains("No decodable H.264 access unit") == true, "\(result.errors)")
    }

    @Test("100 seeded damaged variants (bit flips, truncations) of corpus streams all end", .requiresCorpus)
    func damagedVariants() throws {
        guard let manifest = Corpus.manifest() else { return }
        let sources = manifest.filter { !$0.isDamaged && $0.bytes < 700_000 }
        var generator = SeededGenerator(seed: 3)
        var errors = 0
        var warned = 0
        for variant in 0..<100 {
            let entry = sources[variant % sources.count]
            var bytes = try #require(Corpus.bytes(of: entry))
            if variant % 4 == 0 {
                bytes.removeLast(Int.random(in: 1..<bytes.count, using: &generator))
            } else {
                for _ in 0..<(1 + variant % 50) {
                    let index = Int.random(in: 0..<bytes.count, using: &generator)
                    bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &generator)
                }
            }
            let path = try #require(temporaryFile(named: "variant-\(variant).264", contents: bytes))
            defer { removeTemporaryFile(path) }
            let result = runPipeline(
                "filesrc location=\(path) ! h264parse-to-avcc ! fakesink name=sink", timeout: Self.timeLimit,
                keepBytes: false)
            #expect(result.ended, "variant \(variant) of \(entry.file) did not end within \(Self.timeLimit) s")
            if !result.errors.isEmpty { errors += 1 }
            if !result.warnings.isEmpty { warned += 1 }
        }
        // Damage in headers is reported; the figures go into the test log for the record.
        print("damaged variants: \(errors) ended in an error, \(warned) warned, \(100 - errors) reached EOS")
        #expect(warned > 0)
    }
}
