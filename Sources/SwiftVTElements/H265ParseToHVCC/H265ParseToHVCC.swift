import CGStreamer
import CSwiftVTShim
import H265
import MediaCore

/// `h265parse-to-hvcc`: an H.265 Annex B byte stream in (any alignment), access units of
/// length-prefixed NAL units out, with the parameter sets in `codec_data` (the hvcC record,
/// ISO/IEC 14496-15 8.3.3); the H.265 counterpart of `h264parse-to-avcc`, whose behaviour it
/// shares (``AnnexBParserCore``: timestamps, damaged input, resynchronizing after a seek, the
/// lock and what it does under it).
///
/// A GstBaseParse subclass: the base class accumulates input, handles seeking, position and
/// duration queries; `handleFrame` finds one complete access unit at a time with the H265
/// module's `H265AccessUnitSplitter` (7.4.2.4.4) and rewrites it. All codec logic (access-unit
/// boundaries, POC, parameter sets, hvcC) is in the H265 module; this file maps H.265 access
/// units to buffers, caps and messages (``H265Parsing``).
final class H265ParseToHVCC: AnnexBParserElement, @unchecked Sendable {
    // `parse` is the GObject that owns this object (created in its instance_init, released in its
    // finalize), so it is valid for this object's whole life. All mutable state is in `core`.
    let parse: UnsafeMutablePointer<GstBaseParse>
    static let debugCategory = DebugCategory(
        named: "h265parse-to-hvcc", description: "SwiftVT H.265 Annex B to hvcC converter")
    let core: AnnexBParserCore<H265Parsing>

    init(instance: UnsafeMutableRawPointer, context: ElementClassContext) {
        parse = instance.assumingMemoryBound(to: GstBaseParse.self)
        core = AnnexBParserCore(parse: parse, category: Self.debugCategory)
    }

    static func interface(for context: ElementClassContext) -> ElementInterface<H265ParseToHVCC> {
        ElementInterface(
            longName: "H.265 Annex B to hvcC converter", classification: "Codec/Parser/Converter/Video",
            description: "Turns an H.265 byte stream (start codes, in-band VPS/SPS/PPS) into access units of "
                + "length-prefixed NAL units with the parameter sets in codec_data (hvcC), with "
                + "timestamps derived from the picture order count when upstream has none",
            padTemplates: [
                .sink("video/x-h265, stream-format = (string) byte-stream"),
                .source(
                    "video/x-h265, stream-format = (string) { hvc1, hev1 }, alignment = (string) au, parsed = (boolean) true"
                )
            ])
    }

}

extension H265AccessUnitSplitter: AnnexBAccessUnitSplitter {}
extension H265AccessUnitSplitter.AccessUnit: SplitAccessUnit {}

/// What h265parse-to-hvcc does with each H.265 access unit.
enum H265Parsing: AnnexBParserCodec {
    typealias Splitter = H265AccessUnitSplitter
    typealias Caps = H265OutputCaps
    typealias StreamFormat = H265OutputCaps.StreamFormat

    struct CodecState: ParserCodecState {
        /// NoRaslOutputFlag of the last IRAP picture (8.1.3): its RASL pictures refer to pictures
        /// before it that were never decoded here, so they are dropped (decoders skip them too).
        var lastIRAPStartedSequence = false
        /// What each access unit needs of its SPS, kept until the parameter sets change (reading
        /// the SPS from the store copies the whole parameter set).
        var activeSequence: ActiveSequence?
    }

    struct ActiveSequence {
        var seqParameterSetID: Int
        /// field_seq_flag (E.3.1): every picture is a field.
        var fieldSeqFlag: Bool
        var reorderWindow: Int
        var presentationDelay: Int

        init(_ sps: H265SequenceParameterSet) {
            seqParameterSetID = sps.seqParameterSetID
            fieldSeqFlag = sps.vui?.fieldSeqFlag ?? false
            reorderWindow = sps.presentationReorderWindow
            presentationDelay = sps.outputReorderDepth
        }
    }

    static let nalUnitHeaderByteCount: UInt32 = 2
    static let defaultStreamFormat = StreamFormat.hvc1

