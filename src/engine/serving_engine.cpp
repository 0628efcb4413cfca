#include "engine/serving_engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "base/log.h"
#include "base/timer.h"
#include "engine/grammar_vocabulary.h"
#include "engine/kv_pool_plan.h"
#include "engine/text_stream.h"
#include "grammar/token_mask.h"
#include "sampling/sampler.h"

namespace omnibus {

struct ServingEngine::Active {
  Active(EngineRequest r, const Tokenizer* tok, int32_t vocab, const SpeculationOptions& engine_speculation)
      : request(std::move(r)),
        stream(std::make_shared<RequestStream>()),
        sampler(request.sampling, vocab),
        speculation(request.speculation ? *request.speculation : engine_speculation) {
    if (tok != nullptr) text.emplace(*tok, request.stop, request.render_special_text);
  }

  EngineRequest request;
  std::shared_ptr<RequestStream> stream;
  Sampler sampler;
  std::optional<TextStream> text;  // none without a tokenizer: token ids only
  std::optional<GrammarMatcher> grammar;  // request.grammar's state, when it has one
  SpeculationOptions speculation;  // the request's, else the engine's
  SpeculationCounts counts;
  SeqId id = 0;
  double submit_time = 0;
  double first_scheduled = -1;
  double first_token = -1;
  double last_token = -1;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;
  bool stop_hit = false;
  bool cancel_sent = false;  // scheduler_->abort() already asked
  StreamEvent pending;       // text and tokens not yet pushed
  std::vector<int32_t> step_generated;  // generated + this step's samples, for a chunk with guesses
  std::vector<int32_t> guesses;         // this step's proposed guesses (propose_drafts), run or not
  AcceptanceEstimate acceptance;        // how often its guesses were right
};

namespace {

constexpr auto kIdlePoll = std::chrono::milliseconds(20);

// Sets the logit of every token the grammar does not allow next to -inf; the
// end tokens keep theirs only when the output is already a whole sentence.
// False when nothing at all is left to sample.
bool mask_disallowed_tokens(GrammarMatcher& grammar, std::span<float> logits, std::span<const int32_t> ends) {
  const std::span<const uint64_t> allowed = grammar.allowed_tokens();
  const bool keep_ends = grammar.can_end();
  float end_logits[8];
  const size_t kept_ends = keep_ends ? std::min<size_t>(ends.size(), 8) : 0;
  for (size_t e = 0; e < kept_ends; ++e) {
    const auto id = static_cast<size_t>(ends[e]);
    end_logits[e] = id < logits.size() ? logits[id] : -INFINITY;
  }
  bool any = kept_ends > 0;
  const size_t n = logits.size();
  for (size_t word = 0; word * 64 < n; ++word) {
    const size_t begin = word * 64, end = std::min(n, begin + 64);
    const uint64_t bits = word < allowed.size() ? allowed[word] : 0;
    any = any || bits != 0;
    if (bits == ~uint64_t{0}) continue;
    for (size_t i = begin; i < end; ++i)
      if (((bits >> (i - begin)) & 1) == 0) logits[i] = -INFINITY;
  }
  for (size_t e = 0; e < kept_ends; ++e) {
    const auto id = static_cast<size_t>(ends[e]);
    if (id < logits.size()) logits[id] = end_logits[e];
  }
  return any;
}
constexpr double kAdmissionTargetShare = 0.85;  // of the TPOT objective

}  // namespace

Result<std::unique_ptr<ServingEngine>> ServingEngine::create(std::shared_ptr<const Model> model, Backend& backend,
                                                             std::unique_ptr<Tokenizer> tokenizer,
                                                             ChatFormat chat_format,
                                                             const ServingEngineOptions& options) {
  OMNIBUS_RETURN_IF_ERROR(validate_scheduler_config(options.scheduler));
  if (options.kv_block_size < 1 || options.kv_block_size > 1024)
    return Status::invalid_argument("--kv-block-size must be in 1..1024, got " + std::to_string(options.kv_block_size));
  if (options.max_queue < 1) return Status::invalid_argument("--max-queue must be >= 1");
  const ModelConfig& config = model->config();
  std::unique_ptr<ServingEngine> e(new ServingEngine());
  e->options_ = options;
  e->context_length_ = options.context_length > 0 ? options.context_length : config.default_context();
  if (e->context_length_ <= 1) return Status::invalid_argument("the context length must be > 1");

  KvPoolRequest pools;
  pools.budget_bytes = options.kv_cache_bytes;
  pools.context_tokens = options.kv_cache_tokens;
  pools.block_size = options.kv_block_size;
  pools.type = options.kv_type;
  // A context no longer than the window frees nothing: one pool then.
  pools.window_group = options.window_kv && config.sliding_window > 0 && e->context_length_ > config.sliding_window &&
                       backend.window_kv();
  pools.max_seqs = options.scheduler.max_seqs;
  pools.max_batched_tokens = options.scheduler.max_batched_tokens;
  OMNIBUS_ASSIGN_OR_RETURN(const KvPoolPlan plan, plan_kv_pools(config, pools));
  e->num_blocks_ = plan.num_blocks;
  e->window_blocks_ = plan.window_blocks;
  e->kv_block_bytes_ = plan.block_bytes;
  e->kv_window_block_bytes_ = plan.window_block_bytes;
  const int64_t pool_tokens = e->num_blocks_ * options.kv_block_size;
  if (pool_tokens < e->context_length_)
    log_warn("the KV pool holds {} tokens, less than one full context of {}; longer requests get a 400", pool_tokens,
             e->context_length_);

  OMNIBUS_ASSIGN_OR_RETURN(e->kv_store_,
                           backend.create_kv_cache(config, static_cast<int>(e->num_blocks_), options.kv_block_size,
                                                   options.kv_type, static_cast<int>(e->window_blocks_)));
  KvManagerOptions kv_options;
  kv_options.num_blocks = static_cast<int32_t>(e->num_blocks_);
  if (e->window_blocks_ > 0) {
    kv_options.window = config.sliding_window;
    kv_options.window_blocks = static_cast<int32_t>(e->window_blocks_);
  }
  kv_options.block_size = options.kv_block_size;
  kv_options.enable_prefix_caching = options.prefix_caching;
  OMNIBUS_ASSIGN_OR_RETURN(KvManager kv, KvManager::create(kv_options));
  e->kv_ = std::make_unique<KvManager>(std::move(kv));
  e->scheduler_ = std::make_unique<Scheduler>(options.scheduler, *e->kv_);
  {
    MutexLock lock(e->mu_);  // no other thread yet: for the thread-safety analysis
    e->queue_gate_ = QueueGate(options.max_queue, options.kv_block_size);
    e->queue_gate_.reset(e->scheduler_->room());
  }
  if (options.slo.tpot_seconds > 0 && options.scheduler.policy == BatchingPolicy::kContinuous) {
    // Aim a little under the objective: TPOT is judged per request over all
    // its steps, and step times vary.
    e->admission_ = std::make_unique<AdmissionController>(kAdmissionTargetShare * options.slo.tpot_seconds,
                                                          options.scheduler.max_seqs);
    log_info("admission follows the TPOT objective: steps kept under {:.0f} ms by running fewer sequences",
             1000 * e->admission_->target_step_seconds());
  }
  OMNIBUS_RETURN_IF_ERROR(validate_speculation_options(options.speculation));
  if (options.speculative_max_seqs < 1) return Status::invalid_argument("--draft-max-seqs must be >= 1");
  const int max_batch = static_cast<int>(options.scheduler.max_batched_tokens);
  OMNIBUS_ASSIGN_OR_RETURN(e->forward_, backend.create_runner(model, max_batch, e->context_length_));
  e->rows_.reserve(max_batch);
  // A logits row per sampled sequence, plus one per guess.
  int64_t logits_rows = options.scheduler.max_seqs;
  if (options.speculation.enabled())
    logits_rows += int64_t{std::min(options.speculative_max_seqs, options.scheduler.max_seqs)} *
                   options.speculation.max_draft;
  logits_rows = std::min<int64_t>(logits_rows, options.scheduler.max_batched_tokens);
  e->logits_.resize(static_cast<size_t>(logits_rows) * config.vocab_size);
  e->metrics_ = std::make_unique<ServingMetrics>(options.slo);
  e->roofline_ = std::make_unique<RooflineMeter>(token_cost(*model, options.kv_type), options.machine_memory_bandwidth,
                                                 options.machine_peak_flops);
  {
    MutexLock lock(e->mu_);  // no other thread yet: for the thread-safety analysis
    e->gauges_.machine_memory_bandwidth = options.machine_memory_bandwidth;
    e->gauges_.machine_peak_flops = options.machine_peak_flops;
    e->gauges_.kv_blocks_total = e->num_blocks_;
    e->gauges_.kv_window_blocks_total = e->window_blocks_;
  }
  e->model_ = std::move(model);
  e->tokenizer_ = std::move(tokenizer);
  e->chat_format_ = std::move(chat_format);
  if (options.announce && e->window_blocks_ > 0)
    log_info(
        "sliding-window layers keep only their window: {} blocks of their own ({:.0f} MiB), the full layers' "
        "pool holds {} tokens",
        e->window_blocks_, e->window_blocks_ * plan.window_block_bytes / 1048576.0, pool_tokens);
  if (options.announce)
    log_info(
        "serving engine: {} KV blocks of {} tokens ({} tokens, {:.0f} MiB, {}), context {}, max {} tokens and {} "
        "sequences per step, prefix cache {}",
        e->num_blocks_, options.kv_block_size, pool_tokens, e->kv_store_->bytes() / 1048576.0,
        kv_cache_type_name(options.kv_type), e->context_length_, options.scheduler.max_batched_tokens,
        options.scheduler.max_seqs, options.prefix_caching ? "on" : "off");
  e->thread_ = std::thread([raw = e.get()] { raw->loop(); });
  return e;
}

ServingEngine::~ServingEngine() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

ServiceInfo ServingEngine::info() const {
  return {options_.model_id, context_length_, model_->config().vocab_size};
}

Result<std::shared_ptr<RequestStream>> ServingEngine::submit(EngineRequest request) {
  if (draining_.load()) return Status::unsupported("the server is shutting down");
  const int32_t vocab = model_->config().vocab_size;
  const auto prompt_len = static_cast<int64_t>(request.prompt.size());
  if (prompt_len == 0) return Status::invalid_argument("the prompt is empty");
  for (int32_t t : request.prompt)
    if (t < 0 || t >= vocab)
      return Status::invalid_argument("token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                                      std::to_string(vocab - 1) + ")");
  OMNIBUS_RETURN_IF_ERROR(request.sampling.validate(vocab));
  if (request.speculation) OMNIBUS_RETURN_IF_ERROR(validate_speculation_options(*request.speculation));
  if (!tokenizer_ && !request.stop.empty())
    return Status::invalid_argument("stop strings need a tokenizer; this engine has none");
  if (!tokenizer_ && request.grammar)
    return Status::invalid_argument("a grammar needs a tokenizer; this engine has none");
  if (prompt_len >= context_length_)
    return Status::invalid_argument("the prompt has " + std::to_string(prompt_len) +
                                    " tokens; the context holds " + std::to_string(context_length_) +
                                    ", leaving no room to generate");
  const int64_t room = context_length_ - prompt_len;
  if (request.max_tokens <= 0 || request.max_tokens > room) request.max_tokens = room;
  const int64_t needed_blocks = (prompt_len + request.max_tokens + options_.kv_block_size - 1) / options_.kv_block_size;
  if (needed_blocks > num_blocks_)
    return Status::invalid_argument("prompt (" + std::to_string(prompt_len) + " tokens) + max_tokens (" +
                                    std::to_string(request.max_tokens) + ") needs " + std::to_string(needed_blocks) +
                                    " KV blocks; the whole pool has " + std::to_string(num_blocks_) +
                                    " (raise --kv-cache-mib or lower max_tokens)");

  auto active = std::make_unique<Active>(std::move(request), tokenizer_.get(), vocab, options_.speculation);
  if (active->request.grammar) active->grammar.emplace(active->request.grammar, token_trie());
  active->submit_time = now_seconds();
  std::shared_ptr<RequestStream> stream = active->stream;
  {
    MutexLock lock(mu_);
    if (stop_) return Status::unsupported("the server is shutting down");
    if (!queue_gate_.try_admit(prompt_len))
      return Status::resource_exhausted("the waiting queue is full: " + std::to_string(queue_gate_.queued()) +
                                        " requests already wait for room in the running set (--max-queue " +
                                        std::to_string(options_.max_queue) + ")");
    submitted_.push_back(std::move(active));
  }
  wake_.notify_all();
  return stream;
}

std::string ServingEngine::metrics_text() const {
  EngineGauges gauges;
  {
    MutexLock lock(mu_);
    gauges = gauges_;
  }
  return metrics_->render(gauges);
}

bool ServingEngine::idle() const {
  MutexLock lock(mu_);
  return submitted_.empty() && gauges_.running == 0 && gauges_.waiting == 0;
}

void ServingEngine::wait_idle() {
  while (!idle()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

std::shared_ptr<const TokenTrie> ServingEngine::token_trie() const {
  std::call_once(token_trie_once_, [&] { token_trie_ = make_token_trie(*tokenizer_, model_->config().vocab_size); });
  return token_trie_;
}

void ServingEngine::take_submissions() {
  std::deque<std::unique_ptr<Active>> incoming;
  {
    MutexLock lock(mu_);
    incoming.swap(submitted_);
    // Until publish_gauges() recounts, they are waiting: keeps idle()
    // honest in between (the queue gate counted them at submit()).
    gauges_.waiting += static_cast<int64_t>(incoming.size());
  }
  for (auto& a : incoming) {
    a->id = next_id_++;
    SequenceState seq;
    seq.id = a->id;
    seq.prompt = a->request.prompt;
    seq.max_tokens = a->request.max_tokens;
    seq.cache_salt = a->request.cache_salt;
    seq.arrival_time = a->submit_time;
    const SeqId id = a->id;
    active_.emplace(id, std::move(a));
    Status s = scheduler_->add(std::move(seq));
    if (!s.is_ok()) finish_sequence(id, "error", s.message());
  }
}

void ServingEngine::apply_cancellations() {
  for (auto& [id, a] : active_) {
    if (a->cancel_sent || !a->stream->cancelled()) continue;
    a->cancel_sent = true;
    // The scheduler frees the blocks at the next schedule() and reports the
    // sequence as aborted there; finish_sequence runs then.
    if (!scheduler_->abort(id).is_ok()) a->cancel_sent = false;
  }
}

void ServingEngine::finish_sequence(SeqId id, const std::string& reason, const std::string& error) {
  auto it = active_.find(id);
  if (it == active_.end()) return;
  Active& a = *it->second;
  const double now = now_seconds();
  StreamEvent event = std::move(a.pending);
  if (a.text && (reason == "stop" || reason == "length")) event.text += a.text->finish();
  event.finished = true;
  event.finish_reason = reason;
  event.error = error;
  event.prompt_tokens = static_cast<int64_t>(a.request.prompt.size());
  event.completion_tokens = a.completion_tokens;
  event.cached_tokens = a.cached_tokens;
  event.speculation = a.counts;
  RequestTimings& t = event.timings;
  t.queue_seconds = a.first_scheduled >= 0 ? a.first_scheduled - a.submit_time : now - a.submit_time;
  t.ttft_seconds = a.first_token >= 0 ? a.first_token - a.submit_time : 0;
  t.e2e_seconds = now - a.submit_time;
  if (a.completion_tokens > 1 && a.first_token >= 0)
    t.tpot_seconds = (a.last_token - a.first_token) / static_cast<double>(a.completion_tokens - 1);
  RequestOutcome outcome = RequestOutcome::kCompleted;
  if (reason == "cancelled") outcome = RequestOutcome::kCancelled;
  if (reason == "error") outcome = RequestOutcome::kError;
  metrics_->observe_finished(outcome, t, event.prompt_tokens, event.completion_tokens);
  finished_events_.emplace_back(a.stream, std::move(event));
  active_.erase(it);
}

void ServingEngine::fail_all(const std::string& error) {
  log_error("engine step failed: {}; failing {} requests", error, active_.size());
  std::vector<SeqId> ids;
  for (auto& [id, a] : active_) ids.push_back(id);
  for (SeqId id : ids) {
    (void)scheduler_->abort(id);
    finish_sequence(id, "error", error);
  }
}

void ServingEngine::deliver_finished() {
  for (auto& [stream, event] : finished_events_) stream->push(std::move(event));
  finished_events_.clear();
}

void ServingEngine::publish_gauges() {
  const KvStats kv = kv_->stats();
  const SchedulerStats& s = scheduler_->stats();
  MutexLock lock(mu_);
  gauges_.running = scheduler_->num_running();
  gauges_.waiting = scheduler_->num_waiting();
  gauges_.kv_blocks_used = kv.blocks_used;
  gauges_.kv_blocks_total = kv.blocks_total;
  gauges_.kv_blocks_cached = kv.blocks_cached;
  gauges_.kv_window_blocks_used = kv.window_blocks_used;
  gauges_.kv_window_blocks_total = kv.window_blocks_total;
  gauges_.kv_bytes_used = kv.blocks_used * kv_block_bytes_ + kv.window_blocks_used * kv_window_block_bytes_;
  gauges_.prefix_queried_tokens = kv.prefix_queried_tokens;
  gauges_.prefix_hit_tokens = kv.prefix_hit_tokens;
  gauges_.preemptions = s.preemptions;
  gauges_.steps = s.steps;
  {
    RunnerStats runner = forward_->stats();
    gauges_.shared_prefix_attention_units = static_cast<int64_t>(runner.shared_prefix_units);
    gauges_.expert_tokens = std::move(runner.expert_tokens);
    gauges_.expert_runs = runner.expert_runs;
  }
  gauges_.admission_limit = scheduler_->admission_limit();
  // The queue gate starts over from what the running set can take now: the
  // scheduler's waiting sequences first, then those submitted since
  // take_submissions(), in arrival order.
  queue_gate_.reset(scheduler_->room());
  scheduler_->place_waiting(queue_gate_);
  for (const auto& a : submitted_) queue_gate_.place(static_cast<int64_t>(a->request.prompt.size()));
  const RooflineReading r = roofline_->reading();
  gauges_.step_bytes_per_second = r.bytes_per_second;
  gauges_.step_flops_per_second = r.flops_per_second;
  gauges_.bandwidth_utilization = r.bandwidth_utilization;
  gauges_.flops_utilization = r.flops_utilization;
}

void ServingEngine::propose_drafts() {
  int64_t decoding = 0;
  bool any = false;
  for (const auto& [id, a] : active_) {
    a->guesses.clear();
    const SequenceState* seq = scheduler_->find(id);
    decoding += seq != nullptr && seq->status == SeqStatus::kRunning && seq->is_decoding() ? 1 : 0;
    any = any || a->speculation.enabled();
  }
  if (!any || decoding > options_.speculative_max_seqs) return;
  const int32_t vocab = model_->config().vocab_size;
  for (const auto& [id, a] : active_) {
    const SpeculationOptions& spec = a->speculation;
    const SequenceState* seq = scheduler_->find(id);
    if (!spec.enabled() || seq == nullptr || seq->status != SeqStatus::kRunning || !seq->is_decoding()) continue;
    history_.assign(seq->prompt.begin(), seq->prompt.end());
    history_.insert(history_.end(), seq->generated.begin(), seq->generated.end());
    const auto room = static_cast<int>(std::min<int64_t>(spec.max_draft, seq->max_tokens));
    const int proposed = propose_draft(spec, history_, room, vocab, a->guesses);
    // All of them are kept for sample_chunks to check; the first `run` ride
    // along (the scheduler may take fewer).
    const int run = guesses_to_run(spec, proposed, a->acceptance, step_cost_);
    scheduler_->set_draft(id, std::span(a->guesses).first(static_cast<size_t>(run)));
  }
}

bool ServingEngine::sample_and_emit(Active& a, SeqId seq_id, std::span<float> logits,
                                    std::span<const int32_t> generated, double now,
                                    std::vector<SampledToken>& sampled) {
  const std::optional<std::vector<int32_t>>& own_ends = a.request.end_of_generation;
  const std::span<const int32_t> ends = own_ends                ? std::span<const int32_t>(*own_ends)
                                        : tokenizer_ != nullptr ? tokenizer_->end_of_generation_ids()
                                                                : std::span<const int32_t>();
  const bool grammar_open = !a.grammar || profile_call(forward_->profiler(), ProfileOp::kSampling, [&] {
    return mask_disallowed_tokens(*a.grammar, logits, ends);
  });
  int32_t token = grammar_open ? profile_call(forward_->profiler(), ProfileOp::kSampling,
                                              [&] { return a.sampler.sample(logits, a.request.prompt, generated); })
                               : -1;
  if (a.first_token < 0) a.first_token = now;
  if (a.last_token >= 0) metrics_->observe_itl(now - a.last_token);
  a.last_token = now;
  bool stop = false;
  const bool is_end = token >= 0 && (own_ends ? std::find(own_ends->begin(), own_ends->end(), token) != own_ends->end()
                                              : tokenizer_ && tokenizer_->is_end_of_generation(token));
  // A grammar's end is the end even with ignore_eos. A token it refuses
  // comes only from a row with nothing allowed left (every logit -inf or
  // NaN): the output ends there, as at an end token.
  const bool grammar_end = a.grammar && (is_end ? a.grammar->can_end() : !a.grammar->accept_token(token));
  if (grammar_end && !is_end) token = ends.empty() ? std::max(token, 0) : ends.front();
  if ((is_end && !a.request.ignore_eos) || grammar_end) {
    stop = true;  // the end token itself has no text and is not counted
  } else {
    ++a.completion_tokens;
    if (a.text) {
      TextStream::Piece piece = a.text->push(token);
      a.pending.text += piece.text;
      stop = piece.stopped;
    }
    GeneratedToken out;
    out.token = token;
    if (a.request.sampling.wants_logprobs()) {
      const SampleLogprobs& lp = a.sampler.last_logprobs();
      out.logprob = lp.chosen.logprob;
      out.top = lp.top;
    }
    a.pending.tokens.push_back(std::move(out));
  }
  a.stop_hit = stop;
  sampled.push_back({seq_id, token, stop});
  return stop;
}

void ServingEngine::sample_chunks(const StepPlan& plan, std::vector<SampledToken>& sampled) {
  const int32_t vocab = model_->config().vocab_size;
  size_t logits_row = 0;
  const double now = now_seconds();
  for (const ScheduledChunk& c : plan.chunks) {
    const int64_t rows = c.logits_rows();
    if (rows == 0) continue;
    const auto sampled_before = static_cast<int64_t>(sampled.size());
    Active& a = *active_.at(c.seq);
    const SequenceState* seq = scheduler_->find(c.seq);
    // The sampler's penalties see every token before the one it samples: with
    // guesses, those sampled earlier in this step too (the scheduler appends
    // them after the step).
    std::span<const int32_t> generated = seq->generated;
    if (c.num_draft > 0) {
      a.step_generated.assign(seq->generated.begin(), seq->generated.end());
      generated = a.step_generated;
    }
    const int64_t first_guess = static_cast<int64_t>(c.tokens.size()) - c.num_draft;
    // Row i's logits follow guess i - 1; they count while every guess so
    // far was what was sampled (engine/speculation.h).
    for (int64_t i = 0; i < rows; ++i) {
      std::span<float> logits(logits_.data() + (logits_row + i) * vocab, vocab);
      const bool stop = sample_and_emit(a, c.seq, logits, generated, now, sampled);
      if (stop || i == c.num_draft || sampled.back().token != c.tokens[first_guess + i]) break;
      a.step_generated.push_back(sampled.back().token);
      generated = a.step_generated;
    }
    const auto accepted = static_cast<int>(static_cast<int64_t>(sampled.size()) - sampled_before - 1);
    metrics_->observe_speculation(c.num_draft, accepted);
    if (c.samples_one_known_token() && !seq->generated.empty()) {
      // A decode step (the prompt's last chunk samples the first token).
      ++a.counts.decode_steps;
      a.counts.draft_steps += c.num_draft > 0 ? 1 : 0;
      a.counts.drafted_tokens += c.num_draft;
      a.counts.accepted_tokens += accepted;
    }
    if (!a.guesses.empty() && !a.stop_hit) {
      const GuessOutcome outcome =
          guess_outcome(a.guesses, static_cast<int>(c.num_draft), accepted, sampled.back().token);
      a.acceptance.observe(outcome.tested, outcome.matched);
    }
    logits_row += rows;
  }
}

Status ServingEngine::run_step(const StepPlan& plan) {
  const double now = now_seconds();
  rows_.clear();
  for (const ScheduledChunk& c : plan.chunks) {
    Active& a = *active_.at(c.seq);
    if (a.first_scheduled < 0) {
      a.first_scheduled = now;
      a.cached_tokens = c.start_pos;  // a fresh sequence starts after its cached prefix
    }
    const auto n = static_cast<int64_t>(c.tokens.size());
    for (int64_t i = 0; i < n; ++i)
      rows_.push_back({c.tokens[i], c.block_table, static_cast<int32_t>(c.start_pos + i), i >= n - c.logits_rows(),
                       c.window_block_table});
  }
  // A logits row per sampled row; more than at creation only when a
  // request's own speculation guesses more than the engine's.
  size_t logits_rows = 0;
  bool speculating = false;
  for (const ScheduledChunk& c : plan.chunks) {
    logits_rows += static_cast<size_t>(c.logits_rows());
    speculating = speculating || active_.at(c.seq)->speculation.enabled();
  }
  const size_t vocab = static_cast<size_t>(model_->config().vocab_size);
  if (logits_.size() < logits_rows * vocab) logits_.resize(logits_rows * vocab);
  const double forward_start = now_seconds();
  OMNIBUS_RETURN_IF_ERROR(forward_->run(rows_, *kv_store_, logits_.data()));
  // Decode-only steps teach the guess policy what a row costs.
  if (speculating && std::all_of(plan.chunks.begin(), plan.chunks.end(),
                                 [](const ScheduledChunk& c) { return c.samples_one_known_token(); }))
    step_cost_.observe(static_cast<int64_t>(rows_.size()), now_seconds() - forward_start);
  std::vector<SampledToken> sampled;
  sample_chunks(plan, sampled);
  double attended = 0;
  for (const BatchRow& row : rows_) attended += roofline_->attended_positions(row.pos + 1);
  roofline_->on_step(static_cast<int64_t>(rows_.size()), attended, now_seconds() - now);
  if (admission_) {
    int64_t decode_rows = 0;
    for (const ScheduledChunk& c : plan.chunks)
      // A decode chunk's guess rows count with it: they are what its
      // sequence's step costs.
      decode_rows += c.samples_one_known_token() ? c.logits_rows() : 0;
    const auto total = static_cast<int64_t>(rows_.size());
    scheduler_->set_admission_limit(admission_->on_step(now_seconds() - now, decode_rows, total - decode_rows));
  }
  OMNIBUS_RETURN_IF_ERROR(scheduler_->on_step_done(plan, sampled));
  // Each sampled sequence once (a chunk with guesses sampled several tokens).
  for (const ScheduledChunk& c : plan.chunks) {
    if (c.logits_rows() == 0) continue;
    if (scheduler_->find(c.seq) == nullptr) {
      finish_sequence(c.seq, active_.at(c.seq)->stop_hit ? "stop" : "length");
      continue;
    }
    Active& a = *active_.at(c.seq);
    if (a.pending.text.empty() && a.pending.tokens.empty()) continue;
    a.stream->push(std::move(a.pending));
    a.pending = StreamEvent{};
  }
  return Status::ok();
}

Status ServingEngine::run_on_engine_thread(const std::function<void()>& fn) {
  std::mutex done_mu;
  std::condition_variable done_cv;
  bool done = false;
  bool threw = false;
  {
    MutexLock lock(mu_);
    if (stop_) return Status::unsupported("the server is stopping");
    commands_.push_back([&] {
      // Whatever fn does, the caller is woken; an exception (a failed
      // allocation) fails this command, not the engine.
      try {
        fn();
      } catch (const std::exception& e) {
        log_error("engine command failed: {}", e.what());
        threw = true;
      }
      std::lock_guard<std::mutex> done_lock(done_mu);
      done = true;
      done_cv.notify_one();
    });
  }
  wake_.notify_one();
  std::unique_lock<std::mutex> lock(done_mu);
  done_cv.wait(lock, [&] { return done; });
  return threw ? Status::internal("the engine could not complete the command (see the server log)") : Status::ok();
}

Status ServingEngine::set_profiler(Profiler* profiler) {
  return run_on_engine_thread([this, profiler] { forward_->set_profiler(profiler); });
}

void ServingEngine::run_commands() {
  std::deque<std::function<void()>> commands;
  {
    MutexLock lock(mu_);
    commands.swap(commands_);
  }
  for (auto& command : commands) command();
}

const KvTransferShape& ServingEngine::transfer_shape() const {
  // On first use, not at creation: the fingerprint reads a page or two of
  // every tensor, faulting in file pages that repacking had released (about
  // 20 MiB of RSS on a 135M model), which an engine that never hands over
  // KV should not pay.
  std::call_once(transfer_shape_once_, [this] {
    transfer_shape_ = kv_transfer_shape(model_fingerprint(*model_), model_->config(), *kv_store_);
  });
  return transfer_shape_;
}

Result<std::string> ServingEngine::export_kv(std::vector<int32_t> prompt) {
  const int64_t block_size = options_.kv_block_size;
  const int64_t whole = (static_cast<int64_t>(prompt.size()) - 1) / block_size * block_size;
  if (whole <= 0)
    return Status::not_found(fmt::format("a prompt of {} tokens has no whole {}-token block to hand over (it needs "
                                         "more than {} tokens: the last one is always computed)",
                                         prompt.size(), block_size, block_size));
  // The engine thread only copies the blocks out; the blob is assembled
  // (a second copy and the checksum) here, off the decode path.
  std::string blocks;
  int64_t cached = 0;
  Status failed = Status::ok();
  OMNIBUS_RETURN_IF_ERROR(run_on_engine_thread([&] {
    if (!kv_->prefix_caching_enabled()) {
      failed = Status::invalid_argument(
          "this server runs without a prefix cache (--no-prefix-cache): it keeps no K/V to hand over");
      return;
    }
    // A sequence of its own, never scheduled: match_prefix takes the cached
    // blocks (not counted in the prefix-cache statistics: no request).
    const SeqId probe = next_id_++;
    if (Status s = kv_->add_sequence(probe); !s.is_ok()) {
      failed = s;
      return;
    }
    cached = kv_->match_prefix(probe, prompt, /*count=*/false);
    const std::span<const BlockId> table = kv_->block_table(probe);
    const std::span<const BlockId> window_table = kv_->window_block_table(probe);
    const int64_t n_blocks = cached / block_size;
    try {
      blocks.resize(static_cast<size_t>(n_blocks * transfer_shape().block_bytes));
    } catch (const std::bad_alloc&) {
      kv_->free_sequence(probe);
      failed = Status::resource_exhausted("no memory for the KV blob now; retry later");
      return;
    }
    for (int64_t b = 0; b < n_blocks && failed.is_ok(); ++b)
      failed = kv_store_->copy_block_out(table[b], window_table.empty() ? kNoKvBlock : window_table[b],
                                         reinterpret_cast<uint8_t*>(blocks.data()) + b * transfer_shape().block_bytes);
    kv_->free_sequence(probe);
  }));
  OMNIBUS_RETURN_IF_ERROR(failed);
  // Fewer blocks than the prompt has: evicted since its prefill finished
  // (a busy pool), or never computed.
  if (cached < whole)
    return Status::resource_exhausted(fmt::format(
        "only {} of the prompt's {} tokens in whole blocks are in the prefix cache (evicted by other requests, or "
        "never computed); run the prompt and export again",
        cached, whole));
  metrics_->observe_kv_export(cached);
  return encode_kv_transfer(transfer_shape(), std::span(prompt).first(static_cast<size_t>(cached)), blocks);
}

Result<int64_t> ServingEngine::import_kv(std::string_view blob) {
  // Checked here, on the caller's thread: the engine thread only copies.
  OMNIBUS_ASSIGN_OR_RETURN(KvTransferContents contents,
                           decode_kv_transfer(blob, transfer_shape(), model_->config().vocab_size));
  const int64_t n = static_cast<int64_t>(contents.tokens.size());
  if (n >= context_length_)
    return Status::invalid_argument(fmt::format("the KV blob holds {} tokens; this server's context is {}", n,
                                                context_length_));
  Result<int64_t> result = Status::internal("the import did not run");
  OMNIBUS_RETURN_IF_ERROR(run_on_engine_thread([&] {
    if (!kv_->prefix_caching_enabled()) {
      result = Status::invalid_argument(
          "this server runs without a prefix cache (--no-prefix-cache): nothing to import into");
      return;
    }
    if (!kv_->can_ever_fit(n)) {
      result = Status::invalid_argument(fmt::format(
          "the KV blob's {} tokens do not fit this server's KV pool of {} blocks (--kv-cache-mib)", n, num_blocks_));
      return;
    }
    // Blocks already cached are kept (same tokens, same model: same bits);
    // one token more than the blob lets match_prefix take all of them.
    std::vector<int32_t> lookup = contents.tokens;
    lookup.push_back(0);
    const SeqId probe = next_id_++;
    if (Status s = kv_->add_sequence(probe); !s.is_ok()) {
      result = s;
      return;
    }
    const int64_t cached = kv_->match_prefix(probe, lookup, /*count=*/false);
    // Window layers: only the blocks the next token's window reads.
    if (!kv_->ensure_capacity(probe, n, n - model_->config().sliding_window + 1)) {
      kv_->free_sequence(probe);
      result = Status::resource_exhausted(fmt::format(
          "the KV pool has no room for {} more blocks now; try again later", (n - cached) / kv_->block_size()));
      return;
    }
    const std::span<const BlockId> table = kv_->block_table(probe);
    const std::span<const BlockId> window_table = kv_->window_block_table(probe);
    const auto* bytes = reinterpret_cast<const uint8_t*>(contents.blocks.data());
    for (int64_t b = cached / kv_->block_size(); b < n / kv_->block_size(); ++b) {
      const BlockId window_block = window_table.empty() ? kNoKvBlock : window_table[b];
      if (Status s = kv_store_->copy_block_in(table[b], window_block, bytes + b * transfer_shape().block_bytes);
          !s.is_ok()) {
        // Nothing committed: the probe's new blocks go back to the pool
        // unpublished, whatever they hold.
        kv_->free_sequence(probe);
        result = s;
        return;
      }
    }
    // As a finished prefill: the blocks enter the prefix cache, and stay
    // there (free, evictable) once the probe lets go of them.
    Status s = kv_->commit_tokens(probe, std::span(contents.tokens).subspan(static_cast<size_t>(cached)));
    kv_->free_sequence(probe);
    if (!s.is_ok()) {
      result = s;
      return;
    }
    metrics_->observe_kv_import(n, n - cached);
    result = n;
  }));
  return result;
}

void ServingEngine::loop() {
  for (;;) {
    run_commands();
    take_submissions();
    apply_cancellations();
    {
      MutexLock lock(mu_);
      if (stop_) break;
    }
    if (draining_.load()) scheduler_->flush();  // static/dynamic: run what is queued
    propose_drafts();
    StepPlan plan = scheduler_->schedule(now_seconds());
    for (const FinishedSeq& f : plan.finished)
      finish_sequence(f.seq, f.reason == FinishReason::kAborted ? "cancelled"
                             : f.reason == FinishReason::kRejected ? "error"
                             : f.reason == FinishReason::kStop   ? "stop"
                                                                 : "length");
    if (!plan.empty()) {
      Status s = run_step(plan);
      if (!s.is_ok()) fail_all(s.message());
    }
    publish_gauges();
    deliver_finished();
    if (plan.empty()) {
      MutexLock lock(mu_);
      // Poll while sequences wait (cancellations, the dynamic policy's timer);
      // otherwise sleep until a submission or stop.
      if (scheduler_->has_unfinished())
        wake_.wait_for(lock, kIdlePoll,
                       [&]() REQUIRES(mu_) { return stop_ || !submitted_.empty() || !commands_.empty(); });
      else
        wake_.wait(lock, [&]() REQUIRES(mu_) { return stop_ || !submitted_.empty() || !commands_.empty(); });
    }
  }
  // Shutting down: commands posted before stop_ still run (their callers
  // wait on them; none can be posted after), and every request still open
  // ends "cancelled".
  run_commands();
  std::vector<SeqId> ids;
  for (auto& [id, a] : active_) ids.push_back(id);
  for (SeqId id : ids) finish_sequence(id, "cancelled");
  publish_gauges();
  deliver_finished();
  MutexLock lock(mu_);
  for (auto& a : submitted_) {
    StreamEvent event;
    event.finished = true;
    event.finish_reason = "cancelled";
    a->stream->push(std::move(event));
  }
  submitted_.clear();
}

}  // namespace omnibus
