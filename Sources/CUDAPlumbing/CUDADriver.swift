import CCUDA

/// Why no CUDA device can be used here: no NVIDIA driver (libcuda.so.1 absent), no NVDEC
/// (libnvcuvid.so.1 absent), cuInit failing, or no device.
public struct CUDAUnavailable: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

/// One CUDA device as the driver lists it.
public struct CUDADeviceInfo: Sendable, Equatable {
    /// The device's ordinal (cuDeviceGet), the N of `cuda:N`.
    public var ordinal: Int
    public var device: CUdevice
    /// cuDeviceGetName, e.g. "NVIDIA H100 80GB HBM3".
    public var name: String
    public var memoryBytes: Int

    /// "cuda:0 (NVIDIA H100 80GB HBM3)", for names and messages.
    public var summary: String { "cuda:\(ordinal) (\(name))" }
}

/// The CUDA driver of this process: loaded and initialised once (cuInit is process-wide), on the
/// first call that needs it, never at plugin load when the registry is current.
public enum CUDADriver {
    /// The loaded driver's version (cuDriverGetVersion, e.g. 12040) and its devices, or why not.
    public static func devices() -> Result<[CUDADeviceInfo], CUDAUnavailable> { initialised }

    private static let initialised: Result<[CUDADeviceInfo], CUDAUnavailable> = {
        if let error = ccuda_load_driver() {
            return .failure(CUDAUnavailable("no NVIDIA CUDA driver: \(String(cString: error))"))
        }
        if let error = ccuda_load_nvdec() {
            return .failure(CUDAUnavailable("no NVDEC: \(String(cString: error))"))
        }
        do throws(CUDAError) {
            try cudaCall("cuInit") { ccuda_init(0) }
            var count: Int32 = 0
            try cudaCall("cuDeviceGetCount") { ccuda_device_get_count(&count) }
            var found: [CUDADeviceInfo] = []
            for ordinal in 0..<max(0, Int(count)) {
                var device: CUdevice = 0
                try cudaCall("cuDeviceGet") { ccuda_device_get(&device, Int32(ordinal)) }
                var name = [CChar](repeating: 0, count: 256)
                try cudaCall("cuDeviceGetName") { ccuda_device_get_name(&name, Int32(name.count - 1), device) }
                var memory = 0
                try cudaCall("cuDeviceTotalMem") { ccuda_device_total_memory(&memory, device) }
                let text = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                found.append(CUDADeviceInfo(ordinal: ordinal, device: device, name: text, memoryBytes: memory))
            }
            if found.isEmpty { return .failure(CUDAUnavailable("the NVIDIA driver lists no CUDA device")) }
            return .success(found)
        } catch {
            if error.result == Int32(CCUDA_ERROR_NO_DEVICE.rawValue) {
                return .failure(CUDAUnavailable("the NVIDIA driver finds no CUDA device (\(error))"))
            }
            return .failure(CUDAUnavailable("the NVIDIA driver could not be initialised: \(error)"))
        }
    }()
}
