import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

// What the encoder does when the device does not do what it advertised: a rate-control mode
// whose context it refuses (the next entrypoint, or the other bit-rate mode), CABAC refused or
// silently ignored (CAVLC), and a per-picture QP asked of a device opened in CBR/VBR (the sequence
// reopens in constant-QP mode). Under hardware=require nothing that changes a property the user
// set is tried: those end in one clear error instead.

/// A rate-control mode the device advertised on an entrypoint and then refused a context for.
struct VAH264RefusedMode: Hashable {
    var endpointIndex: Int
    var mode: VAH264RateControl.Mode
}

extension VAH264Encoder {
    /// The VA_RC_* modes endpoint `index` offers less those it refused.
    func offeredModes(_ index: Int) -> UInt32 {
        var modes = choice.endpoints[index].options.rateControlModes
        for mode in [VAH264RateControl.Mode.cqp, .cbr, .vbr]
        where refusedModes.contains(VAH264RefusedMode(endpointIndex: index, mode: mode)) {
            modes &= ~VAH264RateControl.vaMode(mode)
        }
        return modes
    }

    /// Chooses the endpoint and rate control, then the GOP and parameter sets for that
    /// endpoint's options, and makes the objects; a context refused for an advertised mode moves
    /// on to the next (endpoint, mode) the properties allow. `forcedMode` (constant QP for a
    /// multi-pass range) overrides the mode the properties ask for.
    func openStream(_ properties: CompressionProperties, forcedMode: VAH264RateControl.Mode? = nil) throws(VTError) {
        while true {
            let (index, rateControl, rateNotices) = try chooseEndpoint(properties, forcedMode: forcedMode)
            endpointIndex = index
            structure = try chooseStructure(properties, frameRate: frameRate)
            pictureDepth = Self.pictureDepth(properties, bFrames: structure.consecutiveBFrames)
            // A forced constant QP keeps the level the properties' bit rate needs.
            let asked =
                forcedMode == nil
                ? nil
                : try VAH264RateControl.choose(
                    properties, frameRate: frameRate, offered: UInt32(VA_RC_CQP | VA_RC_CBR | VA_RC_VBR), strict: false
                ).0
            try describeStream(
                properties, rateControl: rateControl,
                levelBitRate: asked.flatMap { $0.mode == .cqp ? nil : $0.bitsPerSecond })
            do throws(VAError) {
                try openObjects(rateControl: rateControl)
                notices += rateNotices
                return
            } catch {
                guard Self.refusesMode(error) else {
                    throw VTError(
                        .encoderFailed, "the VA-API encoder could not be set up: \(error)", backendStatus: error.status,
                        operation: error.call)
                }
                // Advertised, yet refused: never asked again of this endpoint (the loop ends when
                // every (endpoint, mode) the properties allow was refused: chooseEndpoint throws).
                refusedModes.insert(VAH264RefusedMode(endpointIndex: index, mode: rateControl.mode))
                lastRefusal = error
            }
        }
    }

    /// A config or context refused for its attributes (the rate-control mode), as opposed to a
    /// device that failed: vaCreateContext's VA_STATUS_ERROR_INVALID_CONFIG, vaCreateConfig's
    /// invalid or unsupported attribute value.
    static func refusesMode(_ error: VAError) -> Bool {
        switch error.call {
        case "vaCreateContext": return error.status == VAStatus(VA_STATUS_ERROR_INVALID_CONFIG)
        case "vaCreateConfig":
            return error.status == VAStatus(VA_STATUS_ERROR_INVALID_VALUE)
                || error.status == VAStatus(VA_STATUS_ERROR_ATTR_NOT_SUPPORTED)
        default: return false
        }
    }

    /// The first endpoint offering the mode the properties ask for (as long as the device has
    /// not refused it there), else under hardware=auto the first offering another mode that
    /// serves them, with a notice.
    func chooseEndpoint(
        _ properties: CompressionProperties, forcedMode: VAH264RateControl.Mode?
    ) throws(VTError) -> (Int, VAH264RateControl, [EncoderNotice]) {
        let everyMode = UInt32(VA_RC_CQP | VA_RC_CBR | VA_RC_VBR)
        var (wanted, _) = try VAH264RateControl.choose(
            properties, frameRate: frameRate, offered: everyMode, strict: false)
        if let forcedMode { wanted.mode = forcedMode }
        let indices = choice.endpoints.indices
        for index in indices where offeredModes(index) & wanted.vaMode != 0 {
            if forcedMode != nil { return (index, wanted, []) }
            let (rateControl, rateNotices) = try VAH264RateControl.choose(
                properties, frameRate: frameRate, offered: offeredModes(index), strict: strict)
            if rateControl.mode == wanted.mode { return (index, rateControl, rateNotices) }
        }
        let refused = refusedModes.contains { $0.mode == wanted.mode }
        let refusal = lastRefusal.map { " (\($0.call): \($0.statusText))" } ?? ""
        let property: CompressionPropertyKey = wanted.mode == .cbr ? .dataRateLimits : .averageBitRate
        if !refused {
            // Not advertised anywhere: the rate-control choice of the first endpoint says what
            // instead (or why not, under hardware=require), as on a device that never offered it.
            guard let first = indices.first else {
                throw VTError(.encoderFailed, "the VA-API device has no H.264 encoding entrypoint left")
            }
            let (rateControl, rateNotices) = try VAH264RateControl.choose(
                properties, frameRate: frameRate, offered: offeredModes(first), strict: strict)
            return (first, rateControl, rateNotices)
        }
        let entrypointNames = choice.endpoints.map(\.name).joined(separator: " and ")
        if wanted.mode == .cqp || forcedMode != nil {
            throw VTError(
                .encoderFailed,
                "the VA-API device advertises \(wanted.mode.rawValue) rate control but refused a context with it on \(entrypointNames)\(refusal)",
                backendStatus: lastRefusal?.status, operation: lastRefusal?.call ?? "vaCreateContext")
        }
        if strict {
            throw .invalidProperty(
                property,
                "the VA-API device advertises \(wanted.mode.rawValue) rate control but refused a context with it on "
                    + "\(entrypointNames)\(refusal); hardware=require, so no other rate control is tried")
        }
        for index in indices {
            let offered = offeredModes(index) & UInt32(VA_RC_CBR | VA_RC_VBR)
            guard offered != 0 else { continue }
            let (rateControl, _) = try VAH264RateControl.choose(
                properties, frameRate: frameRate, offered: offered, strict: false)
            guard offered & rateControl.vaMode != 0 else { continue }
            return (
                index, rateControl,
                [
                    EncoderNotice(
                        property: property,
                        message:
                            "the VA-API device advertises \(wanted.mode.rawValue) rate control but refused a context with it "
                            + "on \(entrypointNames)\(refusal); encoding \(rateControl.mode.rawValue) instead")
                ]
            )
        }
        throw VTError(
            .encoderFailed,
            "the VA-API device refused a context for every bit-rate mode it advertises (on \(entrypointNames))\(refusal)",
            backendStatus: lastRefusal?.status, operation: lastRefusal?.call ?? "vaCreateContext")
    }

