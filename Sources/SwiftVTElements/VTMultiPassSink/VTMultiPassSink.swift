import CGStreamer
import CSwiftVTShim
import Glibc
import H264
import MediaCore
import SoftwareCodecs
import SwiftVT
import Synchronization
import VAAPICodecs

/// `vtmultipasssink`: multi-pass H.264 or H.265 encoding (`codec`) in one pipeline run (VideoToolbox's
/// `VTMultiPassStorage` + `VTFrameSilo` model, the way AVAssetExportSession uses it).
///
/// Pass 1 encodes the frames as they arrive into a ``FrameSilo`` while the session records its
/// analysis in a ``MultiPassStorage``. At EOS the session ends the pass and says which time ranges
/// it wants again; if upstream can seek, the sink seeks upstream to each range in turn (the
/// GStreamer form of `resetForReadingTimeRanges`), swallowing the EOS that ends each one, and the
/// new frames replace the old in the silo. When no further pass is wanted the silo is read out in
/// decode order into the file — `.mp4`/`.mov` through `mp4mux`/`qtmux` in an internal pipeline,
/// `.h264`/`.264` as an Annex B byte stream — under a temporary name that is renamed to
/// `location` only when the file is complete; then the pipeline's EOS is posted. H.265 (x265)
/// goes through the same storage, silo and rate control; only the file's layout differs (hvc1 in
/// MP4/QuickTime, `.h265`/`.265` Annex B).
///
/// The passes themselves (ranges, seeks, pass ends, passes cut short or taken back, what the
/// summary counts) are ``MultiPassDriver``'s: the sink feeds it buffers and EOS, does what it
/// answers, and words what it reports as GStreamer messages.
///
/// Threads: everything runs on the streaming thread except the seeks, which are sent from a
/// GStreamer thread pool (a flushing seek waits for the streaming thread).
///
/// Locks: `settings` and `run` are never held together, and neither is held while calling out
/// (posting messages, seeking, the session, the driver, the silo, the muxing pipeline): each is
/// taken to read or swap a few fields, and what it holds (the session, the silo, the driver) is
/// used after it is released. A bus sync handler or a property read from another thread never
/// waits behind an encode.
final class VTMultiPassSink: BaseSinkSubclass, EncodingElement, @unchecked Sendable {
    // `sink` is the GObject that owns this object; mutable state is behind the mutexes. What
    // VTMultiPassSinkReports.swift (the messages about the passes) uses is internal, not private.
    let sink: UnsafeMutablePointer<GstBaseSink>
    static let debugCategory = DebugCategory(
        named: "vtmultipasssink", description: "SwiftVT multi-pass H.264/H.265 file sink")
    let log = VTMultiPassSink.debugCategory
    var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(sink) }

    /// Property values, as set on the element (declared in ``interface(for:)``).
    struct Settings: EncoderSettingsHolder {
        var encoder: EncoderSettings
        var location: String?
        var bitrateKilobits: UInt32 = 2000
        var maxPasses: UInt32 = 3
        var tempLocation: String?
        var keepTemporaryFiles = false
        var profile = ProfileSetting.high
        var codec = CodecSetting.h264
    }

    let settings: Mutex<Settings>

    /// What one run (READY -> PAUSED ... -> READY) holds, phase by phase: nothing until start,
    /// then the files (``Prepared``), then from the caps on the session (``Encoding``).
    struct Run {
        var prepared: Prepared?
        /// Kept after stop: the `active-backend` property.
        var activeBackend = ""

        var encoding: Encoding? { prepared?.encoding }
    }

    /// Made in start: where the file goes and the run's temporary files.
    struct Prepared {
        var output: PartialOutputFile
        var container: OutputContainer
        var location: String
        var silo: FrameSilo
        var storage: MultiPassStorage
        /// From the caps on.
        var encoding: Encoding?
    }

    /// Made from the caps: the session and what it encodes.
    struct Encoding {
        var session: CompressionSession
        /// The passes: ranges, seeks, pass ends, what the file keeps.
        var driver: MultiPassDriver
        var videoInfo: VideoInfoBox
        var pixelFormat: PixelFormat
        var frameRate: FrameRate
    }

    private let run = Mutex(Run())

    /// The VA-API factory (and its opened device) is kept from the hardware=require check in
    /// start to stop.
    private let sessions: SessionFactory<VAH264EncoderFactory>
    /// The caps setCaps refused last (one ERROR, not one per sticky-event retry).
    private let refusedCaps = CapsRefusals()

    init(instance: UnsafeMutableRawPointer, context: ElementClassContext) {
        sink = instance.assumingMemoryBound(to: GstBaseSink.self)
        settings = Mutex(Settings(encoder: EncoderSettings(hardware: context.defaultHardware)))
        sessions = SessionFactory(log: log, element: instance)
        // A file writer: no clock synchronisation, like filesink.
        gst_base_sink_set_sync(sink, 0)
    }

    func withSettings<Result>(_ body: (inout Settings) -> Result) -> Result { settings.withLock { body(&$0) } }

    var activeBackend: String { run.withLock { $0.activeBackend } }

    // MARK: Interface

    static func interface(for context: ElementClassContext) -> ElementInterface<VTMultiPassSink> {
        ElementInterface(
            longName: "SwiftVT multi-pass H.264/H.265 file sink", classification: "Sink/File/Video/Encoder",
            description:
                "Encodes H.264 or H.265 (codec) in several passes in one pipeline run (VideoToolbox's multi-pass model: analysis storage and a "
                + "frame silo; later passes re-encode only the time ranges the rate control asks for) and writes the file. "
                // GObject cannot hide the properties GstBaseSink installs: what they do here is said
                // where gst-inspect-1.0 users read, in the element's description.
                + "Like filesink it does not sync on the clock (sync=false), so the inherited GstBaseSink properties max-bitrate, "
                + "throttle-time, render-delay, processing-deadline, ts-offset, max-lateness and qos have no effect (blocksize neither: "
                + "it only pulls); with sync=true every pass runs in real time, and frames dropped by throttle-time, max-lateness "
                + "or qos are missing from the file",
            // 8-bit 4:2:0, whose H.264 profiles the `profile` property names (H.265: Main). Sizes
            // as vtenc's: from 1x1 (an H.264 Annex B file takes them; mp4mux and qtmux take 16x16
            // and larger, x265 64x64, which set_caps checks) to 16384, where x264 and VA-API
            // devices stop.
            padTemplates: [
                .sink(
                    "video/x-raw, format = (string) { I420, NV12 }, width = (int) [ 1, 16384 ], height = (int) [ 1, 16384 ], "
                        + "framerate = (fraction) [ 0/1, 2147483647/1 ]")
            ],
            properties: [
                .string(
                    "location", nick: "Location",
                    blurb:
                        "The file to write: .mp4 (mp4mux), .mov (qtmux), .h264 or .264 (H.264 Annex B byte stream), .h265, .265 "
                        + "or .hevc (H.265 Annex B byte stream). It appears only "
                        + "when complete (written under a temporary name beside it, then renamed)",
                    default: nil, at: \.location),
                .uint(
                    "bitrate", nick: "Bit rate", blurb: "Target average bit rate of the whole file in kbit/s",
                    1...2_000_000,
                    default: 2000, at: \.bitrateKilobits),
                .uint(
                    "max-passes", nick: "Maximum passes",
                    blurb:
                        "Passes at most, the first included (1 = single pass); passes stop earlier once the size is within 1 % "
                        + "of the target and no GOP is worth re-encoding", 1...10, default: 3, at: \.maxPasses),
                .string(
                    "temp-location", nick: "Temporary location",
                    blurb: "Directory for the frame silo and the analysis storage (default: the directory of location)",
                    default: nil, at: \.tempLocation),
                .boolean(
                    "keep-temporary-files", nick: "Keep temporary files",
                    blurb: "Keep the analysis storage after the run (for inspection); the frame silo is always removed",
                    default: false, at: \.keepTemporaryFiles),
                .enumeration(
                    "codec", nick: "Codec",
                    blurb:
                        "Coding standard of the file (VideoToolbox's codec type): h264, or h265 (HEVC Main, with x265; "
                        + "in MP4/QuickTime as hvc1)", default: CodecSetting.h264, at: \.codec),
                EncoderProperties.hardware(default: context.defaultHardware),
                .enumeration(
                    "profile", nick: "Profile",
                    blurb:
                        "H.264 profile of the output (codec=h264); H.265 files are Main (high and main are taken, the "
                        + "baseline profiles refused)", default: ProfileSetting.high, at: \.profile),
                EncoderProperties.entropyMode(),
                EncoderProperties.allowFrameReordering(),
                EncoderProperties.maxKeyframeInterval(
                    blurb:
                        "Frames between IDR pictures at most (0 = ten seconds of frames, as x264enc's automatic setting, plus scene cuts). GOPs are "
                        + "the unit of re-encoding: shorter GOPs let later passes re-encode less, longer ones compress better"
                ),
                EncoderProperties.maxThreads(),
                EncoderProperties.activeBackend()
            ] + EncoderProperties.frameQPBounds() + EncoderProperties.gopStructure()
                + EncoderProperties.adaptiveQuantization())
    }

    // MARK: Lifecycle

    /// The run is prepared (hardware=require, settings that contradict each other, the location:
    /// the temporary output is created beside it so an unwritable location fails now, not after
    /// an hour of encoding; what crashed runs left is removed; the silo and the storage) before the base class's
    /// NULL -> READY, which calls its start vfunc: a failed start makes GstBaseSink post its own
    /// fallback ERROR ("Failed to start") after the element's, and one clear ERROR is the goal.
    func prepare(_ transition: GstStateChange) -> Bool {
        transition == GST_STATE_CHANGE_NULL_TO_READY ? prepareRun() : true
    }

    /// The base class will not call stop for a NULL -> READY that failed: the run is dropped here.
    func transitionFailed(_ transition: GstStateChange) {
        if transition == GST_STATE_CHANGE_NULL_TO_READY { _ = stop() }
    }

    private func prepareRun() -> Bool {
        let current = settings.withLock { $0 }
        // hardware=require: whether a VA-API device here encodes H.264 at all (none encodes
        // HEVC), before any file is touched (the factory keeps the opened device for this run's
        // sessions).
        let hardwareAllowed =
            current.codec == .h265
            ? HardwareRequirement.checkHEVCEncoding(current.encoder.hardware, element: object)
            : sessions.checkHardwarePolicy(current.encoder.hardware, work: .encoding, element: object)
        guard hardwareAllowed else { return false }
        refusedCaps.forget()
        if let problem = Self.settingsProblem(current) {
            problem.post(from: object, isError: true)
            return false
        }
        guard let location = current.location, !location.isEmpty else {
            ElementMessage(
                domain: .resource(GST_RESOURCE_ERROR_NOT_FOUND),
                text:
                    "no location set; set location to the file to write (\(OutputContainer.extensions(for: current.codec)))"
            )
            .post(from: object, isError: true)
            return false
        }
        guard let container = OutputContainer(location: location) else {
            ElementMessage(
                domain: .resource(GST_RESOURCE_ERROR_SETTINGS),
                text:
                    "cannot tell the file type of \"\(location)\"; end location with \(OutputContainer.extensions(for: current.codec))"
            )
            .post(from: object, isError: true)
            return false
        }
        if let written = container.annexBCodec, written != current.codec {
            ElementMessage(
                domain: .resource(GST_RESOURCE_ERROR_SETTINGS),
                text:
                    "\"\(location)\" names an \(written.standardName) byte stream, but codec=\(current.codec.nick); end location with "
                    + "\(OutputContainer.extensions(for: current.codec)), or set codec=\(written.nick)"
            )
            .post(from: object, isError: true)
            return false
        }
        let temporaryDirectory =
            current.tempLocation.flatMap { $0.isEmpty ? nil : $0 } ?? PartialOutputFile.directory(of: location)
        for removed in PartialOutputFile.removeStaleFiles(besides: location)
            + FrameSilo.removeStaleFiles(in: temporaryDirectory)
        {
            log.info(object, "removed \(removed), left by a run that did not finish")
        }
        do throws(VTError) {
            let output = try PartialOutputFile(finalPath: location)
            let silo: FrameSilo
            let storage: MultiPassStorage
            do throws(VTError) {
                silo = try FrameSilo(directory: temporaryDirectory)
                storage = try MultiPassStorage(
                    creatingIn: temporaryDirectory, timeRange: .invalid, keepOnClose: current.keepTemporaryFiles)
            } catch {
                output.discard()
                ElementMessage(
                    domain: .resource(GST_RESOURCE_ERROR_OPEN_WRITE),
                    text:
                        "cannot create the frame silo and analysis storage in \(temporaryDirectory): \(GStreamerWording.message(error)); set temp-location to a writable directory with room for the compressed video",
                    debug: error.description
                )
                .post(from: object, isError: true)
                return false
            }
            run.withLock { run in
                run.prepared = Prepared(
                    output: output, container: container, location: location, silo: silo, storage: storage)
            }
            log.info(object, "writing \(location) (\(container)), temporary files in \(temporaryDirectory)")
            return true
        } catch {
            ElementMessage(
                domain: .resource(GST_RESOURCE_ERROR_OPEN_WRITE),
                text: "cannot write \"\(location)\": \(GStreamerWording.message(error)); "
                    + (error.systemError == EISDIR
                        ? "set location to a file name (e.g. \(location)/out.mp4)"
                        : "choose a location in a writable directory"),
                debug: error.description
            )
            .post(from: object, isError: true)
            return false
        }
    }

    /// PAUSED -> READY: drops everything of the run; a file not complete by now is not written.
    func stop() -> Bool {
        let prepared = run.withLock { run in
            defer { run.prepared = nil }
            return run.prepared
        }
        prepared?.encoding?.session.invalidate()
        try? prepared?.silo.close()
        try? prepared?.storage.close()
        prepared?.output.discard()
        sessions.close()
        return true
    }

    /// Settings that can never work together, found at the state change rather than at the caps
    /// (which upstream would send again with every buffer).
    private static func settingsProblem(_ settings: Settings) -> ElementMessage? {
        let interval = settings.encoder.maxKeyframeInterval
        // H.264 only: an H.265 slice segment header has no idr_pic_id to repeat (H.265 7.3.6.1).
        guard settings.codec == .h265 || interval == 0 || interval >= minimumGOPLength else {
            return ElementMessage(
                domain: .library(GST_LIBRARY_ERROR_SETTINGS),
                text:
                    "max-keyframe-interval=\(interval) is too short for multi-pass encoding; use 0 or at least \(minimumGOPLength). Re-encoded ranges start each with a fresh encoder, whose first IDR picture has idr_pic_id 0: with GOPs of at least \(minimumGOPLength) frames the encoder places no IDR picture right after another, so none is consecutive, so a spliced IDR never repeats its neighbour's idr_pic_id (7.4.3)"
            )
        }
        if settings.codec == .h265 {
            return hevcSettingsProblem(settings)
        }
        // The profile's own rules (no CABAC in Baseline, A.2.1) are the session's: asked here
        // with the settings alone, before any frame.
        var properties = CompressionProperties(profileLevel: H264ProfileLevel(profile: settings.profile.sessionValue))
        settings.encoder.apply(to: &properties)
        do throws(VTError) {
            try properties.validate()
        } catch {
            let property = error.property.map { EncoderNotices.propertyName($0) } ?? "settings"
            return ElementMessage(
                domain: .library(GST_LIBRARY_ERROR_SETTINGS),
                text: "\(property) with profile=\(settings.profile.nick): \(GStreamerWording.problem(error))",
                debug: error.description)
        }
        return nil
    }

    /// H.265 settings the x265 session would refuse at the caps: said at the state change. HEVC
    /// has one entropy coder (CABAC, H.265 9.3) and no Baseline profile (A.3 starts at Main).
    private static func hevcSettingsProblem(_ settings: Settings) -> ElementMessage? {
        var properties = CompressionProperties()
        settings.encoder.apply(to: &properties)
        do throws(VTError) {
            try properties.validate(codecType: .hevc)
        } catch {
            let property = error.property.map { EncoderNotices.propertyName($0) } ?? "settings"
            return ElementMessage(
                domain: .library(GST_LIBRARY_ERROR_SETTINGS),
                text: "\(property) with codec=h265: \(GStreamerWording.problem(error)); or set codec=h264",
                debug: error.description)
        }
        if settings.profile == .baseline || settings.profile == .constrainedBaseline {
            return ElementMessage(
                domain: .library(GST_LIBRARY_ERROR_SETTINGS),
                text:
                    "profile=\(settings.profile.nick) with codec=h265: HEVC has no Baseline profile (its lowest is Main, "
                    + "H.265 A.3.2, which the file uses); set profile=main or high, or codec=h264")
        }
        return nil
    }

    // MARK: Caps

    /// New caps: one ERROR for caps that can never work, not one per sticky-event retry.
    func setCaps(_ caps: UnsafeMutablePointer<GstCaps>) -> Bool {
        if let reason = refusedCaps.reasonPosted(for: caps) {
            log.debug(object, "refusing the same caps again: \(reason)")
            return false
        }
        guard let refusal = configure(for: caps) else { return true }
        refusedCaps.refuse(caps, with: refusal, from: object)
        return false
    }

    /// Makes the session and the driver for the caps (or checks that caps sent again after a
    /// seek are the same); the ERROR to post otherwise.
    private func configure(for caps: UnsafeMutablePointer<GstCaps>) -> ElementMessage? {
        let info = VideoInfoBox()
        guard gst_video_info_from_caps(&info.info, caps) != 0 else {
            return .stream(GST_STREAM_ERROR_FORMAT, "the caps are not raw video it can read")
        }
        let width = Int(info.info.width)
        let height = Int(info.info.height)
        // The sink template takes I420 and NV12 only.
        let format = VideoFormatMapping.pixelFormat(of: info.info) ?? .i420
        let rate = FrameRate(Int(info.info.fps_n), Int(info.info.fps_d))
        guard let prepared = run.withLock({ $0.prepared }) else {
            return .stream(
                GST_STREAM_ERROR_FAILED, "caps arrived before the run was prepared (the element is not in READY)")
        }
        let container = prepared.container
        let codec = settings.withLock { $0.codec }
        if container.annexBCodec == nil, codec == .h264, width < 16 || height < 16 {
            // mp4mux's and qtmux's H.264 caps start at 16x16 (x264enc ! mp4mux fails the same
            // way, with not-negotiated): said here, before a pass is encoded for nothing.
            return .stream(
                GST_STREAM_ERROR_FORMAT,
                "\(width)x\(height) is smaller than the 16x16 that \(container == .mp4 ? "mp4mux" : "qtmux") takes for H.264; "
                    + "write an Annex B file (location=NAME.h264) or scale the video up")
        }
        if let encoding = prepared.encoding {
            let existing = (
                Int(encoding.videoInfo.info.width), Int(encoding.videoInfo.info.height), encoding.pixelFormat
            )
            // After a seek upstream sends its caps again: the same ones are fine.
            guard existing == (width, height, format) else {
                return .stream(
                    GST_STREAM_ERROR_FORMAT,
                    "the video changed from \(existing.0)x\(existing.1) \(GStreamerWording.name(of: existing.2)) to \(width)x\(height) \(GStreamerWording.name(of: format)) mid-stream; a multi-pass file has one size and format (put videoscale/videoconvert with fixed caps in front)"
                )
            }
            return nil
        }
        let current = settings.withLock { $0 }
        var properties = CompressionProperties(averageBitRate: Int(current.bitrateKilobits) * 1000)
        let frameRate = rate.framesPerSecond
        properties.expectedFrameRate = frameRate
        VideoSignalCaps.apply(caps: caps, info: info.info, to: &properties)
        // GOPs are the unit of re-encoding: 0 means MultiPassGOP's automatic interval.
        var encoderSettings = current.encoder
        MultiPassGOP.applyKeyFrameInterval(
            Int(current.encoder.maxKeyframeInterval), frameRate: frameRate, to: &properties)
        encoderSettings.maxKeyframeInterval = Int32(clamping: properties.maxKeyFrameInterval)
        // H.265: the profile follows the input (Main for 8-bit 4:2:0), as vtenc_h265's.
        if current.codec == .h264 { properties.profileLevel = H264ProfileLevel(profile: current.profile.sessionValue) }
        let feed = FrameSiloFeed(silo: prepared.silo)
        let handler = feed.outputHandler
        do throws(VTError) {
            let session = try sessions.makeCompressionSession(
                codecType: current.codec.codecType, width: width, height: height, sourcePixelFormat: format,
                settings: encoderSettings,
                properties: properties, outputHandler: handler)
            let duration = swiftvt_pad_peer_duration(swiftvt_base_sink_pad(sink))
            // Upstream's duration (for progress only) may be anything: a count that is no Int
            // (beyond its range) means "unknown" rather than a trap.
            let expected: Int? =
                duration > 0 && frameRate != nil
                ? Int(exactly: (Double(duration) / 1e9 * (frameRate ?? 0)).rounded()) : nil
            let driver = try MultiPassDriver(
                session: session, feed: feed, storage: prepared.storage, maximumPasses: Int(current.maxPasses),
                expectedFramesInFirstPass: expected)
            run.withLock { run in
                run.prepared?.encoding = Encoding(
                    session: session, driver: driver, videoInfo: info, pixelFormat: format, frameRate: rate)
                run.activeBackend = session.activeBackendName
            }
            log.info(
                object,
                "pass 1: encoding \(width)x\(height) \(format) as \(current.codec.standardName) at \(current.bitrateKilobits) kbit/s with \(session.activeBackendName), up to \(current.maxPasses) passes"
            )
            return nil
        } catch {
            return SessionFactory.failure(error, width: width, height: height, format: format)
        }
    }

    // MARK: Frames

    /// Posts the session's notices and keeps active-backend current.
    private func noteBackend(of session: CompressionSession) {
        let name = EncoderNotices.post(session, from: object)
        run.withLock { $0.activeBackend = name }
    }

    func render(_ buffer: UnsafeMutablePointer<GstBuffer>) -> GstFlowReturn {
        guard let encoding = run.withLock({ $0.encoding }) else { return GST_FLOW_NOT_NEGOTIATED }
        let (session, driver, info, format) = (
            encoding.session, encoding.driver, encoding.videoInfo, encoding.pixelFormat
        )
        let pts = swiftvt_buffer_pts(buffer)
        guard pts != swiftvt_clock_time_none else {
            ElementMessage.stream(
                GST_STREAM_ERROR_FORMAT,
                "a frame has no time stamp; multi-pass encoding finds frames again by time (put videorate or a demuxer in front)"
            )
            .post(from: object, isError: true)
            return GST_FLOW_ERROR
        }
        let presentationTime = MediaTime(gstreamerNanoseconds: UInt64(pts))
        let duration = swiftvt_buffer_duration(buffer)
        let result: MultiPassDriver.FrameResult
        do throws(UnreadableFrame) {
            // Mapped only when the driver encodes the frame (not for one it skips).
            result = try driver.frame(
                presentationTime: presentationTime,
                duration: duration == swiftvt_clock_time_none
                    ? .invalid : MediaTime(gstreamerNanoseconds: UInt64(duration))
            ) { () throws(UnreadableFrame) -> PixelBuffer in
                guard let image = MappedVideoFrame.pixelBuffer(buffer, info: &info.info, format: format) else {
                    throw UnreadableFrame()
                }
                return image
            }
        } catch {
            ElementMessage.stream(
                GST_STREAM_ERROR_FORMAT,
                "an input frame could not be read (mapping failed or its layout does not match the caps)"
            )
            .post(from: object, isError: true)
            return GST_FLOW_ERROR
        }
        switch result {
        case .skipped(let range):
            log.debug(
                object, "pass \(driver.pass): skipping the frame at \(presentationTime.seconds) s, outside \(range)")
            return GST_FLOW_OK
        case .failed(.encoding(let error, let pass)):
            noteBackend(of: session)
            let hint =
                session.isHardwareAccelerated && settings.withLock({ $0.encoder.hardware }) == .require
                ? " hardware=require allows no software fallback; use hardware=auto to continue with x264." : ""
            ElementMessage.stream(
                GST_STREAM_ERROR_ENCODE, "encoding failed in pass \(pass): \(GStreamerWording.message(error)).\(hint)",
                debug: error.description
            )
            .post(from: object, isError: true)
            return GST_FLOW_ERROR
        case .failed(let failure):
            noteBackend(of: session)
            Self.message(for: failure).post(from: object, isError: true)
            return GST_FLOW_ERROR
        case .encoded:
            noteBackend(of: session)
            postEvents(of: driver)
            return GST_FLOW_OK
        }
    }

    /// A mapping that failed (the buffer is not readable, or its layout does not match the caps).
    private struct UnreadableFrame: Error {}

    /// The ERROR for a failure of the passes (an encoding failure in render says more).
    private static func message(for failure: MultiPassDriver.Failure) -> ElementMessage {
        switch failure {
        case .encoding(let error, let pass):
            ElementMessage.stream(
                GST_STREAM_ERROR_ENCODE, "encoding failed in pass \(pass): \(GStreamerWording.message(error)).",
                debug: error.description)
        case .endingPass(let error, let pass):
            error.code == .multiPassStorageFailed
                ? ElementMessage(
                    domain: .resource(GST_RESOURCE_ERROR_WRITE), text: GStreamerWording.message(error),
                    debug: error.description)
                : ElementMessage.stream(
                    GST_STREAM_ERROR_ENCODE, "ending pass \(pass) failed: \(GStreamerWording.message(error))",
                    debug: error.description)
        case .startingNextPass(let error):
            ElementMessage.stream(GST_STREAM_ERROR_ENCODE, "could not start the next pass: \(error)")
        case .silo(let error):
            storageMessage(error, what: "the frame silo")
        case .ended(let pass):
            ElementMessage.stream(
                GST_STREAM_ERROR_FAILED,
                "data arrived after the multi-pass encode ended in pass \(pass); set the pipeline to READY and back to PLAYING to encode again"
            )
        }
    }

    private static func storageMessage(_ error: VTError, what: String) -> ElementMessage {
        let code = error.code == .diskFull ? GST_RESOURCE_ERROR_NO_SPACE_LEFT : GST_RESOURCE_ERROR_WRITE
        return ElementMessage(
            domain: .resource(code), text: "\(what) could not be written: \(GStreamerWording.message(error))",
            debug: error.description)
    }

    // MARK: End of stream

    /// Every event goes to the base class, except an EOS that does not end the file.
    func event(_ event: consuming OwnedEvent) -> Bool {
        guard event.type == GST_EVENT_EOS else { return parent.event(event) }
        switch endOfStream() {
        case .forward:
            // The file is complete: the base class posts EOS.
            return parent.event(event)
        case .swallow:
            // Another pass follows: the pipeline must not see this EOS (the seek that starts the
            // next range is on its way from another thread). The event is dropped.
            return true
        case .failed:
            return false
        }
    }

    /// What the sink does with an EOS event.
    private enum EndOfStreamAction {
        /// The file is complete: the base class handles EOS (posts it).
        case forward
        /// Another pass or range follows: drop the event.
        case swallow
        /// An error was posted: drop the event and fail.
        case failed
    }

    /// EOS from upstream: the end of a range, of a pass, or of everything. The driver says which;
    /// the sink seeks, or writes the file and lets the EOS through.
    private func endOfStream() -> EndOfStreamAction {
        guard
            let (session, driver) = run.withLock({ $0.encoding.map { ($0.session, $0.driver) } })
        else {
            // After refused caps the ERROR that matters is posted already: no second one.
            if refusedCaps.hasRefused { return .failed }
            ElementMessage.stream(
                GST_STREAM_ERROR_FAILED, "the stream ended before any frame arrived; there is nothing to write"
            )
            .post(from: object, isError: true)
            return .failed
        }
        let action = driver.endOfStream(upstreamCanSeek: { swiftvt_pad_peer_seekable(swiftvt_base_sink_pad(sink)) != 0 }
        )
        noteBackend(of: session)
        postEvents(of: driver)
        switch action {
        case .seek(let range):
            UpstreamSeek.send(from: sink, to: range, log: log)
            return .swallow
        case .failed(let failure):
            Self.message(for: failure).post(from: object, isError: true)
            return .failed
        case .writeFile(let outcome):
            tellWhyTheFileIsWrittenNow(outcome.ending)
            return writeFile(session, outcome) ? .forward : .failed
        }
    }

    // MARK: Writing the file

    /// Reads the silo out in decode order into the temporary file, then renames it to the
    /// location. Posts the summary (`outcome`'s passes and frames re-encoded); false after
    /// posting an error.
    private func writeFile(_ session: CompressionSession, _ outcome: MultiPassDriver.Outcome) -> Bool {
        let prepared = run.withLock { $0.prepared }
        guard let prepared, let rate = prepared.encoding?.frameRate, let description = session.formatDescription
        else {
            ElementMessage.stream(GST_STREAM_ERROR_FAILED, "no frame was encoded; there is nothing to write")
                .post(from: object, isError: true)
            return false
        }
        let (silo, output, container, location) = (
            prepared.silo, prepared.output, prepared.container, prepared.location
        )
        let writer = SiloWriter(silo: silo, description: description, frameRate: rate)
        let result: Result<SiloWriter.Summary, ElementMessage>
        switch container {
        case .h264AnnexB, .h265AnnexB: result = writer.writeAnnexB(to: output)
        case .mp4, .quickTime: result = writer.writeContainer(muxer: container == .mp4 ? "mp4mux" : "qtmux", to: output)
        }
        let summary: SiloWriter.Summary
        switch result {
        case .failure(let message):
            output.discard()
            message.post(from: object, isError: true)
            return false
        case .success(let value):
            summary = value
        }
        do throws(VTError) {
            try output.commit()
        } catch {
            output.discard()
            Self.storageMessage(error, what: location).post(from: object, isError: true)
            return false
        }
        let bitrate = summary.seconds > 0 ? Double(summary.bytes) * 8 / summary.seconds / 1000 : 0
        let target = settings.withLock { Double($0.bitrateKilobits) }
        let passes = outcome.passes
        let reencoded = outcome.framesReencoded
        log.info(
            object,
            "wrote \(location): \(summary.frames) frames, \(bitrate.decimalText(digits: 1)) kbit/s (target \(target.decimalText(digits: 0))), \(passes) passes, \(reencoded) frames re-encoded"
        )
        if let reason = outcome.targetOutOfReach {
            ElementMessage.stream(
                GST_STREAM_ERROR_ENCODE,
                "bitrate=\(target.decimalText(digits: 0)) kbit/s is out of reach for this video: the file is \(bitrate.decimalText(digits: 1)) kbit/s, "
                    + "the closest the encoder gets: \(reason). Set bitrate nearer that figure."
            )
            .post(from: object, isError: false)
        }
        postSummary(
            location: location, passes: passes, frames: summary.frames, framesReencoded: reencoded,
            bitrate: bitrate, targetBitrate: target, seconds: summary.seconds)
        return true
    }

    /// The shortest GOP multi-pass accepts (keeps IDR pictures apart).
    static let minimumGOPLength = Int32(MultiPassGOP.minimumLength)
}

