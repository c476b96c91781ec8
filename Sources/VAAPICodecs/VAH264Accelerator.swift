import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

/// A VA surface lent to one picture.
typealias VASurfaceLease = DeviceSurfaceLease<VASurfaceID>

/// The decoding surfaces of one sequence, owned (``VASurfaceSet``), lent from a pool.
final class VASurfacePool {
    let surfaces: VASurfaceSet
    private let leases: DeviceSurfacePool<VASurfaceID>

    init(surfaces: consuming VASurfaceSet) {
        leases = DeviceSurfacePool(surfaces: surfaces.ids)
        self.surfaces = surfaces
    }

    var ids: [VASurfaceID] { surfaces.ids }

    func lease() -> VASurfaceLease? { leases.lease() }
}

/// The H.264 accelerator on a VA-API device (VAEntrypointVLD): turns the state machine's calls
/// into VA picture, IQ matrix, slice parameter and slice data buffers, and reads output
/// pictures back into ``PixelBuffer``s.
///
/// One decoding context per coded size; surfaces from a pool sized DPB + 4.
final class VAH264Accelerator: H264DeviceAccelerator {
    private let connection: VADisplayConnection
    private let config: VAConfig
    private let output: VAOutputReader
    private var context: VAContext?
    private var pool: VASurfacePool?
    private var codedSize = (width: 0, height: 0)
    /// vaBeginPicture succeeded and vaEndPicture has not been called yet.
    private var pictureIsOpen = false
    /// The buffers of the picture being decoded, destroyed once it is submitted (va.h: the
    /// client owns buffers it created; they may be destroyed after vaEndPicture).
    private var pictureBuffers: [VABufferObject] = []
    /// Decoded pictures that became ready for output, in output order.
    var outputPictures: [H264Picture] = []
    /// Pictures started so far: tells the backend whether a sample produced a picture.
    private(set) var startedPictureCount = 0
    let apiName = "VA-API"
    let damagedPictureText =
        "the VA-API device decoded this picture with errors (VA_STATUS_ERROR_DECODING_ERROR) "
        + "and concealed them; it is output as the device left it"

    init(connection: VADisplayConnection, config: consuming VAConfig, output: VAOutputReader) {
        self.connection = connection
        self.config = config
        self.output = output
    }

    private func surface(of picture: H264Picture) -> VASurfaceID? {
        (picture.acceleratorData as? VASurfaceLease)?.surface
    }

    private static func failed(_ error: VAError) -> H264DecodingError {
        .acceleratorFailed(error.description, status: error.status, operation: error.call)
    }

    /// Decoding surfaces beyond the DPB's frames (see ``newSequence(_:)``).
    static let surfacesBeyondDPB = 4

    var beforeSequenceChange: (() throws(VTError) -> Void)?

    func newSequence(_ sequence: H264SequenceInfo) throws(H264DecodingError) {
        do throws(VTError) {
            try beforeSequenceChange?()
        } catch {
            throw .acceleratorFailed("VA-API: the previous sequence's last pictures could not be read back: \(error)")
        }
        let sps = sequence.sequenceParameterSet
        let width = sps.codedWidth
        let height = sps.codedHeight
        // Surfaces: every DPB frame, the current picture, one being read back while the next is
        // decoded, and two for drivers that complete pictures asynchronously (GStreamer's va
        // decoder allocates DPB + 4 too).
        let count = sequence.maxDpbFrames + Self.surfacesBeyondDPB
        if context != nil, let pool, codedSize == (width, height), pool.ids.count >= count {
            // The same coded size (the config fixes profile and RT format): the context and its
            // surfaces stay, as in GStreamer's va decoder. Re-creating them for a sequence whose
            // size did not change stalls NVDEC and loses nothing else.
            try output.pictures.startSequence(sps)
            return
        }
        context = nil
        pool = nil
        do throws(VAError) {
            let surfaces = try VASurfaceSet(
                connection: connection, rtFormat: UInt32(VA_RT_FORMAT_YUV420), width: width, height: height,
                count: count, fourcc: UInt32(VA_FOURCC_NV12))
            let newPool = VASurfacePool(surfaces: surfaces)
            context = try VAContext(
                connection: connection, config: config, width: width, height: height, flags: Int32(VA_PROGRESSIVE),
                renderTargets: newPool.ids)
            pool = newPool
        } catch {
            throw Self.failed(error)
        }
        codedSize = (width, height)
        try output.pictures.startSequence(sps)
    }

