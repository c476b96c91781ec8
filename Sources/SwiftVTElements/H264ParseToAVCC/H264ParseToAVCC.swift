import CGStreamer
import CSwiftVTShim
import H264
import MediaCore

/// `h264parse-to-avcc`: an H.264 Annex B byte stream in, access units of length-prefixed NAL
/// units out, with the parameter sets in `codec_data` (the seeds' case one).
///
/// A GstBaseParse subclass: the base class accumulates input, handles seeking, position and
/// duration queries; `handleFrame` finds one complete access unit at a time with the H264
/// module's `AccessUnitSplitter` and rewrites it. All codec logic (access-unit boundaries, POC,
/// parameter sets) is in the H264 module; what is the same for H.265 (offsets, draining,
/// timestamps, caps after the lock; its lock and what it does under it) is ``AnnexBParserCore``;
/// this file maps H.264 access units to buffers, caps and messages (``H264Parsing``).
final class H264ParseToAVCC: AnnexBParserElement, @unchecked Sendable {
    // `parse` is the GObject that owns this object (created in its instance_init, released in its
    // finalize), so it is valid for this object's whole life. All mutable state is in `core`.
    let parse: UnsafeMutablePointer<GstBaseParse>
    static let debugCategory = DebugCategory(
        named: "h264parse-to-avcc", description: "SwiftVT H.264 Annex B to AVCC converter")
    let core: AnnexBParserCore<H264Parsing>

    init(instance: UnsafeMutableRawPointer, context: ElementClassContext) {
        parse = instance.assumingMemoryBound(to: GstBaseParse.self)
        core = AnnexBParserCore(parse: parse, category: Self.debugCategory)
    }

    static func interface(for context: ElementClassContext) -> ElementInterface<H264ParseToAVCC> {
        ElementInterface(
            longName: "H.264 Annex B to AVCC converter", classification: "Codec/Parser/Converter/Video",
            description: "Turns an H.264 byte stream (start codes, in-band SPS/PPS) into access units of "
                + "length-prefixed NAL units with the parameter sets in codec_data (avcC), with "
                + "timestamps derived from the picture order count when upstream has none",
            padTemplates: [
                .sink("video/x-h264, stream-format = (string) byte-stream"),
                .source(
                    "video/x-h264, stream-format = (string) { avc, avc3 }, alignment = (string) au, parsed = (boolean) true"
                )
            ])
    }

}

extension AccessUnitSplitter: AnnexBAccessUnitSplitter {}
extension AccessUnitSplitter.AccessUnit: SplitAccessUnit {}

/// What h264parse-to-avcc does with each H.264 access unit.
enum H264Parsing: AnnexBParserCodec {
    typealias Splitter = AccessUnitSplitter
    typealias Caps = H264OutputCaps
    typealias StreamFormat = H264OutputCaps.StreamFormat

    /// After a restart at a recovery point that is not IDR: its POC; the leading pictures that
    /// follow it in decoding order but precede it in output order (same POC epoch, lower POC)
    /// may reference pictures before it (D.2.8) and are dropped.
    struct CodecState: ParserCodecState {
        var recoveryPointPOC: (epoch: Int, picOrderCnt: Int64)?
    }

    static let nalUnitHeaderByteCount: UInt32 = 1
    static let defaultStreamFormat = StreamFormat.avc

    static func noDecodablePictureError(_ state: borrowing AnnexBParserState<Self>) -> ElementMessage {
        if state.extensionNALUnitsSkipped > 0 {
            return .stream(
                GST_STREAM_ERROR_CODEC_NOT_FOUND,
                "The H.264 stream holds no base-layer (AVC) picture: it only carries SVC/MVC extension NAL units, which h264parse-to-avcc cannot convert. Use an SVC/MVC-capable decoder for this stream.",
                debug:
                    "\(state.extensionNALUnitsSkipped) extension NAL units (types 14, 15, 20) passed over, \(state.bytesSeen) bytes read"
            )
        }
        return .stream(
            GST_STREAM_ERROR_DECODE,
            "No decodable H.264 access unit found: the input has no SPS, PPS and IDR or recovery-point picture. Check that it is an H.264 Annex B byte stream.",
            debug:
                "\(state.bytesSeen) bytes read, \(state.accessUnitsSkippedBeforeStart) access units skipped, \(state.damagedNALUnits) damaged NAL units dropped"
        )
    }

