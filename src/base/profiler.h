// Per-op timing of the forward pass and the sampler, for `omnibus run
// --profile`: a summary table (calls, total time, share, time per call, by
// phase) and a Chrome trace (one "X" event per timed op) that opens in
// Perfetto or chrome://tracing.
//
// Off by default at two levels: code holds a `Profiler*` that is null unless
// profiling was asked for, and a Profiler records nothing until enable().
// A ProfileScope on a null or disabled profiler costs one branch and reads
// no clock, so the scopes can stay in the hot path.
//
// Not thread-safe: ops are timed on the engine thread only (thread 0 of the
// pool); what the other workers do shows up inside the op that ran them, and
// the time thread 0 waits for them is counted as kThreadWait, in total and,
// when a wait counter is set (set_wait_counter), inside each op.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "base/status.h"

namespace omnibus {

// The kinds of work we time. Names (profile_op_name) appear in the table and
// the trace.
enum class ProfileOp : uint8_t {
  kForward,  // one whole ForwardPass::run call; the denominator
  kEmbed,    // token embedding lookup
  kRmsNorm,
  kAttnQkv,  // the matmuls, one kind each (q/k/v and gate/up run as one job)
  kAttnOutput,
  kFfnGateUp,
  kFfnDown,
  kMoeRouting,     // a MoE layer's router matmul, softmax, top-k and grouping of rows by expert
  kOutput,         // the final vocab projection
  kBias,           // q/k/v bias adds (architectures that have them)
  kRope,           // angles and rotation
  kKvStore,        // copying this step's K/V rows into the cache
  kAttention,      // scores, softmax and weighted sum over the cache
  kFfnActivation,  // the MLP's gated activation: SwiGLU or GeGLU
  kResidual,       // the residual adds after attention and MLP
  kSampling,       // the Sampler call, outside the forward pass
  kThreadWait,     // thread 0 waiting for the pool's other workers (overlaps the ops above)
  kWorkerIdle,     // the other workers outside jobs during forward calls, per worker (not in the total)
  kCount
};
inline constexpr int kProfileOpCount = static_cast<int>(ProfileOp::kCount);
const char* profile_op_name(ProfileOp op);

// Prefill: a forward call with more than one row. Decode: one row.
enum class ProfilePhase : uint8_t { kPrefill, kDecode, kCount };
inline constexpr int kProfilePhaseCount = static_cast<int>(ProfilePhase::kCount);
const char* profile_phase_name(ProfilePhase phase);

class Profiler {
 public:
  // Enough for several thousand decode steps of a 30-layer model.
  static constexpr size_t kDefaultMaxEvents = size_t{2} << 20;

  struct OpStats {
    int64_t calls = 0;
    int64_t total_ns = 0;
    int64_t wait_ns = 0;  // of total_ns, thread 0 waiting for the other workers
  };
  struct Event {
    int64_t start_ns;  // since enable()
    int64_t duration_ns;
    ProfileOp op;
    ProfilePhase phase;
  };

  Profiler() = default;

  // Starts recording: clears what was recorded, reserves room for
  // `max_events` trace events (later events are dropped and counted; the
  // per-op sums stay exact) and makes time 0 now.
  void enable(size_t max_events = kDefaultMaxEvents);
  void disable() { enabled_ = false; }
  bool enabled() const { return enabled_; }

  void set_phase(ProfilePhase phase) { phase_ = phase; }
  ProfilePhase phase() const { return phase_; }

  int64_t now_ns() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin_).count();
  }
  // One timed op: adds to the op's sums and records a trace event;
  // wait_ns: how much of it thread 0 spent waiting for the other workers.
  void record(ProfileOp op, int64_t start_ns, int64_t end_ns, int64_t wait_ns = 0);
  // A running total of thread 0's waits (ThreadPool::wait_ns_counter()),
  // read by each ProfileScope at its start and end so that every op gets its
  // own share of the wait; null (the default) leaves the per-op waits zero.
  // The counter must outlive the profiler's use or be unset first.
  void set_wait_counter(const uint64_t* counter) { wait_counter_ = counter; }
  uint64_t wait_now() const { return wait_counter_ != nullptr ? *wait_counter_ : 0; }
  // Time known only as a sum (no trace event), e.g. thread wait.
  void add_time(ProfileOp op, int64_t ns, int64_t calls);

  const OpStats& stats(ProfilePhase phase, ProfileOp op) const {
    return stats_[static_cast<int>(phase)][static_cast<int>(op)];
  }
  const std::vector<Event>& events() const { return events_; }
  int64_t dropped_events() const { return dropped_; }

  // The summary table, one section per phase that ran, rows sorted by total
  // time. Shares are of the phase's forward + sampling time; "other" is the
  // forward time no op scope covered.
  std::string format_table() const;
  // Chrome trace event format: {"traceEvents":[{"name","cat","ph":"X","ts",
  // "dur","pid","tid"}, ...]}, times in microseconds.
  void write_trace(std::FILE* out) const;
  Status write_trace_file(const std::string& path) const;

 private:
  bool enabled_ = false;
  ProfilePhase phase_ = ProfilePhase::kPrefill;
  std::chrono::steady_clock::time_point origin_{};
  std::array<std::array<OpStats, kProfileOpCount>, kProfilePhaseCount> stats_{};
  std::vector<Event> events_;
  size_t max_events_ = 0;
  int64_t dropped_ = 0;
  const uint64_t* wait_counter_ = nullptr;
};

// Times its own lifetime as one `op`. Does nothing when `profiler` is null or
// disabled.
class ProfileScope {
 public:
  ProfileScope(Profiler* profiler, ProfileOp op)
      : profiler_(profiler != nullptr && profiler->enabled() ? profiler : nullptr), op_(op) {
    if (profiler_ != nullptr) {
      start_ns_ = profiler_->now_ns();
      wait_start_ns_ = profiler_->wait_now();
    }
  }
  ~ProfileScope() {
    if (profiler_ != nullptr)
      profiler_->record(op_, start_ns_, profiler_->now_ns(),
                        static_cast<int64_t>(profiler_->wait_now() - wait_start_ns_));
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Profiler* profiler_;
  ProfileOp op_;
  int64_t start_ns_ = 0;
  uint64_t wait_start_ns_ = 0;
};

// Calls fn() inside a ProfileScope and returns its result; lets a single
// expression be timed without opening a block.
template <class Fn>
auto profile_call(Profiler* profiler, ProfileOp op, Fn&& fn) {
  ProfileScope scope(profiler, op);
  return fn();
}

}  // namespace omnibus
