import Glibc
import MediaCore

// Monitor, the lock with a condition the sessions wait on, lives in MediaCore (package access):
// PixelBufferPool waits on one too.

/// Starts `body` on a new joinable pthread (the session's worker: no Dispatch here, and a thread
/// of its own keeps a slow decoder from starving a shared executor). Returns nil if the system
/// refuses to create a thread.
func startThread(_ body: @escaping @Sendable () -> Void) -> pthread_t? {
    final class Box: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body))
    var thread = pthread_t()
    let status = pthread_create(
        &thread, nil,
        { argument in
            guard let argument else { return nil }
            Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
            return nil
        }, box.toOpaque())
    guard status == 0 else {
        box.release()
        return nil
    }
    return thread
}
