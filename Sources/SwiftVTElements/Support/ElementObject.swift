import CGStreamer
import CSwiftVTShim

/// The Swift object behind an element's C instance: created retained in instance_init, borrowed
/// by every vfunc, released in finalize (see the `swift` field of each instance struct in the shim).
enum ElementObject {
    /// A retained pointer for the C instance to keep.
    static func retain<Element: AnyObject>(_ element: Element) -> UnsafeMutableRawPointer {
        Unmanaged.passRetained(element).toOpaque()
    }

    /// The object behind `pointer`, borrowed (nil before init or after finalize).
    static func borrow<Element: AnyObject>(_ pointer: UnsafeMutableRawPointer?, as type: Element.Type = Element.self) -> Element? {
        pointer.map { Unmanaged<Element>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Releases the reference `retain` gave the C instance.
    static func release<Element: AnyObject>(_ pointer: UnsafeMutableRawPointer?, as type: Element.Type) {
        if let pointer { Unmanaged<Element>.fromOpaque(pointer).release() }
    }
}

/// A reference to an immutable GstCaps, released when the last copy goes.
final class CapsReference: @unchecked Sendable {
    // Owns one reference; caps with more than one reference are immutable, so sharing is safe.
    let pointer: UnsafeMutablePointer<GstCaps>
    init(_ pointer: UnsafeMutablePointer<GstCaps>) { self.pointer = swiftvt_caps_ref(pointer) }
    deinit { swiftvt_caps_unref(pointer) }
}
