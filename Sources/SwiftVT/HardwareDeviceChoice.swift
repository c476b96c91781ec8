/// Which hardware device a decoder may use, across device APIs: the `hardware-device` property.
/// `auto` tries every device present (VA-API render nodes and displays, then CUDA devices);
/// the others name one API or one device of it.
public enum HardwareDeviceChoice: Sendable, Equatable, CustomStringConvertible {
    case auto
    /// Any VA-API device (`va`).
    case anyVA
    /// One DRM render node (`/dev/dri/renderD128`).
    case vaRenderNode(String)
    /// Any CUDA device (`cuda`).
    case anyCUDA
    /// The CUDA device with this ordinal (`cuda:0`), as CUDA numbers them (CUDA_VISIBLE_DEVICES
    /// applies).
    case cuda(ordinal: Int)

    /// The choice a property value names, or nil when it names none.
    public init?(parsing text: String) {
        switch text {
        case "", "auto": self = .auto
        case "va", "vaapi": self = .anyVA
        case "cuda", "nvdec": self = .anyCUDA
        default:
            if text.hasPrefix("/dev/dri/renderD") {
                self = .vaRenderNode(text)
            } else if text.hasPrefix("cuda:"), let ordinal = Int(text.dropFirst(5)), ordinal >= 0 {
                self = .cuda(ordinal: ordinal)
            } else {
                return nil
            }
        }
    }

    /// What a property value may be, for messages and the blurb.
    public static let accepted = "auto, va, a render node such as /dev/dri/renderD128, cuda, or cuda:N"

    public var description: String {
        switch self {
        case .auto: return "auto"
        case .anyVA: return "va"
        case .vaRenderNode(let node): return node
        case .anyCUDA: return "cuda"
        case .cuda(let ordinal): return "cuda:\(ordinal)"
        }
    }

    /// VA-API devices may be used; `renderNode` narrows them to one.
    public var allowsVA: Bool {
        switch self {
        case .auto, .anyVA, .vaRenderNode: return true
        case .anyCUDA, .cuda: return false
        }
    }

    public var allowsCUDA: Bool {
        switch self {
        case .auto, .anyCUDA, .cuda: return true
        case .anyVA, .vaRenderNode: return false
        }
    }

    public var renderNode: String? {
        if case .vaRenderNode(let node) = self { return node }
        return nil
    }

    public var cudaOrdinal: Int? {
        if case .cuda(let ordinal) = self { return ordinal }
        return nil
    }
}
