import CCUDA

/// What the device's NVDEC decodes for one codec, chroma format and bit depth
/// (cuvidGetDecoderCaps).
public struct NVDECCapabilities: Sendable {
    public var isSupported: Bool
    /// Bits of cudaVideoSurfaceFormat the decoder outputs (NV12 = bit 0, P016 = bit 1...).
    public var outputFormatMask: UInt16
    public var maxWidth: Int
    public var maxHeight: Int
    public var minWidth: Int
    public var minHeight: Int
    /// Macroblocks (16x16) per picture at most.
    public var maxMacroblockCount: Int

    public func outputs(_ format: cudaVideoSurfaceFormat) -> Bool {
        outputFormatMask & (1 << UInt16(format.rawValue)) != 0
    }

    /// Why a `width`x`height` picture does not fit, or nil when it does.
    public func sizeProblem(width: Int, height: Int) -> String? {
        if width > maxWidth || height > maxHeight {
            return "\(width)x\(height) is larger than the \(maxWidth)x\(maxHeight) NVDEC decodes"
        }
        if width < minWidth || height < minHeight {
            return "\(width)x\(height) is smaller than the \(minWidth)x\(minHeight) NVDEC decodes"
        }
        if (width / 16) * (height / 16) > maxMacroblockCount {
            return "\(width)x\(height) has more than the \(maxMacroblockCount) macroblocks NVDEC decodes"
        }
        return nil
    }

    /// Asks the device (the context current) what it decodes.
    public static func query(
        codec: cudaVideoCodec, chroma: cudaVideoChromaFormat, bitDepthMinus8: Int, context: CUDAContext
    ) throws(CUDAError) -> NVDECCapabilities {
        var caps = CUVIDDECODECAPS()
        caps.eCodecType = codec
        caps.eChromaFormat = chroma
        caps.nBitDepthMinus8 = UInt32(clamping: bitDepthMinus8)
        try context.withCurrentContext { () throws(CUDAError) in
            try cudaCall("cuvidGetDecoderCaps") { ccuda_cuvid_get_decoder_caps(&caps) }
        }
        return NVDECCapabilities(
            isSupported: caps.bIsSupported != 0, outputFormatMask: caps.nOutputFormatMask,
            maxWidth: Int(caps.nMaxWidth), maxHeight: Int(caps.nMaxHeight), minWidth: Int(caps.nMinWidth),
            minHeight: Int(caps.nMinHeight), maxMacroblockCount: Int(caps.nMaxMBCount))
    }
}

/// An NVDEC decoder (cuvidCreateDecoder), owned: destroyed with this value. Its decode surfaces
/// are the device's; pictures are decoded into them by index and read by mapping
/// (``map(pictureIndex:stream:)``).
///
/// Not Sendable: one thread at a time (the session's backend ownership), each call with its
/// context pushed on the calling thread.
public final class NVDECDecoder {
    public let context: CUDAContext
    private let handle: CUvideodecoder
    /// ulNumDecodeSurfaces: picture indices are below it.
    public let surfaceCount: Int
    /// ulNumOutputSurfaces: frames mapped at once, at most.
    public let outputSurfaceCount: Int
    /// The output frame's size: the luma plane's rows (the chroma plane follows them).
    public let outputHeight: Int
    public let outputWidth: Int

    /// - Parameters:
    ///   - width, height: the coded size (whole macroblocks), also the output size: cropping is
    ///     done while reading back, not by the device, so the output is the decoded picture.
    public init(
        context: CUDAContext, codec: cudaVideoCodec, chroma: cudaVideoChromaFormat, bitDepthMinus8: Int,
        outputFormat: cudaVideoSurfaceFormat, width: Int, height: Int, surfaceCount: Int, outputSurfaceCount: Int
    ) throws(CUDAError) {
        var info = CUVIDDECODECREATEINFO()
        info.ulWidth = UInt(width)
        info.ulHeight = UInt(height)
        info.ulNumDecodeSurfaces = UInt(surfaceCount)
        info.CodecType = codec
        info.ChromaFormat = chroma
        // PreferCUVID: the decoder's own engine (NVDEC), as FFmpeg and GStreamer ask for it.
        info.ulCreationFlags = UInt(cudaVideoCreate_PreferCUVID.rawValue)
        info.bitDepthMinus8 = UInt(clamping: bitDepthMinus8)
        info.ulMaxWidth = UInt(width)
        info.ulMaxHeight = UInt(height)
        info.display_area.right = Int16(clamping: width)
        info.display_area.bottom = Int16(clamping: height)
        info.OutputFormat = outputFormat
        // Progressive frames only (the H.264 path refuses field pictures): weave is no processing.
        info.DeinterlaceMode = cudaVideoDeinterlaceMode_Weave
        info.ulTargetWidth = UInt(width)
        info.ulTargetHeight = UInt(height)
        info.ulNumOutputSurfaces = UInt(outputSurfaceCount)
        var decoder: CUvideodecoder?
        try context.withCurrentContext { () throws(CUDAError) in
            try cudaCall(
                "cuvidCreateDecoder",
                context:
                    "creating a \(width)x\(height) decoder with \(surfaceCount) surfaces on \(context.device.summary)"
            ) { ccuda_cuvid_create_decoder(&decoder, &info) }
        }
        guard let decoder else {
            throw CUDAError(
                call: "cuvidCreateDecoder", result: Int32(CCUDA_ERROR_INVALID_VALUE.rawValue),
                context: "no decoder returned")
        }
        self.context = context
        handle = decoder
        self.surfaceCount = surfaceCount
        self.outputSurfaceCount = outputSurfaceCount
        outputWidth = width
        outputHeight = height
    }

