import CGStreamer
import CSwiftVTShim
import H265
import MediaCore

/// What downstream of vtenc_h265 allows for the HEVC stream's profile and level (a capsfilter
/// `video/x-h265,profile=main-10,level=(string)4`, a muxer, a payloader), read once at the caps:
/// how to label the stream x265 made, or why no label fits. x265 takes its profile from the
/// input format and its level from the size, rate and bit rate; what a stream may be labelled
/// follows from the spec: a bitstream conforms to every profile its general_profile_idc or a
/// general_profile_compatibility_flag names (A.3: a Main stream with flag 2 set is a Main 10
/// stream), and a bitstream of one level to every higher level of its tier (A.4.1).
///
/// nil means downstream takes any value (ANY caps, or a structure without the field).
struct H265DownstreamConstraints: DownstreamProfileLevelConstraints {
    static let mediaType = "video/x-h265"
    var profiles: [String]?
    var levels: [String]?

    /// The profile and level to put in the caps for a stream of `sps` coded from `format` (nil:
    /// the stream's own), or the reason none downstream allows fits.
    func labels(for sps: H265SequenceParameterSet, format: PixelFormat) throws(DownstreamRefusal) -> (
        profile: String?, level: String?
    ) {
        let ptl = sps.profileTierLevel
        var profile: String?
        if let profiles {
            let conforming = ptl.gstreamerConformingProfileNames
            guard let chosen = conforming.first(where: profiles.contains) else {
                let made =
                    conforming.isEmpty
                    ? "a profile GStreamer has no name for"
                    : conforming.count == 1
                        ? conforming[0]
                        : "\(conforming[0]) (a \(conforming.dropFirst().joined(separator: ", ")) stream too)"
                let inputs = profiles.compactMap { name in Self.inputFormat(for: name).map { "\($0) for \(name)" } }
                throw DownstreamRefusal(
                    "downstream takes profile \(profiles.joined(separator: ", ")), and x265 codes \(GStreamerWording.name(of: format)) "
                        + "as \(made) (H.265 A.3)"
                        + (inputs.isEmpty
                            ? ""
                            : "; convert the input upstream (videoconvert ! video/x-raw,format=...): \(inputs.joined(separator: ", "))")
                )
            }
            profile = chosen == conforming.first ? nil : chosen
        }
        var level: String?
        if let levels {
            let own = ptl.generalLevelIdc
            let allowed = levels.compactMap { name in Self.levelIdc(name).map { (name, $0) } }.sorted { $0.1 < $1.1 }
            guard let chosen = allowed.first(where: { $0.1 >= own }) else {
                throw DownstreamRefusal(
                    "the stream needs level \(ptl.gstreamerLevelName ?? "idc \(own)") or higher (H.265 Table A-8: its size, "
                        + "frame rate and bit rate), and downstream takes level \(levels.joined(separator: ", ")); lower the "
                        + "size, frame rate or bitrate, or allow a higher level downstream")
            }
            level = chosen.1 == own ? nil : chosen.0
        }
        return (profile, level)
    }

    /// general_level_idc of a GStreamer level name (30 times the level, A.4.1): 93 for "3.1".
    static func levelIdc(_ name: String) -> Int? {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let major = Int(parts[0]) else { return nil }
        let minor = parts.count == 2 ? Int(parts[1]) : 0
        guard let minor, (0...9).contains(minor), (1...8).contains(major) else { return nil }
        return major * 30 + minor * 3
    }

    /// The input format from which x265 codes a stream of the profile `name` (its own profile).
    static func inputFormat(for name: String) -> String? {
        switch name {
        case "main": "I420"
        case "main-10": "I420_10LE"
        case "main-422-10": "I422_10LE"
        case "main-444": "Y444"
        case "main-444-10": "Y444_10LE"
        default: nil
        }
    }
}
