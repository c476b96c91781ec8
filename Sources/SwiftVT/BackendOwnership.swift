import Glibc

/// Who may use a session's backend now: one thread at a time *owns* it. Both sessions
/// (``CompressionSession``, ``DecompressionSession``) work this way; this is the one place the
/// rule is written.
///
/// Lock discipline. The value lives in the session's ``Monitor`` state and every method runs under
/// that monitor's lock; the backend itself is used with the lock released, by its owner only:
/// 1. wait under the lock until ``takeWouldNotWait(by:)`` holds (a session may wait for more,
///    e.g. its queue to empty), then take the backend (``take(by:invalidated:reentrant:)`` or
///    ``claim(by:)``);
/// 2. use it unlocked: encode or decode, and call the output handler, which may call back into
///    the session;
/// 3. give it back under the lock (``giveBack()``), and release what that returns after unlocking.
///
/// So the lock is never held while a backend or a handler runs, and no thread ever waits for a
/// backend it owns itself: an output handler calling back on the owner's thread gets the
/// session's `reentrantCall` error instead of waiting for itself, or, for calls that need no
/// waiting (flush, invalidate), acts directly.
///
/// Invalidation: ``invalidate()`` hands the backend back for release at once when nobody owns it;
/// otherwise the owner does when it gives it back. Either way it is released outside the lock (a
/// backend's deinit may join threads).
struct BackendOwnership<Backend> {
    /// The backend; nil once invalidated and released.
    private(set) var backend: Backend?
    /// The thread using the backend now, unlocked; nil when it is free.
    private var owner: pthread_t?
    /// Set by ``invalidate()``: the backend is taken no more.
    private(set) var isInvalidated = false

    init(_ backend: Backend) {
        self.backend = backend
    }

    /// What ``claim(by:)`` gives.
    enum Claim {
        /// The caller owns the backend now, and gives it back when done.
        case taken(Backend)
        /// The caller owned it already (an output handler calling back): it may use the backend
        /// if it needs no waiting, and must not give it back.
        case ownedAlready(Backend)
        /// The session was invalidated.
        case invalidated
    }

    /// Nobody owns the backend.
    var isFree: Bool { owner == nil }

    /// `thread` owns the backend.
    func isOwned(by thread: pthread_t) -> Bool { owner.map { pthread_equal($0, thread) != 0 } ?? false }

    /// `thread` would get an answer now, without waiting for another thread to give the backend
    /// back: it is free, `thread` owns it already, or the session was invalidated. The condition
    /// to wait for before ``claim(by:)`` or ``take(by:invalidated:reentrant:)``.
    func takeWouldNotWait(by thread: pthread_t) -> Bool { isInvalidated || isFree || isOwned(by: thread) }

    /// Takes the backend for `thread` when it is free. Call only once ``takeWouldNotWait(by:)``
    /// holds (another thread's ownership is not checked here).
    mutating func claim(by thread: pthread_t) -> Claim {
        guard !isInvalidated, let backend else { return .invalidated }
        guard !isOwned(by: thread) else { return .ownedAlready(backend) }
        owner = thread
        return .taken(backend)
    }

    /// ``claim(by:)`` for calls that must own the backend: throws `invalidated` after
    /// ``invalidate()`` and `reentrant` when `thread` owns it already.
    mutating func take<Failure: Error>(
        by thread: pthread_t, invalidated: @autoclosure () -> Failure, reentrant: @autoclosure () -> Failure
    ) throws(Failure) -> Backend {
        switch claim(by: thread) {
        case .taken(let backend): return backend
        case .ownedAlready: throw reentrant()
        case .invalidated: throw invalidated()
        }
    }

    /// Throws what ``take(by:invalidated:reentrant:)`` would, and changes nothing: for a caller
    /// with more to check before it takes the backend.
    func checkAvailable<Failure: Error>(
        to thread: pthread_t, invalidated: @autoclosure () -> Failure, reentrant: @autoclosure () -> Failure
    ) throws(Failure) {
        guard !isInvalidated, backend != nil else { throw invalidated() }
        guard !isOwned(by: thread) else { throw reentrant() }
    }

    /// Ends the ownership. Returns the backend when the session was invalidated meanwhile, for
    /// the caller to release after unlocking.
    mutating func giveBack() -> Backend? {
        owner = nil
        guard isInvalidated else { return nil }
        defer { backend = nil }
        return backend
    }

    /// Marks the session invalidated. Returns the backend when nobody owns it, for the caller to
    /// release after unlocking; otherwise the owner drops it when it gives it back. The sessions
    /// call this once ``takeWouldNotWait(by:)`` holds, so that owner is the calling thread itself,
    /// invalidating from its output handler. Returns nil when already invalidated.
    mutating func invalidate() -> Backend? {
        guard !isInvalidated else { return nil }
        isInvalidated = true
        guard isFree else { return nil }
        defer { backend = nil }
        return backend
    }
}
