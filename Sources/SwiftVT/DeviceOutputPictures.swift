import H264
import MediaCore

/// The output pictures of a hardware decoder whose pictures stay on the device: a bounded pool
/// of system-memory pixel buffers at the SPS's conformance window (7.4.2.1.1), in the pixel
/// format the session asked for (NV12 or I420), that each read-back copies one picture into.
/// Shared by the VA-API and NVDEC read-backs; only the copy itself is theirs.
///
/// At the bound, taking a buffer waits for downstream to give a picture back (back pressure),
/// and stops with ``VTError/Code/flushing`` when the consumer flushes.
public final class DeviceOutputPictures {
    public let pixelFormat: PixelFormat
    private let rowAlignment: Int
    private let attachments: PixelBufferAttachments
    private let consumer: PixelBufferConsumer?
    private var pool: PixelBufferPool?
    /// The conformance window of the sequence, in luma samples of the coded picture.
    public private(set) var crop = (x: 0, y: 0, width: 0, height: 0)
    /// "VA-API", "NVDEC": for messages.
    private let api: String

    public init(
        api: String, pixelFormat: PixelFormat, rowAlignment: Int, attachments: PixelBufferAttachments,
        consumer: PixelBufferConsumer?
    ) {
        self.api = api
        self.pixelFormat = pixelFormat
        self.rowAlignment = rowAlignment
        self.attachments = attachments
        self.consumer = consumer
    }

    /// The output format for a caller asking for `attributes`' formats: NV12 when it takes it
    /// (the device's own layout: a plane copy), else I420 (the chroma split while reading back).
    /// Other formats would need a conversion a device read-back does not do.
    ///
    /// - Parameter path: "the VA path", "the NVDEC path", for the error.
    public static func outputFormat(for attributes: DestinationImageBufferAttributes, path: String) throws(VTError)
        -> PixelFormat
    {
        let wanted = attributes.pixelFormats.isEmpty ? [PixelFormat.i420] : attributes.pixelFormats
        guard
            let pixelFormat = wanted.first(where: { $0 == .nv12VideoRange || $0 == .nv12FullRange })
                ?? wanted.first(where: { $0 == .i420 })
        else {
            throw VTError(
                .unsupportedFormat,
                reason: .outputPixelFormatsNotOffered(
                    backend: path, requested: wanted, offered: [.nv12VideoRange, .i420]))
        }
        return pixelFormat
    }

    public func startSequence(_ sps: SequenceParameterSet) throws(H264DecodingError) {
        let rect = sps.cropRect
        crop = (rect.x, rect.y, rect.width, rect.height)
        // The pictures are copies, so the DPB (on the device) holds none of them; but one call
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
    public func trimIdle() {
        pool?.flush()
    }

    /// A buffer for the next picture (NV12 or I420). A consumer that renegotiated and no longer
    /// takes the format read back so far gets the other one: the device's pictures read back
    /// either way.
    public func makeDestination() throws(VTError) -> PixelBuffer {
        guard var pool else { throw VTError(.decoderFailed, "\(api): a picture was output before its sequence") }
        if let preferences = consumer?.pixelFormatPreferences, !preferences.contains(pool.attributes.pixelFormat),
            let wanted = preferences.first(where: { [.nv12VideoRange, .i420].contains($0) })
        {
            var attributes = pool.attributes
            attributes.pixelFormat = wanted
            pool.invalidate()
            do {
                pool = try PixelBufferPool(attributes: attributes, consumer: consumer)
            } catch {
                throw VTError(.allocationFailed, reason: .outputPicturesUnavailable(wanted, detail: "\(error)"))
            }
            self.pool = pool
        }
        do {
            // May wait for downstream to give a picture back.
            return try pool.makePixelBuffer()
        } catch .flushing {
            throw VTError(.flushing, "the consumer is flushing: read-back stopped waiting for an output picture")
        } catch {
            throw VTError(.allocationFailed, "no output picture available: \(error)")
        }
    }
}
