// Monotonic wall-clock timing helpers.
#pragma once

#include <chrono>

namespace omnibus {

inline double now_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Measures seconds since construction or the last reset().
class Stopwatch {
 public:
  Stopwatch() : start_(now_seconds()) {}
  void reset() { start_ = now_seconds(); }
  double seconds() const { return now_seconds() - start_; }
  double millis() const { return seconds() * 1e3; }

 private:
  double start_;
};

}  // namespace omnibus
