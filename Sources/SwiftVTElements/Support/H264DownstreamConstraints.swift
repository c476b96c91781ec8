import CGStreamer
import CSwiftVTShim
import H264
import MediaCore
import SwiftVT

/// What downstream of an encoder allows for the H.264 stream's profile and level (a capsfilter
/// `video/x-h264,profile=baseline,level=4.1`, a payloader, a muxer), read once at negotiation:
/// which profile and level to ask the encoder for, and how to label the stream it made.
///
/// nil means downstream takes any value (ANY caps, or a structure without the field).
struct H264DownstreamConstraints: DownstreamProfileLevelConstraints {
    static let mediaType = "video/x-h264"
    var profiles: [String]?
    var levels: [String]?

    /// The caps profile names a stream of `sps` may carry (its own first): a stream that
    /// conforms to a profile's constraints also conforms to the wider profiles listed.
    /// Constrained Baseline streams are Baseline, Main and High streams too (A.2.1.1: a
    /// constrained-baseline bitstream obeys the constraints of all three); Main streams are High
    /// streams (A.2.4); a High stream of frames only is a Progressive High stream (A.2.4.1).
    static func profileNames(conformingTo sps: SequenceParameterSet) -> [String] {
        let own = sps.gstreamerProfileName.map { [$0] } ?? []
        switch sps.profile {
        case .constrainedBaseline: return own + ["baseline", "main", "high"]
        case .main: return own + ["high"]
        case .high: return own + (sps.frameMbsOnlyFlag ? ["progressive-high"] : [])
        case .progressiveHigh: return own + ["high"]
        default: return own
        }
    }

    /// The profile of a stream coded from `format`, as x264 writes its profile_idc: High 10
    /// for 10-bit 4:2:0 (A.2.5), High 4:2:2 for 4:2:2 (A.2.6), High 4:4:4 Predictive for 4:4:4
    /// and for lossless coding (A.2.7, the only profile with qpprime_y_zero_transform_bypass),
    /// else High (of which Main and Constrained Baseline are subsets vtenc also makes).
    static func profile(coding format: PixelFormat, lossless: Bool) -> H264ProfileLevel.Profile {
        if lossless { return .high444Predictive }
        switch format.chromaSubsampling {
        case .yuv444?: return .high444Predictive
        case .yuv422?: return .high422
        default: return format.bitDepth > 8 ? .high10 : .high
        }
    }

    /// The encoder profile that makes a stream downstream takes, best compression first;
    /// nil when downstream takes any profile. Throws the reason when no profile the encoder
    /// makes from `pixelFormat` is allowed.
    func encoderProfile(lossless: Bool, pixelFormat: PixelFormat) throws(DownstreamRefusal) -> H264ProfileLevel.Profile?
    {
        guard let profiles else { return nil } // lossless too: x264 then chooses High 4:4:4 itself
        // What each caps name asks of the encoder (x264 and VA-API make frame-only streams, so
        // progressive-high is High). Not constrained-high (A.2.4.2): neither writes its
        // constraint_set4/5 flags.
        func encodable(_ name: String) -> H264ProfileLevel.Profile? {
            switch name {
            case "high", "progressive-high": return .high
            case "main": return .main
            case "baseline", "constrained-baseline": return .constrainedBaseline
            case "high-10": return .high10
            case "high-4:2:2": return .high422
            case "high-4:4:4": return .high444Predictive
            default: return nil
            }
        }
        let offered = Set(profiles.compactMap(encodable))
        if lossless {
            guard offered.contains(.high444Predictive) else {
                throw DownstreamRefusal(
                    "lossless coding (quality above \(Self.formatted(CompressionProperties.losslessQualityThreshold))) needs the high-4:4:4 profile, "
                        + "but downstream allows only profile \(profiles.joined(separator: ", ")); lower quality or let downstream take profile=high-4:4:4"
                )
            }
            return .high444Predictive
        }
        let needed = Self.profile(coding: pixelFormat, lossless: false)
        if needed != .high {
            // 10-bit, 4:2:2 and 4:4:4 pictures have one profile each (x264 writes it whatever
            // profile it is asked for, as x264enc's sink caps allow these formats only for it).
            let name = VideoFormatMapping.gstreamerName(for: pixelFormat) ?? pixelFormat.description
            guard offered.contains(needed) else {
                throw DownstreamRefusal(
                    "\(name) pictures make a \(needed.rawValue) stream, but downstream allows only profile \(profiles.joined(separator: ", ")); "
                        + "convert to I420 upstream (videoconvert ! video/x-raw,format=I420) or let downstream take profile=\(needed.rawValue)"
                )
            }
            return needed
        }
        guard
            let chosen = [H264ProfileLevel.Profile.high, .main, .constrainedBaseline, .high444Predictive].first(
                where: offered.contains)
        else {
            throw DownstreamRefusal(
                "downstream allows only profile \(profiles.joined(separator: ", ")), none of which vtenc makes "
                    + "from 8-bit 4:2:0 pictures (constrained-baseline, baseline, main, high, progressive-high, high-4:4:4)"
            )
        }
        return chosen
    }

