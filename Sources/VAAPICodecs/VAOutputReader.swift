import CVA
import Glibc
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
    /// The pool the pictures are read into, and the crop.
    let pictures: DeviceOutputPictures
    private var crop: (x: Int, y: Int, width: Int, height: Int) { pictures.crop }
    /// How pictures are read back: see ``ReadBackMethodChoice``.
    private var method = ReadBackMethodChoice()

    init(connection: VADisplayConnection, pictures: DeviceOutputPictures) {
        self.connection = connection
        self.pictures = pictures
    }

    /// The picture in `surface`, cropped; `damaged` when vaSyncSurface reported
    /// VA_STATUS_ERROR_DECODING_ERROR: the device decoded the picture with errors and concealed
    /// them (va.h), so it is read back like any other, and the caller says it is damaged.
    func read(surface: VASurfaceID, codedSize: (width: Int, height: Int)) throws(VTError) -> (
        image: PixelBuffer, damaged: Bool
    ) {
        let destination = try pictures.makeDestination()
        var damaged = false
        do throws(VAError) {
            do throws(VAError) {
                try connection.syncSurface(surface)
            } catch  where error.status == VAStatus(VA_STATUS_ERROR_DECODING_ERROR) {
                damaged = true
            }
            let started = ReadBackMethodChoice.now()
            let used = try withMappedImage(surface: surface, codedSize: codedSize) { (image) throws(VAError) in
                try copy(from: image, to: destination)
            }
            method.record(used, nanoseconds: ReadBackMethodChoice.now() &- started)
        } catch {
            throw VTError(
                .decoderFailed, "VA-API: the decoded picture cannot be read back: \(error)",
                backendStatus: error.status, operation: error.call)
        }
        return (destination, damaged)
    }

    /// Maps the picture in `surface` by the method chosen so far and gives it to `body`; the
    /// method used.
    private func withMappedImage(
        surface: VASurfaceID, codedSize: (width: Int, height: Int),
        _ body: (borrowing VAMappedImage) throws(VAError) -> Void
    ) throws(VAError) -> ReadBackMethodChoice.Method {
        if method.next == .derive {
            do throws(VAError) {
                let image = try VAMappedImage(deriving: surface, connection: connection)
                try body(image)
                return .derive
            } catch  where error.call == "vaDeriveImage" {
                // nvidia-vaapi-driver refuses derive; tiled or compressed surfaces cannot be mapped.
                method.unavailable(.derive)
            }
        }
        do throws(VAError) {
            let image = try VAMappedImage(
                copying: surface, connection: connection, fourcc: UInt32(VA_FOURCC_NV12), width: codedSize.width,
                height: codedSize.height)
            try body(image)
            return .getImage
        } catch  where error.call == "vaCreateImage" || error.call == "vaGetImage" {
            // A driver without images may still derive.
            guard method.unavailable(.getImage) else { throw error }
            let image = try VAMappedImage(deriving: surface, connection: connection)
            try body(image)
            return .derive
        }
    }

    /// Copy: the picture is in VA surface memory, which goes back to the decoder as soon as the
    /// DPB lets go of it; a system-memory pixel buffer needs its own copy (DMABuf export to hand
    /// the surface itself downstream is future work). I420 output de-interleaves the chroma in
    /// the same pass, so it costs no second copy.
    private func copy(from image: borrowing VAMappedImage, to destination: PixelBuffer) throws(VAError) {
        let info = image.image
        guard info.format.fourcc == UInt32(VA_FOURCC_NV12), info.num_planes >= 2 else {
            throw VAError(
                call: "vaDeriveImage", status: VAStatus(VA_STATUS_ERROR_INVALID_IMAGE_FORMAT),
                context: "the driver's image is not NV12")
        }
        let data = image.data
        guard let base = data.baseAddress else {
            throw VAError(
                call: "vaMapBuffer", status: VAStatus(VA_STATUS_ERROR_INVALID_BUFFER), context: "an empty image")
        }
        let lumaPitch = Int(info.pitches.0)
        let chromaPitch = Int(info.pitches.1)
        let lumaOffset = Int(info.offsets.0)
        let chromaOffset = Int(info.offsets.1)
        let width = crop.width
        let height = crop.height
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        // Bounds: the crop window lies inside the image (the conformance window is inside the
        // coded picture, which is what the surface holds).
        let lastLumaByte = lumaOffset + (crop.y + height - 1) * lumaPitch + crop.x + width
        let lastChromaByte = chromaOffset + (crop.y / 2 + chromaHeight - 1) * chromaPitch + crop.x + chromaWidth * 2
        guard lastLumaByte <= data.count, lastChromaByte <= data.count else {
            throw VAError(
                call: "vaMapBuffer", status: VAStatus(VA_STATUS_ERROR_INVALID_IMAGE),
                context: "the image (\(data.count) bytes) is smaller than its pitches and offsets say")
        }
        let luma = destination.planes[0]
        for row in 0..<height {
            let source = base + lumaOffset + (crop.y + row) * lumaPitch + crop.x
            (luma.baseAddress + row * luma.bytesPerRow).copyMemory(from: source, byteCount: width)
        }
        if destination.pixelFormat == .i420 {
            let u = destination.planes[1]
            let v = destination.planes[2]
            for row in 0..<chromaHeight {
                let source = UnsafeRawPointer(base + chromaOffset + (crop.y / 2 + row) * chromaPitch + crop.x)
                NV12Chroma.deinterleave(
                    source, u: u.baseAddress + row * u.bytesPerRow, v: v.baseAddress + row * v.bytesPerRow,
                    count: chromaWidth)
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

/// Which of the two ways to read a VA surface back this device reads faster, measured on the
/// pictures themselves: vaDeriveImage maps the surface's own memory (no copy in the driver, but
/// on many Intel generations the memory is uncached or tiled and reading it is very slow; FFmpeg
/// and GStreamer avoid derive there), vaCreateImage + vaGetImage has the driver copy the picture
/// into an image first (a fast GPU copy on real hardware). The first pictures alternate between
/// the two; after that the faster per picture is kept. A method the driver refuses
/// (nvidia-vaapi-driver has no derive) is never tried again.
struct ReadBackMethodChoice {
    enum Method: Equatable { case derive, getImage }

    /// Pictures read with each method before deciding.
    static let trialsPerMethod = 2
    private var deriveAvailable = true
    private var getImageAvailable = true
    private var deriveTimes: [UInt64] = []
    private var getImageTimes: [UInt64] = []
    private var decided: Method? = Self.forced

    /// SWIFTVT_VA_READBACK=derive|getimage fixes the method (scripts/hw-check.sh measures each on
    /// a real device); anything else, or unset, measures.
    static var forced: Method? {
        switch getenv("SWIFTVT_VA_READBACK").map({ String(cString: $0) }) {
        case "derive"?: return .derive
        case "getimage"?: return .getImage
        default: return nil
        }
    }

    /// The method for the next picture.
    var next: Method {
        if let decided { return decided }
        if !deriveAvailable { return .getImage }
        if !getImageAvailable { return .derive }
        return deriveTimes.count <= getImageTimes.count ? .derive : .getImage
    }

    mutating func record(_ method: Method, nanoseconds: UInt64) {
        guard decided == nil else { return }
        switch method {
        case .derive: deriveTimes.append(nanoseconds)
        case .getImage: getImageTimes.append(nanoseconds)
        }
        if deriveTimes.count >= Self.trialsPerMethod && getImageTimes.count >= Self.trialsPerMethod {
            // The better of each method's trials: the first picture also pays for page faults.
            decided = (deriveTimes.min() ?? 0) <= (getImageTimes.min() ?? 0) ? .derive : .getImage
        }
    }

    /// The driver refused `method`; false when the other one is refused too.
    @discardableResult
    mutating func unavailable(_ method: Method) -> Bool {
        switch method {
        case .derive: deriveAvailable = false
        case .getImage: getImageAvailable = false
        }
        if deriveAvailable != getImageAvailable { decided = deriveAvailable ? .derive : .getImage }
        return deriveAvailable || getImageAvailable
    }

    /// The method kept, once decided.
    var chosen: Method? { decided }

    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
