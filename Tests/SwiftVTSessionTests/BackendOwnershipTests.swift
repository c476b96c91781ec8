import Glibc
import Testing

@testable import SwiftVT

/// The ownership rule both sessions use (one owner at a time; the owner calling back is refused
/// or acts directly; invalidation drops the backend when the owner gives it back), on its own.
/// The sessions' own tests check it in use: reentrant calls from output handlers, invalidation
/// from a handler, flushes from a handler.
@Suite("BackendOwnership")
struct BackendOwnershipTests {
    final class Backend: Sendable {}

    enum Refusal: Error, Equatable {
        case invalidated, reentrant
    }

    /// Runs `body` with the id of a thread other than the caller's (a thread that has ended but
    /// is not joined yet, so its id is not reused meanwhile).
    private static func withOtherThread(_ body: (pthread_t) throws -> Void) throws {
        let thread = try #require(startThread {})
        defer { pthread_join(thread, nil) }
        try body(thread)
    }

    @Test("one owner at a time; the owner taking again is refused as reentrant; giving back frees it")
    func takeAndGiveBack() throws {
        let me = pthread_self()
        let backend = Backend()
        var ownership = BackendOwnership(backend)
        try Self.withOtherThread { other in
            #expect(ownership.isFree && ownership.takeWouldNotWait(by: me) && ownership.takeWouldNotWait(by: other))
            let taken = try ownership.take(by: me, invalidated: Refusal.invalidated, reentrant: Refusal.reentrant)
            #expect(taken === backend && ownership.isOwned(by: me) && !ownership.isOwned(by: other))
            // Another thread waits; the owner gets an answer at once.
            #expect(!ownership.takeWouldNotWait(by: other) && ownership.takeWouldNotWait(by: me))
            #expect(throws: Refusal.reentrant) {
                try ownership.checkAvailable(to: me, invalidated: Refusal.invalidated, reentrant: Refusal.reentrant)
            }
            #expect(throws: Refusal.reentrant) {
                _ = try ownership.take(by: me, invalidated: Refusal.invalidated, reentrant: Refusal.reentrant)
            }
            guard case .ownedAlready(let shared) = ownership.claim(by: me) else {
                Issue.record("the owner's claim is not ownedAlready")
                return
            }
            #expect(shared === backend && ownership.isOwned(by: me))
            let droppedOnGiveBack = ownership.giveBack()
            #expect(droppedOnGiveBack == nil)
            #expect(ownership.isFree && ownership.takeWouldNotWait(by: other))
            guard case .taken(let byOther) = ownership.claim(by: other) else {
                Issue.record("a free backend is not taken")
                return
            }
            #expect(byOther === backend && ownership.isOwned(by: other))
        }
    }

    @Test("invalidated while free: the backend is handed back at once, and taken no more")
    func invalidateWhileFree() {
        let me = pthread_self()
        let backend = Backend()
        var ownership = BackendOwnership(backend)
        let dropped = ownership.invalidate()
        #expect(dropped === backend)
        #expect(ownership.backend == nil && ownership.isInvalidated)
        let droppedAgain = ownership.invalidate()
        #expect(droppedAgain == nil)
        #expect(throws: Refusal.invalidated) {
            try ownership.checkAvailable(to: me, invalidated: Refusal.invalidated, reentrant: Refusal.reentrant)
        }
        #expect(throws: Refusal.invalidated) {
            _ = try ownership.take(by: me, invalidated: Refusal.invalidated, reentrant: Refusal.reentrant)
        }
        guard case .invalidated = ownership.claim(by: me) else {
            Issue.record("an invalidated backend is claimed")
            return
        }
    }

    @Test("invalidated by its owner (from the output handler): kept until the owner gives it back")
    func invalidateWhileOwned() throws {
        let me = pthread_self()
        let backend = Backend()
        var ownership = BackendOwnership(backend)
        try Self.withOtherThread { other in
            _ = try ownership.take(by: me, invalidated: Refusal.invalidated, reentrant: Refusal.reentrant)
            let droppedByInvalidate = ownership.invalidate()
            #expect(droppedByInvalidate == nil)
            #expect(ownership.backend === backend && ownership.isOwned(by: me))
            // Nobody waits for an invalidated session's backend any more.
            #expect(ownership.takeWouldNotWait(by: other))
            let droppedOnGiveBack = ownership.giveBack()
            #expect(droppedOnGiveBack === backend)
            #expect(ownership.backend == nil && ownership.isFree)
        }
    }
}
