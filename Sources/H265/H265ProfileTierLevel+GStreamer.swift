/// The profile, tier and level as GStreamer's `video/x-h265` caps spell them (what h265parse
/// writes, gst_h265_profile_to_string and friends), so that a caps filter or a decoder's
/// template written for h265parse's output matches SwiftVT's.
extension H265ProfileTierLevel {
    /// The profile (A.3) from general_profile_idc, then from the compatibility flags (a stream
    /// may signal only the flag of the profile it conforms to, A.3.1); nil for a profile GStreamer
    /// has no name for.
    public var gstreamerProfileName: String? {
        guard let general else { return nil }
        if let name = Self.profileName(idc: general.profileIdc, general) { return name }
        for idc in 1...31 where general.isCompatible(withProfile: idc) {
            if let name = Self.profileName(idc: idc, general) { return name }
        }
        return nil
    }

    /// Every profile the stream conforms to, by GStreamer's names: its own
    /// (``gstreamerProfileName``) first, then those of the other profiles its
    /// general_profile_compatibility_flag[j] names (A.3: a Main stream x265 writes with flag 2 set
    /// is a Main 10 stream too, which a Main 10 decoder takes).
    public var gstreamerConformingProfileNames: [String] {
        guard let general, let own = gstreamerProfileName else { return [] }
        var names = [own]
        for idc in 1...4 where general.isCompatible(withProfile: idc) {
            if let name = Self.profileName(idc: idc, general), !names.contains(name) { names.append(name) }
        }
        return names
    }

    private static func profileName(idc: Int, _ profile: Profile) -> String? {
        switch idc {
        case 1: return "main"
        case 2: return "main-10"
        case 3: return "main-still-picture"
        case 4: return formatRangeExtensionsProfileName(profile)
        default: return nil
        }
    }

    /// One row of Table A-2 (format range extensions profiles): the constraint flags it requires
    /// (max_12bit ... one_picture_only), and whether lower_bit_rate_constraint_flag must be 1.
    private struct RangeExtensionsProfile {
        var name: String
        var flags: [Bool]
        var requiresLowerBitRate: Bool
    }

    private static let rangeExtensionsProfiles: [RangeExtensionsProfile] = [
        // max_12bit, max_10bit, max_8bit, max_422chroma, max_420chroma, max_monochrome, intra, one_picture_only
        .init(
            name: "monochrome", flags: [true, true, true, true, true, true, false, false], requiresLowerBitRate: true),
        .init(
            name: "monochrome-12", flags: [true, false, false, true, true, true, false, false],
            requiresLowerBitRate: true),
        .init(
            name: "monochrome-16", flags: [false, false, false, true, true, true, false, false],
            requiresLowerBitRate: true),
        .init(
            name: "main-12", flags: [true, false, false, true, true, false, false, false], requiresLowerBitRate: true),
        .init(
            name: "main-422-10", flags: [true, true, false, true, false, false, false, false],
            requiresLowerBitRate: true),
        .init(
            name: "main-422-12", flags: [true, false, false, true, false, false, false, false],
            requiresLowerBitRate: true),
        .init(
            name: "main-444", flags: [true, true, true, false, false, false, false, false], requiresLowerBitRate: true),
        .init(
            name: "main-444-10", flags: [true, true, false, false, false, false, false, false],
            requiresLowerBitRate: true),
        .init(
            name: "main-444-12", flags: [true, false, false, false, false, false, false, false],
            requiresLowerBitRate: true),
        .init(
            name: "main-intra", flags: [true, true, true, true, true, false, true, false], requiresLowerBitRate: false),
        .init(
            name: "main-10-intra", flags: [true, true, false, true, true, false, true, false],
            requiresLowerBitRate: false),
        .init(
            name: "main-12-intra", flags: [true, false, false, true, true, false, true, false],
            requiresLowerBitRate: false),
        .init(
            name: "main-422-10-intra", flags: [true, true, false, true, false, false, true, false],
            requiresLowerBitRate: false),
        .init(
            name: "main-422-12-intra", flags: [true, false, false, true, false, false, true, false],
            requiresLowerBitRate: false),
        .init(
            name: "main-444-intra", flags: [true, true, true, false, false, false, true, false],
            requiresLowerBitRate: false),
        .init(
            name: "main-444-10-intra", flags: [true, true, false, false, false, false, true, false],
            requiresLowerBitRate: false),
        .init(
            name: "main-444-12-intra", flags: [true, false, false, false, false, false, true, false],
            requiresLowerBitRate: false),
        .init(
            name: "main-444-16-intra", flags: [false, false, false, false, false, false, true, false],
            requiresLowerBitRate: false),
        .init(
            name: "main-444-still-picture", flags: [true, true, true, false, false, false, true, true],
            requiresLowerBitRate: false),
        .init(
            name: "main-444-16-still-picture", flags: [false, false, false, false, false, false, true, true],
            requiresLowerBitRate: false)
    ]

    /// The format range extensions profile (A.3.5, Table A-2) the constraint flags name: the
    /// row whose required flags the stream all sets, with the fewest flags set beyond them (so a
    /// stream with a non-standard combination gets the closest profile it conforms to), the
    /// later row (the more capable profile) on a tie, as GStreamer chooses.
    private static func formatRangeExtensionsProfileName(_ profile: Profile) -> String? {
        let signalled = [
            profile.max12BitConstraintFlag, profile.max10BitConstraintFlag, profile.max8BitConstraintFlag,
            profile.max422ChromaConstraintFlag, profile.max420ChromaConstraintFlag, profile.maxMonochromeConstraintFlag,
            profile.intraConstraintFlag, profile.onePictureOnlyConstraintFlag
        ]
        var best: (name: String, extra: Int)?
        for row in rangeExtensionsProfiles {
            if row.requiresLowerBitRate && !profile.lowerBitRateConstraintFlag { continue }
            var extra = 0
            var conforms = true
            for (required, set) in zip(row.flags, signalled) where required != set {
                if required {
                    conforms = false
                    break
                }
                extra += 1
            }
            guard conforms else { continue }
            if best.map({ extra <= $0.extra }) ?? true { best = (row.name, extra) }
        }
        return best?.name
    }

    /// The tier: "main" or "high" (general_tier_flag, A.4.1).
    public var gstreamerTierName: String? {
        general.map { $0.tierFlag ? "high" : "main" }
    }

    /// The level (general_level_idc is 30 times the level number, A.4.1): "3.1" for 93; nil for
    /// 0 and for values that name no level of Table A-8 (255, level 8.5, has no name in GStreamer).
    public var gstreamerLevelName: String? {
        switch generalLevelIdc {
        case 30, 60, 90, 120, 150, 180: return String(generalLevelIdc / 30)
        case 63, 93, 123, 153, 156, 183, 186: return "\(generalLevelIdc / 30).\(generalLevelIdc % 30 / 3)"
        default: return nil
        }
    }
}