    static func accessUnit(
        _ unit: AccessUnitSplitter.AccessUnit, byteCount: Int, in data: UnsafeRawBufferPointer, times: InputTimes,
        state: inout AnnexBParserState<Self>, log: ParserLog
    ) -> AnnexBParserOutcome {
        var warnings: [ElementMessage] = []
        for problem in unit.problems {
            let text = "Dropped a damaged H.264 NAL unit (\(problem.nalUnitType)): \(problem.error)."
            log.warning(text)
            if let warning = state.damageWarning(text) { warnings.append(warning) }
        }
        if let warning = state.extensionWarning(
            count: unit.skippedExtensionNALUnitCount,
            "Passing over SVC/MVC extension NAL units: only the H.264 base layer is delivered.")
        {
            warnings.append(warning)
        }
        guard let picture = unit.picture else {
            log.trace("access unit without a picture (\(unit.nalUnits.count) NAL units): dropped")
            return .drop(byteCount: byteCount, warnings: warnings)
        }
        let wasStarted = state.started
        guard
            state.admit(
                isRandomAccessPoint: picture.isRandomAccessPoint || picture.recoveryFrameCount != nil,
                skippedWarning: {
                    "Skipped \($0) H.264 access units before the first IDR or recovery-point picture: they cannot be decoded."
                },
                warnings: &warnings)
        else { return .drop(byteCount: byteCount, warnings: warnings) }
        if !wasStarted && state.resynchronizing && !picture.isIDR {
            state.codec.recoveryPointPOC = (picture.pictureOrderCountEpoch, picture.pictureOrderCount.picOrderCnt)
        }
        if let start = state.codec.recoveryPointPOC {
            if picture.pictureOrderCountEpoch != start.epoch {
                state.codec.recoveryPointPOC = nil
            } else if picture.pictureOrderCount.picOrderCnt < start.picOrderCnt {
                log.debug(
                    "dropping a leading picture of the recovery point resynchronized at (POC \(picture.pictureOrderCount.picOrderCnt))"
                )
                return .drop(byteCount: byteCount, warnings: warnings)
            }
        }
        let parameterSets = state.splitter.parameterSets
        guard let sps = parameterSets.sequenceParameterSet(id: picture.seqParameterSetID) else {
            // The slices parsed, so their SPS existed; a later SPS with that id failed to parse.
            return .drop(byteCount: byteCount, warnings: warnings)
        }

        // Caps: new ones whenever a parameter set is new or changed, before the first access
        // unit that may use it.
        let streamFormat = state.streamFormat ?? .avc
        var outcome = AnnexBParserOutcome(action: .consume(byteCount: byteCount), warnings: warnings)
        if state.currentCaps == nil || unit.parameterSetsChanged {
            let caps = H264OutputCaps(
                sps: sps, codecData: codecData(parameterSets), streamFormat: streamFormat,
                upstreamFrameRate: state.upstreamFrameRate)
            (outcome.newCaps, outcome.newFrameRate) = state.adopt(
                caps,
                parameterSets:
                    "\(parameterSets.sequenceParameterSetIDs.count) SPS, \(parameterSets.pictureParameterSetIDs.count) PPS",
                log: log)
        }

        // The output: length-prefixed NAL units. In avc, parameter sets that codec_data carries
        // are left out (they are all in it: the store is what codec_data is built from).
        let kept = unit.nalUnits.filter { nal in
            guard streamFormat == .avc else { return true }
            return nal.type != .sequenceParameterSet && nal.type != .pictureParameterSet
        }
        guard let buffer = OwnedBuffer(lengthPrefixing: kept.map(\.range), of: data) else {
            let outputSize = kept.reduce(0) { $0 + 4 + $1.length }
            outcome.error = .stream(GST_STREAM_ERROR_FAILED, "Out of memory for a \(outputSize)-byte access unit.")
            return outcome
        }
        let frameRate = state.outputFrameRate
        buffer.duration = GstClockTime(
            MediaTime(
                value: Int64(frameRate.denominator),
                timescale: Int32(clamping: frameRate.numerator * (picture.fieldPicFlag ? 2 : 1))
            ).gstreamerNanoseconds)
        // Only IDR and recovery-point pictures are sync points (D.2.8).
        buffer.setDeltaUnit(!(picture.isIDR || picture.recoveryFrameCount != nil))

        // Timestamps: upstream's, or from the frame rate and the output order, within the SPS's
        // presentation reorder window (SequenceParameterSet.presentationReorderWindow).
        log.debug(
            "picture: IDR \(picture.isIDR), POC \(picture.pictureOrderCount.picOrderCnt) (epoch \(picture.pictureOrderCountEpoch)), frame_num \(picture.frameNum)"
        )
        let placement = AnnexBParserState<Self>.Placement(
            epoch: picture.pictureOrderCountEpoch, pictureOrderCount: picture.pictureOrderCount.picOrderCnt,
            reorderWindow: sps.presentationReorderWindow, presentationDelay: sps.statedPresentationDelay)
        return state.deliver(
            buffer, byteCount: byteCount, times: times,
            gridStep: MediaTime(value: Int64(frameRate.denominator), timescale: Int32(clamping: frameRate.numerator)),
            placement: placement, outcome: outcome, log: log)
    }

    /// avcC with every SPS and PPS received, in id order.
    private static func codecData(_ store: ParameterSetStore) -> [UInt8] {
        let sequenceParameterSets = store.sequenceParameterSetIDs.compactMap { store.rawSequenceParameterSet(id: $0) }
        let pictureParameterSets = store.pictureParameterSetIDs.compactMap { id in
            store.pictureParameterSet(id: id) != nil ? store.rawPictureParameterSet(id: id) : nil
        }
        return
            (try? AVCDecoderConfigurationRecord(
                sequenceParameterSets: sequenceParameterSets, pictureParameterSets: pictureParameterSets,
                nalUnitHeaderLength: 4
            ).serialized()) ?? []
    }
}

extension H264OutputCaps: ParsedStreamCaps {}
