// FakeInferenceService: an InferenceService for the HTTP layer's tests. A
// tiny byte-level tokenizer (bytes, a few merges forming "Hello" and
// " world", ChatML control tokens) and one generator thread that streams a
// scripted reply, a token per tick, to every submitted request, honouring
// max_tokens, stop strings (held back so they are never half sent),
// cancel(), and scripted failures. Header only; tests only.
//
// Thread-safe as InferenceService requires; the knobs are set before the
// requests they should affect.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/inference_service.h"
#include "tokenizer/test_vocabs.h"

namespace omnibus::server::testing {

inline std::unique_ptr<Tokenizer> make_test_tokenizer() {
  VocabData v = testing_vocabs::byte_level_vocab(
      {{"H", "e"}, {"He", "l"}, {"Hel", "l"}, {"Hell", "o"}, {" ", "w"}, {" w", "o"}, {" wo", "r"}, {" wor", "l"},
       {" worl", "d"}},
      {{"<|im_start|>", TokenType::kControl}, {"<|im_end|>", TokenType::kControl},
       {"<|endoftext|>", TokenType::kControl}});
  v.eos_id = testing_vocabs::id_of(v, "<|endoftext|>");
  v.eot_id = testing_vocabs::id_of(v, "<|im_end|>");
  v.end_of_generation_ids = {v.eot_id, v.eos_id};
  std::sort(v.end_of_generation_ids.begin(), v.end_of_generation_ids.end());
  auto t = Tokenizer::create(std::move(v));
  return t.is_ok() ? std::move(t).value() : nullptr;
}

class FakeInferenceService final : public InferenceService {
 public:
  static constexpr int64_t kContextLength = 128;

  FakeInferenceService() : tokenizer_(make_test_tokenizer()) {
    set_reply("Hello world! ");
    thread_ = std::thread([this] { run(); });
  }
  ~FakeInferenceService() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // --- knobs ---------------------------------------------------------------
  void set_reply(const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    reply_ = tokenizer_->encode(text, false, false);
  }
  // submit() refuses with `status` (ok: accepts); `after` submits succeed first.
  void refuse_submits(Status status, int after = 0) {
    std::lock_guard<std::mutex> lock(mu_);
    refusal_ = std::move(status);
    accept_before_refusing_ = after;
  }
  // Every sequence fails with finish_reason "error" after `tokens` tokens (-1: never).
  void fail_after(int tokens) { fail_after_.store(tokens); }
  // Every sequence stops with "stop" (end of generation) after `tokens` tokens (-1: never).
  void end_after(int tokens) { end_after_.store(tokens); }
  void set_ready(bool ready) { ready_.store(ready); }
  // Before any request: the chat format prompts are rendered with.
  void set_chat_format(const ChatFormat& format) { chat_format_ = format; }
  // Before any request: a context other than kContextLength (harmony's
  // system message alone is ~300 of these byte tokens).
  void set_context_length(int64_t tokens) { context_length_ = tokens; }
  void set_tick(std::chrono::milliseconds tick) { tick_ms_.store(static_cast<int>(tick.count())); }
  // Every finished sequence reports this many prompt tokens (at most its
  // prompt) as served from the prefix cache.
  void set_cached_tokens(int64_t tokens) { cached_tokens_.store(tokens); }

  // --- what happened -------------------------------------------------------
  std::vector<EngineRequest> submitted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return submitted_;
  }
  std::vector<std::shared_ptr<RequestStream>> streams() const {
    std::lock_guard<std::mutex> lock(mu_);
    return streams_;
  }
  int rejected() const { return rejected_.load(); }
  size_t active() const {
    std::lock_guard<std::mutex> lock(mu_);
    return active_.size();
  }

