import CGStreamer
import CSwiftVTShim
import Synchronization

/// A reference to an immutable GstCaps, released when the last copy goes.
final class CapsReference: @unchecked Sendable {
    // Owns one reference; caps with more than one reference are immutable, so sharing is safe.
    let pointer: UnsafeMutablePointer<GstCaps>
    /// Takes a reference of its own.
    init(_ pointer: UnsafeMutablePointer<GstCaps>) { self.pointer = gst_caps_ref(pointer) }
    /// Takes the caller's reference (caps just made).
    init(adopting pointer: UnsafeMutablePointer<GstCaps>) { self.pointer = pointer }
    deinit { gst_caps_unref(pointer) }
}

/// The input caps an element's set_format refused last, with the ERROR already posted.
/// GStreamer re-sends a refused sticky caps event with every buffer, and an application should
/// see one ERROR for caps that can never work, not one per retry.
final class CapsRefusals: Sendable {
    private struct Refusal: Sendable {
        var caps: CapsReference
        var reason: String
    }

    private let last = Mutex<Refusal?>(nil)

    /// The reason posted for `caps`, when these very caps were refused before.
    func reasonPosted(for caps: UnsafeMutablePointer<GstCaps>) -> String? {
        guard let refusal = last.withLock({ $0 }), gst_caps_is_equal(refusal.caps.pointer, caps) != 0 else {
            return nil
        }
        return refusal.reason
    }

    /// Posts `message` as the ERROR refusing `caps`, and remembers it.
    func refuse(
        _ caps: UnsafeMutablePointer<GstCaps>, with message: ElementMessage, from object: UnsafeMutableRawPointer
    ) {
        last.withLock { $0 = Refusal(caps: CapsReference(caps), reason: message.text) }
        message.post(from: object, isError: true)
    }

    /// Whether caps were refused since the last ``forget()``.
    var hasRefused: Bool { last.withLock { $0 != nil } }

    /// A new run (start): every caps gets its own answer again.
    func forget() { last.withLock { $0 = nil } }
}
