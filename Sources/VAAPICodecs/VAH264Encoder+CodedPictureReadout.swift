import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

// Reading a coded picture back: the coded buffer's segments (checked for overflow and bad
// bitstream reports), Annex B turned into an AVCC sample, the device's own SPS/PPS reconciled
// with SwiftVT's, and the first slice header read for the QP it wrote (the multi-pass analysis)
// and for the entropy coding of its slice data.

/// What a coded picture came back as, before it becomes a frame.
struct CodedPictureReadout {
    /// The slices (and SEI) as length-prefixed NAL units.
    var sample: [UInt8]
    /// The QP of the first slice as the device wrote it.
    var sliceQP: Int?
    /// Whether the first slice's data follows the PPS's entropy coding.
    var entropy: SliceDataEntropyEvidence
}

extension VAH264Encoder {
    /// The coded buffer's Annex B access unit: the slices as an AVCC sample (parameter sets go
    /// to the format description, reconciled with SwiftVT's own when the device wrote its
    /// own), and what the first slice header says.
    func readCodedPicture(_ picture: H264CodingPicture<HeldFrame>, codedBuffer: VABufferObject) throws(VTError)
        -> CodedPictureReadout
    {
        var parsed = ParsedAccessUnit()
        var problem: String?
        do throws(VAError) {
            try codedBuffer.withCodedBufferSegments { segments in
                for segment in segments {
                    if segment.overflowed {
                        problem =
                            "the coded picture did not fit in the \(codedBuffer.elementSize)-byte coded buffer (VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK)"
                    } else if segment.badBitstream {
                        problem = "the device reports a bad bitstream (VA_CODED_BUF_STATUS_BAD_BITSTREAM)"
                    }
                }
                if segments.count == 1, let only = segments.first {
                    parsed = Self.parseAccessUnit(only.bytes)
                } else {
                    // Several segments: joined first (a NAL unit may go on in the next one).
                    var joined: [UInt8] = []
                    for segment in segments { joined += segment.bytes }
                    parsed = joined.withUnsafeBytes { Self.parseAccessUnit($0) }
                }
            }
        } catch {
            throw VTError(
                .encoderFailed, "VA-API: the coded picture could not be read: \(error)", backendStatus: error.status,
                operation: error.call)
        }
        if let problem {
            throw VTError(
                .encoderFailed, "VA-API: picture \(picture.codingIndex) (\(picture.type.rawValue)): \(problem)")
        }
        if !parsed.parameterSets.isEmpty {
            try reconcileDeviceParameterSets(parsed.parameterSets)
        }
        guard !parsed.sample.isEmpty, !parsed.firstSliceStart.isEmpty else {
            throw VTError(.encoderFailed, "VA-API: picture \(picture.codingIndex) came back with no slice data")
        }
        // The QP as the device wrote it (a device in CBR/VBR chooses it), and whether its slice
        // data is entropy coded as the PPS in force says.
        let (sps, pps) = (self.sps, self.pps)
        let (sliceQP, entropy) = parsed.firstSliceStart.withUnsafeBytes { nalUnit -> (Int?, SliceDataEntropyEvidence) in
            guard
                let header = try? SliceHeader.parse(
                    nalUnit: nalUnit, pictureParameterSets: { $0 == pps.picParameterSetID ? pps : nil },
                    sequenceParameterSets: { $0 == sps.seqParameterSetID ? sps : nil })
            else { return (nil, .undetermined) }
            return (header.sliceQPY, header.entropyEvidence(nalUnit: nalUnit, pps: pps))
        }
        return CodedPictureReadout(sample: parsed.sample, sliceQP: sliceQP, entropy: entropy)
    }

    /// An Annex B access unit taken apart in one pass: slices (and SEI) as the length-prefixed
    /// NAL units of the sample, parameter sets for the format description, and the start of the
    /// first slice for its header.
    struct ParsedAccessUnit {
        var sample: [UInt8] = []
        var parameterSets: [[UInt8]] = []
        /// The first slice NAL unit's first bytes (a slice header is far shorter).
        var firstSliceStart: [UInt8] = []
    }

    static func parseAccessUnit(_ bytes: UnsafeRawBufferPointer) -> ParsedAccessUnit {
        var parsed = ParsedAccessUnit()
        // Copied: the coded buffer is written again by a later picture, and the sample outlives
        // it. This is the only copy of the slice data (Annex B to AVCC in the same pass).
        parsed.sample.reserveCapacity(bytes.count + 16)
        AnnexB.forEachNALUnit(in: bytes) { unit in
            let range = unit.payloadRange
            switch NALUnitType(rawValue: bytes[range.lowerBound]) {
            case .sequenceParameterSet, .pictureParameterSet:
                parsed.parameterSets.append(Array(bytes[range]))
                return
            case .accessUnitDelimiter:
                return
            case .codedSliceIDR, .codedSliceNonIDR:
                if parsed.firstSliceStart.isEmpty {
                    parsed.firstSliceStart = Array(
                        bytes[range.lowerBound..<min(range.upperBound, range.lowerBound + 4096)])
                }
            default:
                break
            }
            AVCC.appendLengthPrefixed(nalUnit: UnsafeRawBufferPointer(rebasing: bytes[range]), to: &parsed.sample)
        }
        return parsed
    }

    /// The frame of a picture read back (its decode time stamp is taken here, in coding order).
    func makeFrame(_ readout: CodedPictureReadout, of coded: InFlightPicture) -> EncodedFrame {
        let picture = coded.picture
        let held = picture.frame
        let decodeTimeStamp = timeStamps.next(
            presentationTimeStamp: held.presentationTimeStamp, frameDuration: held.duration)
        let timing = SampleTimingInfo(
            duration: held.duration, presentationTimeStamp: held.presentationTimeStamp, decodeTimeStamp: decodeTimeStamp
        )
        let intra = picture.type == .idr || picture.type == .intra
        let attachments = SampleAttachments(
            notSync: picture.type != .idr, dependsOnOthers: !intra, isDependedOnByOthers: picture.isReference,
            earlierDisplayTimesAllowed: structure.consecutiveBFrames > 0)
        let analysisType: AnalysisFrameType
        switch picture.type {
        case .idr: analysisType = .idr
        case .intra: analysisType = .intra
        case .predicted: analysisType = .predicted
        case .bidirectional: analysisType = .bidirectional
        }
        return .accessUnit(
            readout.sample, formatDescription: streamDescription, timing: timing, attachments: attachments,
            frameReference: held.frameReference,
            // A forced QP is coded as the whole QP asked for (one QP per picture).
            analysis: EncodedFrameAnalysis(
                frameType: analysisType,
                quantizer: Double(held.quantizer != nil ? coded.qp : (readout.sliceQP ?? coded.qp))),
            encoderName: "the VA-API encoder")
    }
}
