/// hrd_parameters(commonInfPresentFlag, maxNumSubLayersMinus1), E.2.2 / E.3.2: the hypothetical
/// reference decoder of the VUI (one) or of the VPS (one per layer set that has one).
public struct H265HRDParameters: Hashable, Sendable {
    /// One coded picture buffer specification of a sub-layer (sub_layer_hrd_parameters(), E.2.3).
    public struct CPBSpecification: Hashable, Sendable {
        /// bit_rate_value_minus1[i], 0...2^32 - 2, increasing with i.
        public var bitRateValueMinus1: UInt32
        /// cpb_size_value_minus1[i], 0...2^32 - 2.
        public var cpbSizeValueMinus1: UInt32
        /// cpb_size_du_value_minus1[i]; nil without sub_pic_hrd_params_present_flag.
        public var cpbSizeDuValueMinus1: UInt32?
        /// bit_rate_du_value_minus1[i]; nil without sub_pic_hrd_params_present_flag.
        public var bitRateDuValueMinus1: UInt32?
        /// cbr_flag[i].
        public var cbrFlag: Bool

        public init(
            bitRateValueMinus1: UInt32, cpbSizeValueMinus1: UInt32, cpbSizeDuValueMinus1: UInt32? = nil,
            bitRateDuValueMinus1: UInt32? = nil, cbrFlag: Bool
        ) {
            self.bitRateValueMinus1 = bitRateValueMinus1
            self.cpbSizeValueMinus1 = cpbSizeValueMinus1
            self.cpbSizeDuValueMinus1 = cpbSizeDuValueMinus1
            self.bitRateDuValueMinus1 = bitRateDuValueMinus1
            self.cbrFlag = cbrFlag
        }
    }

    /// The per-sub-layer part of E.2.2.
    public struct SubLayer: Hashable, Sendable {
        public var fixedPicRateGeneralFlag = false
        /// fixed_pic_rate_within_cvs_flag; inferred 1 when fixed_pic_rate_general_flag is 1 (E.3.2).
        public var fixedPicRateWithinCvsFlag = false
        /// elemental_duration_in_tc_minus1, 0...2047; nil unless fixed_pic_rate_within_cvs_flag.
        public var elementalDurationInTcMinus1: Int?
        public var lowDelayHrdFlag = false
        /// cpb_cnt_minus1, 0...31; inferred 0 when absent (low_delay_hrd_flag 1).
        public var cpbCntMinus1 = 0
        /// cpb_cnt_minus1 + 1 entries each, when the NAL / VCL HRD is present.
        public var nalCPBSpecifications: [CPBSpecification] = []
        public var vclCPBSpecifications: [CPBSpecification] = []

        public init() {}
    }

    public var nalHrdParametersPresentFlag = false
    public var vclHrdParametersPresentFlag = false
    public var subPicHrdParamsPresentFlag = false
    /// tick_divisor_minus2, u(8) (sub-picture HRD only).
    public var tickDivisorMinus2 = 0
    /// du_cpb_removal_delay_increment_length_minus1, u(5) (sub-picture HRD only).
    public var duCpbRemovalDelayIncrementLengthMinus1 = 0
    public var subPicCpbParamsInPicTimingSeiFlag = false
    /// dpb_output_delay_du_length_minus1, u(5) (sub-picture HRD only).
    public var dpbOutputDelayDuLengthMinus1 = 0
    /// bit_rate_scale, u(4).
    public var bitRateScale = 0
    /// cpb_size_scale, u(4).
    public var cpbSizeScale = 0
    /// cpb_size_du_scale, u(4) (sub-picture HRD only).
    public var cpbSizeDuScale = 0
    /// initial_cpb_removal_delay_length_minus1, u(5); inferred 23 when absent (E.3.2).
    public var initialCpbRemovalDelayLengthMinus1 = 23
    /// au_cpb_removal_delay_length_minus1, u(5); inferred 23.
    public var auCpbRemovalDelayLengthMinus1 = 23
    /// dpb_output_delay_length_minus1, u(5); inferred 23.
    public var dpbOutputDelayLengthMinus1 = 23
    /// maxNumSubLayersMinus1 + 1 entries.
    public var subLayers: [SubLayer] = []

    public init() {}

    /// CpbDpbDelaysPresentFlag (E.3.2 / D.3.3): picture timing SEI carries the CPB and DPB delays
    /// when either HRD is present.
    public var cpbDpbDelaysPresentFlag: Bool { nalHrdParametersPresentFlag || vclHrdParametersPresentFlag }

