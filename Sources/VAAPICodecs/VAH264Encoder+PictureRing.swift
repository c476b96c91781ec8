import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

/// A picture submitted to the device (vaEndPicture returned) and not yet read back.
struct InFlightPicture {
    var picture: H264CodingPicture<VAH264Encoder.HeldFrame>
    var qp: Int
    var reconstructedSlot: Int
    var codedBufferSlot: Int
    /// Reconstructed surfaces no picture after this one reads: free once this one is complete
    /// (until then this picture, or one before it, may still read them).
    var reconstructionsFreedAtCompletion: [Int]
    /// The last picture of its group (an anchor and its B pictures).
    var endsGroup: Bool
}

/// A picture read back whose group is not complete yet.
struct ReadBackPicture {
    var picture: H264CodingPicture<VAH264Encoder.HeldFrame>
    var frame: EncodedFrame
}

// The ring of pictures in flight: submitting a picture into a free coded buffer, and reading the
// oldest back (vaSyncSurface, then its coded buffer) in coding order, so the output order and time
// stamps are those of one picture at a time.

extension VAH264Encoder {
    /// Submits one picture (vaBeginPicture, vaRenderPicture, vaEndPicture), reading back the
    /// oldest pictures first when no coded buffer or reconstructed surface is free.
    func submit(
        _ picture: H264CodingPicture<HeldFrame>, keeping live: Set<UInt64>, endsGroup: Bool,
        output: inout [EncodedFrame]
    ) throws(VTError) {
        while (freeCodedBufferSlots.isEmpty || freeReconstructedSlots.isEmpty) && !inFlight.isEmpty {
            try retireOldest(into: &output)
        }
        guard let codedBufferSlot = freeCodedBufferSlots.popLast() else {
            throw VTError(.encoderFailed, "the VA-API encoder has no free coded buffer")
        }
        guard let reconstructedSlot = freeReconstructedSlots.popLast() else {
            freeCodedBufferSlots.append(codedBufferSlot)
            throw VTError(.encoderFailed, "the VA-API encoder has no free reconstructed surface")
        }
        let qp = rateControl.pictureQuantizer(type: picture.type, forced: picture.frame.quantizer)
        do throws(VTError) {
            try render(picture, qp: qp, reconstructedSlot: reconstructedSlot, codedBufferSlot: codedBufferSlot)
        } catch {
            freeCodedBufferSlots.append(codedBufferSlot)
            freeReconstructedSlots.append(reconstructedSlot)
            throw error
        }
        picturesSincePrepare += 1
        sequenceParametersDue = false
        // The reconstruction stays while the picture is a reference (the planner's DPB); every
        // other one is freed when this picture is complete.
        var freed: [Int] = []
        if picture.isReference {
            reconstructed[picture.codingIndex] = reconstructedSlot
        } else {
            freed.append(reconstructedSlot)
        }
        for (index, slot) in reconstructed where !live.contains(index) {
            reconstructed[index] = nil
            freed.append(slot)
        }
        inFlight.append(
            InFlightPicture(
                picture: picture, qp: qp, reconstructedSlot: reconstructedSlot, codedBufferSlot: codedBufferSlot,
                reconstructionsFreedAtCompletion: freed, endsGroup: endsGroup))
    }

    /// The VA calls of one picture. A first picture that the device refuses because of CABAC
    /// (at vaRenderPicture, or at vaEndPicture as iHD does) is submitted again in CAVLC.
    func render(_ picture: H264CodingPicture<HeldFrame>, qp: Int, reconstructedSlot: Int, codedBufferSlot: Int)
        throws(VTError)
    {
        guard let objects else { throw VTError(.encoderFailed, "the VA-API encoder is not prepared") }
        let source = objects.sourceSurfaces.ids[picture.frame.sourceSlot]
        var pictureOpen = false
        do throws(VAError) {
            try connection.beginPicture(context: objects.context, renderTarget: source)
            pictureOpen = true
            let buffers = try makeBuffers(
                picture, qp: qp, reconstructedSlot: reconstructedSlot,
                codedBuffer: objects.codedBuffers[codedBufferSlot],
                objects: objects)
            // The buffers must outlive vaEndPicture (va.h: it consumes them), not just the
            // expression reading their ids: Swift may release an object after its last use.
            try withExtendedLifetime(buffers) { () throws(VAError) in
                try connection.renderPicture(context: objects.context, buffers: buffers.map(\.id))
                pictureOpen = false
                try connection.endPicture(context: objects.context)
            }
        } catch {
            if pictureOpen {
                // A refused picture is ended all the same, so none stays open on the device.
                _ = try? connection.endPicture(context: objects.context)
            }
            if try takeCABACRefusal(error) {
                try render(picture, qp: qp, reconstructedSlot: reconstructedSlot, codedBufferSlot: codedBufferSlot)
                return
            }
            throw VTError(
                .encoderFailed, "VA-API: picture \(picture.codingIndex) (\(picture.type.rawValue)) failed: \(error)",
                backendStatus: error.status, operation: error.call)
        }
    }

    func syncSource(of picture: H264CodingPicture<HeldFrame>) throws(VAError) {
        guard let objects else { return }
        try connection.syncSurface(objects.sourceSurfaces.ids[picture.frame.sourceSlot])
    }

    /// Waits for the oldest picture in flight, reads it back and frees what it held; its frame
    /// goes to `output` with the rest of its group once the group is complete.
    func retireOldest(into output: inout [EncodedFrame]) throws(VTError) {
        guard let objects, let oldest = inFlight.first else { return }
        do throws(VAError) {
            // The device writes the coded buffer until the picture is complete; some drivers
            // (old Mesa) map an unfinished one as empty rather than wait.
            try syncSource(of: oldest.picture)
        } catch {
            throw VTError(
                .encoderFailed,
                "VA-API: picture \(oldest.picture.codingIndex) (\(oldest.picture.type.rawValue)) failed: \(error)",
                backendStatus: error.status, operation: error.call)
        }
        let readout = try readCodedPicture(oldest.picture, codedBuffer: objects.codedBuffers[oldest.codedBufferSlot])
        if try !acceptEntropyCoding(readout, of: oldest.picture) {
            // Coded again in CAVLC into the same coded buffer and reconstruction (the source is
            // still this picture's); nothing of the first attempt is output. Only the first
            // picture gets here, alone in flight.
            try render(
                oldest.picture, qp: oldest.qp, reconstructedSlot: oldest.reconstructedSlot,
                codedBufferSlot: oldest.codedBufferSlot)
            try retireOldest(into: &output)
            return
        }
        parameterSetsConfirmed = true
        inFlight.removeFirst()
        freeCodedBufferSlots.append(oldest.codedBufferSlot)
        freeReconstructedSlots += oldest.reconstructionsFreedAtCompletion
        readBackGroup.append(ReadBackPicture(picture: oldest.picture, frame: makeFrame(readout, of: oldest)))
        if oldest.endsGroup {
            output += readBackGroup.map(\.frame)
            freeSourceSlots += readBackGroup.map(\.picture.frame.sourceSlot)
            readBackGroup.removeAll()
        }
    }
}
