/// profile_tier_level(profilePresentFlag, maxNumSubLayersMinus1), 7.3.3 / 7.4.4: the profile, tier
/// and level of the whole stream (general_*) and of each temporal sub-layer below the highest.
public struct H265ProfileTierLevel: Hashable, Sendable {
    /// The profile fields that appear once for the stream and once per sub-layer (7.3.3).
    public struct Profile: Hashable, Sendable {
        /// *_profile_space, shall be 0 (7.4.4); parsing rejects other values.
        public var profileSpace = 0
        /// *_tier_flag: false for the Main tier, true for the High tier (Table A-8 limits).
        public var tierFlag = false
        /// *_profile_idc, 0...31: 1 Main, 2 Main 10, 3 Main Still Picture, 4 format range
        /// extensions, 5 high throughput, 9 screen content coding (A.3); other values are kept.
        public var profileIdc = 0
        /// *_profile_compatibility_flag[j] for j = 0...31, flag j in bit 31 - j (the order they
        /// are coded in, and how the hvcC record stores them).
        public var compatibilityFlags: UInt32 = 0
        /// The 48 bits from *_progressive_source_flag to the reserved or *_inbld_flag bit, as
        /// coded (the first in bit 47): the hvcC record's general_constraint_indicator_flags.
        public var constraintIndicatorFlags: UInt64 = 0

        public init() {}

        /// *_profile_compatibility_flag[j].
        public func isCompatible(withProfile j: Int) -> Bool {
            (0...31).contains(j) && compatibilityFlags & (UInt32(1) << UInt32(31 &- j)) != 0
        }

        /// Bit `index` of the 48 constraint indicator bits, counted from the first coded (0).
        func constraintBit(_ index: Int) -> Bool {
            constraintIndicatorFlags & (UInt64(1) << UInt64(47 &- index)) != 0
        }

        /// *_progressive_source_flag (7.4.4): with interlaced_source_flag, what the source was.
        public var progressiveSourceFlag: Bool { constraintBit(0) }
        /// *_interlaced_source_flag.
        public var interlacedSourceFlag: Bool { constraintBit(1) }
        /// *_non_packed_constraint_flag: no frame packing arrangement SEI messages.
        public var nonPackedConstraintFlag: Bool { constraintBit(2) }
        /// *_frame_only_constraint_flag: field_seq_flag is 0 (no field pictures).
        public var frameOnlyConstraintFlag: Bool { constraintBit(3) }

