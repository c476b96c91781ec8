import CGStreamer
import CSwiftVTShim
import H264
import H265
import MediaCore
import SwiftVT

/// Reads a ``FrameSilo`` out in decode order into a file: an Annex B byte stream written
/// directly, or MP4/QuickTime through GStreamer's own muxer in an internal pipeline
/// (`appsrc ! mp4mux ! filesink`), so the container is the one every GStreamer user knows.
/// H.264 (avc1 samples) or H.265 (hvc1 samples), as the description says.
struct SiloWriter {
    let silo: FrameSilo
    let description: FormatDescription
    let frameRate: FrameRate

    private var isHEVC: Bool { description.codecType == .hevc }

    struct Summary {
        var frames = 0
        /// Bytes of the coded frames (AVCC sizes: what a container stores as samples).
        var bytes = 0
        /// From the first PTS to the end of the last frame.
        var seconds = 0.0
    }

    private func nanoseconds(_ time: MediaTime) -> Int64 {
        guard time.isNumeric else { return 0 }
        return time.converted(to: 1_000_000_000).value
    }

    /// Counts what was written.
    private struct Tally {
        var summary = Summary()
        var first: Int64?
        var end: Int64 = 0

        mutating func add(_ sample: SampleBuffer, size: Int, pts: Int64, duration: Int64) {
            summary.frames += 1
            summary.bytes += size
            first = min(first ?? pts, pts)
            end = max(end, pts.addingSaturating(max(0, duration)))
            summary.seconds = Double(end - (first ?? 0)) / 1e9
        }
    }

    /// Two IDR access units in a row must differ in idr_pic_id (7.4.3). A range re-encoded by a
    /// fresh encoder starts at id 0 and can follow an IDR picture of the same id (the encoder's
    /// key-frame interval landing right after a scene cut); that IDR picture is given another id.
    /// H.265 has no idr_pic_id (7.3.6.1): its samples go as they are (nil).
    private func idrPictureIDs() -> Result<IDRPictureIDSplicer?, ElementMessage> {
        if isHEVC { return .success(nil) }
        do throws(H264Error) {
            return .success(
                try IDRPictureIDSplicer(
                    parameterSets: description.parameterSets, nalUnitHeaderLength: description.nalUnitHeaderLength))
        } catch {
            return .failure(.stream(GST_STREAM_ERROR_FAILED, "the stream's parameter sets cannot be read: \(error)"))
        }
    }

    /// The access unit to write: as the silo gave it (nil), or with another idr_pic_id.
    private static func spliced(
        _ bytes: UnsafeRawBufferPointer, _ idrPictureIDs: inout IDRPictureIDSplicer?
    ) throws(VTError) -> [UInt8]? {
        do throws(H264Error) {
            return try idrPictureIDs?.next(bytes)
        } catch {
            throw VTError(.corrupt, "an IDR picture in the frame silo cannot be given another idr_pic_id: \(error)")
        }
    }

    // MARK: Annex B

    /// Where the bytes of one Annex B access unit go, and how many: H.264's layout (an AUD, start
    /// codes, SPS/PPS before every IDR) or H.265's (start codes, VPS/SPS/PPS before every IRAP
    /// picture, as vtenc_h265's byte-stream and the x265 CLI write). nil when the sample is not
    /// length-prefixed NAL units.
    private func annexBLayout(
        _ sample: UnsafeRawBufferPointer, isKeyFrame: Bool
    ) -> (size: Int, write: (UnsafeMutableRawBufferPointer) -> Void)? {
        if isHEVC {
            guard
                let layout = H265Output.AccessUnitLayout(
                    sample, description: description, isKeyFrame: isKeyFrame, startCodes: true)
            else { return nil }
            return (layout.size, { layout.write(sample, into: $0) })
        }
        // An access unit delimiter first in every access unit, as vtenc and x264enc write byte
        // streams (7.4.1.2.3; H.222.0 asks for them when the file goes into TS).
        guard
            let layout = H264Output.AnnexBLayout(
                sample, description: description, isKeyFrame: isKeyFrame, delimited: true)
        else { return nil }
        return (layout.size, { layout.write(sample, into: $0) })
    }

    /// Annex B access units (``annexBLayout(_:isKeyFrame:)``).
    func writeAnnexB(to output: PartialOutputFile) -> Result<Summary, ElementMessage> {
        var tally = Tally()
        var idrPictureIDs: IDRPictureIDSplicer?
        switch self.idrPictureIDs() {
        case .success(let splicer): idrPictureIDs = splicer
        case .failure(let message): return .failure(message)
        }
        // One reused buffer: each access unit is laid out here (the copy the new layout needs)
        // and written.
        var unit: [UInt8] = []
        do {
            try silo.forEachSample { sample in
                guard let data = sample.dataBuffer else { return }
                let rewritten = try data.withContiguousBytes { (bytes) throws(VTError) in
                    try Self.spliced(bytes, &idrPictureIDs)
                }
                tally.add(
                    sample, size: rewritten?.count ?? data.count, pts: nanoseconds(sample.presentationTimeStamp),
                    duration: nanoseconds(sample.duration))
                try (rewritten.map { BlockBuffer($0) } ?? data).withContiguousBytes { lengthPrefixed in
                    guard let layout = annexBLayout(lengthPrefixed, isKeyFrame: sample.isSync) else {
                        throw VTError(
                            .corrupt, "a sample in the frame silo is not a sequence of length-prefixed NAL units")
                    }
                    if unit.count < layout.size { unit = [UInt8](repeating: 0, count: layout.size) }
                    unit.withUnsafeMutableBytes { layout.write($0) }
                    // (An untyped closure: a typed-throws one here crashes Swift 6.3's IR generation.)
                    try unit.withUnsafeBytes { bytes in
                        try output.append(UnsafeRawBufferPointer(rebasing: bytes[0..<layout.size]))
                    }
                }
            }
        } catch let error as VTError {
            let code = error.code == .diskFull ? GST_RESOURCE_ERROR_NO_SPACE_LEFT : GST_RESOURCE_ERROR_WRITE
            return .failure(
                ElementMessage(
                    domain: .resource(code),
                    text: "could not write \(output.finalPath): \(GStreamerWording.message(error))",
                    debug: error.description))
        } catch {
            return .failure(.stream(GST_STREAM_ERROR_FAILED, "reading the frame silo failed: \(error)"))
        }
        return .success(tally.summary)
    }

