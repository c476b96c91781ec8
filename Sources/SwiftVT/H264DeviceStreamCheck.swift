import H264
import MediaCore

/// Which H.264 streams a hardware path (SwiftVT's state machine over a device accelerator) takes,
/// whatever the device API: the state machine decodes progressive frames, and the paths copy 8-bit
/// 4:2:0 pictures. Each API then maps the profile to what its device offers.
public enum H264DeviceStreamCheck {
    /// The first SPS of an H.264 format description and the PPSs that refer to it, or why a device
    /// path ("the VA path") cannot look at the stream at all (another codec, no readable SPS).
    public static func parameterSets(of format: FormatDescription, path: String) -> Result<
        (SequenceParameterSet, [PictureParameterSet]), UnsupportedDeviceStream
    > {
        guard format.codecType == .h264 || format.codecType == .h264InBandParameterSets else {
            return .failure(.init("decodes H.264 only, and this stream's codec is '\(format.codecType)'"))
        }
        guard let spsBytes = format.h264SequenceParameterSets.first,
            let sps = try? SequenceParameterSet.parse(nalUnit: spsBytes)
        else {
            return .failure(.init("the format description has no SPS \(path) could read"))
        }
        let ppss = format.h264PictureParameterSets.compactMap { bytes in
            try? PictureParameterSet.parse(
                nalUnit: bytes, sequenceParameterSets: { $0 == sps.seqParameterSetID ? sps : nil })
        }
        return .success((sps, ppss))
    }

    /// The profile family a device must decode for `sps`, or why `path` ("the VA path") cannot
    /// take the stream at all.
    ///
    /// Baseline streams decode as Constrained Baseline when they use none of Baseline's extra
    /// tools (FMO, ASO, redundant pictures: A.2.1 vs A.2.1.1); the PPS tells about FMO, the rest
    /// shows up while decoding. A Main decoder decodes Constrained Baseline streams, and a High
    /// decoder Main ones (A.2.4).
    public static func requiredProfile(
        for sps: SequenceParameterSet, pictureParameterSets: [PictureParameterSet], path: String
    ) -> Result<RequiredProfile, UnsupportedDeviceStream> {
        if sps.chromaFormatIdc != 1 || sps.separateColourPlaneFlag {
            return .failure(.init("chroma_format_idc \(sps.chromaFormatIdc): \(path) decodes 4:2:0 only"))
        }
        if sps.bitDepthLuma != 8 || sps.bitDepthChroma != 8 {
            return .failure(.init("\(sps.bitDepthLuma)-bit samples: \(path) decodes 8-bit streams only"))
        }
        if !sps.frameMbsOnlyFlag {
            return .failure(
                .init(
                    "interlaced coding (frame_mbs_only_flag 0: field pictures or MBAFF): not supported by \(path), which decodes progressive frames"
                ))
        }
        switch sps.profile {
        case .constrainedBaseline:
            return .success(.constrainedBaseline)
        case .baseline:
            if pictureParameterSets.contains(where: { $0.numSliceGroupsMinus1 > 0 }) {
                return .failure(.init("Baseline profile with slice groups (FMO): \(path) has no FMO"))
            }
            return .success(.constrainedBaseline)
        case .main:
            return .success(.main)
        case .high, .progressiveHigh, .constrainedHigh:
            return .success(.high)
        default:
            return .failure(
                .init(
                    "H.264 profile \(sps.profile) (profile_idc \(sps.profileIdc)): \(path) decodes Constrained Baseline, Baseline without FMO, Main and High"
                ))
        }
    }

    /// The least a device's decoder must be.
    public enum RequiredProfile: Sendable {
        case constrainedBaseline, main, high
    }

    /// The GStreamer caps names (`video/x-h264, profile=`) of the streams a device with these
    /// decoders takes, most constrained first (A.2.4: a Main decoder decodes Constrained Baseline,
    /// a High one Main): what `vtdec_hw` announces.
    public static func capsProfiles(constrainedBaseline: Bool, main: Bool, high: Bool) -> [String] {
        var names: [String] = []
        if constrainedBaseline || main || high { names += ["constrained-baseline", "baseline"] }
        if main || high { names.append("main") }
        if high { names += ["high", "progressive-high", "constrained-high"] }
        return names
    }
}

/// Why a hardware path does not take a stream.
public struct UnsupportedDeviceStream: Error, Sendable {
    public var reason: VTError.Reason
    public init(_ text: String) { self.reason = .other(text) }
    public init(reason: VTError.Reason) { self.reason = reason }
}
