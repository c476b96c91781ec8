/// The scaling matrices of an SPS or PPS (7.3.2.1.1.1, 7.4.2.1.1, Tables 7-2 to 7-4), resolved:
/// lists that were not transmitted are already filled in by the fall-back rules and lists
/// signalled with useDefaultScalingMatrixFlag hold the default list.
///
/// The values are in the order they are transmitted, i.e. zig-zag scan order (frame scan);
/// `rasterOrder4x4`/`rasterOrder8x8` convert for APIs wanting raster order (VA-API).
public struct ScalingMatrix: Hashable, Sendable {
    /// Sl_4x4_Intra_Y, Sl_4x4_Intra_Cb, Sl_4x4_Intra_Cr, Sl_4x4_Inter_Y, Sl_4x4_Inter_Cb,
    /// Sl_4x4_Inter_Cr (list index i = 0...5), 16 values each.
    public var scalingList4x4: [[UInt8]]
    /// Sl_8x8_Intra_Y, Sl_8x8_Inter_Y, Sl_8x8_Intra_Cb, Sl_8x8_Inter_Cb, Sl_8x8_Intra_Cr,
    /// Sl_8x8_Inter_Cr (list index i = 6...11 as 0...5), 64 values each. Entries 2...5 are only
    /// transmitted for chroma_format_idc 3; otherwise they hold their fall-back values.
    public var scalingList8x8: [[UInt8]]
    /// Bit i set: scaling_list_present_flag[i] was 1 (i = 0...11).
    public var listPresentMask: UInt16
    /// Bit i set: list i was transmitted with useDefaultScalingMatrixFlag = 1.
    public var useDefaultMask: UInt16

    public init(
        scalingList4x4: [[UInt8]], scalingList8x8: [[UInt8]], listPresentMask: UInt16 = 0, useDefaultMask: UInt16 = 0
    ) {
        self.scalingList4x4 = scalingList4x4
        self.scalingList8x8 = scalingList8x8
        self.listPresentMask = listPresentMask
        self.useDefaultMask = useDefaultMask
    }

    /// Flat_4x4_16 and Flat_8x8_16 everywhere: what applies when no matrix is transmitted (7.4.2.1.1).
    public static let flat = ScalingMatrix(
        scalingList4x4: Array(repeating: Array(repeating: 16, count: 16), count: 6),
        scalingList8x8: Array(repeating: Array(repeating: 16, count: 64), count: 6))

    /// Default_4x4_Intra, Table 7-3 (zig-zag order).
    public static let default4x4Intra: [UInt8] = [6, 13, 13, 20, 20, 20, 28, 28, 28, 28, 32, 32, 32, 37, 37, 42]
    /// Default_4x4_Inter, Table 7-3.
    public static let default4x4Inter: [UInt8] = [10, 14, 14, 20, 20, 20, 24, 24, 24, 24, 27, 27, 27, 30, 30, 34]
    /// Default_8x8_Intra, Table 7-4.
    public static let default8x8Intra: [UInt8] = [
        6, 10, 10, 13, 11, 13, 16, 16, 16, 16, 18, 18, 18, 18, 18, 23,
        23, 23, 23, 23, 23, 25, 25, 25, 25, 25, 25, 25, 27, 27, 27, 27,
        27, 27, 27, 27, 29, 29, 29, 29, 29, 29, 29, 31, 31, 31, 31, 31,
        31, 33, 33, 33, 33, 33, 36, 36, 36, 36, 38, 38, 38, 40, 40, 42
    ]
    /// Default_8x8_Inter, Table 7-4.
    public static let default8x8Inter: [UInt8] = [
        9, 13, 13, 15, 13, 15, 17, 17, 17, 17, 19, 19, 19, 19, 19, 21,
        21, 21, 21, 21, 21, 22, 22, 22, 22, 22, 22, 22, 24, 24, 24, 24,
        24, 24, 24, 24, 25, 25, 25, 25, 25, 25, 25, 27, 27, 27, 27, 27,
        27, 28, 28, 28, 28, 28, 30, 30, 30, 30, 32, 32, 32, 33, 33, 35
    ]

    /// Zig-zag scan of a 4x4 block (Table 8-13, frame): zigZag4x4[idx] is the raster position.
    public static let zigZag4x4: [Int] = [0, 1, 4, 8, 5, 2, 3, 6, 9, 12, 13, 10, 7, 11, 14, 15]
    /// Zig-zag scan of an 8x8 block (Table 8-14, frame): zigZag8x8[idx] is the raster position.
    public static let zigZag8x8: [Int] = [
        0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
        12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
        35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
        58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63
    ]

    /// List `i` (0...5) of `scalingList4x4` in raster order.
    public func rasterOrder4x4(_ i: Int) -> [UInt8] {
        Self.toRaster(scalingList4x4[i], scan: Self.zigZag4x4)
    }

