// ServingEngine: the InferenceService over a real model. One engine thread
// owns the model's forward pass, the paged KV store, the KV manager (block
// pool + prefix cache) and the scheduler; at every step it
//   1. takes newly submitted requests and cancellations,
//   2. asks the scheduler for a StepPlan (continuous batching, chunked
//      prefill, preemption; see sched/scheduler.h),
//   3. runs every scheduled token of every sequence as ONE forward batch,
//      K/V read and written through each sequence's block table,
//   4. samples the sequences whose chunk ended at their newest token, applies
//      EOS / stop strings, and streams text to each request's RequestStream,
//   5. tells the scheduler what was sampled.
// By batch invariance (model/model_runner.h) a sequence's logits, so its greedy
// text, do not depend on what it was batched with, how its prompt was
// chunked, whether its prefix came from the cache, or whether it was
// preempted and recomputed.
//
// HTTP threads only call submit() and the const accessors; everything else
// happens on the engine thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "engine/inference_service.h"
#include "engine/kv_transfer.h"
#include "engine/roofline_meter.h"
#include "engine/serving_metrics.h"
#include "engine/speculation.h"
#include "kv/kv_manager.h"
#include "model/backend.h"
#include "model/model.h"
#include "sched/admission_controller.h"
#include "sched/queue_gate.h"
#include "sched/scheduler.h"

namespace omnibus {

class TokenTrie;

struct ServingEngineOptions {
  SchedulerConfig scheduler;
  int32_t kv_block_size = 16;
  KvCacheType kv_type = KvCacheType::kF16;  // --kv-type
  int64_t kv_cache_bytes = int64_t{512} << 20;  // K/V pool size (--kv-cache-mib)
  // > 0: instead of kv_cache_bytes, pools sized for exactly this many
  // tokens of context (plus the window layers' own, engine/kv_pool_plan.h):
  // the command line's one-sequence engines.
  int64_t kv_cache_tokens = 0;
  bool prefix_caching = true;
  // A model with sliding-window layers keeps their K/V in a pool of its
  // own, holding only what each sequence's window still sees
  // (--no-window-kv: every layer for the whole context, as before).
  // Backends that cannot (window_kv()) keep one pool.
  bool window_kv = true;
  int64_t context_length = 0;  // 0: the model's training context
  // Requests waiting for room in the running set (a seat and KV blocks)
  // beyond this are refused (429); a burst the running set can take is
  // never refused (sched/queue_gate.h).
  int64_t max_queue = 512;
  SloTargets slo;
  std::string model_id;
  // The machine's ceilings for /metrics' MBU and MFU (0: unknown; the
  // server measures them at start unless told not to).
  double machine_memory_bandwidth = 0;
  double machine_peak_flops = 0;
  // Speculative decoding (--draft): guessed tokens ride along with each
  // decoding sequence's step while at most speculative_max_seqs sequences
  // are decoding (a wide batch already reads the weights once for many
  // rows; guesses would only add compute).
  SpeculationOptions speculation;
  int32_t speculative_max_seqs = 4;
  // Log a line describing the engine at creation (the server); off for the
  // command line's one-request use (engine/generator.h).
  bool announce = true;
};

class ServingEngine final : public InferenceService {
 public:
  // Sizes everything once (KV pool from kv_cache_bytes) and starts the engine
  // thread. Errors name a bad option (pool too small for one block, ...).
  // The runner and KV cache come from `backend`, which must outlive the
  // engine. Without a tokenizer (the command line's Generator on models
  // with no vocabulary, tests) streams carry token ids and no text, stop
  // strings are refused, and only a request's own end_of_generation ids end
  // it; tokenizer() must not be called.
  static Result<std::unique_ptr<ServingEngine>> create(std::shared_ptr<const Model> model, Backend& backend,
                                                       std::unique_ptr<Tokenizer> tokenizer, ChatFormat chat_format,
                                                       const ServingEngineOptions& options);
  ~ServingEngine() override;  // stops the thread; unfinished requests end "cancelled"

  Result<std::shared_ptr<RequestStream>> submit(EngineRequest request) override;
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const ChatFormat& chat_format() const override { return chat_format_; }
  ServiceInfo info() const override;
  bool ready() const override { return !draining_.load(); }
  std::string metrics_text() const override;
  void count_rejected_request() override { metrics_->count_rejected(); }
  Result<std::string> export_kv(std::vector<int32_t> prompt) override;
  Result<int64_t> import_kv(std::string_view blob) override;

