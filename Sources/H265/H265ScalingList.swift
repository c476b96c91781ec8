/// scaling_list_data(), 7.3.4 / 7.4.5: the quantization matrices of an SPS or PPS, resolved (the
/// lists predicted from another list or from the defaults are filled in).
public struct H265ScalingList: Hashable, Sendable {
    /// ScalingList[sizeId][matrixId][i] (7.4.5): sizeId 0 (4x4) has 16 coefficients per matrix,
    /// sizeIds 1...3 (8x8, 16x16, 32x32) 64, in up-right diagonal scan order; matrixId 0...2 are
    /// intra Y, Cb, Cr and 3...5 inter Y, Cb, Cr. For sizeId 3 only matrixIds 0 and 3 are coded;
    /// the chroma matrices 1, 2, 4 and 5 (used with ChromaArrayType 3) are those of sizeId 2,
    /// which is what 7.4.5 derives for 32x32 chroma from the 16x16 factors.
    public var coefficients: [[[UInt8]]]
    /// scaling_list_dc_coef_minus8[sizeId - 2][matrixId] + 8, for sizeIds 2 and 3 (the DC factor
    /// of the 16x16 and 32x32 matrices); 16 where not coded (7.4.5).
    public var dcCoefficients: [[UInt8]]

    public init(coefficients: [[[UInt8]]], dcCoefficients: [[UInt8]]) {
        self.coefficients = coefficients
        self.dcCoefficients = dcCoefficients
    }

    /// Table 7-6, intra (matrixId 0...2) defaults for sizeIds 1...3, in scan order.
    public static let defaultIntra8x8: [UInt8] = [
        16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 17, 16, 17, 16, 17, 18,
        17, 18, 18, 17, 18, 21, 19, 20, 21, 20, 19, 21, 24, 22, 22, 24,
        24, 22, 22, 24, 25, 25, 27, 30, 27, 25, 25, 29, 31, 35, 35, 31,
        29, 36, 41, 44, 41, 36, 47, 54, 54, 47, 65, 70, 65, 88, 88, 115
    ]
    /// Table 7-6, inter (matrixId 3...5) defaults for sizeIds 1...3, in scan order.
    public static let defaultInter8x8: [UInt8] = [
        16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 17, 17, 17, 17, 17, 18,
        18, 18, 18, 18, 18, 20, 20, 20, 20, 20, 20, 20, 24, 24, 24, 24,
        24, 24, 24, 24, 25, 25, 25, 25, 25, 25, 25, 28, 28, 28, 28, 28,
        28, 33, 33, 33, 33, 33, 41, 41, 41, 41, 54, 54, 54, 71, 71, 91
    ]

    /// The default list for a (sizeId, matrixId): Table 7-5 (flat 16) for 4x4, Table 7-6 above.
    public static func defaultList(sizeID: Int, matrixID: Int) -> [UInt8] {
        if sizeID == 0 { return [UInt8](repeating: 16, count: 16) }
        return matrixID < 3 ? defaultIntra8x8 : defaultInter8x8
    }

    /// The lists used when scaling_list_enabled_flag is 1 without coded data
    /// (sps_scaling_list_data_present_flag 0, 7.4.3.2.1): every default, DC 16.
    public static let defaults = H265ScalingList(
        coefficients: (0..<4).map { sizeID in (0..<6).map { defaultList(sizeID: sizeID, matrixID: $0) } },
        dcCoefficients: [[UInt8]](repeating: [UInt8](repeating: 16, count: 6), count: 2))

