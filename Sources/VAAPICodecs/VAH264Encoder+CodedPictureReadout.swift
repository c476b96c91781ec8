import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

// Reading a coded picture back: the coded buffer's segments (checked for overflow and bad
// bitstream reports), Annex B turned into an AVCC sample, the device's own SPS/PPS adopted, and
// the QP it wrote read from the first slice header for the multi-pass analysis.

extension VAH264Encoder {
    /// The coded buffer's Annex B access unit as an AVCC sample (parameter sets go to the
    /// format description, which SwiftVT wrote itself).
    func readCodedPicture(
        _ picture: H264CodingPicture<HeldFrame>, qp: Int, objects: VAEncodeObjects
    ) throws(VTError) -> EncodedFrame {
        let held = picture.frame
        var annexB: [UInt8] = []
        var problem: String?
        do throws(VAError) {
            try objects.codedBuffer.withCodedBufferSegments { segments in
                for segment in segments {
                    if segment.overflowed {
                        problem = "the coded picture did not fit in the \(objects.codedBuffer.elementSize)-byte coded buffer (VA_CODED_BUF_STATUS_SLICE_OVERFLOW_MASK)"
                    } else if segment.badBitstream {
                        problem = "the device reports a bad bitstream (VA_CODED_BUF_STATUS_BAD_BITSTREAM)"
                    }
                    // Copied: the coded buffer is written again by the next picture, and the
                    // sample outlives it. (The same pass turns Annex B into AVCC below.)
                    annexB += segment.bytes
                }
            }
        } catch {
            throw VTError(
                .encoderFailed, "VA-API: the coded picture could not be read: \(error)", backendStatus: error.status,
                operation: error.call)
        }
        if let problem {
            throw VTError(.encoderFailed, "VA-API: picture \(picture.codingIndex) (\(picture.type.rawValue)): \(problem)")
        }
        var sample: [UInt8] = []
        sample.reserveCapacity(annexB.count + 16)
        var deviceParameterSets: [[UInt8]] = []
        var firstSlice: Range<Int>?
        // One pass: slices (and SEI) become length-prefixed NAL units of the sample; parameter
        // sets go to the format description; the first slice's header is read for its QP below.
        annexB.withUnsafeBytes { bytes in
            AnnexB.forEachNALUnit(in: bytes) { unit in
                let range = unit.payloadRange
                switch NALUnitType(rawValue: bytes[range.lowerBound]) {
                case .sequenceParameterSet, .pictureParameterSet:
                    deviceParameterSets.append(Array(bytes[range]))
                    return
                case .accessUnitDelimiter:
                    return
                case .codedSliceIDR, .codedSliceNonIDR:
                    if firstSlice == nil { firstSlice = range }
                default:
                    break
                }
                AVCC.appendLengthPrefixed(nalUnit: UnsafeRawBufferPointer(rebasing: bytes[range]), to: &sample)
            }
        }
        if !deviceParameterSets.isEmpty {
            try adoptDeviceParameterSets(deviceParameterSets)
        }
        // The QP as the device wrote it (a device in CBR/VBR chooses it).
        var sliceQP: Int?
        if let firstSlice {
            let (sps, pps) = (self.sps, self.pps)
            sliceQP = annexB.withUnsafeBytes { bytes in
                (try? SliceHeader.parse(
                    nalUnit: UnsafeRawBufferPointer(rebasing: bytes[firstSlice]),
                    pictureParameterSets: { $0 == pps.picParameterSetID ? pps : nil },
                    sequenceParameterSets: { $0 == sps.seqParameterSetID ? sps : nil }))?.sliceQPY
            }
        }
        guard !sample.isEmpty else {
            throw VTError(.encoderFailed, "VA-API: picture \(picture.codingIndex) came back with no slice data")
        }
        let decodeTimeStamp = timeStamps.next(presentationTimeStamp: held.presentationTimeStamp, frameDuration: held.duration)
        let timing = SampleTimingInfo(
            duration: held.duration, presentationTimeStamp: held.presentationTimeStamp, decodeTimeStamp: decodeTimeStamp)
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
            sample, formatDescription: formatDescription, timing: timing, attachments: attachments,
            frameReference: held.frameReference,
            // A forced QP is coded as the whole QP asked for (one QP per picture).
            analysis: EncodedFrameAnalysis(
                frameType: analysisType, quantizer: Double(held.quantizer != nil ? qp : (sliceQP ?? qp))),
            encoderName: "the VA-API encoder")
    }
}
