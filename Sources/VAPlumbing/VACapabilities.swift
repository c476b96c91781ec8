import CVA

/// What a VA display offers: profiles, their entrypoints, and per (profile, entrypoint) the
/// RT formats and the largest picture (vaQueryConfigProfiles, vaQueryConfigEntrypoints,
/// vaGetConfigAttributes).
public struct VACapabilities: Sendable {
    /// One (profile, entrypoint) pair the driver offers, e.g. (VAProfileH264High, VAEntrypointVLD).
    public struct Endpoint: Sendable {
        public var profile: VAProfile
        public var entrypoint: VAEntrypoint
        /// VA_RT_FORMAT_* bits (VAConfigAttribRTFormat); nil when the driver does not say.
        public var rtFormats: UInt32?
        /// VAConfigAttribMaxPictureWidth/Height; nil when the driver does not say (older
        /// drivers), in which case only vaCreateContext tells.
        public var maxPictureWidth: Int?
        public var maxPictureHeight: Int?

        public init(
            profile: VAProfile, entrypoint: VAEntrypoint, rtFormats: UInt32? = nil, maxPictureWidth: Int? = nil,
            maxPictureHeight: Int? = nil
        ) {
            self.profile = profile
            self.entrypoint = entrypoint
            self.rtFormats = rtFormats
            self.maxPictureWidth = maxPictureWidth
            self.maxPictureHeight = maxPictureHeight
        }
    }

    /// Every pair, in the driver's order of profiles and entrypoints.
    public var endpoints: [Endpoint]
    /// Profiles the probe skipped because a query about them failed (a driver listing a profile
    /// it then refuses to describe), so one odd profile does not hide the others.
    public var problems: [VAError]

    public init(endpoints: [Endpoint], problems: [VAError] = []) {
        self.endpoints = endpoints
        self.problems = problems
    }

    /// Whether the driver offers `entrypoint` (VAEntrypointVLD: decoding) for `profile`.
    public func supports(profile: VAProfile, entrypoint: VAEntrypoint) -> Bool {
        endpoints.contains { $0.profile == profile && $0.entrypoint == entrypoint }
    }

    /// The largest picture the driver says it handles for the pair; nil when it does not say.
    public func maxPictureSize(profile: VAProfile, entrypoint: VAEntrypoint) -> (width: Int, height: Int)? {
        guard let endpoint = endpoints.first(where: { $0.profile == profile && $0.entrypoint == entrypoint }),
            let width = endpoint.maxPictureWidth, let height = endpoint.maxPictureHeight
        else { return nil }
        return (width, height)
    }

    /// "H264ConstrainedBaseline: VLD; H264Main: VLD; H264High: VLD" (libva's names).
    public var summary: String {
        var profiles: [VAProfile] = []
        for endpoint in endpoints where !profiles.contains(endpoint.profile) { profiles.append(endpoint.profile) }
        if profiles.isEmpty { return "no profiles" }
        return profiles.map { profile in
            let entrypoints = endpoints.filter { $0.profile == profile }.map { Self.name(of: $0.entrypoint) }
            return "\(Self.name(of: profile)): \(entrypoints.joined(separator: ", "))"
        }.joined(separator: "; ")
    }

    /// libva's name without its prefix (vaProfileStr, va_str.h): "H264High".
    public static func name(of profile: VAProfile) -> String {
        var text = vaProfileStr(profile).map { String(cString: $0) } ?? "VAProfile\(profile.rawValue)"
        if text.hasPrefix("VAProfile") { text.removeFirst("VAProfile".count) }
        return text
    }

    /// libva's name without its prefix (vaEntrypointStr, va_str.h): "VLD", "EncSlice".
    public static func name(of entrypoint: VAEntrypoint) -> String {
        var text = vaEntrypointStr(entrypoint).map { String(cString: $0) } ?? "VAEntrypoint\(entrypoint.rawValue)"
        if text.hasPrefix("VAEntrypoint") { text.removeFirst("VAEntrypoint".count) }
        return text
    }
}

extension VADisplayConnection {
    /// Every profile (vaQueryConfigProfiles) with its entrypoints (vaQueryConfigEntrypoints) and
    /// their RT formats and largest picture (vaGetConfigAttributes). VAProfileNone, which va.h
    /// reserves for video processing, is listed like the others.
    ///
    /// - Throws: when the profiles cannot be listed; a failure about one profile is recorded in
    ///   ``VACapabilities/problems`` instead.
    public func probeCapabilities() throws(VAError) -> VACapabilities {
        // va.h: the lists are at most vaMaxNumProfiles / vaMaxNumEntrypoints long.
        let maxProfiles = Int(max(vaMaxNumProfiles(display), 0))
        var profileCount: Int32 = 0
        var profiles = [VAProfile](repeating: VAProfileNone, count: maxProfiles)
        try vaCall("vaQueryConfigProfiles", context: "listing the profiles of \(description)") {
            vaQueryConfigProfiles(display, &profiles, &profileCount)
        }
        var endpoints: [VACapabilities.Endpoint] = []
        var problems: [VAError] = []
        let maxEntrypoints = Int(max(vaMaxNumEntrypoints(display), 0))
        for profile in profiles.prefix(max(0, min(Int(profileCount), maxProfiles))) {
            do throws(VAError) {
                endpoints += try probe(profile, maxEntrypoints: maxEntrypoints)
            } catch {
                problems.append(error)
            }
        }
        return VACapabilities(endpoints: endpoints, problems: problems)
    }