    /// scaling_list_data(), 7.3.4, with the semantics of 7.4.5.
    static func parse(_ r: inout H265BitReader) throws(H265Error) -> H265ScalingList {
        var list = H265ScalingList.defaults
        for sizeID in 0..<4 {
            // 7.3.4: for 32x32 only matrixIds 0 and 3 (luma) are coded.
            for matrixID in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                let predictionModeFlag = try r.readFlag("scaling_list_pred_mode_flag")
                if !predictionModeFlag {
                    // 7.4.5: the delta names an earlier matrix of the same size (0...matrixId, or
                    // 0...matrixId / 3 for 32x32, whose matrixIds step by 3); 0 means the default.
                    let step = sizeID == 3 ? 3 : 1
                    let delta = try r.readUE("scaling_list_pred_matrix_id_delta", max: matrixID / step)
                    if delta == 0 {
                        list.coefficients[sizeID][matrixID] = defaultList(sizeID: sizeID, matrixID: matrixID)
                        if sizeID > 1 { list.dcCoefficients[sizeID &- 2][matrixID] = 16 }
                    } else {
                        let referenceMatrixID = matrixID &- delta &* step
                        list.coefficients[sizeID][matrixID] = list.coefficients[sizeID][referenceMatrixID]
                        if sizeID > 1 {
                            list.dcCoefficients[sizeID &- 2][matrixID] =
                                list.dcCoefficients[sizeID &- 2][referenceMatrixID]
                        }
                    }
                } else {
                    var nextCoefficient = 8
                    let coefficientCount = Swift.min(64, 1 << (4 &+ (sizeID << 1)))
                    if sizeID > 1 {
                        // 7.4.5: scaling_list_dc_coef_minus8 in -7...247, so the DC factor is 1...255.
                        let dc = try r.readSE("scaling_list_dc_coef_minus8", range: -7...247)
                        nextCoefficient = dc &+ 8
                        list.dcCoefficients[sizeID &- 2][matrixID] = UInt8(truncatingIfNeeded: nextCoefficient)
                    }
                    var coefficients: [UInt8] = []
                    coefficients.reserveCapacity(coefficientCount)
                    for _ in 0..<coefficientCount {
                        // 7.4.5: -128...127.
                        let delta = try r.readSE("scaling_list_delta_coef", range: -128...127)
                        nextCoefficient = (nextCoefficient &+ delta &+ 256) % 256
                        // 7.4.5: ScalingList[][][] shall be greater than 0 (a zero factor would
                        // zero every coefficient it scales).
                        guard nextCoefficient > 0 else {
                            throw H265Error.invalidValue(field: "ScalingList[\(sizeID)][\(matrixID)]", value: 0)
                        }
                        coefficients.append(UInt8(truncatingIfNeeded: nextCoefficient))
                    }
                    list.coefficients[sizeID][matrixID] = coefficients
                }
            }
        }
        // 7.4.5 (ChromaArrayType 3): the 32x32 chroma factors are the 16x16 ones, so their lists
        // and DC values are those of sizeId 2.
        for matrixID in [1, 2, 4, 5] {
            list.coefficients[3][matrixID] = list.coefficients[2][matrixID]
            list.dcCoefficients[1][matrixID] = list.dcCoefficients[0][matrixID]
        }
        return list
    }

    /// Writes scaling_list_data() with every coded list sent explicitly (pred_mode_flag 1), so
    /// that parsing gives back `self` (for the 32x32 chroma lists: when they equal sizeId 2's).
    public func write(to w: inout BitWriter) {
        for sizeID in 0..<4 {
            for matrixID in stride(from: 0, to: 6, by: sizeID == 3 ? 3 : 1) {
                w.writeFlag(true)
                var previous = 8
                if sizeID > 1 {
                    let dc = Int(dcCoefficients[sizeID &- 2][matrixID])
                    w.writeSE(Int32(dc &- 8))
                    previous = dc
                }
                for value in coefficients[sizeID][matrixID] {
                    // The smallest delta in -128...127 that reaches `value` modulo 256.
                    var delta = (Int(value) &- previous) % 256
                    if delta > 127 { delta &-= 256 }
                    if delta < -128 { delta &+= 256 }
                    w.writeSE(Int32(delta))
                    previous = Int(value)
                }
            }
        }
    }
}