    /// The level to ask the encoder for: the lowest level downstream allows whose Table A-1
    /// limits hold for the picture size and frame rate; nil when downstream takes any level.
    /// Throws when every allowed level is too low.
    func encoderLevel(width: Int, height: Int, frameRate: Double?, bitRate: Int?, high: Bool) throws(DownstreamRefusal)
        -> String?
    {
        guard let levels else { return nil }
        if let typed = levels.first(where: { $0.hasPrefix("(") }) {
            // gst-launch-1.0 reads level=4.1 as a number; H.264 caps carry the level as a string.
            let number = typed.split(separator: ")", maxSplits: 1).last.map(String.init) ?? typed
            throw DownstreamRefusal(
                "downstream asks for level \(typed), which is not a string: H.264 caps name levels as strings; write level=(string)\(number)"
            )
        }
        let needed = H264LevelLimits.lowestLevel(
            widthInMacroblocks: (width + 15) / 16, heightInMacroblocks: (height + 15) / 16, frameRate: frameRate ?? 30,
            referenceFrames: 1, bitRate: bitRate, high: high)
        let allowed = levels.compactMap { name in H264ProfileLevel.levels[name].map { (name: name, idc: $0) } }
            .sorted { Self.order($0.idc) < Self.order($1.idc) }
        guard let chosen = allowed.first(where: { Self.order($0.idc) >= Self.order(needed) }) else {
            let neededName = H264ProfileLevel.levels.first { $0.value == needed }?.key ?? "\(needed)"
            let rate = frameRate.map { " at \(Self.formatted($0)) fps" } ?? ""
            throw DownstreamRefusal(
                "\(width)x\(height)\(rate) needs level \(neededName) or higher (H.264 Table A-1), but downstream allows only level "
                    + "\(levels.joined(separator: ", ")); let downstream take a higher level, or lower the size or frame rate"
            )
        }
        return chosen.name
    }

    /// The caps profile to label a stream of `sps` with: its own name when downstream takes
    /// it (or anything), else the first wider profile it conforms to that downstream takes.
    func profileLabel(for sps: SequenceParameterSet) -> String? {
        let names = Self.profileNames(conformingTo: sps)
        guard let profiles else { return names.first }
        return names.first(where: profiles.contains) ?? names.first
    }

    /// The caps level to label a stream of `sps` with: its own level when downstream takes it,
    /// else the lowest higher level downstream allows (a stream within a level's limits is
    /// within every higher level's, Table A-1).
    func levelLabel(for sps: SequenceParameterSet) -> String? {
        guard let own = sps.levelName else { return nil }
        guard let levels, !levels.contains(own), let ownIdc = H264ProfileLevel.levels[own] else { return own }
        let higher = levels.compactMap { name in H264ProfileLevel.levels[name].map { (name: name, idc: $0) } }
            .filter { Self.order($0.idc) > Self.order(ownIdc) }
            .min { Self.order($0.idc) < Self.order($1.idc) }
        return higher?.name ?? own
    }

    /// level_idc in the order of Table A-1: 1b (9) sits between 1 and 1.1.
    private static func order(_ levelIdc: Int) -> Double { levelIdc == 9 ? 10.5 : Double(levelIdc) }

    private static func formatted(_ value: Double) -> String {
        let rounded = (value * 100).rounded() / 100
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }
}

/// Why downstream's caps rule out every stream the encoder could make.
struct DownstreamRefusal: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// What both encoders read of downstream's caps: the profiles and levels it allows for their
/// media type, nil for each it does not restrict (ANY caps, or a structure without the field).
protocol DownstreamProfileLevelConstraints: Sendable {
    static var mediaType: String { get }
    var profiles: [String]? { get }
    var levels: [String]? { get }
    init(profiles: [String]?, levels: [String]?)
}

extension DownstreamProfileLevelConstraints {
    /// The peer of an encoder's source pad.
    init(sourcePad pad: UnsafeMutablePointer<GstPad>) {
        self.init(
            profiles: Self.allowedStrings(pad, field: "profile"), levels: Self.allowedStrings(pad, field: "level"))
    }

    /// The values downstream allows for the string `field`, in its order of preference.
    private static func allowedStrings(_ pad: UnsafeMutablePointer<GstPad>, field: String) -> [String]? {
        guard let values = swiftvt_pad_peer_restricted_strings(pad, mediaType, field) else { return nil }
        defer { g_strfreev(values) }
        var result: [String] = []
        var index = 0
        while let value = values[index] {
            result.append(String(cString: value))
            index += 1
        }
        return result
    }
}
