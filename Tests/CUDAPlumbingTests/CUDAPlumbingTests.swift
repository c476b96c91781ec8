import CCUDA
import CUDAPlumbing
import Testing

/// The CUDA plumbing against the software CUDA double (tests/cuda-driver/, found first in
/// LD_LIBRARY_PATH: meson's cuda-swift-tests runs `swift test --filter CUDAPlumbingTests` through
/// scripts/with-software-cuda.sh): the driver's devices, contexts pushed and popped, NVDEC's
/// capabilities, decoders owned, and errors read as sentences with their CUresult.
@Suite("CUDA plumbing on the software double", .serialized)
struct CUDAPlumbingTests {
    static func firstDevice() throws -> CUDADeviceInfo {
        let devices = try CUDADriver.devices().get()
        return try #require(devices.first)
    }

    @Test("the driver loads and lists the double's device with its name and memory")
    func devices() throws {
        let devices = try CUDADriver.devices().get()
        #expect(devices.count == 1)
        let device = try #require(devices.first)
        #expect(device.ordinal == 0)
        #expect(device.name == "SwiftVT software CUDA device")
        #expect(device.memoryBytes > 0)
        #expect(device.summary == "cuda:0 (SwiftVT software CUDA device)")
    }

    @Test("one context per device and process, current only inside withCurrentContext")
    func sharedContext() throws {
        let device = try Self.firstDevice()
        let context = try CUDASharedContexts.context(on: device)
        #expect(try CUDASharedContexts.context(on: device) === context)
        var current: CUcontext?
        try context.withCurrentContext { () throws(CUDAError) in
            // cuCtxPopCurrent returns the context pushed: pop and push it back.
            try cudaCall("cuCtxPopCurrent") { ccuda_ctx_pop_current(&current) }
            try cudaCall("cuCtxPushCurrent") { ccuda_ctx_push_current(current) }
        }
        #expect(current != nil)
    }

    @Test("NVDEC decodes 8-bit 4:2:0 H.264 to NV12 up to 4096x4096, and no 10-bit H.264")
    func capabilities() throws {
        let context = try CUDASharedContexts.context(on: Self.firstDevice())
        let caps = try NVDECCapabilities.query(
            codec: cudaVideoCodec_H264, chroma: cudaVideoChromaFormat_420, bitDepthMinus8: 0, context: context)
        #expect(caps.isSupported && caps.outputs(cudaVideoSurfaceFormat_NV12))
        #expect(caps.sizeProblem(width: 1920, height: 1088) == nil)
        #expect(caps.sizeProblem(width: 8192, height: 4352)?.contains("larger than the 4096x4096") == true)
        let tenBit = try NVDECCapabilities.query(
            codec: cudaVideoCodec_H264, chroma: cudaVideoChromaFormat_420, bitDepthMinus8: 2, context: context)
        #expect(!tenBit.isSupported)
    }

    @Test("a decoder is created and destroyed with its owner; 33 surfaces is refused with the call and CUresult")
    func decoders() throws {
        let context = try CUDASharedContexts.context(on: Self.firstDevice())
        let decoder = try NVDECDecoder(
            context: context, codec: cudaVideoCodec_H264, chroma: cudaVideoChromaFormat_420, bitDepthMinus8: 0,
            outputFormat: cudaVideoSurfaceFormat_NV12, width: 176, height: 144, surfaceCount: 8, outputSurfaceCount: 2)
        #expect(decoder.surfaceCount == 8 && decoder.outputHeight == 144)
        do throws(CUDAError) {
            _ = try NVDECDecoder(
                context: context, codec: cudaVideoCodec_H264, chroma: cudaVideoChromaFormat_420, bitDepthMinus8: 0,
                outputFormat: cudaVideoSurfaceFormat_NV12, width: 176, height: 144, surfaceCount: 33,
                outputSurfaceCount: 2)
            Issue.record("NVDEC took 33 decode surfaces (cuviddec.h allows 32)")
        } catch {
            #expect(error.call == "cuvidCreateDecoder")
            #expect(error.result == Int32(CCUDA_ERROR_INVALID_VALUE.rawValue))
            #expect(error.description.hasPrefix("cuvidCreateDecoder failed: CUDA_ERROR_INVALID_VALUE"), "\(error)")
            #expect(error.description.contains("while creating a 176x144 decoder with 33 surfaces on cuda:0"))
        }
    }

    @Test("mapping a surface nothing was decoded into is refused")
    func mapBeforeDecode() throws {
        let context = try CUDASharedContexts.context(on: Self.firstDevice())
        let decoder = try NVDECDecoder(
            context: context, codec: cudaVideoCodec_H264, chroma: cudaVideoChromaFormat_420, bitDepthMinus8: 0,
            outputFormat: cudaVideoSurfaceFormat_NV12, width: 176, height: 144, surfaceCount: 4, outputSurfaceCount: 1)
        let stream = try CUDAStream(context: context)
        do throws(CUDAError) {
            try context.withCurrentContext { () throws(CUDAError) in
                let frame = try decoder.map(pictureIndex: 0, stream: stream)
                try frame.unmap()
            }
            Issue.record("a surface never decoded into was mapped")
        } catch {
            #expect(error.call == "cuvidMapVideoFrame64")
        }
    }

    @Test("errors: the driver's name and text, out of memory, and the sticky errors of a lost device")
    func errors() {
        let outOfMemory = CUDAError(call: "cuvidCreateDecoder", result: Int32(CCUDA_ERROR_OUT_OF_MEMORY.rawValue))
        #expect(outOfMemory.isOutOfMemory && !outOfMemory.deviceIsLost)
        #expect(outOfMemory.description.hasPrefix("cuvidCreateDecoder failed: CUDA_ERROR_OUT_OF_MEMORY"))
        let lost = CUDAError(call: "cuvidDecodePicture", result: Int32(CCUDA_ERROR_LAUNCH_FAILED.rawValue))
        #expect(lost.deviceIsLost && !lost.isOutOfMemory)
        #expect(lost.description.contains("CUDA_ERROR_LAUNCH_FAILED"))
    }
}