    /// List `i` (0...5) of `scalingList8x8` in raster order.
    public func rasterOrder8x8(_ i: Int) -> [UInt8] {
        Self.toRaster(scalingList8x8[i], scan: Self.zigZag8x8)
    }

    /// The six 4x4 lists and the first `count8x8` 8x8 lists in raster order, written one after
    /// another into two C arrays of a hardware API's picture parameters (VA-API's
    /// `VAIQMatrixBufferH264`, NVDEC's `WeightScale4x4`/`WeightScale8x8`, both raster order).
    public func writeRasterOrder(
        lists4x4: UnsafeMutableRawBufferPointer, lists8x8: UnsafeMutableRawBufferPointer, count8x8: Int = 2
    ) {
        for list in 0..<6 {
            for (index, value) in rasterOrder4x4(list).prefix(16).enumerated() where list * 16 + index < lists4x4.count
            {
                lists4x4[list * 16 + index] = value
            }
        }
        for list in 0..<min(count8x8, scalingList8x8.count) {
            for (index, value) in rasterOrder8x8(list).prefix(64).enumerated() where list * 64 + index < lists8x8.count
            {
                lists8x8[list * 64 + index] = value
            }
        }
    }

    static func toRaster(_ list: [UInt8], scan: [Int]) -> [UInt8] {
        var raster = [UInt8](repeating: 0, count: scan.count)
        for (index, position) in scan.enumerated() where index < list.count { raster[position] = list[index] }
        return raster
    }

    /// Parses the scaling_list_present_flag[i] / scaling_list() loop shared by the SPS
    /// (7.3.2.1.1, `listCount` 8 or 12, fall-back rule A) and the PPS (7.3.2.2, 6 + 2 or 6 lists,
    /// fall-back rule B, where `fallBack` is the SPS matrix).
    ///
    /// Table 7-2: a list that is not present falls back to
    /// - i = 0, 3, 6, 7: the default list (rule A) or the sequence-level list (rule B);
    /// - i = 1, 2, 4, 5: list i - 1; i = 8...11: list i - 2.
    static func parse(
        _ reader: inout BitReader, listCount: Int, fallBack: ScalingMatrix?
    ) throws(H264Error) -> ScalingMatrix {
        var lists4x4: [[UInt8]] = []
        lists4x4.reserveCapacity(6)
        var lists8x8: [[UInt8]] = []
        lists8x8.reserveCapacity(6)
        var presentMask: UInt16 = 0
        var defaultMask: UInt16 = 0
        for i in 0..<12 {
            let is4x4 = i < 6
            let present = i < listCount ? try reader.readFlag("scaling_list_present_flag") : false
            var list: [UInt8]
            if present {
                presentMask |= 1 << UInt16(i)
                let (values, useDefault) = try parseList(&reader, size: is4x4 ? 16 : 64)
                if useDefault {
                    defaultMask |= 1 << UInt16(i)
                    list = defaultList(i)
                } else {
                    list = values
                }
            } else {
                switch i {
                case 0, 3, 6, 7:
                    if let fallBack {
                        list = is4x4 ? fallBack.scalingList4x4[i] : fallBack.scalingList8x8[i &- 6]
                    } else {
                        list = defaultList(i)
                    }
                case 1, 2, 4, 5:
                    list = lists4x4[i &- 1]
                default: // 8...11
                    list = lists8x8[i &- 8]
                }
            }
            if is4x4 { lists4x4.append(list) } else { lists8x8.append(list) }
        }
        return ScalingMatrix(
            scalingList4x4: lists4x4, scalingList8x8: lists8x8, listPresentMask: presentMask,
            useDefaultMask: defaultMask)
    }

    static func defaultList(_ i: Int) -> [UInt8] {
        switch i {
        case 0, 1, 2: return default4x4Intra
        case 3, 4, 5: return default4x4Inter
        case 6, 8, 10: return default8x8Intra
        default: return default8x8Inter
        }
    }

    /// scaling_list(), 7.3.2.1.1.1: delta_scale (se(v), -128...127, 7.4.2.1.1.1) accumulates
    /// modulo 256; a first nextScale of 0 means useDefaultScalingMatrixFlag; a later 0 repeats
    /// the last value to the end of the list.
    static func parseList(_ reader: inout BitReader, size: Int) throws(H264Error) -> ([UInt8], Bool) {
        var list = [UInt8](repeating: 0, count: size)
        var lastScale = 8
        var nextScale = 8
        var useDefault = false
        for j in 0..<size {
            if nextScale != 0 {
                let deltaScale = try reader.readSE("delta_scale", range: -128...127)
                nextScale = (lastScale &+ deltaScale &+ 256) % 256
                useDefault = j == 0 && nextScale == 0
            }
            let value = nextScale == 0 ? lastScale : nextScale
            list[j] = UInt8(truncatingIfNeeded: value)
            lastScale = value
        }
        return (list, useDefault)
    }
}