    /// E.2.2. With `commonInfoPresent` false (a VPS's hrd_parameters() after the first with
    /// cprms_present_flag 0), the common part is not coded and is that of `previous` (E.3.2),
    /// which decides which sub-layer parameters follow.
    static func parse(
        _ r: inout H265BitReader, commonInfoPresent: Bool, maxNumSubLayersMinus1: Int,
        inheritingFrom previous: H265HRDParameters? = nil
    ) throws(H265Error) -> H265HRDParameters {
        var hrd = H265HRDParameters()
        if commonInfoPresent {
            hrd.nalHrdParametersPresentFlag = try r.readFlag("nal_hrd_parameters_present_flag")
            hrd.vclHrdParametersPresentFlag = try r.readFlag("vcl_hrd_parameters_present_flag")
            if hrd.nalHrdParametersPresentFlag || hrd.vclHrdParametersPresentFlag {
                hrd.subPicHrdParamsPresentFlag = try r.readFlag("sub_pic_hrd_params_present_flag")
                if hrd.subPicHrdParamsPresentFlag {
                    hrd.tickDivisorMinus2 = Int(try r.readBits(8, "tick_divisor_minus2"))
                    hrd.duCpbRemovalDelayIncrementLengthMinus1 = Int(
                        try r.readBits(5, "du_cpb_removal_delay_increment_length_minus1"))
                    hrd.subPicCpbParamsInPicTimingSeiFlag = try r.readFlag("sub_pic_cpb_params_in_pic_timing_sei_flag")
                    hrd.dpbOutputDelayDuLengthMinus1 = Int(try r.readBits(5, "dpb_output_delay_du_length_minus1"))
                }
                hrd.bitRateScale = Int(try r.readBits(4, "bit_rate_scale"))
                hrd.cpbSizeScale = Int(try r.readBits(4, "cpb_size_scale"))
                if hrd.subPicHrdParamsPresentFlag {
                    hrd.cpbSizeDuScale = Int(try r.readBits(4, "cpb_size_du_scale"))
                }
                hrd.initialCpbRemovalDelayLengthMinus1 = Int(
                    try r.readBits(5, "initial_cpb_removal_delay_length_minus1"))
                hrd.auCpbRemovalDelayLengthMinus1 = Int(try r.readBits(5, "au_cpb_removal_delay_length_minus1"))
                hrd.dpbOutputDelayLengthMinus1 = Int(try r.readBits(5, "dpb_output_delay_length_minus1"))
            }
        } else if let previous {
            hrd = previous
            hrd.subLayers = []
        }
        for _ in 0...maxNumSubLayersMinus1 {
            var subLayer = SubLayer()
            subLayer.fixedPicRateGeneralFlag = try r.readFlag("fixed_pic_rate_general_flag")
            subLayer.fixedPicRateWithinCvsFlag = subLayer.fixedPicRateGeneralFlag
            if !subLayer.fixedPicRateGeneralFlag {
                subLayer.fixedPicRateWithinCvsFlag = try r.readFlag("fixed_pic_rate_within_cvs_flag")
            }
            if subLayer.fixedPicRateWithinCvsFlag {
                // E.3.2: 0...2047.
                subLayer.elementalDurationInTcMinus1 = try r.readUE("elemental_duration_in_tc_minus1", max: 2047)
            } else {
                subLayer.lowDelayHrdFlag = try r.readFlag("low_delay_hrd_flag")
            }
            if !subLayer.lowDelayHrdFlag {
                // E.3.2: 0...31.
                subLayer.cpbCntMinus1 = try r.readUE("cpb_cnt_minus1", max: 31)
            }
            if hrd.nalHrdParametersPresentFlag {
                subLayer.nalCPBSpecifications = try parseSubLayer(
                    &r, cpbCount: subLayer.cpbCntMinus1 &+ 1, subPicture: hrd.subPicHrdParamsPresentFlag)
            }
            if hrd.vclHrdParametersPresentFlag {
                subLayer.vclCPBSpecifications = try parseSubLayer(
                    &r, cpbCount: subLayer.cpbCntMinus1 &+ 1, subPicture: hrd.subPicHrdParamsPresentFlag)
            }
            hrd.subLayers.append(subLayer)
        }
        return hrd
    }

