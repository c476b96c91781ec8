import CCUDA
import CUDAPlumbing
import H264
import MediaCore
import SwiftVT

/// An NVDEC decode surface (its index, CurrPicIdx / PicIdx) lent to one picture.
typealias NVDECSurfaceLease = DeviceSurfaceLease<Int>

/// The H.264 accelerator on an NVIDIA GPU's NVDEC: turns the state machine's calls into one
/// `CUVIDPICPARAMS` per picture with its slices (Annex B, as the Video Codec SDK's parser hands
/// them to cuvidDecodePicture), and reads output pictures back into ``PixelBuffer``s.
///
/// One decoder per coded size; surfaces sized DPB + 4 + the read-back delay.
final class NVDECH264Accelerator: H264DeviceAccelerator {
    let apiName = "NVDEC"
    let damagedPictureText =
        "the NVDEC device decoded this picture with errors (cuvidGetDecodeStatus: cuvidDecodeStatus_Error) "
        + "and concealed them; it is output as the device left it"
    private let context: CUDAContext
    private let stream: CUDAStream
    private let pictures: DeviceOutputPictures
    private var decoder: NVDECDecoder?
    private var pool: DeviceSurfacePool<Int>?
    private var codedSize = (width: 0, height: 0)
    /// The picture being gathered: its parameters, its slices each after a start code, and
    /// where each slice starts.
    private var pictureParameters = CUVIDPICPARAMS()
    private var bitstream: [UInt8] = []
    private var sliceOffsets: [UInt32] = []
    private var pictureIsOpen = false
    /// For I420 output: the interleaved chroma rows, de-interleaved on the host. Owned memory, not
    /// an array: the asynchronous copy writes it after the call that queued it returns.
    private var chromaStaging = UnsafeMutableRawBufferPointer(start: nil, count: 0)
    var outputPictures: [H264Picture] = []
    private(set) var startedPictureCount = 0
    let readBackDelay: Int

    /// - Parameter readBackDelay: output pictures held back before reading the oldest, so that
    ///   its copy overlaps the device decoding the next ones (0 for low delay).
    init(context: CUDAContext, pictures: DeviceOutputPictures, readBackDelay: Int) throws(CUDAError) {
        self.context = context
        self.pictures = pictures
        self.readBackDelay = readBackDelay
        stream = try CUDAStream(context: context)
    }

    deinit { chromaStaging.deallocate() }

    private static func failed(_ error: CUDAError) -> H264DecodingError {
        .acceleratorFailed(error.description, status: error.result, operation: error.call)
    }

    private func surfaceIndex(of picture: H264Picture) -> Int? {
        (picture.acceleratorData as? NVDECSurfaceLease)?.surface
    }

    /// Surfaces beyond the DPB's frames: the current picture, one being read back, two for
    /// pictures the device still decodes (as the VA path), plus the pictures held back.
    static let surfacesBeyondDPB = 4
    /// cuviddec.h: at most 32 decode surfaces.
    static let maximumSurfaces = 32

    var beforeSequenceChange: (() throws(VTError) -> Void)?

    func newSequence(_ sequence: H264SequenceInfo) throws(H264DecodingError) {
        do throws(VTError) {
            try beforeSequenceChange?()
        } catch {
            throw .acceleratorFailed("NVDEC: the previous sequence's last pictures could not be read back: \(error)")
        }
        let sps = sequence.sequenceParameterSet
        let width = sps.codedWidth
        let height = sps.codedHeight
        let count = min(Self.maximumSurfaces, sequence.maxDpbFrames + Self.surfacesBeyondDPB + readBackDelay)
        if decoder != nil, let pool, codedSize == (width, height), pool.count >= count {
            // The same coded size: the decoder and its surfaces stay (GStreamer's nvh264dec
            // reconfigures only when the size or DPB grows).
            try pictures.startSequence(sps)
            return
        }
        // Every picture still holding a surface of the old decoder has been output (the state
        // machine flushes the DPB at a new sequence), so the old decoder can go.
        decoder = nil
        pool = nil
        do throws(CUDAError) {
            decoder = try NVDECDecoder(
                context: context, codec: cudaVideoCodec_H264, chroma: cudaVideoChromaFormat_420, bitDepthMinus8: 0,
                outputFormat: cudaVideoSurfaceFormat_NV12, width: width, height: height, surfaceCount: count,
                outputSurfaceCount: 2)
        } catch {
            throw Self.failed(error)
        }
        pool = DeviceSurfacePool(surfaces: Array(0..<count))
        codedSize = (width, height)
        try pictures.startSequence(sps)
    }