    /// Multi-pass rate control sets each picture's QP, which only constant-QP mode takes: the
    /// objects are reopened in that mode, before the first picture of a sequence only.
    func switchToConstantQuantizer() throws(VTError) {
        guard picturesSincePrepare == 0 && planner.heldFrameCount == 0 else {
            throw VTError(
                .encoderFailed,
                "the VA-API encoder was asked for a per-frame QP in the middle of a \(rateControl.mode.rawValue) sequence"
            )
        }
        guard choice.endpoints.indices.contains(where: { offeredModes($0) & UInt32(VA_RC_CQP) != 0 }) else {
            throw .invalidProperty(
                .averageBitRate,
                "multi-pass encoding sets a QP per frame, and this VA-API device has no constant-QP rate control")
        }
        try openStream(properties, forcedMode: .cqp)
        sequenceParametersDue = true
    }

    /// After `error` from a picture's VA calls: whether it was the device refusing CABAC on the
    /// first picture (at vaRenderPicture, or at vaEndPicture as iHD does: nothing in the config
    /// attributes says whether an entrypoint codes CABAC), and the stream now goes on in CAVLC.
    /// Throws the clear error instead when CABAC was asked for by name under hardware=require.
    func takeCABACRefusal(_ error: VAError) throws(VTError) -> Bool {
        guard !entropyVerified, pps.entropyCodingModeFlag,
            error.call == "vaRenderPicture" || error.call == "vaEndPicture",
            error.status == VAStatus(VA_STATUS_ERROR_INVALID_PARAMETER)
                || error.status == VAStatus(VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT)
                || error.status == VAStatus(VA_STATUS_ERROR_UNIMPLEMENTED)
        else { return false }
        try fallBackToCAVLC(because: "refused CABAC (\(error))")
        return true
    }

    /// After reading a picture back: whether its slice data is entropy coded as the PPS says.
    /// The first picture with a CABAC PPS is checked before anything else is submitted: when the
    /// device wrote CAVLC slices under it (Mesa stores entropy_coding_mode_flag and may ignore
    /// it: a stream no decoder reads), the stream goes on in CAVLC and the picture is coded
    /// again (returns false). A later picture that shows it is an error: what came before is
    /// already out.
    func acceptEntropyCoding(_ readout: CodedPictureReadout, of picture: H264CodingPicture<HeldFrame>) throws(VTError)
        -> Bool
    {
        guard !entropyVerified else { return true }
        guard pps.entropyCodingModeFlag else {
            entropyVerified = true
            return true
        }
        switch readout.entropy {
        case .cabacAlignment:
            entropyVerified = true
            return true
        case .undetermined:
            // A header ending on a byte boundary (one the device wrote): the next picture tells.
            return true
        case .notCABAC(let bitOffset):
            let what =
                "ignored CABAC: picture \(picture.codingIndex)'s slice data is not CABAC under the CABAC picture "
                + "parameter set (bit \(bitOffset) of the slice, a cabac_alignment_one_bit, is 0)"
            guard picturesSincePrepare == 1 else {
                throw VTError(.encoderFailed, "VA-API: the device \(what); the stream cannot be decoded")
            }
            try fallBackToCAVLC(because: what)
            return false
        }
    }

    /// CAVLC from here on: a notice when CABAC was asked for by name, an error when that was
    /// under hardware=require.
    func fallBackToCAVLC(because reason: String) throws(VTError) {
        let explicit = properties.entropyMode == .cabac
        if explicit && strict {
            throw .invalidProperty(
                .entropyMode,
                "entropyMode (vtenc: entropy-mode) is cabac, and the VA-API encoder \(reason); "
                    + "hardware=require, so nothing else is tried. Use entropy-mode=cavlc or auto")
        }
        entropyRefused = true
        entropyVerified = true
        pps.entropyCodingModeFlag = false
        try makeFormatDescription()
        if explicit {
            notices.append(
                EncoderNotice(property: .entropyMode, message: "the VA-API encoder \(reason); encoding CAVLC instead"))
        }
    }
}