    func startPicture(
        _ picture: H264Picture, firstSlice: SliceHeader, parameterSets: H264ActiveParameterSets,
        referenceFrames: [H264Picture]
    ) throws(H264DecodingError) {
        guard let context, let pool else { throw .acceleratorFailed("VA-API: a picture started before its sequence") }
        guard let lease = pool.lease() else {
            throw .acceleratorFailed(
                "VA-API: all \(pool.ids.count) decoding surfaces are in use (the stream keeps more pictures than its DPB size)"
            )
        }
        picture.acceleratorData = lease
        startedPictureCount += 1
        let references = referenceFrames.compactMap { reference in surface(of: reference).map { (reference, $0) } }
        var pictureParameters = VAH264DecodeParameters.pictureParameters(
            current: picture, currentSurface: lease.surface, firstSlice: firstSlice, parameterSets: parameterSets,
            referenceFrames: references)
        var matrix = VAH264DecodeParameters.inverseQuantizationMatrix(parameterSets)
        pictureBuffers = []
        do throws(VAError) {
            // Every buffer exists before the picture begins (as in FFmpeg and GStreamer): a
            // buffer that cannot be made leaves no picture open on the device.
            let parameterBuffer = try VABufferObject.holding(
                &pictureParameters, connection: connection, context: context, type: VAPictureParameterBufferType)
            let matrixBuffer = try VABufferObject.holding(
                &matrix, connection: connection, context: context, type: VAIQMatrixBufferType)
            pictureBuffers.append(parameterBuffer)
            pictureBuffers.append(matrixBuffer)
            try connection.beginPicture(context: context, renderTarget: lease.surface)
            pictureIsOpen = true
            try connection.renderPicture(context: context, buffers: [parameterBuffer.id, matrixBuffer.id])
        } catch {
            // An open picture is ended by endPicture, which the decoder calls for every picture
            // it started, failed or not.
            throw Self.failed(error)
        }
    }

    func decodeSlice(
        _ picture: H264Picture, slice: H264SliceData, parameterSets: H264ActiveParameterSets,
        referencePictureList0: [H264Picture?], referencePictureList1: [H264Picture?]
    ) throws(H264DecodingError) {
        guard let context else { throw .acceleratorFailed("VA-API: a slice arrived before its sequence") }
        let list0 = referencePictureList0.map { entry in entry.flatMap { p in surface(of: p).map { (p, $0) } } }
        let list1 = referencePictureList1.map { entry in entry.flatMap { p in surface(of: p).map { (p, $0) } } }
        var sliceParameters = VAH264DecodeParameters.sliceParameters(
            slice, parameterSets: parameterSets, list0: list0, list1: list1)
        do throws(VAError) {
            let parameterBuffer = try VABufferObject.holding(
                &sliceParameters, connection: connection, context: context, type: VASliceParameterBufferType)
            // Copy: the slice data goes into a buffer the VA driver allocates (vaCreateBuffer
            // copies it); a hardware decoder reads it from its own memory.
            let dataBuffer = try VABufferObject(
                connection: connection, context: context, type: VASliceDataBufferType, bytes: slice.nalUnit)
            try connection.renderPicture(context: context, buffers: [parameterBuffer.id, dataBuffer.id])
            pictureBuffers.append(parameterBuffer)
            pictureBuffers.append(dataBuffer)
        } catch {
            throw Self.failed(error)
        }
    }

    /// Ends the picture on the device whenever it was begun, also after a failed slice or
    /// render (`picture.decodingFailed`): a picture left open keeps its slices in the context,
    /// and nvidia-vaapi-driver decodes them with the next picture. The slices given so far are
    /// decoded into a picture that is not output (the decoder knows it failed).
    func endPicture(_ picture: H264Picture) throws(H264DecodingError) {
        guard let context else { throw .acceleratorFailed("VA-API: a picture ended before its sequence") }
        defer { pictureBuffers = [] }
        guard pictureIsOpen else { return }
        pictureIsOpen = false
        do throws(VAError) {
            try connection.endPicture(context: context)
        } catch  where error.status == VAStatus(VA_STATUS_ERROR_DECODING_ERROR) && !picture.decodingFailed {
            // va.h: the picture has errors, the device concealed what it could; the stream goes
            // on (iHD reports damaged slices this way). The picture is output, marked damaged.
            (picture.acceleratorData as? VASurfaceLease)?.damaged = true
        } catch {
            throw Self.failed(error)
        }
    }

    /// A surface of its own for a frame inferred for a frame_num gap: it goes into
    /// ReferenceFrames like any reference (its content is whatever the surface last held; a
    /// conforming stream never predicts from it, 8.2.5.2). With no surface free it stays without
    /// one, as before: decoding goes on, only devices that need it in ReferenceFrames miss it.
    func storeNonExistingFrame(_ picture: H264Picture) throws(H264DecodingError) {
        picture.acceleratorData = pool?.lease()
    }

    func outputPicture(_ picture: H264Picture) throws(H264DecodingError) {
        outputPictures.append(picture)
    }

    /// Reads the surface of an output picture back into a pixel buffer; `damaged` when the
    /// device reported the picture damaged (at vaEndPicture or now, at vaSyncSurface).
    func readBack(_ picture: H264Picture) throws(VTError) -> (image: PixelBuffer, damaged: Bool) {
        guard let lease = picture.acceleratorData as? VASurfaceLease else {
            throw VTError(.decoderFailed, "VA-API: an output picture has no surface")
        }
        let read = try output.read(surface: lease.surface, codedSize: codedSize)
        if read.damaged { lease.damaged = true }
        return (read.image, lease.damaged)
    }

    func flushed() { output.pictures.trimIdle() }
}