    static func noDecodablePictureError(_ state: borrowing AnnexBParserState<Self>) -> ElementMessage {
        // Only layers, and nothing damaged: a scalable or multiview stream without its base
        // layer (bit errors can make NAL headers with any layer id, and are reported as damage).
        if state.extensionNALUnitsSkipped > 0 && state.damagedNALUnits == 0 && state.accessUnitsSkippedBeforeStart == 0
        {
            return .stream(
                GST_STREAM_ERROR_CODEC_NOT_FOUND,
                "The H.265 stream holds no base-layer picture: it only carries NAL units of other layers (nuh_layer_id > 0: scalable, multiview or 3D extensions), which h265parse-to-hvcc cannot convert. Use a decoder for those extensions for this stream.",
                debug:
                    "\(state.extensionNALUnitsSkipped) NAL units with nuh_layer_id > 0 passed over, \(state.bytesSeen) bytes read"
            )
        }
        return .stream(
            GST_STREAM_ERROR_DECODE,
            "No decodable H.265 access unit found: the input has no VPS, SPS, PPS and IRAP (IDR, CRA or BLA) picture. Check that it is an H.265 Annex B byte stream.",
            debug:
                "\(state.bytesSeen) bytes read, \(state.accessUnitsSkippedBeforeStart) access units skipped, \(state.damagedNALUnits) damaged NAL units dropped, \(state.extensionNALUnitsSkipped) NAL units with nuh_layer_id > 0 passed over"
        )
    }

