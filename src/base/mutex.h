// Mutex, MutexLock and CondVar: std::mutex, std::lock_guard and
// std::condition_variable with clang's thread-safety annotations
// (base/thread_annotations.h), which libstdc++'s own types lack. Same cost
// as the std types they wrap.
//
//   Mutex mu_;
//   std::deque<Task> tasks_ GUARDED_BY(mu_);
//   ...
//   MutexLock lock(mu_);
//   ready_.wait(lock, [&]() REQUIRES(mu_) { return !tasks_.empty(); });
//
// A predicate lambda that reads guarded fields says REQUIRES(mu_): clang
// checks a lambda's body as its own function, which holds nothing.
// Thread-safety: Mutex and CondVar are for sharing between threads; a
// MutexLock belongs to the thread that made it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "base/thread_annotations.h"

namespace omnibus {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the lock (checked by nothing else).
  void assert_held() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex from construction to destruction, as std::lock_guard.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  friend class CondVar;
  Mutex& mu_;
};

// std::condition_variable over a MutexLock: a wait releases the lock while
// it sleeps and holds it again when it returns, as the std one does.
class CondVar {
 public:
  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

  void wait(MutexLock& lock) {
    Adopted a(lock);
    cv_.wait(a.lock);
  }
  template <class Predicate>
  void wait(MutexLock& lock, Predicate ready) {
    Adopted a(lock);
    cv_.wait(a.lock, ready);
  }
  // False on timeout.
  template <class Rep, class Period>
  bool wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout) {
    Adopted a(lock);
    return cv_.wait_for(a.lock, timeout) == std::cv_status::no_timeout;
  }
  // ready() at return (false: timed out first).
  template <class Rep, class Period, class Predicate>
  bool wait_for(MutexLock& lock, const std::chrono::duration<Rep, Period>& timeout, Predicate ready) {
    Adopted a(lock);
    return cv_.wait_for(a.lock, timeout, ready);
  }
  template <class Clock, class Duration, class Predicate>
  bool wait_until(MutexLock& lock, const std::chrono::time_point<Clock, Duration>& deadline, Predicate ready) {
    Adopted a(lock);
    return cv_.wait_until(a.lock, deadline, ready);
  }

 private:
  // The MutexLock's mutex as a std::unique_lock for std::condition_variable,
  // handed back (still locked) however the wait ends, exceptions included.
  struct Adopted {
    explicit Adopted(MutexLock& l) : lock(l.mu_.mu_, std::adopt_lock) {}
    ~Adopted() { lock.release(); }
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace omnibus
