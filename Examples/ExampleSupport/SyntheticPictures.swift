import MediaCore

/// Pictures to encode without a camera or a file: a diagonal gradient that moves by two pixels a
/// frame with a bright square crossing it, in I420, so an encoder has motion and detail to code.
/// Every other two seconds (frames 60-119, 180-239, ...) a fine texture that pans with the picture
/// is laid over it: content whose cost changes over time, what multi-pass rate control is for.
public struct SyntheticPictures {
    public let width: Int
    public let height: Int

    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Picture `index`, newly allocated (the session only reads it during `encode`, so a caller
    /// may as well reuse one buffer; a new one keeps the example short).
    public func picture(_ index: Int) throws -> PixelBuffer {
        let picture = try PixelBuffer(width: width, height: height, pixelFormat: .i420)
        let squareSize = max(8, height / 4)
        let squareX = (index * 4) % max(1, width - squareSize)
        let squareY = height / 3
        let textured = (index / 60) % 2 == 1
        for (planeIndex, plane) in picture.planes.enumerated() {
            let scale = planeIndex == 0 ? 1 : 2  // chroma planes are half size (4:2:0)
            for row in 0..<plane.height {
                let line = (plane.baseAddress + row * plane.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                for column in 0..<plane.width {
                    let x = column * scale, y = row * scale
                    let inSquare = x >= squareX && x < squareX + squareSize && y >= squareY && y < squareY + squareSize
                    switch planeIndex {
                    case 0:
                        let gradient = 16 + (x + y + 2 * index) % 200
                        let texture = textured ? Self.texture(x: x + 2 * index, y: y) : 0
                        line[column] = inSquare ? 235 : UInt8(truncatingIfNeeded: min(235, gradient + texture))
                    case 1: line[column] = inSquare ? 128 : UInt8(truncatingIfNeeded: 64 + (x / 4 + index) % 128)
                    default: line[column] = inSquare ? 128 : UInt8(truncatingIfNeeded: 192 - (y / 4) % 128)
                    }
                }
            }
        }
        return picture
    }

    /// A fixed pseudo-random texture of 0-39 (an integer hash of the position).
    private static func texture(x: Int, y: Int) -> Int {
        var hash = UInt32(truncatingIfNeeded: x &* 73_856_093 ^ y &* 19_349_663)
        hash ^= hash >> 13
        hash = hash &* 0x5bd1_e995
        hash ^= hash >> 15
        return Int(hash % 40)
    }
}