    private func probe(_ profile: VAProfile, maxEntrypoints: Int) throws(VAError) -> [VACapabilities.Endpoint] {
        let profileName = VACapabilities.name(of: profile)
        var entrypointCount: Int32 = 0
        var entrypoints = [VAEntrypoint](repeating: VAEntrypoint(0), count: maxEntrypoints)
        try vaCall("vaQueryConfigEntrypoints", context: "probing \(profileName)") {
            vaQueryConfigEntrypoints(display, profile, &entrypoints, &entrypointCount)
        }
        var result: [VACapabilities.Endpoint] = []
        for entrypoint in entrypoints.prefix(max(0, min(Int(entrypointCount), maxEntrypoints))) {
            var attributes = [
                VAConfigAttrib(type: VAConfigAttribRTFormat, value: 0),
                VAConfigAttrib(type: VAConfigAttribMaxPictureWidth, value: 0),
                VAConfigAttrib(type: VAConfigAttribMaxPictureHeight, value: 0)
            ]
            let count = Int32(attributes.count)
            try vaCall(
                "vaGetConfigAttributes", context: "probing \(profileName) \(VACapabilities.name(of: entrypoint))"
            ) {
                vaGetConfigAttributes(display, profile, entrypoint, &attributes, count)
            }
            // va.h: an attribute the driver does not know comes back as VA_ATTRIB_NOT_SUPPORTED;
            // 0 is no format and no size either.
            func value(_ index: Int) -> UInt32? {
                attributes[index].value == UInt32(VA_ATTRIB_NOT_SUPPORTED) || attributes[index].value == 0
                    ? nil : attributes[index].value
            }
            result.append(
                VACapabilities.Endpoint(
                    profile: profile, entrypoint: entrypoint, rtFormats: value(0),
                    maxPictureWidth: value(1).map { Int($0) }, maxPictureHeight: value(2).map { Int($0) }))
        }
        return result
    }

    /// Surface attributes a config supports (vaQuerySurfaceAttributes): pixel formats, sizes,
    /// memory types; what ``VASurfaceSet`` may ask for with this config.
    public func surfaceAttributes(config: borrowing VAConfig) throws(VAError) -> VASurfaceAttributes {
        // va.h: with a NULL list the call only says how many attributes there are.
        var count: UInt32 = 0
        let id = config.id
        try vaCall("vaQuerySurfaceAttributes", context: "counting the surface attributes of a config") {
            vaQuerySurfaceAttributes(display, id, nil, &count)
        }
        let capacity = Int(count)
        var attributes = [VASurfaceAttrib](repeating: VASurfaceAttrib(), count: capacity)
        try vaCall("vaQuerySurfaceAttributes", context: "reading the surface attributes of a config") {
            vaQuerySurfaceAttributes(display, id, &attributes, &count)
        }
        var result = VASurfaceAttributes()
        for attribute in attributes.prefix(min(Int(count), capacity)) {
            let integer = attribute.value.value.i
            switch attribute.type {
            case VASurfaceAttribPixelFormat: result.pixelFormats.append(UInt32(bitPattern: integer))
            case VASurfaceAttribMinWidth: result.minWidth = Int(integer)
            case VASurfaceAttribMaxWidth: result.maxWidth = Int(integer)
            case VASurfaceAttribMinHeight: result.minHeight = Int(integer)
            case VASurfaceAttribMaxHeight: result.maxHeight = Int(integer)
            case VASurfaceAttribMemoryType: result.memoryTypes = UInt32(bitPattern: integer)
            default: break
            }
        }
        return result
    }
}

/// What vaQuerySurfaceAttributes says about a config's surfaces; nil where the driver does not
/// say.
public struct VASurfaceAttributes: Sendable {
    /// FourCCs (VA_FOURCC_*, e.g. VA_FOURCC_NV12), in the driver's order.
    public var pixelFormats: [UInt32] = []
    public var minWidth: Int?
    public var maxWidth: Int?
    public var minHeight: Int?
    public var maxHeight: Int?
    /// VA_SURFACE_ATTRIB_MEM_TYPE_* bits.
    public var memoryTypes: UInt32?
}
