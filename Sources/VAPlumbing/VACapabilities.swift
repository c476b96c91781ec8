import CVA

/// What a VA display offers: profiles, their entrypoints, and per (profile, entrypoint) the
/// RT formats and the largest picture (vaQueryConfigProfiles, vaQueryConfigEntrypoints,
/// vaGetConfigAttributes).
public struct VACapabilities: Sendable {
    public struct Endpoint: Sendable {
        public var profile: VAProfile
        public var entrypoint: VAEntrypoint
        /// VA_RT_FORMAT_* bits; nil when the driver does not say.
        public var rtFormats: UInt32?
        public var maxPictureWidth: Int?
        public var maxPictureHeight: Int?
    }

    public var endpoints: [Endpoint]

    public func supports(profile: VAProfile, entrypoint: VAEntrypoint) -> Bool {
        endpoints.contains { $0.profile == profile && $0.entrypoint == entrypoint }
    }

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

    static func name(of profile: VAProfile) -> String {
        var text = vaProfileStr(profile).map { String(cString: $0) } ?? "VAProfile\(profile.rawValue)"
        if text.hasPrefix("VAProfile") { text.removeFirst("VAProfile".count) }
        return text
    }

    static func name(of entrypoint: VAEntrypoint) -> String {
        var text = vaEntrypointStr(entrypoint).map { String(cString: $0) } ?? "VAEntrypoint\(entrypoint.rawValue)"
        if text.hasPrefix("VAEntrypoint") { text.removeFirst("VAEntrypoint".count) }
        return text
    }
}

extension VADisplayConnection {
    /// Every profile and entrypoint the display offers, with their attributes.
    public func probeCapabilities() throws(VAError) -> VACapabilities {
        var profileCount = max(vaMaxNumProfiles(display), 0)
        var profiles = [VAProfile](repeating: VAProfileNone, count: Int(profileCount))
        try vaCall("vaQueryConfigProfiles") { vaQueryConfigProfiles(display, &profiles, &profileCount) }
        var endpoints: [VACapabilities.Endpoint] = []
        let maxEntrypoints = max(vaMaxNumEntrypoints(display), 0)
        for profile in profiles.prefix(Int(profileCount)) where profile != VAProfileNone {
            var entrypointCount = maxEntrypoints
            var entrypoints = [VAEntrypoint](repeating: VAEntrypoint(0), count: Int(maxEntrypoints))
            try vaCall("vaQueryConfigEntrypoints", context: "probing \(VACapabilities.name(of: profile))") {
                vaQueryConfigEntrypoints(display, profile, &entrypoints, &entrypointCount)
            }
            for entrypoint in entrypoints.prefix(Int(entrypointCount)) {
                var attributes = [
                    VAConfigAttrib(type: VAConfigAttribRTFormat, value: 0),
                    VAConfigAttrib(type: VAConfigAttribMaxPictureWidth, value: 0),
                    VAConfigAttrib(type: VAConfigAttribMaxPictureHeight, value: 0),
                ]
                try vaCall("vaGetConfigAttributes") {
                    vaGetConfigAttributes(display, profile, entrypoint, &attributes, Int32(attributes.count))
                }
                func value(_ index: Int) -> UInt32? {
                    attributes[index].value == UInt32(VA_ATTRIB_NOT_SUPPORTED) || attributes[index].value == 0
                        ? nil : attributes[index].value
                }
                endpoints.append(VACapabilities.Endpoint(
                    profile: profile, entrypoint: entrypoint, rtFormats: value(0),
                    maxPictureWidth: value(1).map { Int($0) }, maxPictureHeight: value(2).map { Int($0) }))
            }
        }
        return VACapabilities(endpoints: endpoints)
    }

    /// Surface attributes a config supports (vaQuerySurfaceAttributes): pixel formats, sizes,
    /// memory types.
    public func surfaceAttributes(config: borrowing VAConfig) throws(VAError) -> VASurfaceAttributes {
        var count: UInt32 = 0
        try vaCall("vaQuerySurfaceAttributes") { vaQuerySurfaceAttributes(display, config.id, nil, &count) }
        var attributes = [VASurfaceAttrib](repeating: VASurfaceAttrib(), count: Int(count))
        try vaCall("vaQuerySurfaceAttributes") { vaQuerySurfaceAttributes(display, config.id, &attributes, &count) }
        var result = VASurfaceAttributes()
        for attribute in attributes.prefix(Int(count)) {
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

/// What vaQuerySurfaceAttributes says about a config's surfaces.
public struct VASurfaceAttributes: Sendable {
    /// FourCCs (VA_FOURCC_*).
    public var pixelFormats: [UInt32] = []
    public var minWidth: Int?
    public var maxWidth: Int?
    public var minHeight: Int?
    public var maxHeight: Int?
    /// VA_SURFACE_ATTRIB_MEM_TYPE_* bits.
    public var memoryTypes: UInt32?
}
