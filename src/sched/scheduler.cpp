#include "sched/scheduler.h"

#include <algorithm>
#include <string>
#include <unordered_map>

namespace omnibus {

Result<BatchingPolicy> parse_batching_policy(const std::string& name) {
  if (name == "static") return BatchingPolicy::kStatic;
  if (name == "dynamic") return BatchingPolicy::kDynamic;
  if (name == "continuous") return BatchingPolicy::kContinuous;
  return Status::invalid_argument("unknown batching policy '" + name +
                                  "' (expected static, dynamic or continuous)");
}

Status validate_scheduler_config(const SchedulerConfig& c) {
  if (c.max_batched_tokens < 1)
    return Status::invalid_argument("max batched tokens must be at least 1, got " +
                                    std::to_string(c.max_batched_tokens));
  if (c.max_seqs < 1)
    return Status::invalid_argument("max seqs must be at least 1, got " +
                                    std::to_string(c.max_seqs));
  if (c.batch_size < 1)
    return Status::invalid_argument("batch size must be at least 1, got " +
                                    std::to_string(c.batch_size));
  if (!(c.batch_wait_ms >= 0))
    return Status::invalid_argument("batch wait must be >= 0 ms, got " +
                                    std::to_string(c.batch_wait_ms));
  return Status::ok();
}

// The state of one schedule() call.
struct Scheduler::Planner {
  StepPlan& plan;
  std::int64_t budget;          // tokens left this step
  bool preempted_any = false;   // then admit no one: memory is short
};

Scheduler::Scheduler(const SchedulerConfig& config, KvManager& kv)
    : config_(config), kv_(kv), admission_limit_(config.max_seqs) {}

Status Scheduler::add(SequenceState seq) {
  const std::string name = "request " + std::to_string(seq.id);
  if (seqs_.count(seq.id) != 0) return Status::invalid_argument(name + " is already queued");
  if (seq.prompt.empty()) return Status::invalid_argument(name + " has an empty prompt");
  if (seq.max_tokens < 1)
    return Status::invalid_argument(name + ": max_tokens must be at least 1, got " +
                                    std::to_string(seq.max_tokens));
  const std::int64_t total = static_cast<std::int64_t>(seq.prompt.size()) + seq.max_tokens;
  if (!kv_.can_ever_fit(total))
    return Status::invalid_argument(
        name + " needs up to " + std::to_string(total) + " tokens (prompt " +
        std::to_string(seq.prompt.size()) + " + max_tokens " + std::to_string(seq.max_tokens) +
        ") but the KV cache holds only " +
        std::to_string(static_cast<std::int64_t>(kv_.stats().blocks_total) * kv_.block_size()));
  seq.generated.clear();
  seq.status = SeqStatus::kWaiting;
  seq.num_computed_tokens = 0;
  seq.admit_order = -1;
  seq.finish_reason = FinishReason::kNone;
  waiting_.push_back(seq.id);
  seqs_.emplace(seq.id, std::move(seq));
  return Status::ok();
}

Status Scheduler::abort(SeqId seq) {
  if (seqs_.count(seq) == 0)
    return Status::not_found("request " + std::to_string(seq) + " is not running or queued");
  pending_aborts_.insert(seq);
  return Status::ok();
}

const SequenceState* Scheduler::find(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? nullptr : &it->second;
}

StepPlan Scheduler::schedule(double now) {
  StepPlan plan;
  apply_aborts();
  Planner p{plan, config_.max_batched_tokens};
  schedule_running(p);
  if (config_.policy != BatchingPolicy::kContinuous) maybe_start_batch(now);
  if (!p.preempted_any) admit_waiting(p);
  add_guesses(p);
  // Tables are copied last: a sequence's table only changes through its own
  // ensure_capacity, but a preempted one's chunk may have been dropped.
  for (ScheduledChunk& c : plan.chunks) {
    const std::span<const BlockId> table = kv_.block_table(c.seq);
    c.block_table.assign(table.begin(), table.end());
    const std::span<const BlockId> window_table = kv_.window_block_table(c.seq);
    c.window_block_table.assign(window_table.begin(), window_table.end());
  }
  plan.finished = std::move(finished_since_plan_);
  finished_since_plan_.clear();
  if (!plan.chunks.empty()) ++stats_.steps;
  return plan;
}

void Scheduler::apply_aborts() {
  // Sorted so the order of finished events does not depend on hashing.
  std::vector<SeqId> ids(pending_aborts_.begin(), pending_aborts_.end());
  std::sort(ids.begin(), ids.end());
  pending_aborts_.clear();
  for (SeqId id : ids) {
    auto it = seqs_.find(id);
    if (it != seqs_.end()) finish(it->second, FinishReason::kAborted);
  }
}

void Scheduler::schedule_running(Planner& p) {
  // Decodes first (one token each: they are waiting on their next token and
  // cost little), then prefill continuations, each in admission order.
  std::vector<SeqId> order;
  order.reserve(running_.size());
  for (SeqId id : running_)
    if (seqs_.at(id).is_decoding()) order.push_back(id);
  for (SeqId id : running_)
    if (!seqs_.at(id).is_decoding()) order.push_back(id);
  for (SeqId id : order) {
    if (p.budget == 0) break;
    auto it = seqs_.find(id);
    // Preempted (or rejected) earlier in this loop to make room for another.
    if (it == seqs_.end() || it->second.status != SeqStatus::kRunning) continue;
    schedule_one_running(p, id);
  }
}

// Gives one running sequence its next chunk, preempting the most recently
// admitted running sequences until its blocks fit. Returns false if it was
// itself preempted (or, should it not fit alone, rejected).
bool Scheduler::schedule_one_running(Planner& p, SeqId id) {
  SequenceState& s = seqs_.at(id);
  const std::int64_t n = std::min(s.num_uncomputed_tokens(), p.budget);
  while (!kv_.ensure_capacity(id, s.num_computed_tokens + n)) {
    const SeqId victim = running_.back();
    if (victim == id && running_.size() == 1) {
      // Alone with the whole pool and still no room: add() should have made
      // this impossible. Reject rather than loop or crash (nothing lost).
      finish(s, FinishReason::kRejected);
      return false;
    }
    preempt(p, victim);
    if (victim == id) return false;
  }
  add_chunk(p, s, n);
  return true;
}

// Guesses ride along only where they cost no one else, so they are handed
// out last, after every running sequence's own tokens and the admissions:
// from the budget left, from blocks still free (no one is preempted or kept
// waiting for a guess), and within max_tokens (a step emits at most one
// token per row). In admission order; each sequence takes as many of its
// guesses as fit, the first ones (the likeliest) first. Drafts are for this
// step only: every running sequence's is cleared.
void Scheduler::add_guesses(Planner& p) {
  for (ScheduledChunk& c : p.plan.chunks) {
    SequenceState& s = seqs_.at(c.seq);
    // set_draft gives drafts to decoding sequences only, whose chunk is
    // their one newest token.
    if (p.budget <= 0 || s.draft.empty() || !s.is_decoding()) continue;
    const std::int64_t room = s.max_tokens - static_cast<std::int64_t>(s.generated.size()) - 1;
    std::int64_t k = std::min({static_cast<std::int64_t>(s.draft.size()), p.budget, room});
    while (k > 0 && !kv_.ensure_capacity(s.id, s.num_computed_tokens + 1 + k)) --k;
    if (k <= 0) continue;
    c.tokens.insert(c.tokens.end(), s.draft.begin(), s.draft.begin() + k);
    c.num_draft = k;
    p.budget -= k;
  }
  for (SeqId id : running_) seqs_.at(id).draft.clear();
}

void Scheduler::set_draft(SeqId seq, std::span<const std::int32_t> draft) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end() || it->second.status != SeqStatus::kRunning || !it->second.is_decoding()) return;
  it->second.draft.assign(draft.begin(), draft.end());
}