    static func accessUnit(
        _ unit: H265AccessUnitSplitter.AccessUnit, byteCount: Int, in data: UnsafeRawBufferPointer, times: InputTimes,
        state: inout AnnexBParserState<Self>, log: ParserLog
    ) -> AnnexBParserOutcome {
        var warnings: [ElementMessage] = []
        for problem in unit.problems {
            let type = problem.nalUnitType.map { "\($0)" } ?? "unreadable header"
            let text = "Dropped a damaged H.265 NAL unit (\(type)): \(problem.error)."
            log.warning(text)
            if let warning = state.damageWarning(text) { warnings.append(warning) }
        }
        if let warning = state.extensionWarning(
            count: unit.skippedLayerNALUnitCount,
            "Passing over NAL units with nuh_layer_id > 0 (scalable, multiview or 3D extension layers): only the H.265 base layer is delivered."
        ) {
            warnings.append(warning)
        }
        guard let picture = unit.picture else {
            log.trace("access unit without a picture (\(unit.nalUnits.count) NAL units): dropped")
            return .drop(byteCount: byteCount, warnings: warnings)
        }
        if picture.isIRAP { state.codec.lastIRAPStartedSequence = picture.noRaslOutputFlag }
        guard
            state.admit(
                isRandomAccessPoint: picture.isRandomAccessPoint,
                skippedWarning: {
                    "Skipped \($0) H.265 access units before the first IRAP (IDR, CRA or BLA) picture: they cannot be decoded."
                },
                warnings: &warnings)
        else { return .drop(byteCount: byteCount, warnings: warnings) }
        // 8.1.3: the RASL pictures of an IRAP picture that starts a coded video sequence refer
        // to pictures before it, which were never decoded: they are not output by a decoder.
        if picture.nalUnitType.isRASL && state.codec.lastIRAPStartedSequence {
            log.debug(
                "dropping a RASL picture of the IRAP picture decoding starts at (POC \(picture.pictureOrderCount))")
            return .drop(byteCount: byteCount, warnings: warnings)
        }
        let streamFormat = state.streamFormat ?? .hvc1
        var outcome = AnnexBParserOutcome(action: .consume(byteCount: byteCount), warnings: warnings)
        let sequence: ActiveSequence
        if let active = state.codec.activeSequence, active.seqParameterSetID == picture.seqParameterSetID,
            state.hasCaps, !unit.parameterSetsChanged
        {
            sequence = active
        } else {
            let parameterSets = state.splitter.parameterSets
            guard let sps = parameterSets.sequenceParameterSet(id: picture.seqParameterSetID) else {
                // The slices parsed, so their SPS existed; a later SPS with that id failed to parse.
                return .drop(byteCount: byteCount, warnings: warnings)
            }
            sequence = ActiveSequence(sps)
            state.codec.activeSequence = sequence
            // Caps: new ones whenever a parameter set is new or changed, before the first access
            // unit that may use it.
            if !state.hasCaps || unit.parameterSetsChanged {
                let codecData: [UInt8]
                do {
                    codecData = try Self.codecData(
                        parameterSets, activeSPS: picture.seqParameterSetID, streamFormat: streamFormat)
                } catch {
                    outcome.error = .stream(
                        GST_STREAM_ERROR_FORMAT,
                        "h265parse-to-hvcc cannot describe this H.265 stream in an hvcC record (codec_data): \(error). Decode it from the byte stream instead (h265parse ! vtdec, or vtdec directly).",
                        debug:
                            "\(parameterSets.videoParameterSetIDs.count) VPS, \(parameterSets.sequenceParameterSetIDs.count) SPS, \(parameterSets.pictureParameterSetIDs.count) PPS"
                    )
                    return outcome
                }
                let caps = H265OutputCaps(
                    sps: sps, codecData: codecData, streamFormat: streamFormat,
                    picturesAreFields: sequence.fieldSeqFlag || (picture.pictureTiming?.isField ?? false),
                    upstreamFrameRate: state.upstreamFrameRate)
                (outcome.newCaps, outcome.newFrameRate) = state.adopt(
                    caps,
                    parameterSets:
                        "\(parameterSets.videoParameterSetIDs.count) VPS, \(parameterSets.sequenceParameterSetIDs.count) SPS, \(parameterSets.pictureParameterSetIDs.count) PPS",
                    log: log)
            }
        }
        let picturesAreFields = sequence.fieldSeqFlag || (picture.pictureTiming?.isField ?? false)

        // The output: length-prefixed NAL units. In hvc1, the parameter sets are all in
        // codec_data (8.4.1: array_completeness 1) and left out of the samples.
        let kept = unit.nalUnits.lazy.filter { nal in
            guard streamFormat == .hvc1 else { return true }
            return nal.type != .videoParameterSet && nal.type != .sequenceParameterSet
                && nal.type != .pictureParameterSet
        }.map(\.range)
        guard let buffer = OwnedBuffer(lengthPrefixingRanges: kept, of: data) else {
            outcome.error = .stream(GST_STREAM_ERROR_FAILED, "Out of memory for an access unit of \(byteCount) bytes.")
            return outcome
        }
        // Each access unit is one picture: a field when the pictures are fields.
        let frameRate = state.outputFrameRate
        let pictureDuration = MediaTime(
            value: Int64(frameRate.denominator),
            timescale: Int32(clamping: frameRate.numerator * (picturesAreFields ? 2 : 1)))
        buffer.duration = GstClockTime(pictureDuration.gstreamerNanoseconds)
        // IRAP pictures are the random access points (8.1.3, ISO/IEC 14496-15 8.4.3: sync samples).
        buffer.setDeltaUnit(!picture.isIRAP)

        log.debug(
            "picture: \(picture.nalUnitType), POC \(picture.pictureOrderCount) (CVS \(picture.codedVideoSequenceIndex))"
        )
        let placement = AnnexBParserState<Self>.Placement(
            epoch: picture.codedVideoSequenceIndex, pictureOrderCount: Int64(picture.pictureOrderCount),
            reorderWindow: sequence.reorderWindow, presentationDelay: sequence.presentationDelay)
        return state.deliver(
            buffer, byteCount: byteCount, times: times, gridStep: pictureDuration, placement: placement,
            outcome: outcome, log: log)
    }

    /// hvcC with every VPS, SPS and PPS received, in id order, the active SPS first (the record
    /// takes its profile, level, chroma format and bit depths from its first SPS, 8.3.3.1).
    private static func codecData(
        _ store: H265ParameterSetStore, activeSPS: Int, streamFormat: H265OutputCaps.StreamFormat
    ) throws(H265Error) -> [UInt8] {
        let videoParameterSets = store.videoParameterSetIDs.compactMap { store.rawVideoParameterSet(id: $0) }
        let spsIDs = [activeSPS] + store.sequenceParameterSetIDs.filter { $0 != activeSPS }
        let sequenceParameterSets = spsIDs.compactMap { store.rawSequenceParameterSet(id: $0) }
        let pictureParameterSets = store.pictureParameterSetIDs.compactMap { store.rawPictureParameterSet(id: $0) }
        return try HEVCDecoderConfigurationRecord(
            videoParameterSets: videoParameterSets, sequenceParameterSets: sequenceParameterSets,
            pictureParameterSets: pictureParameterSets, nalUnitHeaderLength: 4,
            arrayCompleteness: streamFormat == .hvc1
        ).serialized()
    }
}

extension H265OutputCaps: ParsedStreamCaps {}