    // MARK: MP4 / QuickTime

    /// The caps of the samples: avc (avc1) or hvc1, with codec_data, so the muxer writes the
    /// sample entry Apple's players require for HEVC (hvc1, parameter sets in hvcC only).
    private func containerCaps() -> UnsafeMutablePointer<GstCaps>? {
        if isHEVC {
            return H265Output.caps(description, streamFormat: .hvc1, frameRate: frameRate, pixelAspectRatio: nil)
        }
        return H264Output.caps(
            description, streamFormat: .avc, width: Int(description.dimensions.width),
            height: Int(description.dimensions.height), frameRate: frameRate)
    }

    func writeContainer(muxer: String, to output: PartialOutputFile) -> Result<Summary, ElementMessage> {
        guard let caps = containerCaps() else {
            return .failure(
                .stream(
                    GST_STREAM_ERROR_FAILED,
                    "could not describe the \(isHEVC ? "H.265" : "H.264") stream as caps (its parameter sets do not parse)"
                ))
        }
        var failure: MuxingPipeline.Failure?
        let started: MuxingPipeline? = {
            do throws(MuxingPipeline.Failure) {
                return try MuxingPipeline(
                    muxer: muxer, location: output.temporaryPath, caps: CapsReference(adopting: caps))
            } catch {
                failure = error
                return nil
            }
        }()
        guard let pipeline = started else {
            return .failure(
                ElementMessage(
                    domain: .core(GST_CORE_ERROR_MISSING_PLUGIN),
                    text: "cannot write \(output.finalPath): \(failure?.message ?? "unknown error")"))
        }
        var timeStamps = MuxerTimeStamps()
        var tally = Tally()
        var idrPictureIDs: IDRPictureIDSplicer?
        switch self.idrPictureIDs() {
        case .success(let splicer): idrPictureIDs = splicer
        case .failure(let message): return .failure(message)
        }
        var pushFailure: String?
        do {
            try silo.forEachSample { sample in
                guard pushFailure == nil, let original = sample.dataBuffer else { return }
                let rewritten = try original.withContiguousBytes { (bytes) throws(VTError) in
                    try Self.spliced(bytes, &idrPictureIDs)
                }
                let data = rewritten.map { BlockBuffer($0) } ?? original
                let size = data.count
                guard let buffer = OwnedBuffer(allocating: size) else {
                    pushFailure = "out of memory"
                    return
                }
                // Copied: the muxer takes GstMemory, and the sample's bytes were read from the
                // silo file into Swift memory that GStreamer cannot own.
                _ = buffer.withWritableBytes { destination in
                    data.withContiguousBytes { bytes in destination.copyMemory(from: bytes) }
                }
                let pts = nanoseconds(sample.presentationTimeStamp)
                tally.add(sample, size: size, pts: pts, duration: nanoseconds(sample.duration))
                let isFirst = tally.summary.frames == 1
                let shifted = timeStamps.next(
                    presentation: pts, decode: nanoseconds(sample.decodeTimeStampOrPresentationTimeStamp))
                let duration =
                    sample.duration.isNumeric
                    ? GstClockTime(max(0, nanoseconds(sample.duration))) : swiftvt_clock_time_none
                buffer.presentationTimeStamp = GstClockTime(shifted.presentation)
                buffer.decodeTimeStamp = GstClockTime(shifted.decode)
                buffer.duration = duration
                buffer.setDeltaUnit(!sample.isSync)
                let flow = pipeline.push(buffer, segmentStart: isFirst ? GstClockTime(timeStamps.segmentStart) : nil)
                if flow != GST_FLOW_OK {
                    pushFailure =
                        pipeline.postedError() ?? "the muxer stopped (\(String(cString: gst_flow_get_name(flow))))"
                }
            }
        } catch {
            pushFailure = pushFailure ?? "reading the frame silo failed: \(error)"
        }
        let finishFailure = pipeline.finish(complete: pushFailure == nil)
        if let problem = pushFailure ?? finishFailure {
            return .failure(
                ElementMessage(
                    domain: .resource(GST_RESOURCE_ERROR_WRITE),
                    text: "could not write \(output.finalPath) through \(muxer): \(problem)"))
        }
        return .success(tally.summary)
    }
}
