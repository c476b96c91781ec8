import CCUDA

/// A CUDA driver or NVDEC call that failed: which call, its `CUresult`, the driver's name and text
/// for it, and what SwiftVT was doing.
///
/// `description` reads "cuvidCreateDecoder failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)
/// while creating a 1920x1088 H.264 decoder with 20 surfaces".
public struct CUDAError: Error, Sendable, CustomStringConvertible {
    /// The driver function, e.g. "cuvidCreateDecoder".
    public var call: String
    /// The `CUresult` it returned (cuda.h's CUDA_ERROR_*).
    public var result: Int32
    /// What SwiftVT was doing; nil when the call says it all.
    public var context: String?

    public init(call: String, result: CUresult, context: String? = nil) {
        self.call = call
        self.result = Int32(bitPattern: result.rawValue)
        self.context = context
    }

    public init(call: String, result: Int32, context: String? = nil) {
        self.call = call
        self.result = result
        self.context = context
    }

    /// CUDA_ERROR_OUT_OF_MEMORY (2).
    public var isOutOfMemory: Bool { result == Int32(CCUDA_ERROR_OUT_OF_MEMORY.rawValue) }

    /// Errors after which the context cannot be used again (cuda.h: "the context cannot be used,
    /// so it must be destroyed": a launch failure, an illegal address, ECC...) or the device is
    /// gone: the decoder must not go on on this device.
    public var deviceIsLost: Bool {
        [
            CCUDA_ERROR_LAUNCH_FAILED, CCUDA_ERROR_ILLEGAL_ADDRESS, CCUDA_ERROR_ECC_UNCORRECTABLE,
            CCUDA_ERROR_HARDWARE_STACK_ERROR, CCUDA_ERROR_ILLEGAL_INSTRUCTION, CCUDA_ERROR_MISALIGNED_ADDRESS,
            CCUDA_ERROR_INVALID_ADDRESS_SPACE, CCUDA_ERROR_INVALID_PC, CCUDA_ERROR_DEVICE_UNAVAILABLE,
            CCUDA_ERROR_NO_DEVICE
        ].contains { Int32(bitPattern: $0.rawValue) == result }
    }

    /// The driver's name for the result (cuGetErrorName), e.g. "CUDA_ERROR_OUT_OF_MEMORY", and
    /// its text (cuGetErrorString); the number where the driver is not loaded or does not know it.
    public var resultText: String {
        let number = CUresult(rawValue: UInt32(bitPattern: result))
        guard ccuda_load_driver() == nil else { return "CUresult \(result)" }
        var name: UnsafePointer<CChar>?
        var text: UnsafePointer<CChar>?
        guard ccuda_get_error_name(number, &name) == ccuda_success(), let name else { return "CUresult \(result)" }
        if ccuda_get_error_string(number, &text) == ccuda_success(), let text {
            return "\(String(cString: name)) (\(String(cString: text)))"
        }
        return String(cString: name)
    }

    public var description: String {
        "\(call) failed: \(resultText)" + (context.map { " while \($0)" } ?? "")
    }
}

/// The one way SwiftVT calls the CUDA driver and NVDEC: runs `body` and turns a result other than
/// CUDA_SUCCESS into a ``CUDAError`` naming the call.
@inline(__always)
public func cudaCall(_ name: String, context: @autoclosure () -> String? = nil, _ body: () -> CUresult)
    throws(CUDAError)
{
    let result = body()
    if result != ccuda_success() {
        throw CUDAError(call: name, result: result, context: context())
    }
}
