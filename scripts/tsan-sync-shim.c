// Happens-before edges that ThreadSanitizer cannot see because they are made by code it does not
// instrument, for scripts/sanitize.sh thread (built with the toolchain's clang and preloaded with
// LD_PRELOAD; not part of the plugin). Each wrapper adds exactly the acquire/release that the
// wrapped primitive performs, on the object's own address, so a real race (an access that no such
// edge orders) is still reported: this is not a suppression.
//
// 1. Swift's Synchronization.Mutex. Its fast paths (one compare-and-exchange to lock, one to
// unlock) are emitted into the client and so instrumented; TSan sees their acquire/release. Its
// slow paths, taken only under contention, live in libswiftSynchronization.so (not instrumented)
// and hand the lock over with the kernel's priority-inheritance futex (FUTEX_LOCK_PI /
// FUTEX_UNLOCK_PI through syscall(2)): no user-space atomic that TSan could see. A thread that gets
// the lock from the kernel therefore has no happens-before edge to the previous holder, and every
// contended critical section is reported as a race (a four-thread Mutex<[Int]> counter that is
// plainly correct gives 2-3 "Swift access race" reports per run; in SwiftVT,
// MultiPassStorageTests' concurrent writers gave 6, all inside MultiPassStorage.write's withLock).
// The wrappers add the edges the slow paths miss, on the address the fast paths use:
//   _lockSlow     -> __tsan_acquire(handle) once the lock is held
//   _tryLockSlow  -> __tsan_acquire(handle) when it returns true
//   _unlockSlow   -> __tsan_release(handle) before the lock is let go
// Checked with the counter plus one unguarded variable: the unguarded one is still reported.
// The three functions are public (@usableFromInline) symbols of libswiftSynchronization.so, called
// from client code through the PLT, so a preloaded definition of the same name wins; the real one
// is found with dlsym(RTLD_NEXT). They use the Swift calling convention with the handle (self) in
// the swiftself register: clang's swiftcall and swift_context express exactly that.
//
// 2. GObject reference counting (g_object_unref). GLib decrements ref_count with its own atomics,
// not instrumented, so when the last reference is dropped on another thread than the one that
// last used the object (a GstBin's async state-change helper in GLib's thread pool holds the
// pipeline and drops it last, finalizing the elements there), TSan sees no order between the
// element's last use (stop() on the application thread) and its finalize: reported as a race
// between two SwiftVT frames, CSwiftVTShim/h264parse-to-avcc.c stop() and finalize(). The real
// order is GLib's: every unref is a release of the object, and the unref that takes the count
// from 1 (then disposes and finalizes) an acquire of it. The wrapper does that: release always;
// acquire when the count it reads before calling GLib is 1, i.e. when every other holder has
// already dropped its reference (each after its own release). Cross-library calls only (the PLT):
// libgstreamer's gst_object_unref and SwiftVT's calls are seen, GLib's calls inside libgobject not.
//
// __tsan_* are weak: in a child process that is not sanitized (a tool the tests start) the shim
// only forwards.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <glib-object.h>

#define SWIFTCALL __attribute__((swiftcall))
#define SWIFT_SELF __attribute__((swift_context))

extern void __tsan_acquire(void *address) __attribute__((weak));
extern void __tsan_release(void *address) __attribute__((weak));

#define LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"
#define TRY_LOCK_SLOW "$s15Synchronization12_MutexHandleV12_tryLockSlowSbyF"
#define UNLOCK_SLOW "$s15Synchronization12_MutexHandleV11_unlockSlowyyF"

typedef SWIFTCALL void (*lock_slow_fn)(uint32_t thread_id, void *SWIFT_SELF handle);
typedef SWIFTCALL bool (*try_lock_slow_fn)(void *SWIFT_SELF handle);
typedef SWIFTCALL void (*unlock_slow_fn)(void *SWIFT_SELF handle);

// The real function; a missing one means a toolchain whose Mutex changed (or a GLib without
// g_object_unref): fail loudly rather than run the tests with a lock or unref that does nothing.
static void *real_function(const char *name) {
    void *function = dlsym(RTLD_NEXT, name);
    if (function == NULL) {
        fprintf(stderr, "tsan-sync-shim: %s not found (dlsym RTLD_NEXT)\n", name);
        abort();
    }
    return function;
}

SWIFTCALL void shim_lock_slow(uint32_t thread_id, void *SWIFT_SELF handle) __asm__(LOCK_SLOW);
SWIFTCALL void shim_lock_slow(uint32_t thread_id, void *SWIFT_SELF handle) {
    // A racy first lookup stores the same pointer twice: harmless.
    static lock_slow_fn real;
    if (real == NULL) real = (lock_slow_fn)real_function(LOCK_SLOW);
    real(thread_id, handle);
    if (__tsan_acquire) __tsan_acquire(handle);
}

SWIFTCALL bool shim_try_lock_slow(void *SWIFT_SELF handle) __asm__(TRY_LOCK_SLOW);
SWIFTCALL bool shim_try_lock_slow(void *SWIFT_SELF handle) {
    static try_lock_slow_fn real;
    if (real == NULL) real = (try_lock_slow_fn)real_function(TRY_LOCK_SLOW);
    bool locked = real(handle);
    if (locked && __tsan_acquire) __tsan_acquire(handle);
    return locked;
}

SWIFTCALL void shim_unlock_slow(void *SWIFT_SELF handle) __asm__(UNLOCK_SLOW);
SWIFTCALL void shim_unlock_slow(void *SWIFT_SELF handle) {
    static unlock_slow_fn real;
    if (real == NULL) real = (unlock_slow_fn)real_function(UNLOCK_SLOW);
    if (__tsan_release) __tsan_release(handle);
    real(handle);
}

typedef void (*object_unref_fn)(gpointer object);

void g_object_unref(gpointer object) {
    static object_unref_fn real;
    if (real == NULL) real = (object_unref_fn)real_function("g_object_unref");
    if (object != NULL && __tsan_release != NULL) {
        __tsan_release(object);
        // ref_count is GLib's atomic field; read it as GLib does.
        if (g_atomic_int_get(&((GObject *)object)->ref_count) == 1) __tsan_acquire(object);
    }
    real(object);
}
