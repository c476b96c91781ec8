import CVA
import H264
import MediaCore
import SwiftVT

/// Which VA-API profile decodes a stream, and why none does.
enum VAH264Profiles {
    /// The VA profiles that can decode `sps`, best first, or why the VA path cannot take it.
    ///
    /// Baseline streams decode on the Constrained Baseline profile when they use none of
    /// Baseline's extra tools (FMO, ASO, redundant pictures: A.2.1 vs A.2.1.1); the PPS tells
    /// about FMO, the rest shows up while decoding. Main decoders decode Constrained Baseline
    /// streams, and High decoders Main ones (A.2.4: a High decoder decodes Main), so each
    /// profile also tries the larger ones.
    static func candidates(
        for sps: SequenceParameterSet, pictureParameterSets: [PictureParameterSet]
    ) -> Result<[VAProfile], UnsupportedStream> {
        if sps.chromaFormatIdc != 1 || sps.separateColourPlaneFlag {
            return .failure(
                UnsupportedStream("chroma_format_idc \(sps.chromaFormatIdc): the VA path decodes 4:2:0 only"))
        }
        if sps.bitDepthLuma != 8 || sps.bitDepthChroma != 8 {
            return .failure(
                UnsupportedStream("\(sps.bitDepthLuma)-bit samples: the VA path decodes 8-bit streams only"))
        }
        if !sps.frameMbsOnlyFlag {
            return .failure(
                UnsupportedStream(
                    "interlaced coding (frame_mbs_only_flag 0: field pictures or MBAFF): not supported by the VA path, which decodes progressive frames"
                ))
        }
        switch sps.profile {
        case .constrainedBaseline:
            return .success([VAProfileH264ConstrainedBaseline, VAProfileH264Main, VAProfileH264High])
        case .baseline:
            if pictureParameterSets.contains(where: { $0.numSliceGroupsMinus1 > 0 }) {
                return .failure(
                    UnsupportedStream("Baseline profile with slice groups (FMO): VA-API decoders have no FMO"))
            }
            return .success([VAProfileH264ConstrainedBaseline, VAProfileH264Main, VAProfileH264High])
        case .main:
            return .success([VAProfileH264Main, VAProfileH264High])
        case .high, .progressiveHigh, .constrainedHigh:
            return .success([VAProfileH264High])
        default:
            return .failure(
                UnsupportedStream(
                    "H.264 profile \(sps.profile) (profile_idc \(sps.profileIdc)): the VA path decodes Constrained Baseline, Baseline without FMO, Main and High"
                ))
        }
    }

    static func name(_ profile: VAProfile) -> String {
        switch profile {
        case VAProfileH264ConstrainedBaseline: return "H264ConstrainedBaseline"
        case VAProfileH264Main: return "H264Main"
        case VAProfileH264High: return "H264High"
        default: return "VAProfile \(profile.rawValue)"
        }
    }
}

struct UnsupportedStream: Error {
    var reason: VTError.Reason
    init(_ text: String) { self.reason = .other(text) }
    init(reason: VTError.Reason) { self.reason = reason }
}
