// Scheduler: decides, at every engine step, which tokens of which sequences
// run, under a token budget (max_batched_tokens), a cap on running sequences
// (max_seqs) and the KV block pool. It plans from metadata only (token
// counts, block ids) and emits a StepPlan; it never touches a model.
//
// Continuous policy (the default), each step:
//   1. running sequences that are decoding get one token each, in admission
//      order;
//   2. running sequences still prefilling (or recomputing) continue, each
//      chunked to the budget that is left (chunked prefill);
//   3. waiting sequences are admitted first come, first served while the
//      budget, max_seqs and the pool allow; the prefix cache skips their
//      cached leading blocks.
// When a running sequence cannot get the blocks for its next chunk, the most
// recently admitted running sequence is preempted: its blocks are freed and
// it goes to the front of the queue, to recompute prompt + generated later.
// Nothing fails and nothing grows; a request that could never fit the pool
// is rejected by add().
//
// Static policy: wait until batch_size sequences are waiting (or flush() was
// called), admit them as one batch, and admit no one else until all of the
// batch have finished. Dynamic policy: the same, but a batch also starts when
// the oldest waiting sequence has waited batch_wait_ms. Inside a batch,
// steps are planned as in the continuous policy.
//
// Not thread-safe: the engine thread owns it, and the KvManager it drives.
// The KvManager must outlive the scheduler.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/status.h"
#include "kv/kv_manager.h"
#include "sched/queue_gate.h"
#include "sched/sequence.h"
#include "sched/step_plan.h"

namespace omnibus {

enum class BatchingPolicy { kStatic, kDynamic, kContinuous };

// "static" | "dynamic" | "continuous", as on the command line.
Result<BatchingPolicy> parse_batching_policy(const std::string& name);

struct SchedulerConfig {
  std::int64_t max_batched_tokens = 2048;  // tokens per step, all chunks together
  std::int32_t max_seqs = 64;              // running sequences at once
  BatchingPolicy policy = BatchingPolicy::kContinuous;
  std::int32_t batch_size = 8;    // static/dynamic: sequences per batch (N)
  double batch_wait_ms = 10.0;    // dynamic: start a partial batch after this
};

// The config comes from flags: each limit must be >= 1 (wait >= 0).
Status validate_scheduler_config(const SchedulerConfig& config);

// What the engine reports after running a StepPlan: for each chunk that
// needed logits, the token it sampled and whether a stop rule fired. A chunk
// with guesses (num_draft > 0) reports one token per row it sampled, in
// order: each but the last equal to the guess before it, the last the first
// sample that differed from its guess (or the one after the last guess), or
// the one a stop rule fired on.
struct SampledToken {
  SeqId seq = 0;
  std::int32_t token = 0;
  bool stop = false;  // EOS or stop string: finish after this token
};

struct SchedulerStats {
  std::int64_t steps = 0;            // non-empty plans
  std::int64_t preemptions = 0;
  std::int64_t prefix_hit_tokens = 0;  // tokens admission skipped via the cache
};

class Scheduler {
 public:
  // `config` must pass validate_scheduler_config.
  Scheduler(const SchedulerConfig& config, KvManager& kv);

  // Queues a new sequence (status kWaiting, no generated tokens, nothing
  // computed). invalid_argument if the id is in use, the prompt is empty,
  // max_tokens < 1, or prompt + max_tokens could never fit the pool.
  Status add(SequenceState seq);

  // Cancels a queued or running sequence; its blocks are freed at the next
  // schedule(), which reports it as finished (kAborted). not_found if the id
  // is not live.
  Status abort(SeqId seq);

  // Static/dynamic policy: from now on, start each batch with whatever is
  // waiting, even fewer than batch_size (drain at shutdown, or when no more
  // requests will come).
  void flush() { flush_ = true; }

  // Plans the next step. `now` is seconds on the same clock as the
  // sequences' arrival_time (used by the dynamic policy only).
  StepPlan schedule(double now);

  // Records that `plan` ran: commits its tokens' K/V (of guesses, only those
  // the samples confirmed), appends each sampled token, and finishes
  // sequences that stopped or reached max_tokens. Internal error if a chunk
  // that needed logits has no sampled token, or the samples contradict the
  // guesses they claim to confirm.
  Status on_step_done(const StepPlan& plan, std::span<const SampledToken> sampled);

  // Guesses of the tokens after a decoding sequence's newest one, for the
  // next schedule() only (speculative decoding; see SequenceState::draft).
  // They are handed out after every running sequence's own token and the
  // admissions, so they take only budget and blocks no one else wanted this
  // step, within max_tokens. Ignored for a sequence that is not running and
  // decoding.
  void set_draft(SeqId seq, std::span<const std::int32_t> draft);

  // Caps how many sequences may be running before waiting ones are
  // admitted (clamped to [1, max_seqs]); sequences already running are never
  // stopped for it. The engine lowers it to keep step time within a TPOT
  // objective (AdmissionController). Default: max_seqs.
  void set_admission_limit(std::int32_t limit);
  std::int32_t admission_limit() const { return admission_limit_; }

  // What the running set can still take (see QueueGate): seats under the
  // admission limit (static/dynamic: the seats of the batch being gathered,
  // or, while a batch runs, those of its members not running), and the free
  // blocks (cached ones included) less those running sequences still need
  // for their known tokens. Waiting sequences are not subtracted.
  AdmissionRoom room() const;
  // Hands the waiting sequences to `gate`, first come first served, each
  // with its known tokens (QueueGate::place).
  void place_waiting(QueueGate& gate) const;

  // Null if the id is not live (finished sequences are forgotten).
  const SequenceState* find(SeqId seq) const;
  std::int64_t num_waiting() const { return static_cast<std::int64_t>(waiting_.size()); }
  std::int64_t num_running() const { return static_cast<std::int64_t>(running_.size()); }
  bool has_unfinished() const { return !seqs_.empty(); }
  const SchedulerStats& stats() const { return stats_; }
  const SchedulerConfig& config() const { return config_; }

 private:
  struct Planner;  // one schedule() call's working state

  void apply_aborts();
  void schedule_running(Planner& p);
  bool schedule_one_running(Planner& p, SeqId seq);
  void admit_waiting(Planner& p);
  bool batch_may_admit(SeqId seq) const;
  void maybe_start_batch(double now);
  void preempt(Planner& p, SeqId victim);
  void add_chunk(Planner& p, SequenceState& s, std::int64_t n);
  void add_guesses(Planner& p);
  void finish(SequenceState& s, FinishReason reason);

  SchedulerConfig config_;
  KvManager& kv_;
  std::unordered_map<SeqId, SequenceState> seqs_;  // every live sequence
  std::deque<SeqId> waiting_;                      // FCFS; preempted at the front
  std::vector<SeqId> running_;                     // in admission order
  std::int32_t admission_limit_;
  std::unordered_set<SeqId> pending_aborts_;
  std::vector<FinishedSeq> finished_since_plan_;
  // Static/dynamic: the members of the current batch not yet finished.
  std::unordered_set<SeqId> batch_;
  bool flush_ = false;
  std::int64_t next_admit_order_ = 0;
  SchedulerStats stats_;
};

}  // namespace omnibus