void Scheduler::preempt(Planner& p, SeqId victim) {
  SequenceState& v = seqs_.at(victim);
  // A victim scheduled earlier this step (a decode admitted after the
  // prefill now short of room) gives its chunk and its tokens back.
  auto chunk = std::find_if(p.plan.chunks.begin(), p.plan.chunks.end(),
                            [&](const ScheduledChunk& c) { return c.seq == victim; });
  if (chunk != p.plan.chunks.end()) {
    p.budget += static_cast<std::int64_t>(chunk->tokens.size());
    p.plan.chunks.erase(chunk);
  }
  kv_.free_sequence(victim);
  v.num_computed_tokens = 0;
  v.status = SeqStatus::kPreempted;
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  // Front of the queue: it was admitted before everyone still waiting.
  // Victims go newest first, so repeated pushes keep admission order.
  waiting_.push_front(victim);
  p.plan.preempted.push_back(victim);
  p.preempted_any = true;
  ++stats_.preemptions;
}

void Scheduler::add_chunk(Planner& p, SequenceState& s, std::int64_t n) {
  ScheduledChunk c;
  c.seq = s.id;
  c.start_pos = s.num_computed_tokens;
  c.tokens.reserve(static_cast<std::size_t>(n) + s.draft.size());
  for (std::int64_t i = 0; i < n; ++i) c.tokens.push_back(s.known_token(c.start_pos + i));
  c.needs_logits = c.start_pos + n == s.num_known_tokens();
  p.budget -= n;
  p.plan.chunks.push_back(std::move(c));
}

