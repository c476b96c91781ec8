/// Table E-1, the sample aspect ratios a VUI's aspect_ratio_idc names: the same table in H.264
/// (E.2.1) and H.265 (E.3.1).
public enum SampleAspectRatioTable {
    /// aspect_ratio_idc of Extended_SAR: sar_width and sar_height follow in the VUI.
    public static let extendedSAR = 255

    /// The ratio `aspectRatioIdc` stands for (sarWidth:sarHeight for Extended_SAR); nil for 0
    /// (unspecified), reserved values and an Extended_SAR with a zero term.
    public static func ratio(aspectRatioIdc: Int, sarWidth: Int, sarHeight: Int) -> (width: Int, height: Int)? {
        switch aspectRatioIdc {
        case 1: return (1, 1)
        case 2: return (12, 11)
        case 3: return (10, 11)
        case 4: return (16, 11)
        case 5: return (40, 33)
        case 6: return (24, 11)
        case 7: return (20, 11)
        case 8: return (32, 11)
        case 9: return (80, 33)
        case 10: return (18, 11)
        case 11: return (15, 11)
        case 12: return (64, 33)
        case 13: return (160, 99)
        case 14: return (4, 3)
        case 15: return (3, 2)
        case 16: return (2, 1)
        case extendedSAR:
            guard sarWidth > 0 && sarHeight > 0 else { return nil }
            return (sarWidth, sarHeight)
        default: return nil
        }
    }
}