        /// The format range extensions profiles (A.3.5) tell themselves apart by these flags
        /// (Table A-2); 7.3.3 sends them for profile_idc 4...11 or a compatibility flag among
        /// 4...11; elsewhere the bits are reserved and these read false.
        public var usesRangeExtensionConstraintFlags: Bool {
            (4...11).contains(profileIdc) || (4...11).contains { isCompatible(withProfile: $0) }
        }
        /// *_max_12bit_constraint_flag (A.3.5).
        public var max12BitConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(4) }
        /// *_max_10bit_constraint_flag.
        public var max10BitConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(5) }
        /// *_max_8bit_constraint_flag.
        public var max8BitConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(6) }
        /// *_max_422chroma_constraint_flag.
        public var max422ChromaConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(7) }
        /// *_max_420chroma_constraint_flag.
        public var max420ChromaConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(8) }
        /// *_max_monochrome_constraint_flag.
        public var maxMonochromeConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(9) }
        /// *_intra_constraint_flag.
        public var intraConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(10) }
        /// *_one_picture_only_constraint_flag.
        public var onePictureOnlyConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(11) }
        /// *_lower_bit_rate_constraint_flag.
        public var lowerBitRateConstraintFlag: Bool { usesRangeExtensionConstraintFlags && constraintBit(12) }

        /// The profile part of 7.3.3 (profile space through the 44 constraint bits).
        static func parse(_ r: inout H265BitReader, prefix: String) throws(H265Error) -> Profile {
            var profile = Profile()
            profile.profileSpace = Int(try r.readBits(2, "\(prefix)_profile_space"))
            // 7.4.4: shall be 0; decoders shall ignore a CVS with another value, so there is
            // nothing in it this parser could describe correctly.
            guard profile.profileSpace == 0 else {
                throw H265Error.invalidValue(field: "\(prefix)_profile_space", value: Int64(profile.profileSpace))
            }
            profile.tierFlag = try r.readFlag("\(prefix)_tier_flag")
            profile.profileIdc = Int(try r.readBits(5, "\(prefix)_profile_idc"))
            profile.compatibilityFlags = try r.readBits(32, "\(prefix)_profile_compatibility_flag")
            let high = UInt64(try r.readBits(16, "\(prefix)_progressive_source_flag...constraint flags"))
            let low = UInt64(try r.readBits(32, "\(prefix)_reserved_zero_43bits / \(prefix)_inbld_flag"))
            profile.constraintIndicatorFlags = high << 32 | low
            return profile
        }

        func write(to w: inout BitWriter) {
            w.writeBits(UInt32(truncatingIfNeeded: profileSpace), count: 2)
            w.writeFlag(tierFlag)
            w.writeBits(UInt32(truncatingIfNeeded: profileIdc), count: 5)
            w.writeBits(compatibilityFlags, count: 32)
            w.writeBits(UInt32(truncatingIfNeeded: constraintIndicatorFlags >> 32), count: 16)
            w.writeBits(UInt32(truncatingIfNeeded: constraintIndicatorFlags), count: 32)
        }
    }

    /// What is sent for one sub-layer below the highest (7.3.3: sub_layer_profile_present_flag,
    /// sub_layer_level_present_flag); nil where not sent.
    public struct SubLayer: Hashable, Sendable {
        public var profile: Profile?
        /// sub_layer_level_idc.
        public var levelIdc: Int?

        public init(profile: Profile? = nil, levelIdc: Int? = nil) {
            self.profile = profile
            self.levelIdc = levelIdc
        }
    }

    /// The general profile; nil only when the structure was coded with profilePresentFlag 0
    /// (never in a VPS or SPS of the base layer).
    public var general: Profile?
    /// general_level_idc: 30 times the level number (Table A-8: 93 is level 3.1); 255 is
    /// level 8.5, which has no limits.
    public var generalLevelIdc = 0
    /// One entry per sub-layer 0...maxNumSubLayersMinus1 - 1.
    public var subLayers: [SubLayer] = []

    public init(general: Profile? = Profile(), generalLevelIdc: Int = 0, subLayers: [SubLayer] = []) {
        self.general = general
        self.generalLevelIdc = generalLevelIdc
        self.subLayers = subLayers
    }

    /// The level as a number (general_level_idc / 30).
    public var generalLevel: Double { Double(generalLevelIdc) / 30 }

    /// profile_tier_level(profilePresentFlag, maxNumSubLayersMinus1), 7.3.3.
    static func parse(
        _ r: inout H265BitReader, profilePresent: Bool, maxNumSubLayersMinus1: Int
    ) throws(H265Error) -> H265ProfileTierLevel {
        var ptl = H265ProfileTierLevel(general: nil)
        if profilePresent { ptl.general = try Profile.parse(&r, prefix: "general") }
        ptl.generalLevelIdc = Int(try r.readBits(8, "general_level_idc"))
        var profilePresentFlags: [Bool] = []
        var levelPresentFlags: [Bool] = []
        for _ in 0..<maxNumSubLayersMinus1 {
            profilePresentFlags.append(try r.readFlag("sub_layer_profile_present_flag"))
            levelPresentFlags.append(try r.readFlag("sub_layer_level_present_flag"))
        }
        // reserved_zero_2bits pad the eight flag pairs to whole bytes; decoders ignore their value.
        if maxNumSubLayersMinus1 > 0 {
            try r.skipBits(2 &* (8 &- maxNumSubLayersMinus1), "reserved_zero_2bits")
        }
        for index in 0..<maxNumSubLayersMinus1 {
            var subLayer = SubLayer()
            if profilePresentFlags[index] { subLayer.profile = try Profile.parse(&r, prefix: "sub_layer") }
            if levelPresentFlags[index] { subLayer.levelIdc = Int(try r.readBits(8, "sub_layer_level_idc")) }
            ptl.subLayers.append(subLayer)
        }
        return ptl
    }

    /// Writes the structure back (profilePresentFlag is whether `general` is set).
    public func write(to w: inout BitWriter, maxNumSubLayersMinus1: Int) {
        general?.write(to: &w)
        w.writeBits(UInt32(truncatingIfNeeded: generalLevelIdc), count: 8)
        let count = Swift.min(Swift.max(maxNumSubLayersMinus1, 0), 7)
        for index in 0..<count {
            let subLayer = subLayers.indices.contains(index) ? subLayers[index] : SubLayer()
            w.writeFlag(subLayer.profile != nil)
            w.writeFlag(subLayer.levelIdc != nil)
        }
        if count > 0 { w.writeBits(0, count: 2 &* (8 &- count)) }
        for index in 0..<count {
            let subLayer = subLayers.indices.contains(index) ? subLayers[index] : SubLayer()
            subLayer.profile?.write(to: &w)
            if let level = subLayer.levelIdc { w.writeBits(UInt32(truncatingIfNeeded: level), count: 8) }
        }
    }
}