    deinit {
        _ = try? context.withCurrentContext { () throws(CUDAError) in
            _ = ccuda_cuvid_destroy_decoder(handle)
        }
    }

    /// Submits one picture (cuvidDecodePicture); the device decodes it asynchronously. The
    /// context must be current.
    public func decode(_ parameters: inout CUVIDPICPARAMS) throws(CUDAError) {
        let index = parameters.CurrPicIdx
        try cudaCall("cuvidDecodePicture", context: "decoding into surface \(index)") {
            ccuda_cuvid_decode_picture(handle, &parameters)
        }
    }

    /// Whether the picture in `pictureIndex` decoded without errors (cuvidGetDecodeStatus); nil
    /// while it is still being decoded. The context must be current.
    public func status(pictureIndex: Int) throws(CUDAError) -> cuvidDecodeStatus {
        var status = CUVIDGETDECODESTATUS()
        try cudaCall("cuvidGetDecodeStatus") {
            ccuda_cuvid_get_decode_status(handle, Int32(pictureIndex), &status)
        }
        return status.decodeStatus
    }

    /// Maps the decoded picture in `pictureIndex` (cuvidMapVideoFrame64: the device
    /// post-processes it into one of the output surfaces, ordered on `stream`). The context must
    /// be current, and stay so until the mapping is let go.
    public func map(pictureIndex: Int, stream: CUDAStream) throws(CUDAError) -> NVDECMappedFrame {
        var parameters = CUVIDPROCPARAMS()
        parameters.progressive_frame = 1
        parameters.top_field_first = 1
        parameters.output_stream = stream.handle
        var pointer: UInt64 = 0
        var pitch: UInt32 = 0
        try cudaCall("cuvidMapVideoFrame64", context: "mapping surface \(pictureIndex)") {
            ccuda_cuvid_map_video_frame(handle, Int32(pictureIndex), &pointer, &pitch, &parameters)
        }
        return NVDECMappedFrame(decoder: handle, devicePointer: pointer, pitch: Int(pitch), height: outputHeight)
    }
}

/// A decoded picture mapped into device memory (an output surface), owned: unmapped
/// (cuvidUnmapVideoFrame64) when consumed by ``unmap()`` or when it goes. NVDEC has only
/// ulNumOutputSurfaces of them, so a mapping is held for one copy and no longer.
public struct NVDECMappedFrame: ~Copyable {
    private let decoder: CUvideodecoder
    public let devicePointer: UInt64
    public let pitch: Int
    /// Rows of the luma plane; the interleaved chroma plane starts `pitch * height` bytes in.
    public let height: Int

    init(decoder: CUvideodecoder, devicePointer: UInt64, pitch: Int, height: Int) {
        self.decoder = decoder
        self.devicePointer = devicePointer
        self.pitch = pitch
        self.height = height
    }

    /// Where the chroma plane starts (NVDEC lays the CbCr plane right after the luma rows).
    public var chromaPointer: UInt64 { devicePointer + UInt64(pitch * height) }

    /// Gives the output surface back, reporting a failure (the context must be current).
    public consuming func unmap() throws(CUDAError) {
        let decoder = self.decoder
        let pointer = devicePointer
        discard self
        try cudaCall("cuvidUnmapVideoFrame64") { ccuda_cuvid_unmap_video_frame(decoder, pointer) }
    }

    deinit {
        _ = ccuda_cuvid_unmap_video_frame(decoder, devicePointer)
    }
}
