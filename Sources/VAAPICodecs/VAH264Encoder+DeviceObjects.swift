import CVA
import H264
import MediaCore
import SwiftVT
import VAPlumbing

/// The VA objects of one encoding context. Declared in the order they are destroyed in
/// (buffers and context before the surfaces they use, the config last).
final class VAEncodeObjects {
    /// One per picture in flight.
    let codedBuffers: [VABufferObject]
    let context: VAContext
    let sourceSurfaces: VASurfaceSet
    let reconstructedSurfaces: VASurfaceSet
    let config: VAConfig

    init(
        config: consuming VAConfig, sourceSurfaces: consuming VASurfaceSet,
        reconstructedSurfaces: consuming VASurfaceSet,
        context: VAContext, codedBuffers: [VABufferObject]
    ) {
        self.codedBuffers = codedBuffers
        self.context = context
        self.sourceSurfaces = sourceSurfaces
        self.reconstructedSurfaces = reconstructedSurfaces
        self.config = config
    }
}

// The device side of the VA encoder: its config, surfaces, context and coded buffers, and the
// copies into and out of source surfaces.

extension VAH264Encoder {
    /// Config, surfaces, context and coded buffers for `rateControl`'s mode on the current
    /// endpoint (kept when they were made for the same). Throws the VA call's error, so that a
    /// context the device refuses for an advertised mode can be told from other failures.
    func openObjects(rateControl: VAH264RateControl) throws(VAError) {
        // Sources: the B pictures the planner holds, the pictures in flight, those read back
        // waiting for the rest of their group, and the frame being uploaded.
        let sourceCount = pictureDepth + 2 * (structure.consecutiveBFrames + 1) + 1
        // Reconstructions: the DPB, and one per picture in flight (a surface leaving the DPB is
        // reused once the pictures that may read it are complete; submit waits for that).
        let reconstructedCount = structure.maxReferenceFrames + pictureDepth + 1
        inFlight.removeAll()
        readBackGroup.removeAll()
        reconstructed.removeAll()
        if let objects, objects.sourceSurfaces.ids.count == sourceCount,
            objects.reconstructedSurfaces.ids.count == reconstructedCount, objects.codedBuffers.count == pictureDepth,
            openedMode == rateControl.mode, objects.config.entrypoint == endpoint.entrypoint
        {
            freeSourceSlots = Array(0..<sourceCount)
            freeReconstructedSlots = Array(0..<reconstructedCount)
            freeCodedBufferSlots = Array(0..<pictureDepth)
            return
        }
        objects = nil
        openedMode = nil
        let codedWidth = widthInMacroblocks * 16
        let codedHeight = heightInMacroblocks * 16
        var attributes = [
            VAConfigAttrib(type: VAConfigAttribRTFormat, value: UInt32(VA_RT_FORMAT_YUV420)),
            VAConfigAttrib(type: VAConfigAttribRateControl, value: rateControl.vaMode)
        ]
        let packed =
            options.packedHeaders
            & UInt32(
                VA_ENC_PACKED_HEADER_SEQUENCE | VA_ENC_PACKED_HEADER_PICTURE | VA_ENC_PACKED_HEADER_SLICE
                    | VA_ENC_PACKED_HEADER_RAW_DATA)
        if packed != 0 { attributes.append(VAConfigAttrib(type: VAConfigAttribEncPackedHeaders, value: packed)) }
        let config = try VAConfig(
            connection: connection, profile: choice.profile, entrypoint: endpoint.entrypoint, attributes: attributes)
        let nv12 = UInt32(VA_FOURCC_NV12)
        let sources = try VASurfaceSet(
            connection: connection, rtFormat: UInt32(VA_RT_FORMAT_YUV420), width: codedWidth, height: codedHeight,
            count: sourceCount, fourcc: nv12)
        let reconstructedSurfaces = try VASurfaceSet(
            connection: connection, rtFormat: UInt32(VA_RT_FORMAT_YUV420), width: codedWidth, height: codedHeight,
            count: reconstructedCount, fourcc: nv12)
        let context = try VAContext(
            connection: connection, config: config, width: codedWidth, height: codedHeight,
            renderTargets: sources.ids + reconstructedSurfaces.ids)
        // The worst case of a coded picture: every macroblock as I_PCM (384 bytes + a few
        // bits of macroblock header, 7.3.5), plus headers. A device writing more reports
        // an overflow, which is checked.
        let macroblocks = widthInMacroblocks * heightInMacroblocks
        var codedBuffers: [VABufferObject] = []
        for _ in 0..<pictureDepth {
            codedBuffers.append(
                try VABufferObject(
                    connection: connection, context: context, type: VAEncCodedBufferType,
                    elementSize: macroblocks * 400 + 64 * 1024))
        }
        objects = VAEncodeObjects(
            config: config, sourceSurfaces: sources, reconstructedSurfaces: reconstructedSurfaces, context: context,
            codedBuffers: codedBuffers)
        openedMode = rateControl.mode
        freeSourceSlots = Array(0..<sourceCount)
        freeReconstructedSlots = Array(0..<reconstructedCount)
        freeCodedBufferSlots = Array(0..<pictureDepth)
    }

