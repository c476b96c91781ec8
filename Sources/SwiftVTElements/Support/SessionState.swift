import SwiftVT
import Synchronization

/// A codec session an element owns (vtdec's DecompressionSession, vtenc's CompressionSession).
protocol OwnedCodecSession: AnyObject, Sendable {
    func invalidate()
}

extension DecompressionSession: OwnedCodecSession {}
extension CompressionSession: OwnedCodecSession {}

/// An element's per-run state (created fresh in start and stop), holding its session.
protocol SessionElementState: Sendable {
    associatedtype Session: OwnedCodecSession
    init()
    var session: Session? { get }
    /// Stays readable (the `active-backend` property) after the element stops.
    var activeBackend: String { get set }
}

extension Mutex where Value: SessionElementState {
    /// Replaces the state with a fresh one and invalidates the old session outside the lock (an
    /// invalidation drains the backend, which must not happen under the element's lock).
    func resetSession(keepingBackendName: Bool) {
        let old = withLock { state -> Value.Session? in
            let session = state.session
            let backend = state.activeBackend
            state = Value()
            if keepingBackendName { state.activeBackend = backend }
            return session
        }
        old?.invalidate()
    }
}

/// What a session's output handler delivered during one call into the session. The handler only
/// appends; the element takes everything after the call returns and finishes the frames then,
/// outside any lock (finishing a frame pushes downstream).
final class DeliveredOutput<Output: Sendable>: Sendable {
    private let outputs = Mutex<[Output]>([])

    func append(_ output: Output) { outputs.withLock { $0.append(output) } }

    func takeAll() -> [Output] {
        outputs.withLock { outputs in
            defer { outputs.removeAll() }
            return outputs
        }
    }

    func discardAll() { outputs.withLock { $0.removeAll() } }
}