  // Stops accepting requests (ready() turns false; submit() refuses) and
  // lets running ones finish.
  void drain() { draining_.store(true); }
  // No request queued or running.
  bool idle() const;
  // Blocks until idle().
  void wait_idle();

  int64_t kv_num_blocks() const { return num_blocks_; }
  // The window group's blocks (0: none; --no-window-kv or no window layers).
  int64_t kv_window_blocks() const { return window_blocks_; }
  // Times the runner's ops into `profiler` (null: stop), from the next step.
  Status set_profiler(Profiler* profiler);
  const ServingMetrics& metrics() const { return *metrics_; }

 private:
  struct Active;  // one live sequence's sampler, text stream and timings

  ServingEngine() = default;
  void loop();
  // Runs `fn` on the engine thread between steps and waits for it.
  // unsupported (fn not run) once the engine is stopping; internal if fn
  // threw (the engine carries on).
  Status run_on_engine_thread(const std::function<void()>& fn);
  void run_commands();
  void take_submissions();
  void apply_cancellations();
  Status run_step(const StepPlan& plan);
  void propose_drafts();
  void sample_chunks(const StepPlan& plan, std::vector<SampledToken>& sampled);
  // Samples one row's token for `a` and emits it; true if a stop rule fired.
  bool sample_and_emit(Active& a, SeqId seq, std::span<float> logits, std::span<const int32_t> generated, double now,
                       std::vector<SampledToken>& sampled);
  void finish_sequence(SeqId id, const std::string& reason, const std::string& error = "");
  void fail_all(const std::string& error);
  void publish_gauges();
  // Pushes the final events finish_sequence queued. Called after
  // publish_gauges() so a client that reads /metrics right after its response
  // sees its blocks already freed.
  void deliver_finished();

  std::shared_ptr<const Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  ChatFormat chat_format_;
  ServingEngineOptions options_;
  int64_t context_length_ = 0;
  int64_t num_blocks_ = 0;
  int64_t window_blocks_ = 0;
  int64_t kv_block_bytes_ = 0;         // one block of the full layers (every layer without a window group)
  int64_t kv_window_block_bytes_ = 0;  // one block of the window layers
  // The vocabulary's texts as a trie for grammar masks, built by the first
  // constrained request (any thread).
  std::shared_ptr<const TokenTrie> token_trie() const;
  mutable std::once_flag token_trie_once_;
  mutable std::shared_ptr<const TokenTrie> token_trie_;
  // This engine's side of a KV handover, computed at first use (any thread).
  const KvTransferShape& transfer_shape() const;
  mutable std::once_flag transfer_shape_once_;
  mutable KvTransferShape transfer_shape_;

  // Engine-thread state.
  std::unique_ptr<ModelRunner> forward_;
  std::unique_ptr<KvCache> kv_store_;
  std::unique_ptr<KvManager> kv_;
  std::unique_ptr<Scheduler> scheduler_;
  // Set when a TPOT objective is given (continuous batching): caps
  // admissions so steps stay within it.
  std::unique_ptr<AdmissionController> admission_;
  std::unordered_map<SeqId, std::unique_ptr<Active>> active_;
  std::vector<BatchRow> rows_;
  std::unique_ptr<RooflineMeter> roofline_;  // engine thread only
  std::vector<float> logits_;
  std::vector<int32_t> history_;  // propose_drafts' scratch
  StepCostModel step_cost_;        // decode steps' time against their rows
  SeqId next_id_ = 1;
  std::vector<std::pair<std::shared_ptr<RequestStream>, StreamEvent>> finished_events_;

  // Shared with HTTP threads, under mu_.
  mutable Mutex mu_;
  CondVar wake_;
  std::deque<std::unique_ptr<Active>> submitted_ GUARDED_BY(mu_);
  std::deque<std::function<void()>> commands_ GUARDED_BY(mu_);  // for run_on_engine_thread
  // --max-queue (sched/queue_gate.h): recounted from the scheduler after
  // every step (publish_gauges), and by submit() for each new request.
  QueueGate queue_gate_ GUARDED_BY(mu_) = QueueGate(1, 1);
  bool stop_ GUARDED_BY(mu_) = false;
  EngineGauges gauges_ GUARDED_BY(mu_);

  std::atomic<bool> draining_{false};
  std::unique_ptr<ServingMetrics> metrics_;
  std::thread thread_;
};

}  // namespace omnibus