  // --- InferenceService ----------------------------------------------------
  Result<std::shared_ptr<RequestStream>> submit(EngineRequest request) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!refusal_.is_ok()) {
      if (accept_before_refusing_ <= 0) return refusal_;
      --accept_before_refusing_;
    }
    auto stream = std::make_shared<RequestStream>();
    submitted_.push_back(request);
    streams_.push_back(stream);
    Sequence seq;
    seq.request = std::move(request);
    seq.stream = stream;
    active_.push_back(std::move(seq));
    cv_.notify_all();
    return stream;
  }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  const ChatFormat& chat_format() const override { return chat_format_; }
  ServiceInfo info() const override { return ServiceInfo{"test-model", context_length_, tokenizer_->vocab_size()}; }
  bool ready() const override { return ready_.load(); }
  std::string metrics_text() const override { return "# TYPE fake_engine_metric counter\nfake_engine_metric 7\n"; }
  void count_rejected_request() override { rejected_.fetch_add(1); }

 private:
  struct Sequence {
    EngineRequest request;
    std::shared_ptr<RequestStream> stream;
    int64_t produced = 0;
    std::string text;     // generated so far
    size_t sent = 0;      // bytes of `text` already pushed
  };

  // Text that can go out: everything except a tail that could still be
  // the start of a stop string.
  static size_t safe_length(const Sequence& s) {
    size_t hold = 0;
    for (const std::string& stop : s.request.stop) hold = std::max(hold, stop.size() - 1);
    return s.text.size() > hold ? s.text.size() - hold : 0;
  }

  void finish(Sequence& s, const std::string& reason, StreamEvent e) const {
    e.finished = true;
    e.finish_reason = reason;
    if (reason == "error") e.error = "scripted failure";
    e.prompt_tokens = static_cast<int64_t>(s.request.prompt.size());
    e.cached_tokens = std::min(cached_tokens_.load(), e.prompt_tokens);
    e.completion_tokens = s.produced;
    s.stream->push(std::move(e));
  }

  // One token for `s`; true when the sequence is finished.
  bool step(Sequence& s) {
    if (s.stream->cancelled()) {
      finish(s, "cancelled", StreamEvent{});
      return true;
    }
    if (fail_after_.load() >= 0 && s.produced >= fail_after_.load()) {
      finish(s, "error", StreamEvent{});
      return true;
    }
    StreamEvent e;
    if (end_after_.load() >= 0 && s.produced >= end_after_.load()) {
      e.text = s.text.substr(s.sent);
      finish(s, "stop", std::move(e));
      return true;
    }
    const int32_t id = reply_[static_cast<size_t>(s.produced) % reply_.size()];
    ++s.produced;
    GeneratedToken token;
    token.token = id;
    if (s.request.sampling.wants_logprobs()) {
      token.logprob = -0.25f;
      for (int32_t k = 0; k < s.request.sampling.top_logprobs; ++k) {
        token.top.push_back(TokenLogprob{k == 0 ? id : static_cast<int32_t>('a' + k), -0.25f - static_cast<float>(k)});
      }
    }
    e.tokens.push_back(token);
    s.text += tokenizer_->token_to_piece(id);
    for (const std::string& stop : s.request.stop) {
      const size_t at = s.text.find(stop);
      if (at != std::string::npos) {
        e.text = s.text.substr(s.sent, at - std::min(at, s.sent));
        finish(s, "stop", std::move(e));
        return true;
      }
    }
    const bool at_limit = s.request.max_tokens > 0
                              ? s.produced >= s.request.max_tokens
                              : s.produced + static_cast<int64_t>(s.request.prompt.size()) >= context_length_;
    const size_t safe = at_limit ? s.text.size() : safe_length(s);
    if (safe > s.sent) {
      e.text = s.text.substr(s.sent, safe - s.sent);
      s.sent = safe;
    }
    if (at_limit) {
      finish(s, "length", std::move(e));
      return true;
    }
    s.stream->push(std::move(e));
    return false;
  }

  void run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (active_.empty()) {
        cv_.wait(lock, [&] { return stop_ || !active_.empty(); });
        continue;
      }
      for (size_t i = 0; i < active_.size();) {
        if (step(active_[i])) {
          active_.erase(active_.begin() + static_cast<std::ptrdiff_t>(i));
        } else {
          ++i;
        }
      }
      cv_.wait_for(lock, std::chrono::milliseconds(tick_ms_.load()), [&] { return stop_; });
    }
    for (Sequence& s : active_) finish(s, "cancelled", StreamEvent{});
  }

  std::unique_ptr<Tokenizer> tokenizer_;
  ChatFormat chat_format_;
  int64_t context_length_ = kContextLength;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
  bool stop_ = false;
  std::vector<int32_t> reply_;
  Status refusal_;
  int accept_before_refusing_ = 0;
  std::vector<Sequence> active_;
  std::vector<EngineRequest> submitted_;
  std::vector<std::shared_ptr<RequestStream>> streams_;
  std::atomic<int> fail_after_{-1};
  std::atomic<int> end_after_{-1};
  std::atomic<bool> ready_{true};
  std::atomic<int> tick_ms_{2};
  std::atomic<int> rejected_{0};
  std::atomic<int64_t> cached_tokens_{0};
};

}  // namespace omnibus::server::testing