bool Scheduler::batch_may_admit(SeqId seq) const {
  return config_.policy == BatchingPolicy::kContinuous || batch_.count(seq) != 0;
}

// Static/dynamic: when no batch is in flight and the trigger fires, the
// first N waiting sequences become the batch; only they may be admitted
// (and readmitted after preemption) until every one has finished.
void Scheduler::maybe_start_batch(double now) {
  if (!batch_.empty() || waiting_.empty()) return;
  bool start = flush_ || static_cast<std::int64_t>(waiting_.size()) >= config_.batch_size;
  if (config_.policy == BatchingPolicy::kDynamic) {
    const double waited_ms = (now - seqs_.at(waiting_.front()).arrival_time) * 1000.0;
    start = start || waited_ms >= config_.batch_wait_ms;
  }
  if (!start) return;
  const std::size_t n = std::min<std::size_t>(
      waiting_.size(), static_cast<std::size_t>(std::min(config_.batch_size, config_.max_seqs)));
  batch_.insert(waiting_.begin(), waiting_.begin() + static_cast<std::ptrdiff_t>(n));
}

void Scheduler::set_admission_limit(std::int32_t limit) {
  admission_limit_ = std::clamp(limit, std::int32_t{1}, config_.max_seqs);
}

AdmissionRoom Scheduler::room() const {
  AdmissionRoom r;
  const auto running = static_cast<std::int64_t>(running_.size());
  if (config_.policy == BatchingPolicy::kContinuous)
    r.seats = std::max<std::int64_t>(0, admission_limit_ - running);
  else if (batch_.empty())
    r.seats = std::min(config_.batch_size, config_.max_seqs);
  else  // only the batch's members start until it ends; they lead the queue
    r.seats = std::max<std::int64_t>(0, static_cast<std::int64_t>(batch_.size()) - running);
  std::int64_t owed = 0;
  for (SeqId id : running_) owed += kv_.blocks_needed(id, seqs_.at(id).num_known_tokens());
  r.blocks = std::max<std::int64_t>(0, kv_.num_free_blocks() - owed);
  return r;
}

void Scheduler::place_waiting(QueueGate& gate) const {
  for (SeqId id : waiting_) gate.place(seqs_.at(id).num_known_tokens());
}