/// The file types `location` may name.
enum OutputContainer: String, CustomStringConvertible {
    case mp4
    case quickTime = "mov"
    case h264AnnexB = "h264"
    case h265AnnexB = "h265"

    init?(location: String) {
        let lower = location.lowercased()
        if lower.hasSuffix(".mp4") || lower.hasSuffix(".m4v") {
            self = .mp4
        } else if lower.hasSuffix(".mov") {
            self = .quickTime
        } else if lower.hasSuffix(".h264") || lower.hasSuffix(".264") {
            self = .h264AnnexB
        } else if lower.hasSuffix(".h265") || lower.hasSuffix(".265") || lower.hasSuffix(".hevc") {
            self = .h265AnnexB
        } else {
            return nil
        }
    }

    /// The standard an Annex B file's name says it holds; nil for containers, which take both.
    var annexBCodec: CodecSetting? {
        switch self {
        case .mp4, .quickTime: nil
        case .h264AnnexB: .h264
        case .h265AnnexB: .h265
        }
    }

    /// The endings `location` may have for `codec`, for messages.
    static func extensions(for codec: CodecSetting) -> String {
        codec == .h265 ? ".mp4, .mov, .h265, .265 or .hevc" : ".mp4, .mov, .h264 or .264"
    }

    var description: String {
        switch self {
        case .mp4: "MP4 through mp4mux"
        case .quickTime: "QuickTime through qtmux"
        case .h264AnnexB: "H.264 Annex B byte stream"
        case .h265AnnexB: "H.265 Annex B byte stream"
        }
    }
}