    func startPicture(
        _ picture: H264Picture, firstSlice: SliceHeader, parameterSets: H264ActiveParameterSets,
        referenceFrames: [H264Picture]
    ) throws(H264DecodingError) {
        guard let pool else { throw .acceleratorFailed("NVDEC: a picture started before its sequence") }
        guard let lease = pool.lease() else {
            throw .acceleratorFailed(
                "NVDEC: all \(pool.count) decode surfaces are in use (the stream keeps more pictures than its DPB size)"
            )
        }
        picture.acceleratorData = lease
        startedPictureCount += 1
        // Every reference frame, with its surface; inferred gap frames have none (PicIdx -1).
        let references = referenceFrames.compactMap { reference -> (H264Picture, Int?)? in
            let index = surfaceIndex(of: reference)
            return index != nil || reference.isNonExisting ? (reference, index) : nil
        }
        pictureParameters = NVDECH264PictureParameters.make(
            current: picture, surfaceIndex: lease.surface, firstSlice: firstSlice, parameterSets: parameterSets,
            referenceFrames: references)
        bitstream.removeAll(keepingCapacity: true)
        sliceOffsets.removeAll(keepingCapacity: true)
        pictureIsOpen = true
    }

    func decodeSlice(
        _ picture: H264Picture, slice: H264SliceData, parameterSets: H264ActiveParameterSets,
        referencePictureList0: [H264Picture?], referencePictureList1: [H264Picture?]
    ) throws(H264DecodingError) {
        guard pictureIsOpen else { throw .acceleratorFailed("NVDEC: a slice arrived before its picture") }
        // NVDEC parses the slice headers itself (reference list modification and prediction
        // weights included), so the lists are not passed: only the slice NAL units, each after a
        // start code (B.1), in one buffer per picture.
        NVDECH264PictureParameters.noteSlice(slice.header, in: &pictureParameters)
        sliceOffsets.append(UInt32(truncatingIfNeeded: bitstream.count))
        bitstream += [0, 0, 1]
        // Copy: the picture's slices are gathered into one buffer, which cuvidDecodePicture
        // takes whole (the driver copies it to the device); the sample's memory is the caller's.
        bitstream.append(contentsOf: slice.nalUnit)
    }

    /// Submits the picture with every slice given, whenever it was started, also after a failed
    /// slice (`picture.decodingFailed`): then nothing is submitted (NVDEC has no picture open on
    /// the device until cuvidDecodePicture), and the surface stays as it was.
    func endPicture(_ picture: H264Picture) throws(H264DecodingError) {
        guard pictureIsOpen else { return }
        pictureIsOpen = false
        guard !picture.decodingFailed, !sliceOffsets.isEmpty, let decoder else { return }
        let sliceCount = sliceOffsets.count
        do throws(CUDAError) {
            try bitstream.withUnsafeBufferPointer { data throws(CUDAError) in
                try sliceOffsets.withUnsafeBufferPointer { offsets throws(CUDAError) in
                    pictureParameters.nBitstreamDataLen = UInt32(truncatingIfNeeded: data.count)
                    pictureParameters.pBitstreamData = data.baseAddress
                    pictureParameters.nNumSlices = UInt32(truncatingIfNeeded: sliceCount)
                    pictureParameters.pSliceDataOffsets = offsets.baseAddress
                    defer {
                        pictureParameters.pBitstreamData = nil
                        pictureParameters.pSliceDataOffsets = nil
                    }
                    try context.withCurrentContext { () throws(CUDAError) in
                        try decoder.decode(&pictureParameters)
                    }
                }
            }
        } catch {
            throw Self.failed(error)
        }
    }

    func outputPicture(_ picture: H264Picture) throws(H264DecodingError) {
        outputPictures.append(picture)
    }

    func flushed() { pictures.trimIdle() }

