#include "base/mutex.h"

#include <gtest/gtest.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace omnibus {
namespace {

// A counter shared by threads, annotated as the house style asks: the clang
// build (-Wthread-safety) checks every access holds mu_.
class Counter {
 public:
  void add(int n) EXCLUDES(mu_) {
    {
      MutexLock lock(mu_);
      value_ += n;
    }
    changed_.notify_all();
  }
  // Waits until the value reaches `target`; false if `timeout` passes first.
  bool wait_for_at_least(int target, std::chrono::milliseconds timeout) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return changed_.wait_for(lock, timeout, [&]() REQUIRES(mu_) { return value_ >= target; });
  }
  int value() const EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return value_;
  }

 private:
  mutable Mutex mu_;
  CondVar changed_;
  int value_ GUARDED_BY(mu_) = 0;
};

TEST(MutexTest, ThreadsAddUnderTheLock) {
  Counter c;
  std::thread a([&] {
    for (int i = 0; i < 10000; ++i) c.add(1);
  });
  std::thread b([&] {
    for (int i = 0; i < 10000; ++i) c.add(2);
  });
  EXPECT_TRUE(c.wait_for_at_least(30000, std::chrono::seconds(30)));
  a.join();
  b.join();
  EXPECT_EQ(c.value(), 30000);
}

TEST(MutexTest, WaitForTimesOutAndKeepsTheLock) {
  Counter c;
  EXPECT_FALSE(c.wait_for_at_least(1, std::chrono::milliseconds(10)));
  c.add(1);  // would deadlock had the wait left the mutex locked
  EXPECT_TRUE(c.wait_for_at_least(1, std::chrono::milliseconds(0)));
}

TEST(MutexTest, APredicateThatThrowsLeavesTheLockToItsMutexLock) {
  Mutex mu;
  CondVar cv;
  EXPECT_THROW(
      {
        MutexLock lock(mu);
        cv.wait(lock, []() -> bool { throw std::runtime_error("predicate"); });
      },
      std::runtime_error);
  // Unlocked exactly once: a double unlock or a lock left held fails here.
  if (mu.try_lock()) {
    mu.unlock();
  } else {
    ADD_FAILURE() << "the mutex is still locked";
  }
}

TEST(MutexTest, TryLockFailsWhileHeld) {
  Mutex mu;
  MutexLock lock(mu);
  std::thread other([&] {
    const bool got = mu.try_lock();
    EXPECT_FALSE(got);
    if (got) mu.unlock();
  });
  other.join();
}

}  // namespace
}  // namespace omnibus
