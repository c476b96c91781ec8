import CCUDA
import Synchronization

/// A CUDA context on one device, owned: destroyed when the last holder lets it go.
///
/// A context is current per thread (cuda.h), and a decoder may be called from several threads
/// over its life (one at a time): every use is bracketed by ``withCurrentContext(_:)``, which pushes it
/// on the calling thread and pops it again, as GStreamer's GstCudaContext push/pop and FFmpeg's
/// cuda hwcontext do.
///
/// `@unchecked Sendable`: the handle never changes after init, and the CUDA driver API is thread
/// safe for a context pushed on one thread at a time per call.
public final class CUDAContext: @unchecked Sendable {
    public let device: CUDADeviceInfo
    private let handle: CUcontext

    /// Creates a context on `device` (cuCtxCreate makes it current on this thread; it is popped
    /// at once, so the calling thread is left as it was).
    public init(device: CUDADeviceInfo) throws(CUDAError) {
        self.device = device
        var context: CUcontext?
        // CU_CTX_SCHED_BLOCKING_SYNC: a thread waiting for the GPU sleeps instead of spinning a
        // core (the CPU time per frame matters with several decoders per machine).
        try cudaCall("cuCtxCreate", context: "creating a context on \(device.summary)") {
            ccuda_ctx_create(&context, UInt32(CU_CTX_SCHED_BLOCKING_SYNC), device.device)
        }
        guard let context else {
            throw CUDAError(
                call: "cuCtxCreate", result: Int32(CCUDA_ERROR_INVALID_VALUE.rawValue),
                context: "the driver returned no context")
        }
        handle = context
        var popped: CUcontext?
        _ = ccuda_ctx_pop_current(&popped)
    }

    deinit {
        _ = ccuda_ctx_destroy(handle)
    }

    /// Runs `body` with this context current on the calling thread.
    public func withCurrentContext<Result>(_ body: () throws(CUDAError) -> Result) throws(CUDAError) -> Result {
        try cudaCall("cuCtxPushCurrent") { ccuda_ctx_push_current(handle) }
        defer {
            var popped: CUcontext?
            _ = ccuda_ctx_pop_current(&popped)
        }
        return try body()
    }
}

/// A CUDA stream in a context, owned: destroyed with this value. Copies queued on it run in
/// order and ``synchronize()`` waits for them.
public final class CUDAStream {
    public let context: CUDAContext
    let handle: CUstream

    public init(context: CUDAContext) throws(CUDAError) {
        self.context = context
        var stream: CUstream?
        try context.withCurrentContext { () throws(CUDAError) in
            try cudaCall("cuStreamCreate") { ccuda_stream_create(&stream, UInt32(CU_STREAM_NON_BLOCKING)) }
        }
        guard let stream else {
            throw CUDAError(
                call: "cuStreamCreate", result: Int32(CCUDA_ERROR_INVALID_VALUE.rawValue), context: "no stream returned"
            )
        }
        handle = stream
    }

    deinit {
        _ = try? context.withCurrentContext { () throws(CUDAError) in
            _ = ccuda_stream_destroy(handle)
        }
    }

    /// Queues a 2D copy (device to host, here) on the stream. The context must be current.
    public func copy2D(_ copy: CUDA_MEMCPY2D) throws(CUDAError) {
        var copy = copy
        try cudaCall("cuMemcpy2DAsync") { ccuda_memcpy_2d_async(&copy, handle) }
    }

    /// Waits for everything queued on the stream. The context must be current.
    public func synchronize() throws(CUDAError) {
        try cudaCall("cuStreamSynchronize") { ccuda_stream_synchronize(handle) }
    }
}

/// One context per device and process, shared by every decoder on it (as GStreamer shares a
/// GstCudaContext per device through the context query): a context costs device memory and
/// hundreds of milliseconds to create, and eight decoders on one GPU need one. Held weakly: the
/// context goes when its last decoder does.
public enum CUDASharedContexts {
    private final class WeakContext: @unchecked Sendable {
        weak var context: CUDAContext?
        init(_ context: CUDAContext) { self.context = context }
    }
    private static let contexts = Mutex<[Int: WeakContext]>([:])

    /// The process's context on `device`, created on first use.
    public static func context(on device: CUDADeviceInfo) throws(CUDAError) -> CUDAContext {
        try contexts.withLock { (contexts) throws(CUDAError) -> CUDAContext in
            if let existing = contexts[device.ordinal]?.context { return existing }
            let created = try CUDAContext(device: device)
            contexts[device.ordinal] = WeakContext(created)
            return created
        }
    }
}