// FCFS: stops at the first sequence that cannot start, so a large request
// is not overtaken forever by small ones behind it.
void Scheduler::admit_waiting(Planner& p) {
  while (!waiting_.empty() && p.budget > 0 &&
         static_cast<std::int64_t>(running_.size()) < admission_limit_) {
    const SeqId id = waiting_.front();
    if (!batch_may_admit(id)) break;
    SequenceState& s = seqs_.at(id);
    if (!kv_.add_sequence(id, s.cache_salt).is_ok()) break;  // cannot happen: freed when queued
    const std::vector<std::int32_t> known = s.known_tokens();
    const std::int64_t hit = kv_.match_prefix(id, known);
    const std::int64_t n = std::min(s.num_known_tokens() - hit, p.budget);
    if (!kv_.ensure_capacity(id, hit + n)) {
      kv_.free_sequence(id);  // returns the matched blocks; they stay cached
      break;
    }
    stats_.prefix_hit_tokens += hit;
    waiting_.pop_front();
    running_.push_back(id);
    s.status = SeqStatus::kRunning;
    s.num_computed_tokens = hit;
    s.admit_order = next_admit_order_++;
    add_chunk(p, s, n);
  }
}

void Scheduler::finish(SequenceState& s, FinishReason reason) {
  const SeqId id = s.id;
  if (s.status == SeqStatus::kRunning) {
    kv_.free_sequence(id);
    running_.erase(std::find(running_.begin(), running_.end(), id));
  } else {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), id));
  }
  batch_.erase(id);
  finished_since_plan_.push_back({id, reason, static_cast<std::int64_t>(s.generated.size())});
  seqs_.erase(id);  // `s` dangles from here on
}

Status Scheduler::on_step_done(const StepPlan& plan, std::span<const SampledToken> sampled) {
  // Each sequence's samples, in the order reported.
  std::unordered_map<SeqId, std::vector<const SampledToken*>> by_seq;
  for (const SampledToken& t : sampled) by_seq[t.seq].push_back(&t);
  for (const ScheduledChunk& c : plan.chunks) {
    const std::string name = "sequence " + std::to_string(c.seq);
    auto it = seqs_.find(c.seq);
    if (it == seqs_.end() || it->second.status != SeqStatus::kRunning ||
        it->second.num_computed_tokens != c.start_pos)
      return Status::internal(name + " does not match the plan it ran (reported twice?)");
    SequenceState& s = it->second;
    const auto known = static_cast<std::int64_t>(c.tokens.size()) - c.num_draft;
    if (!c.needs_logits) {
      OMNIBUS_RETURN_IF_ERROR(kv_.commit_tokens(c.seq, c.tokens).with_context(name));
      s.num_computed_tokens += known;
      continue;
    }
    auto t = by_seq.find(c.seq);
    if (t == by_seq.end()) return Status::internal(name + " needed a sampled token and got none");
    const std::vector<const SampledToken*>& samples = t->second;
    // Samples 0..n-2 confirmed the guesses at the same index; their rows'
    // K/V are the sequence's now. The rest of the guessed rows are dropped
    // (their slots are written again by later steps).
    const auto confirmed = static_cast<std::int64_t>(samples.size()) - 1;
    if (confirmed > c.num_draft) return Status::internal(name + " reported more samples than it had rows");
    for (std::int64_t i = 0; i < confirmed; ++i)
      if (samples[i]->token != c.tokens[known + i] || samples[i]->stop)
        return Status::internal(name + " reported a sample past a guess it did not confirm");
    OMNIBUS_RETURN_IF_ERROR(
        kv_.commit_tokens(c.seq, std::span(c.tokens).first(static_cast<std::size_t>(known + confirmed)))
            .with_context(name));
    s.num_computed_tokens += known + confirmed;
    for (const SampledToken* sample : samples) s.generated.push_back(sample->token);
    if (samples.back()->stop)
      finish(s, FinishReason::kStop);
    else if (static_cast<std::int64_t>(s.generated.size()) >= s.max_tokens)
      finish(s, FinishReason::kLength);
  }
  return Status::ok();
}

}  // namespace omnibus
