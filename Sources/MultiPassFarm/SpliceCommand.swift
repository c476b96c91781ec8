import H264
import H265
import MediaCore
import SwiftVT
import SwiftVTFileSupport

/// `swiftvt-farm splice`: the chunks' frames, in order, as one H.264 or H.265 stream for the job's
/// muxer (the splice file of docs/farm.md, read by `appsrc ! mp4mux ! filesink`).
///
/// - One set of parameter sets: every chunk must have been coded with the same parameter sets
///   (the same encoder and settings), since the file has one avcC or hvcC.
/// - H.265 chunks join as they are: each starts with an IDR picture (x265's closed GOPs), which
///   begins a coded video sequence (8.1.3) and resets the POC, and H.265 has no idr_pic_id.
/// - H.264 idr_pic_id: every chunk's encoder starts afresh, so the first IDR picture of a chunk has
///   the id the previous chunk's last IDR picture may have had too. Where they are equal the
///   chunk's first IDR picture is given another (``IDRPictureIDRewriting``): two consecutive
///   IDR access units must differ (7.4.3), and where chunks meet they can be consecutive (a
///   scene cut on a chunk's last frame).
/// - Time stamps as a muxer needs them (``MuxerTimeStamps``).
struct SpliceCommand {
    let chunks: [ChunkDirectory]
    let outputPath: String

    init(_ options: FarmOptions) throws(FarmFailure) {
        guard !options.positional.isEmpty else { throw .usage("splice takes the chunk directories, in time order") }
        chunks = options.positional.map(ChunkDirectory.init(path:))
        outputPath = try options.requiredString("output")
    }

    /// What the splice has seen so far.
    private struct Progress {
        var reference: FormatDescription?
        var idrPictureIDs: IDRPictureIDSplicer?
        var frames = 0
        var bytes = 0
        var timeStamps = MuxerTimeStamps()
    }

    func run() throws(FarmFailure) {
        guard let output = OutputFile(creating: outputPath) else {
            throw .failed("cannot create \(outputPath): \(OutputFile.lastErrorDescription)")
        }
        var progress = Progress()
        for (index, chunk) in chunks.enumerated() {
            let silo = try chunk.openSilo()
            var firstIDRInChunk = true
            do {
                try silo.forEachSample { sample in
                    try append(sample, chunk: index, firstIDRInChunk: &firstIDRInChunk, progress: &progress, to: output)
                }
                try silo.close()
            } catch let failure as FarmFailure {
                throw failure
            } catch {
                throw .failed("cannot read the frames of chunk \(index) in \(chunk.path): \(error)")
            }
        }
        guard progress.frames > 0 else { throw .failed("the chunks hold no frames") }
        guard output.commit() else { throw .failed("cannot write \(outputPath): \(OutputFile.lastErrorDescription)") }
        print(
            "spliced frames=\(progress.frames) bytes=\(progress.bytes) chunks=\(chunks.count) idr_pic_id_rewritten=\(progress.idrPictureIDs?.rewrittenCount ?? 0)"
        )
    }

    private func append(
        _ sample: SampleBuffer, chunk: Int, firstIDRInChunk: inout Bool, progress: inout Progress, to output: OutputFile
    ) throws(FarmFailure) {
        guard let data = sample.dataBuffer, let description = sample.formatDescription else {
            throw .failed("chunk \(chunk) holds a frame without data or format description")
        }
        let pts = Self.nanoseconds(sample.presentationTimeStamp)
        let times = progress.timeStamps.next(
            presentation: pts, decode: Self.nanoseconds(sample.decodeTimeStampOrPresentationTimeStamp))
        if let reference = progress.reference {
            guard description.parameterSets == reference.parameterSets else {
                throw .failed(
                    "chunk \(chunk) was coded with other parameter sets than chunk 0; encode every chunk with the same swiftvt-farm and settings"
                )
            }
        } else {
            try start(
                with: description, segmentStart: progress.timeStamps.segmentStart, progress: &progress, to: output)
        }
        // Nil: the access unit goes out as the silo gave it.
        let rewritten = try data.withContiguousBytes { (bytes) throws(FarmFailure) -> [UInt8]? in
            do throws(H264Error) {
                return try progress.idrPictureIDs?.next(bytes, distinctFromLastIDR: firstIDRInChunk && chunk > 0)
            } catch {
                throw .failed("chunk \(chunk): an IDR picture cannot be given another idr_pic_id: \(error)")
            }
        }
        if sample.isSync { firstIDRInChunk = false }
        let size = rewritten?.count ?? data.count
        var record: [UInt8] = []
        record.reserveCapacity(29)
        Self.append(times.presentation, to: &record)
        Self.append(times.decode, to: &record)
        Self.append(sample.duration.isNumeric ? Self.nanoseconds(sample.duration) : -1, to: &record)
        record.append(sample.isSync ? 1 : 0)
        Self.append(UInt32(size), to: &record)
        let written =
            output.write(record)
            && (rewritten.map { output.write($0) } ?? data.withContiguousBytes { output.write($0) })
        guard written else { throw .failed("cannot write \(outputPath): \(OutputFile.lastErrorDescription)") }
        progress.frames += 1
        progress.bytes += size
    }

    /// The file's header, from the first frame's description, and the parameter sets the
    /// idr_pic_id rewriting reads slice headers with.
    private func start(
        with description: FormatDescription, segmentStart: Int64, progress: inout Progress, to output: OutputFile
    ) throws(FarmFailure) {
        let record: [UInt8]
        switch description.codecType {
        case .h264:
            guard description.nalUnitHeaderLength == 4, let avcC = description.avcDecoderConfigurationRecord else {
                throw .failed("chunk 0's frames are not H.264 with 4-byte NAL unit lengths and an avcC record")
            }
            record = avcC
            do throws(H264Error) {
                progress.idrPictureIDs = try IDRPictureIDSplicer(
                    parameterSets: description.parameterSets, nalUnitHeaderLength: 4)
            } catch {
                throw .failed("chunk 0's parameter sets cannot be read: \(error)")
            }
        case .hevc:
            guard description.nalUnitHeaderLength == 4, let hvcC = description.hevcDecoderConfigurationRecord else {
                throw .failed("chunk 0's frames are not H.265 with 4-byte NAL unit lengths and an hvcC record")
            }
            record = hvcC
        default:
            throw .failed("chunk 0's frames are \(description.codecType), neither H.264 nor H.265")
        }
        progress.reference = description
        // Version 2: the codec's four-character code follows the version (version 1 files,
        // without it, were H.264).
        var header = Array("SVTSPLIC".utf8)
        Self.append(UInt32(2), to: &header)
        let code = description.codecType.bytes
        header += [code.0, code.1, code.2, code.3]
        Self.append(UInt32(clamping: description.dimensions.width), to: &header)
        Self.append(UInt32(clamping: description.dimensions.height), to: &header)
        Self.append(UInt32(record.count), to: &header)
        header += record
        Self.append(segmentStart, to: &header)
        guard output.write(header) else {
            throw .failed("cannot write \(outputPath): \(OutputFile.lastErrorDescription)")
        }
    }

    static func nanoseconds(_ time: MediaTime) -> Int64 {
        time.isNumeric ? time.converted(to: 1_000_000_000).value : 0
    }

    static func append<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }

}
