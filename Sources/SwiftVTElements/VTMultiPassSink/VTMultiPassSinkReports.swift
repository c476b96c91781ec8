import CGStreamer
import CSwiftVTShim
import Glibc
import H264
import MediaCore
import SoftwareCodecs
import SwiftVT
import Synchronization
import VAAPICodecs

// vtmultipasssink's messages about the passes: progress, the driver's reports in the log, why the
// file is written now, and the summary when it is.
extension VTMultiPassSink {
    // MARK: Progress and the driver's reports

    /// Posts the driver's progress as GStreamer progress messages (code "pass-N") and logs its
    /// other reports.
    func postEvents(of driver: MultiPassDriver) {
        for event in driver.takeEvents() {
            switch event {
            case .progress(let progress):
                postProgress(progress)
            case .passEnded(let pass, let plan):
                if let plan, plan.targetBits > 0 {
                    log.info(
                        object,
                        "after pass \(pass): \(plan.codedBits / 1000) kbit coded for a target of \(Int(plan.targetBits / 1000)) kbit (\(((Double(plan.codedBits) / plan.targetBits - 1) * 100).decimalText(digits: 2)) %)"
                    )
                }
            case .rangesRestored(let pass, let restoration):
                log.warning(
                    object,
                    "pass \(pass): \(restoration.rangesRestored) range(s) did not get all their frames from the encoder; they keep their earlier frames"
                )
            case .passStarting(let pass, let ranges, let plan):
                let quantizers = plan.map { Array($0.quantizers.values) } ?? []
                let mean = quantizers.isEmpty ? 0 : quantizers.reduce(0, +) / Double(quantizers.count)
                log.info(
                    object,
                    "pass \(pass): QP \((quantizers.min() ?? 0).decimalText(digits: 1))...\((quantizers.max() ?? 0).decimalText(digits: 1)) (mean \(mean.decimalText(digits: 2))), ranges \(ranges.map(\.description).joined(separator: ", ")); predicted \(((plan?.predictedBits ?? 0) / 1000).decimalText(digits: 0)) kbit of \(((plan?.targetBits ?? 0) / 1000).decimalText(digits: 0))"
                )
            case .heldFramesLost(let pass, let error):
                log.warning(
                    object,
                    "pass \(pass): the encoder failed to output the frames it held: \(GStreamerWording.message(error))")
            }
        }
    }

    private func postProgress(_ progress: MultiPassProgress) {
        let type: GstProgressType
        switch progress.stage {
        case .started, .reencoding: type = GST_PROGRESS_TYPE_START
        case .advanced: type = GST_PROGRESS_TYPE_CONTINUE
        case .complete: type = GST_PROGRESS_TYPE_COMPLETE
        case .cutShort: type = GST_PROGRESS_TYPE_CANCELED
        }
        guard
            let message = gst_message_new_progress(
                UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstObject.self), type, "pass-\(progress.pass)",
                progress.description)
        else { return }
        // The percentage goes into the message's `percent` field too (gst_message_parse_progress
        // does not read it, gst_message_get_structure does): an application's progress bar needs
        // no parsing of the text. A message just made has one reference: its structure is writable.
        swiftvt_structure_set_int(
            gst_message_writable_structure(message), "percent", Int32(clamping: min(max(progress.percent, 0), 100)))
        gst_element_post_message(element, message)
    }

    /// The element message "vtmultipasssink-done" with the run's figures.
    func postSummary(
        location: String, passes: Int, frames: Int, framesReencoded: Int, bitrate: Double, targetBitrate: Double,
        seconds: Double
    ) {
        guard let structure = gst_structure_new_empty("vtmultipasssink-done") else { return }
        swiftvt_structure_set_string(structure, "location", location)
        swiftvt_structure_set_int(structure, "passes", Int32(clamping: passes))
        swiftvt_structure_set_int(structure, "frames", Int32(clamping: frames))
        swiftvt_structure_set_int(structure, "frames-reencoded", Int32(clamping: framesReencoded))
        swiftvt_structure_set_double(structure, "bitrate", bitrate)
        swiftvt_structure_set_double(structure, "target-bitrate", targetBitrate)
        swiftvt_structure_set_double(structure, "duration", seconds)
        gst_element_post_message(
            element,
            gst_message_new_element(UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstObject.self), structure))
    }

    private var element: UnsafeMutablePointer<GstElement> {
        UnsafeMutableRawPointer(sink).assumingMemoryBound(to: GstElement.self)
    }

    /// The WARNING (or log line) for a file written before the target was reached, or the log
    /// line saying why no further pass runs.
    func tellWhyTheFileIsWrittenNow(_ ending: MultiPassDriver.Outcome.Ending) {
        switch ending {
        case .finished(let stopReason):
            if let stopReason { log.info(object, "no further pass: \(stopReason)") }
        case .plannedByCaller:
            // The sink plans its own passes (Planning.bySession): not reached.
            break
        case .upstreamCannotSeek:
            // As AVAssetExportSession does with a source it cannot read twice.
            ElementMessage.stream(
                GST_STREAM_ERROR_FAILED,
                "upstream cannot seek, so the further passes the encoder asked for cannot run; writing the single-pass result (use a seekable source such as a file for multi-pass quality)"
            )
            .post(from: object, isError: false)
        case .passTakenBack(let taken):
            let target = settings.withLock { Double($0.bitrateKilobits) }
            let seconds = taken.seconds
            let kept = seconds > 0 ? Double(taken.codedBitsKept) / seconds / 1000 : 0
            let landed = seconds > 0 ? Double(taken.codedBits) / seconds / 1000 : 0
            let off = target > 0 ? (kept / target - 1) * 100 : 0
            let text =
                "pass \(taken.pass) came out farther from bitrate=\(target.decimalText(digits: 0)) kbit/s (\(landed.decimalText(digits: 1)) kbit/s) than the result before it, so the file keeps that result (\(kept.decimalText(digits: 1)) kbit/s, \(off.decimalText(digits: 1)) % from the target) and no further pass runs"
            // Within a few per cent is what two-pass encoders promise (x264's 2-pass ends
            // within about 1-2 %); beyond that the user did not get the rate asked for.
            if abs(off) > 5 {
                ElementMessage.stream(GST_STREAM_ERROR_ENCODE, text).post(from: object, isError: false)
            } else {
                log.info(object, text)
            }
        case .passCutShort(let cut):
            let pass = cut.pass
            let restoration = cut.restoration
            let ranges = restoration.rangesKept + restoration.rangesRestored
            let earlier = pass == 2 ? "pass 1's" : "the earlier passes'"
            let result =
                restoration.rangesKept == 0
                ? "the file is \(earlier) complete result (none of the \(ranges) range(s) of pass \(pass) was finished)"
                : "the file keeps the \(restoration.rangesKept) of \(ranges) range(s) pass \(pass) finished, and \(earlier) frames elsewhere"
            ElementMessage.stream(
                GST_STREAM_ERROR_FAILED,
                "pass \(pass) was cut short: the stream ended after \(cut.framesReceived) of the \(cut.framesExpected) frames to re-encode "
                    + "(an interrupt, such as Ctrl-C under gst-launch-1.0 -e, or a source that does not deliver frames again after a seek, "
                    + "as videotestsrc num-buffers=N); \(result). For every pass, let the pipeline run to its end from a source that can seek, such as a file"
            )
            .post(from: object, isError: false)
        }
    }
}
