import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

/// Reads decoded VA surfaces (NV12) back into ``PixelBuffer``s, cropped to the SPS's
/// conformance window (7.4.2.1.1), in the pixel format the session asked for (NV12 or I420).
///
/// The pictures come from a bounded pool: at the bound, reading back waits for downstream to
/// give a picture back (back pressure), and stops with ``VTError/Code/flushing`` when the
/// consumer flushes.
final class VAOutputReader {
    private let connection: VADisplayConnection
    let pixelFormat: PixelFormat
    private let rowAlignment: Int
    private let attachments: PixelBufferAttachments
    private let consumer: PixelBufferConsumer?
    private var pool: PixelBufferPool?
    private var crop = (x: 0, y: 0, width: 0, height: 0)
    /// vaDeriveImage maps the surface itself; drivers without it (or with surfaces in a tiled
    /// layout) need vaCreateImage + vaGetImage, a copy inside the driver.
    private var deriveWorks = true

    init(
        connection: VADisplayConnection, pixelFormat: PixelFormat, rowAlignment: Int, attachments: PixelBufferAttachments,
        consumer: PixelBufferConsumer? = nil
    ) {
        self.connection = connection
        self.pixelFormat = pixelFormat
        self.rowAlignment = rowAlignment
        self.attachments = attachments
        self.consumer = consumer
    }

    func startSequence(_ sps: SequenceParameterSet) throws(H264DecodingError) {
        let rect = sps.cropRect
        crop = (rect.x, rect.y, rect.width, rect.height)
        // The pictures are copies, so the DPB (in VA surfaces) holds none of them; but one call
        // may output every picture the DPB held (an IDR or a drain bumps them all, C.4.4), all
        // read back before the caller sees any: the DPB, plus two in transit to the consumer,
        // plus what the consumer holds (PixelBufferConsumer). Without a consumer, no bound: the
        // caller may keep every picture.
        let wanted = PixelBufferPool.Attributes(
            width: rect.width, height: rect.height, pixelFormat: pixelFormat, rowAlignment: rowAlignment,
            maximumBufferCount: consumer == nil ? nil : sps.maxDpbFrames + 2, attachments: attachments)
        // A sequence with the same output keeps the pool and its pictures.
        if pool?.attributes == wanted { return }
        pool?.invalidate()
        do {
            pool = try PixelBufferPool(attributes: wanted, consumer: consumer)
        } catch {
            throw .acceleratorFailed("no \(rect.width)x\(rect.height) \(pixelFormat) output pictures: \(error)")
        }
    }

    /// Frees the idle pictures (after a seek).
    func trimIdle() {
        pool?.flush()
    }

    /// The picture in `surface`, cropped; `damaged` when vaSyncSurface reported
    /// VA_STATUS_ERROR_DECODING_ERROR: the device decoded the picture with errors and concealed
    /// them (va.h), so it is read back like any other, and the caller says it is damaged.
    func read(surface: VASurfaceID, codedSize: (width: Int, height: Int)) throws(VTError) -> (image: PixelBuffer, damaged: Bool) {
        guard let pool else { throw VTError(.decoderFailed, "VA-API: a picture was output before its sequence") }
        let destination: PixelBuffer
        do {
            // May wait for downstream to give a picture back.
            destination = try pool.makePixelBuffer()
        } catch .flushing {
            throw VTError(.flushing, "the consumer is flushing: read-back stopped waiting for an output picture")
        } catch {
            throw VTError(.allocationFailed, "no output picture available: \(error)")
        }
        var damaged = false
        do throws(VAError) {
            do throws(VAError) {
                try connection.syncSurface(surface)
            } catch where error.status == VAStatus(VA_STATUS_ERROR_DECODING_ERROR) {
                damaged = true
            }
            let image = try mapImage(surface: surface, codedSize: codedSize)
            try copy(from: image, to: destination)
        } catch {
            throw VTError(.decoderFailed, "VA-API: the decoded picture cannot be read back: \(error)", backendStatus: error.status, operation: error.call)
        }
        return (destination, damaged)
    }

    private func mapImage(surface: VASurfaceID, codedSize: (width: Int, height: Int)) throws(VAError) -> VAMappedImage {
        if deriveWorks {
            do throws(VAError) {
                return try VAMappedImage(deriving: surface, connection: connection)
            } catch {
                deriveWorks = false
            }
        }
        return try VAMappedImage(
            copying: surface, connection: connection, fourcc: UInt32(VA_FOURCC_NV12), width: codedSize.width,
            height: codedSize.height)
    }

    /// Copy: the picture is in VA surface memory, which goes back to the decoder as soon as the
    /// DPB lets go of it; a system-memory pixel buffer needs its own copy (DMABuf export to hand
    /// the surface itself downstream is future work). I420 output de-interleaves the chroma in
    /// the same pass, so it costs no second copy.
    private func copy(from image: borrowing VAMappedImage, to destination: PixelBuffer) throws(VAError) {
        let info = image.image
        guard info.format.fourcc == UInt32(VA_FOURCC_NV12), info.num_planes >= 2 else {
            throw VAError(call: "vaDeriveImage", status: VAStatus(VA_STATUS_ERROR_INVALID_IMAGE_FORMAT),
                          context: "the driver's image is not NV12")
        }
        let data = image.data
        guard let base = data.baseAddress else {
            throw VAError(call: "vaMapBuffer", status: VAStatus(VA_STATUS_ERROR_INVALID_BUFFER), context: "an empty image")
        }
        let lumaPitch = Int(info.pitches.0), chromaPitch = Int(info.pitches.1)
        let lumaOffset = Int(info.offsets.0), chromaOffset = Int(info.offsets.1)
        let width = crop.width, height = crop.height
        let chromaWidth = (width + 1) / 2, chromaHeight = (height + 1) / 2
        // Bounds: the crop window lies inside the image (the conformance window is inside the
        // coded picture, which is what the surface holds).
        let lastLumaByte = lumaOffset + (crop.y + height - 1) * lumaPitch + crop.x + width
        let lastChromaByte = chromaOffset + (crop.y / 2 + chromaHeight - 1) * chromaPitch + crop.x + chromaWidth * 2
        guard lastLumaByte <= data.count, lastChromaByte <= data.count else {
            throw VAError(call: "vaMapBuffer", status: VAStatus(VA_STATUS_ERROR_INVALID_IMAGE),
                          context: "the image (\(data.count) bytes) is smaller than its pitches and offsets say")
        }
        let luma = destination.planes[0]
        for row in 0..<height {
            let source = base + lumaOffset + (crop.y + row) * lumaPitch + crop.x
            (luma.baseAddress + row * luma.bytesPerRow).copyMemory(from: source, byteCount: width)
        }
        if destination.pixelFormat == .i420 {
            let u = destination.planes[1], v = destination.planes[2]
            for row in 0..<chromaHeight {
                let source = (base + chromaOffset + (crop.y / 2 + row) * chromaPitch + crop.x).assumingMemoryBound(to: UInt8.self)
                let uRow = (u.baseAddress + row * u.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                let vRow = (v.baseAddress + row * v.bytesPerRow).assumingMemoryBound(to: UInt8.self)
                for column in 0..<chromaWidth {
                    uRow[column] = source[2 * column]
                    vRow[column] = source[2 * column + 1]
                }
            }
        } else {
            let chroma = destination.planes[1]
            for row in 0..<chromaHeight {
                let source = base + chromaOffset + (crop.y / 2 + row) * chromaPitch + crop.x
                (chroma.baseAddress + row * chroma.bytesPerRow).copyMemory(from: source, byteCount: chromaWidth * 2)
            }
        }
    }
}