    /// Maps the output picture's surface and copies it, cropped, into a pixel buffer; `damaged`
    /// when NVDEC reports an error for the picture (cuvidGetDecodeStatus).
    func readBack(_ picture: H264Picture) throws(VTError) -> (image: PixelBuffer, damaged: Bool) {
        guard let lease = picture.acceleratorData as? NVDECSurfaceLease, let decoder else {
            throw VTError(.decoderFailed, "NVDEC: an output picture has no surface")
        }
        let destination = try pictures.makeDestination()
        do throws(CUDAError) {
            let status = try context.withCurrentContext { () throws(CUDAError) -> cuvidDecodeStatus in
                let frame = try decoder.map(pictureIndex: lease.surface, stream: stream)
                try copy(frame, to: destination)
                try stream.synchronize()
                try frame.unmap()
                // A driver without decode status (cuvidGetDecodeStatus came with SDK 9) reports
                // no damage rather than failing the picture.
                return (try? decoder.status(pictureIndex: lease.surface)) ?? cuvidDecodeStatus_Success
            }
            if destination.pixelFormat == .i420 { deinterleaveStagedChroma(into: destination) }
            let damaged = status == cuvidDecodeStatus_Error || status == cuvidDecodeStatus_Error_Concealed
            return (destination, damaged)
        } catch {
            throw VTError(
                .decoderFailed, "NVDEC: the decoded picture cannot be read back: \(error)",
                backendStatus: error.result, operation: error.call)
        }
    }

    /// Copy: the picture is in device memory, and system-memory pixel buffers need their own
    /// copy (one per plane, by the GPU's copy engine). NV12 goes straight into the buffer; for
    /// I420 the interleaved chroma is staged and split on the host in one pass.
    private func copy(_ frame: borrowing NVDECMappedFrame, to destination: PixelBuffer) throws(CUDAError) {
        let crop = pictures.crop
        let chromaWidth = (crop.width + 1) / 2
        let chromaHeight = (crop.height + 1) / 2
        let luma = destination.planes[0]
        try stream.copy2D(
            Self.deviceToHost(
                source: frame.devicePointer, sourcePitch: frame.pitch, x: crop.x, y: crop.y,
                destination: luma.baseAddress, destinationPitch: luma.bytesPerRow, widthInBytes: crop.width,
                height: crop.height))
        if destination.pixelFormat == .i420 {
            let stagedPitch = chromaWidth * 2
            if chromaStaging.count < stagedPitch * chromaHeight {
                chromaStaging.deallocate()
                chromaStaging = .allocate(byteCount: stagedPitch * chromaHeight, alignment: 64)
            }
            guard let base = chromaStaging.baseAddress else { return }
            try stream.copy2D(
                Self.deviceToHost(
                    source: frame.chromaPointer, sourcePitch: frame.pitch, x: crop.x, y: crop.y / 2,
                    destination: base, destinationPitch: stagedPitch, widthInBytes: stagedPitch,
                    height: chromaHeight))
        } else {
            let chroma = destination.planes[1]
            try stream.copy2D(
                Self.deviceToHost(
                    source: frame.chromaPointer, sourcePitch: frame.pitch, x: crop.x, y: crop.y / 2,
                    destination: chroma.baseAddress, destinationPitch: chroma.bytesPerRow,
                    widthInBytes: chromaWidth * 2, height: chromaHeight))
        }
    }

    private func deinterleaveStagedChroma(into destination: PixelBuffer) {
        let crop = pictures.crop
        let chromaWidth = (crop.width + 1) / 2
        let chromaHeight = (crop.height + 1) / 2
        let u = destination.planes[1]
        let v = destination.planes[2]
        guard let base = chromaStaging.baseAddress else { return }
        for row in 0..<chromaHeight {
            NV12Chroma.deinterleave(
                base + row * chromaWidth * 2, u: u.baseAddress + row * u.bytesPerRow,
                v: v.baseAddress + row * v.bytesPerRow, count: chromaWidth)
        }
    }

    static func deviceToHost(
        source: UInt64, sourcePitch: Int, x: Int, y: Int, destination: UnsafeMutableRawPointer, destinationPitch: Int,
        widthInBytes: Int, height: Int
    ) -> CUDA_MEMCPY2D {
        var copy = CUDA_MEMCPY2D()
        copy.srcMemoryType = CU_MEMORYTYPE_DEVICE
        copy.srcDevice = source
        copy.srcXInBytes = x
        copy.srcY = y
        copy.srcPitch = sourcePitch
        copy.dstMemoryType = CU_MEMORYTYPE_HOST
        copy.dstHost = destination
        copy.dstPitch = destinationPitch
        copy.WidthInBytes = widthInBytes
        copy.Height = height
        return copy
    }
}