    /// sub_layer_hrd_parameters(), E.2.3.
    static func parseSubLayer(
        _ r: inout H265BitReader, cpbCount: Int, subPicture: Bool
    ) throws(H265Error) -> [CPBSpecification] {
        var specifications: [CPBSpecification] = []
        specifications.reserveCapacity(cpbCount)
        for index in 0..<cpbCount {
            // E.3.3: each value is in 0...2^32 - 2, exactly what readUE accepts.
            let bitRate = try r.readUE("bit_rate_value_minus1")
            let cpbSize = try r.readUE("cpb_size_value_minus1")
            var cpbSizeDu: UInt32?
            var bitRateDu: UInt32?
            if subPicture {
                cpbSizeDu = try r.readUE("cpb_size_du_value_minus1")
                bitRateDu = try r.readUE("bit_rate_du_value_minus1")
            }
            let cbr = try r.readFlag("cbr_flag")
            // E.3.3: for i > 0, bit_rate_value_minus1[i] shall be greater than [i - 1]: the
            // schedules are listed from the lowest rate up.
            if index > 0, let previous = specifications.last, bitRate <= previous.bitRateValueMinus1 {
                throw H265Error.invalidValue(field: "bit_rate_value_minus1[\(index)]", value: Int64(bitRate))
            }
            specifications.append(
                CPBSpecification(
                    bitRateValueMinus1: bitRate, cpbSizeValueMinus1: cpbSize, cpbSizeDuValueMinus1: cpbSizeDu,
                    bitRateDuValueMinus1: bitRateDu, cbrFlag: cbr))
        }
        return specifications
    }

    /// Writes the structure back (the common part when `commonInfoPresent`).
    public func write(to w: inout BitWriter, commonInfoPresent: Bool) {
        if commonInfoPresent {
            w.writeFlag(nalHrdParametersPresentFlag)
            w.writeFlag(vclHrdParametersPresentFlag)
            if nalHrdParametersPresentFlag || vclHrdParametersPresentFlag {
                w.writeFlag(subPicHrdParamsPresentFlag)
                if subPicHrdParamsPresentFlag {
                    w.writeBits(UInt32(truncatingIfNeeded: tickDivisorMinus2), count: 8)
                    w.writeBits(UInt32(truncatingIfNeeded: duCpbRemovalDelayIncrementLengthMinus1), count: 5)
                    w.writeFlag(subPicCpbParamsInPicTimingSeiFlag)
                    w.writeBits(UInt32(truncatingIfNeeded: dpbOutputDelayDuLengthMinus1), count: 5)
                }
                w.writeBits(UInt32(truncatingIfNeeded: bitRateScale), count: 4)
                w.writeBits(UInt32(truncatingIfNeeded: cpbSizeScale), count: 4)
                if subPicHrdParamsPresentFlag { w.writeBits(UInt32(truncatingIfNeeded: cpbSizeDuScale), count: 4) }
                w.writeBits(UInt32(truncatingIfNeeded: initialCpbRemovalDelayLengthMinus1), count: 5)
                w.writeBits(UInt32(truncatingIfNeeded: auCpbRemovalDelayLengthMinus1), count: 5)
                w.writeBits(UInt32(truncatingIfNeeded: dpbOutputDelayLengthMinus1), count: 5)
            }
        }
        for subLayer in subLayers {
            w.writeFlag(subLayer.fixedPicRateGeneralFlag)
            if !subLayer.fixedPicRateGeneralFlag { w.writeFlag(subLayer.fixedPicRateWithinCvsFlag) }
            if subLayer.fixedPicRateWithinCvsFlag {
                w.writeUE(UInt32(truncatingIfNeeded: subLayer.elementalDurationInTcMinus1 ?? 0))
            } else {
                w.writeFlag(subLayer.lowDelayHrdFlag)
            }
            if !subLayer.lowDelayHrdFlag { w.writeUE(UInt32(truncatingIfNeeded: subLayer.cpbCntMinus1)) }
            for (present, list) in [
                (nalHrdParametersPresentFlag, subLayer.nalCPBSpecifications),
                (vclHrdParametersPresentFlag, subLayer.vclCPBSpecifications)
            ] where present {
                for cpb in list {
                    w.writeUE(cpb.bitRateValueMinus1)
                    w.writeUE(cpb.cpbSizeValueMinus1)
                    if subPicHrdParamsPresentFlag {
                        w.writeUE(cpb.cpbSizeDuValueMinus1 ?? 0)
                        w.writeUE(cpb.bitRateDuValueMinus1 ?? 0)
                    }
                    w.writeFlag(cpb.cbrFlag)
                }
            }
        }
    }
}
