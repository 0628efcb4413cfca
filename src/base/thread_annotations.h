// Clang's thread-safety annotations (-Wthread-safety), as LevelDB and Abseil
// spell them. Under clang they are attributes the compiler checks; under any
// other compiler they expand to nothing. State shared between threads is
// declared `T field_ GUARDED_BY(mu_);` next to an omnibus::Mutex
// (base/mutex.h: std::mutex carries no annotations in libstdc++), and
// functions say what they need with REQUIRES(mu_) / EXCLUDES(mu_).
// scripts/ci_sanitizers.sh builds with -Werror=thread-safety, so a field
// touched without its lock fails CI. Reference:
// https://clang.llvm.org/docs/ThreadSafetyAnalysis.html
#pragma once

#if defined(__clang__)
#define OMNIBUS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define OMNIBUS_THREAD_ANNOTATION(x)
#endif

// A class that is a lock (Mutex) or holds one for its lifetime (MutexLock).
#define CAPABILITY(x) OMNIBUS_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY OMNIBUS_THREAD_ANNOTATION(scoped_lockable)

// A field (or what a pointer field points at) read or written only with the
// lock held.
#define GUARDED_BY(x) OMNIBUS_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) OMNIBUS_THREAD_ANNOTATION(pt_guarded_by(x))

// Lock order: this lock is taken after / before the named ones.
#define ACQUIRED_AFTER(...) OMNIBUS_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define ACQUIRED_BEFORE(...) OMNIBUS_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))

// The caller must hold (REQUIRES) or must not hold (EXCLUDES) the locks.
#define REQUIRES(...) OMNIBUS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) OMNIBUS_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define EXCLUDES(...) OMNIBUS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))

// The function takes or releases the locks (no argument: `this`).
#define ACQUIRE(...) OMNIBUS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) OMNIBUS_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) OMNIBUS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) OMNIBUS_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) OMNIBUS_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) OMNIBUS_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) OMNIBUS_THREAD_ANNOTATION(lock_returned(x))

// Turns the analysis off for one function: for code whose locking the
// analysis cannot follow (say why in a comment where it is used).
#define NO_THREAD_SAFETY_ANALYSIS OMNIBUS_THREAD_ANNOTATION(no_thread_safety_analysis)
