import CVA
import H264
import MediaCore
import SwiftVT

/// Which VA-API profile decodes a stream, and why none does.
enum VAH264Profiles {
    /// The VA profiles that can decode `sps`, best first, or why the VA path cannot take it
    /// (``H264DeviceStreamCheck``); each profile also tries the larger ones (A.2.4).
    static func candidates(
        for sps: SequenceParameterSet, pictureParameterSets: [PictureParameterSet]
    ) -> Result<[VAProfile], UnsupportedStream> {
        switch H264DeviceStreamCheck.requiredProfile(
            for: sps, pictureParameterSets: pictureParameterSets, path: "the VA path")
        {
        case .failure(let unsupported): return .failure(unsupported)
        case .success(.constrainedBaseline):
            return .success([VAProfileH264ConstrainedBaseline, VAProfileH264Main, VAProfileH264High])
        case .success(.main): return .success([VAProfileH264Main, VAProfileH264High])
        case .success(.high): return .success([VAProfileH264High])
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

typealias UnsupportedStream = UnsupportedDeviceStream
