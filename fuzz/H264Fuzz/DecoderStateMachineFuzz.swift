import H264
import SwiftVTFileSupport

// The decoder mode: the input is an Annex B stream fed to H264PictureDecoder the way the VA
// decoder backend (VAH264Decoder) and its session feed it, over the CheckingAccelerator.
//
// Access units are cut where AccessUnitSplitter cuts them (SwiftVT's parser element, and where
// h264parse cuts them); every NAL unit of an access unit is given to the state machine, damaged
// ones included, as an upstream h264parse would pass them. As in VAH264Decoder.decode: a
// bitstream error is reported and decoding goes on; any other error (an accelerator failure,
// unsupported interlaced coding) ends the access unit without finishAccessUnit, and the session
// (FallbackDecoderBackend) then drains the decoder and stops using it.
//
// The last input byte also steers the caller's side: which accelerator call fails (and which
// occurrence of it), and after which access unit a flush (a seek) comes.

/// The caller's events that do not come from the bitstream.
struct DecoderFuzzControl {
    var failure: InjectedFailure?
    /// A flush after this access unit (0-based), when set.
    var flushAfterAccessUnit: Int?

    init(_ byte: UInt8) {
        // Bits 0-2: the failing call (values 5...7: none); bits 3-4: its occurrence.
        let calls = InjectedFailure.Call.allCases
        let callIndex = Int(byte & 0x07)
        if callIndex < calls.count {
            failure = InjectedFailure(call: calls[callIndex], occurrence: Int((byte >> 3) & 0x03) + 1)
        }
        // Bits 5-7: a flush after access unit 1...7 (0: no flush).
        let flush = Int(byte >> 5)
        flushAfterAccessUnit = flush == 0 ? nil : flush
    }
}

func exerciseDecoder(_ data: UnsafeRawBufferPointer) {
    let control = DecoderFuzzControl(data.last ?? 0)
    let accelerator = CheckingAccelerator()
    accelerator.failure = control.failure
    let dropped = accelerator.dropped
    decode(data, accelerator: accelerator, control: control)
    // The decoder is gone: every picture it held has been freed. Pictures still waiting for
    // output then were lost (a drain that failed half-way, for example).
    require(dropped.unexplained.isEmpty, "pictures never output when the decoder was released: \(dropped.unexplained)")
}

/// Decodes `data` with a decoder that lives only inside this function.
private func decode(_ data: UnsafeRawBufferPointer, accelerator: CheckingAccelerator, control: DecoderFuzzControl) {
    let decoder = H264PictureDecoder(accelerator: accelerator)
    accelerator.decoder = decoder
    var splitter = AccessUnitSplitter()
    var remaining = data
    var accessUnitIndex = 0
    while !remaining.isEmpty {
        let unit: AccessUnitSplitter.AccessUnit
        switch splitter.next(in: remaining, dataEnd: .accessUnitBoundary) {
        case .skip(let count):
            remaining = UnsafeRawBufferPointer(rebasing: remaining[min(count, remaining.count)...])
            continue
        case .needMoreData:
            // Everything is there (.accessUnitBoundary): nothing more can come.
            remaining = UnsafeRawBufferPointer(rebasing: remaining[remaining.count...])
            continue
        case .accessUnit(let found):
            unit = found
        }
        if CheckingAccelerator.tracesCalls {
            FileContents.printError(
                "access unit \(accessUnitIndex): \(unit.nalUnits.map { "\($0.type.rawValue)" }.joined(separator: " ")); problems: \(unit.problems.map { "\($0.nalUnitType.rawValue): \($0.error)" })")
        }
        let byteCount = min(max(unit.byteCount, 1), remaining.count)
        let accessUnit = UnsafeRawBufferPointer(rebasing: remaining[..<byteCount])
        remaining = UnsafeRawBufferPointer(rebasing: remaining[byteCount...])
        guard decodeAccessUnit(accessUnit, index: accessUnitIndex, decoder: decoder, accelerator: accelerator) else {
            // FallbackDecoderBackend: what the failed decoder finished is still output, then it
            // is dropped.
            do throws(H264DecodingError) {
                try decoder.drain()
            } catch {
                if CheckingAccelerator.tracesCalls { FileContents.printError("drain after a failure: \(error)") }
            }
            require(accelerator.openPicture == nil, "a picture begun was never ended (drain after a failure)")
            _ = accelerator.takeOutputs()
            accelerator.checkAfterCall("drain after a failure")
            return
        }
        if accessUnitIndex == control.flushAfterAccessUnit {
            accelerator.noteFlush()
            decoder.flush()
            accelerator.checkAfterCall("flush")
        }
        accessUnitIndex += 1
    }
    // End of stream (VAH264Decoder.drain).
    _ = try? decoder.drain()
    require(accelerator.openPicture == nil, "a picture begun was never ended (drain)")
    _ = accelerator.takeOutputs()
    accelerator.checkAfterCall("drain")
    require(
        decoder.decodedPictureBuffer.pictures.allSatisfy { !$0.isNeededForOutput }, "a picture still waits for output after a drain")
}

/// One access unit, as VAH264Decoder.decode gives it. Returns false after an error that makes
/// the session give up this decoder.
private func decodeAccessUnit(
    _ accessUnit: UnsafeRawBufferPointer, index: Int, decoder: H264PictureDecoder, accelerator: CheckingAccelerator
) -> Bool {
    var fatal: H264DecodingError?
    AnnexB.forEachNALUnit(in: accessUnit) { unit in
        do throws(H264DecodingError) {
            try decoder.decode(nalUnit: UnsafeRawBufferPointer(rebasing: accessUnit[unit.payloadRange]), frameReference: UInt64(index))
        } catch {
            if CheckingAccelerator.tracesCalls { FileContents.printError("decode: \(error)") }
            if case .bitstream = error { return }
            fatal = fatal ?? error
        }
    }
    if CheckingAccelerator.tracesCalls { FileContents.printError("access unit \(index) given\(fatal.map { ", failed: \($0)" } ?? "")") }
    guard fatal == nil else {
        _ = accelerator.takeOutputs()
        return false
    }
    do throws(H264DecodingError) {
        try decoder.finishAccessUnit()
    } catch {
        if case .bitstream = error {} else { fatal = error }
    }
    // Every picture begun in this access unit was ended with it.
    require(accelerator.openPicture == nil || fatal != nil, "a picture begun in an access unit was not ended with it")
    _ = accelerator.takeOutputs()
    accelerator.checkAfterCall("access unit \(index)")
    return fatal == nil
}
