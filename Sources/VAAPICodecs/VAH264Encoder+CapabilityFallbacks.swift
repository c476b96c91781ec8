import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

// What the encoder does when the device cannot do what the stream was set up for: CABAC refused
// (the stream goes on in CAVLC), and a per-picture QP asked of a device opened in CBR/VBR
// (the sequence reopens in constant-QP mode).

extension VAH264Encoder {
    /// Multi-pass rate control sets each picture's QP, which only constant-QP mode takes: the
    /// objects are reopened in that mode, before the first picture of a sequence only.
    func switchToConstantQuantizer() throws(VTError) {
        guard picturesSincePrepare == 0 && planner.heldFrameCount == 0 else {
            throw VTError(
                .encoderFailed, "the VA-API encoder was asked for a per-frame QP in the middle of a \(rateControl.mode.rawValue) sequence")
        }
        guard choice.options.rateControlModes & UInt32(VA_RC_CQP) != 0 else {
            throw .invalidProperty(
                .averageBitRate, "multi-pass encoding sets a QP per frame, and this VA-API device has no constant-QP rate control")
        }
        var constant = rateControl
        constant.mode = .cqp
        try openObjects(rateControl: constant)
        rateControl = constant
        sequenceParametersDue = true
    }

    /// CABAC: the first picture's parameters go alone, so a device that refuses CABAC says so
    /// before anything else of the picture was submitted. Then CAVLC, with a notice when CABAC
    /// was asked for by name (under hardware=require that is an error).
    func checkEntropyMode(
        _ picture: H264CodingPicture<HeldFrame>, reconstructedSlot: Int, objects: VAEncodeObjects
    ) throws(VAError) {
        entropyChecked = true
        guard pps.entropyCodingModeFlag else { return }
        var parameters = VAH264EncodeParameters.picture(
            picture, pps: pps, reconstructed: objects.reconstructedSurfaces.ids[reconstructedSlot],
            references: surface(for:), codedBuffer: objects.codedBuffer.id)
        let probe = try VABufferObject.holding(
            &parameters, connection: connection, context: objects.context, type: VAEncPictureParameterBufferType)
        do throws(VAError) {
            try withExtendedLifetime(probe) { () throws(VAError) in
                try connection.renderPicture(context: objects.context, buffers: [probe.id])
            }
        } catch {
            guard error.status == VAStatus(VA_STATUS_ERROR_INVALID_PARAMETER)
                || error.status == VAStatus(VA_STATUS_ERROR_UNSUPPORTED_ENTRYPOINT)
                || error.status == VAStatus(VA_STATUS_ERROR_UNIMPLEMENTED)
            else { throw error }
            let explicit = properties.entropyMode == .cabac
            if explicit && strict {
                throw VAError(
                    call: error.call, status: error.status,
                    context: "entropyMode (vtenc: entropy-mode) is cabac, and the VA-API encoder refused CABAC; "
                        + "hardware=require, so nothing else is tried. Use entropy-mode=cavlc or auto")
            }
            // The refused picture is ended (a driver may keep refusing everything else of it)
            // and begun again in CAVLC; nothing of it was coded.
            _ = try? connection.endPicture(context: objects.context)
            try connection.beginPicture(context: objects.context, renderTarget: objects.sourceSurfaces.ids[picture.frame.sourceSlot])
            entropyRefused = true
            pps.entropyCodingModeFlag = false
            do throws(VTError) {
                try makeFormatDescription()
            } catch {
                throw VAError(call: "vaRenderPicture", status: VAStatus(VA_STATUS_ERROR_OPERATION_FAILED), context: error.message)
            }
            if explicit {
                notices.append(EncoderNotice(
                    property: .entropyMode,
                    message: "the VA-API encoder refused CABAC (\(error)); encoding CAVLC instead"))
            }
        }
    }
}