    /// Writes `image` into an NV12 surface, replicating the last column and row into the
    /// macroblock padding (so the edge macroblocks predict from real picture content).
    func upload(_ image: PixelBuffer, to surface: VASurfaceID) throws(VAError) {
        let codedWidth = widthInMacroblocks * 16
        let codedHeight = heightInMacroblocks * 16
        let width = configuration.width
        let height = configuration.height
        let interleaved = configuration.pixelFormat != .i420
        try connection.writeSurface(surface, fourcc: UInt32(VA_FOURCC_NV12), width: codedWidth, height: codedHeight) {
            memory, layout in
            guard let base = memory.baseAddress, image.planes.count >= (interleaved ? 2 : 3) else { return }
            // This upload is the input's one copy: the device reads its own surfaces, not our memory.
            let lumaPitch = Int(layout.pitches.0)
            let chromaPitch = Int(layout.pitches.1)
            let luma = base + Int(layout.offsets.0)
            let chroma = base + Int(layout.offsets.1)
            let sourceLuma = image.planes[0]
            for row in 0..<codedHeight {
                let source = sourceLuma.baseAddress + min(row, height - 1) * sourceLuma.bytesPerRow
                let destination = luma + row * lumaPitch
                destination.copyMemory(from: source, byteCount: width)
                if codedWidth > width {
                    let last = source.load(fromByteOffset: width - 1, as: UInt8.self)
                    (destination + width).initializeMemory(as: UInt8.self, repeating: last, count: codedWidth - width)
                }
            }
            let chromaWidth = width / 2
            for row in 0..<(codedHeight / 2) {
                let sourceRow = min(row, height / 2 - 1)
                let destination = (chroma + row * chromaPitch).assumingMemoryBound(to: UInt8.self)
                if interleaved {
                    let plane = image.planes[1]
                    destination.update(
                        from: (plane.baseAddress + sourceRow * plane.bytesPerRow).assumingMemoryBound(to: UInt8.self),
                        count: chromaWidth * 2)
                } else {
                    // I420 to NV12: Cb and Cr interleaved in the same pass as the copy.
                    let cb = (image.planes[1].baseAddress + sourceRow * image.planes[1].bytesPerRow)
                        .assumingMemoryBound(to: UInt8.self)
                    let cr = (image.planes[2].baseAddress + sourceRow * image.planes[2].bytesPerRow)
                        .assumingMemoryBound(to: UInt8.self)
                    for x in 0..<chromaWidth {
                        destination[2 * x] = cb[x]
                        destination[2 * x + 1] = cr[x]
                    }
                }
                if codedWidth / 2 > chromaWidth, chromaWidth > 0 {
                    let cb = destination[2 * chromaWidth - 2]
                    let cr = destination[2 * chromaWidth - 1]
                    for x in chromaWidth..<(codedWidth / 2) {
                        destination[2 * x] = cb
                        destination[2 * x + 1] = cr
                    }
                }
            }
        }
    }

    /// A held frame's picture, copied out of its source surface (only after a failure, so that
    /// another encoder can code it: the caller's picture is gone by then).
    func readBack(sourceSlot: Int) -> PixelBuffer? {
        guard let objects else { return nil }
        let reader = VAOutputReader(
            connection: connection,
            pictures: DeviceOutputPictures(
                api: "VA-API", pixelFormat: configuration.pixelFormat, rowAlignment: 64,
                attachments: PixelBufferAttachments(), consumer: nil))
        do {
            try reader.pictures.startSequence(sps)
            return try reader.read(
                surface: objects.sourceSurfaces.ids[sourceSlot],
                codedSize: (widthInMacroblocks * 16, heightInMacroblocks * 16)
            ).image
        } catch {
            return nil
        }
    }
}
