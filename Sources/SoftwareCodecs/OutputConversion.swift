import MediaCore

/// Which pixel format a picture leaves the decoder in, given the caller's preferences.
struct OutputFormatChoice: Sendable {
    let preferences: [PixelFormat]

    /// `native` when acceptable (no copy); NV12 or P010 for 4:2:0 when the caller asks for them
    /// and not for the native format; nil when nothing acceptable can be produced.
    func format(forNative native: PixelFormat, fullRange: Bool) -> PixelFormat? {
        if preferences.isEmpty || preferences.contains(native) { return native }
        let candidates: (video: PixelFormat, full: PixelFormat)
        switch native {
        case .i420: candidates = (.nv12VideoRange, .nv12FullRange)
        case .i420TenBit: candidates = (.p010VideoRange, .p010FullRange)
        default: return nil
        }
        // The variant matching the stream's range if it is listed, otherwise whichever is.
        let matching = fullRange ? candidates.full : candidates.video
        let other = fullRange ? candidates.video : candidates.full
        if preferences.contains(matching) { return matching }
        if preferences.contains(other) { return other }
        return nil
    }
}

/// Planar 4:2:0 to bi-planar (NV12 from I420, P010 from I010).
///
/// This is a copy, and the only one on the decode path: libavcodec's H.264 decoder writes planar
/// pictures only, so a caller that cannot take planar (a VA-API/GL uploader wanting NV12) needs
/// the chroma interleaved somewhere. It runs only when the caller's preference list excludes the
/// native format. Generic over the sample type so 8 and 10 bits share one loop; `shift` moves
/// I010's low-bit samples to P010's high bits.
enum BiPlanarConversion {
    static func convert(from source: PixelBuffer, to destination: PixelBuffer) {
        switch destination.pixelFormat {
        case .p010VideoRange, .p010FullRange: convert(UInt16.self, shift: 6, from: source, to: destination)
        default: convert(UInt8.self, shift: 0, from: source, to: destination)
        }
    }

    private static func convert<Sample: FixedWidthInteger & UnsignedInteger>(
        _: Sample.Type, shift: Int, from source: PixelBuffer, to destination: PixelBuffer
    ) {
        let luma = source.planes[0]
        let target = destination.planes[0]
        let rowBytes = luma.width * MemoryLayout<Sample>.size
        for row in 0..<luma.height {
            let from = luma.baseAddress + row * luma.bytesPerRow
            let to = target.baseAddress + row * target.bytesPerRow
            if shift == 0 {
                to.copyMemory(from: from, byteCount: rowBytes)
            } else {
                let input = from.assumingMemoryBound(to: Sample.self)
                let output = to.assumingMemoryBound(to: Sample.self)
                for column in 0..<luma.width { output[column] = input[column] << shift }
            }
        }
        let cb = source.planes[1]
        let cr = source.planes[2]
        let chroma = destination.planes[1]
        for row in 0..<cb.height {
            let u = (cb.baseAddress + row * cb.bytesPerRow).assumingMemoryBound(to: Sample.self)
            let v = (cr.baseAddress + row * cr.bytesPerRow).assumingMemoryBound(to: Sample.self)
            let output = (chroma.baseAddress + row * chroma.bytesPerRow).assumingMemoryBound(to: Sample.self)
            for column in 0..<cb.width {
                output[2 * column] = u[column] << shift
                output[2 * column + 1] = v[column] << shift
            }
        }
    }
}
