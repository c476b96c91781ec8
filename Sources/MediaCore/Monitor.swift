import Glibc

/// A value guarded by a pthread mutex, with a condition variable to wait for it to change.
///
/// `Synchronization.Mutex` has no condition variable, and the sessions and the pixel buffer pools
/// need to block callers (back-pressure, waiting for the worker or for a buffer) without
/// Foundation or Dispatch. Every `withLock` broadcasts when it ends, so waiters re-check their
/// predicate after any change; there are at most a handful of waiters, so precise signalling
/// would buy nothing. Package access: SwiftVT's sessions use it too.
///
/// `@unchecked Sendable` invariant: `state` is read and written only while `mutex` is held (inside
/// `withLock`); the mutex and condition are heap-allocated so their addresses never move, and are
/// destroyed only in `deinit`, when no thread can be inside `withLock`.
package final class Monitor<State>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    private var state: State

    package init(_ state: State) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        // Timed waits measure against the monotonic clock: a wall-clock step (NTP) must not
        // shorten or stretch them.
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        self.state = state
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Locks, waits until `predicate` holds (releasing the lock while waiting), runs `body`,
    /// wakes every waiter and unlocks.
    package func withLock<R, E: Error>(
        waitingUntil predicate: (State) -> Bool = { _ in true }, _ body: (inout State) throws(E) -> R
    ) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        while !predicate(state) { pthread_cond_wait(condition, mutex) }
        return try body(&state)
    }

    /// Locks, waits until `predicate` holds or the monotonic clock reaches `deadline`
    /// (nanoseconds, ``Monitor/monotonicNanoseconds()``), runs `body` with whether the predicate
    /// holds, wakes every waiter and unlocks.
    package func withLock<R, E: Error>(
        waitingUntil predicate: (State) -> Bool, deadline: UInt64,
        _ body: (inout State, _ predicateHolds: Bool) throws(E) -> R
    ) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        var until = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        var holds = predicate(state)
        while !holds {
            if pthread_cond_timedwait(condition, mutex, &until) == ETIMEDOUT {
                holds = predicate(state)
                break
            }
            holds = predicate(state)
        }
        return try body(&state, holds)
    }

    /// The monotonic clock (CLOCK_MONOTONIC) in nanoseconds: the time base of timed waits.
    package static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
