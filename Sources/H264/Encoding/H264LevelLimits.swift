/// The level limits of Table A-1 an encoder needs to choose level_idc.
public struct H264LevelLimits: Sendable {
    public var levelIdc: Int
    /// MaxMBPS: macroblocks per second.
    public var maxMacroblocksPerSecond: Int
    /// MaxFS: macroblocks per frame.
    public var maxFrameSizeInMacroblocks: Int
    /// MaxDpbMbs.
    public var maxDecodedPictureBufferMacroblocks: Int
    /// MaxBR in units of 1000 bits/s for the Baseline/Main/Extended profiles (cpbBrVclFactor
    /// 1000; High uses 1250, A.3.3.2 / Table A-2).
    public var maxBitRateKbps: Int

    /// Table A-1 (level 1b is not offered: level 1.1 with constraint_set3_flag is only for
    /// Baseline/Main/Extended, and the next level serves instead).
    public static let table: [H264LevelLimits] = [
        .init(10, 1_485, 99, 396, 64), .init(11, 3_000, 396, 900, 192), .init(12, 6_000, 396, 2_376, 384),
        .init(13, 11_880, 396, 2_376, 768), .init(20, 11_880, 396, 2_376, 2_000), .init(21, 19_800, 792, 4_752, 4_000),
        .init(22, 20_250, 1_620, 8_100, 4_000), .init(30, 40_500, 1_620, 8_100, 10_000),
        .init(31, 108_000, 3_600, 18_000, 14_000), .init(32, 216_000, 5_120, 20_480, 20_000),
        .init(40, 245_760, 8_192, 32_768, 20_000), .init(41, 245_760, 8_192, 32_768, 50_000),
        .init(42, 522_240, 8_704, 34_816, 50_000), .init(50, 589_824, 22_080, 110_400, 135_000),
        .init(51, 983_040, 36_864, 184_320, 240_000), .init(52, 2_073_600, 36_864, 184_320, 240_000),
        .init(60, 4_177_920, 139_264, 696_320, 240_000), .init(61, 8_355_840, 139_264, 696_320, 480_000),
        .init(62, 16_711_680, 139_264, 696_320, 800_000)
    ]

    init(_ levelIdc: Int, _ mbps: Int, _ fs: Int, _ dpb: Int, _ br: Int) {
        self.levelIdc = levelIdc
        maxMacroblocksPerSecond = mbps
        maxFrameSizeInMacroblocks = fs
        maxDecodedPictureBufferMacroblocks = dpb
        maxBitRateKbps = br
    }

    /// The lowest level whose limits hold for the stream; level 6.2 when none does (the caller
    /// may still encode: decoders take the level as a promise, not as a gate).
    ///
    /// - Parameters:
    ///   - bitRate: the peak bit rate in bits/s (nil: not limited, not checked);
    ///   - high: High profile (cpbBrVclFactor 1250 instead of 1000).
    public static func lowestLevel(
        widthInMacroblocks: Int, heightInMacroblocks: Int, frameRate: Double, referenceFrames: Int, bitRate: Int?,
        high: Bool
    ) -> Int {
        let frameSize = widthInMacroblocks * heightInMacroblocks
        let rate = frameRate.isFinite && frameRate > 0 ? frameRate : 30
        let level = table.first { limits in
            // A.3.1 b/A.3.2: sqrt(MaxFS * 8) bounds each dimension as well.
            let side = Int((Double(limits.maxFrameSizeInMacroblocks) * 8).squareRoot())
            guard frameSize <= limits.maxFrameSizeInMacroblocks, widthInMacroblocks <= side,
                heightInMacroblocks <= side,
                Double(frameSize) * rate <= Double(limits.maxMacroblocksPerSecond),
                frameSize * max(referenceFrames, 1) <= limits.maxDecodedPictureBufferMacroblocks
            else { return false }
            if let bitRate {
                let factor = high ? 1250 : 1000
                return bitRate <= limits.maxBitRateKbps * factor
            }
            return true
        }
        return level?.levelIdc ?? 62
    }
}
