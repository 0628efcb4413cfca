#include "server/generation_session.h"

#include <algorithm>
#include <random>
#include <utility>

namespace omnibus::server {
namespace {

using std::chrono::milliseconds;

// With several choices, no single stream is waited on for long, so an event
// on another one is not held up.
constexpr milliseconds kMultiChoiceSlice{10};

}  // namespace

GenerationSession::GenerationSession(const PreparedGeneration& generation, ResponseMeta meta,
                                     std::vector<std::shared_ptr<RequestStream>> streams, const Tokenizer& tokenizer,
                                     Clock::time_point arrival)
    : chat_(generation.chat),
      include_usage_(generation.options.include_usage),
      logprobs_(generation.options.sampling.wants_logprobs()),
      prompt_tokens_(generation.prompt_tokens()),
      choices_per_prompt_(static_cast<size_t>(std::max<int32_t>(1, generation.options.n))),
      meta_(std::move(meta)),
      streams_(std::move(streams)),
      arrival_(arrival) {
  meta_.include_usage = include_usage_;
  // Prompt p's choice i is choice p * n + i, and so is its stream.
  choices_.reserve(generation.prompts.size() * choices_per_prompt_);
  // Call ids must not repeat across requests: seeded at random.
  const uint64_t id_seed =
      generation.tool_names.empty() ? 0 : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  for (const PreparedPrompt& prompt : generation.prompts) {
    for (size_t i = 0; i < choices_per_prompt_; ++i) {
      const auto index = static_cast<int32_t>(choices_.size());
      choices_.emplace_back(index, tokenizer, logprobs_, generation.echo ? prompt.echo_text : std::string(),
                            generation.split_reasoning, generation.opens_thought, generation.harmony);
      if (!generation.tool_names.empty()) choices_.back().read_tool_calls(generation.tool_names, id_seed + index);
      if (static_cast<size_t>(index) >= streams_.size()) choices_.back().finish_without_generating();
    }
  }
}

GenerationSession::~GenerationSession() { cancel_all(); }

void GenerationSession::cancel_all() {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!choices_[i].finished()) {
      cancel_requested_ = true;
      streams_[i]->cancel();
    }
  }
}

bool GenerationSession::all_finished() const {
  return std::all_of(choices_.begin(), choices_.end(), [](const ChoiceState& c) { return c.finished(); });
}

int64_t GenerationSession::completion_tokens() const {
  int64_t total = 0;
  for (const ChoiceState& c : choices_) total += c.completion_tokens();
  return total;
}

int64_t GenerationSession::cached_tokens() const {
  int64_t total = 0;
  for (size_t first = 0; first < choices_.size(); first += choices_per_prompt_) {
    const size_t end = std::min(choices_.size(), first + choices_per_prompt_);
    int64_t fewest = choices_[first].cached_tokens();
    for (size_t i = first + 1; i < end; ++i) fewest = std::min(fewest, choices_[i].cached_tokens());
    total += fewest;
  }
  return total;
}

Usage GenerationSession::usage() const { return Usage{prompt_tokens(), completion_tokens(), cached_tokens()}; }

bool GenerationSession::failed() const {
  if (stream_failed_) return true;
  return std::any_of(choices_.begin(), choices_.end(),
                     [this](const ChoiceState& c) { return choice_error(c).has_value(); });
}

std::optional<ApiError> GenerationSession::choice_error(const ChoiceState& choice) const {
  if (!choice.finished() || !openai_finish_reason(choice.finish_reason()).empty()) return std::nullopt;
  ApiError e;
  if (choice.finish_reason() == "cancelled") {
    e.http_status = 503;
    e.type = "service_unavailable_error";
    e.code = "cancelled";
    e.message = "the request was cancelled by the server (it is shutting down); retry later";
    return e;
  }
  e.http_status = 500;
  e.type = "server_error";
  e.code = "generation_failed";
  e.message = "generation failed: " + (choice.error().empty() ? std::string("unknown engine error") : choice.error());
  return e;
}

void GenerationSession::note_tokens(const StreamEvent& event) {
  if (ttft_ms_ < 0 && !event.tokens.empty()) {
    ttft_ms_ = std::chrono::duration<double, std::milli>(Clock::now() - arrival_).count();
  }
}

void GenerationSession::collect(milliseconds wait, std::vector<Arrived>& out) {
  std::vector<StreamEvent> events;
  size_t unfinished = 0;
  size_t first_unfinished = streams_.size();
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (choices_[i].finished()) continue;
    ++unfinished;
    first_unfinished = std::min(first_unfinished, i);
    events.clear();
    if (streams_[i]->wait(events, milliseconds(0))) {
      for (StreamEvent& e : events) out.push_back(Arrived{i, std::move(e)});
    }
  }
  if (!out.empty() || unfinished == 0) return;
  events.clear();
  const milliseconds slice = unfinished > 1 ? std::min(wait, kMultiChoiceSlice) : wait;
  if (streams_[first_unfinished]->wait(events, slice)) {
    for (StreamEvent& e : events) out.push_back(Arrived{first_unfinished, std::move(e)});
  }
}

std::string GenerationSession::chunk_for(const ChoiceOutput& delta) const {
  return chat_ ? build_chat_chunk(meta_, delta, /*role_chunk=*/false) : build_completion_chunk(meta_, delta);
}

std::string GenerationSession::finish_chunk_for(const ChoiceState& choice) const {
  ChoiceOutput last;
  last.index = choice.index();
  last.finish_reason = choice.client_finish_reason();
  // Completions keep their logprobs arrays (empty) in every chunk when
  // asked for; chat's last chunk has "logprobs": null, as OpenAI's.
  if (logprobs_ && !chat_) last.logprobs.emplace();
  return chunk_for(last);
}

bool GenerationSession::write_preamble(const Writer& write) {
  for (const ChoiceState& c : choices_) {
    ChoiceOutput first;
    first.index = c.index();
    if (chat_) {
      if (!write(format_sse(build_chat_chunk(meta_, first, /*role_chunk=*/true)))) return false;
    } else {
      first.text = c.full_output().text;  // the echoed prompt, if any
      if (!first.text.empty() && !write(format_sse(chunk_for(first)))) return false;
    }
    if (c.finished()) {  // max_tokens 0: nothing will come
      if (!write(format_sse(finish_chunk_for(c)))) return false;
    }
  }
  return true;
}

bool GenerationSession::finish_stream(const Writer& write) {
  if (include_usage_) {
    if (!write(format_sse(build_usage_chunk(meta_, usage(), chat_)))) return false;
  }
  if (!write(sse_done())) return false;
  done_ = true;
  return true;
}

bool GenerationSession::pump(const Writer& write, milliseconds wait) {
  if (done_) return true;
  if (!started_) {
    started_ = true;
    if (!write_preamble(write)) {
      cancel_all();
      return false;
    }
  }
  std::vector<Arrived> arrived;
  collect(wait, arrived);
  for (Arrived& a : arrived) {
    ChoiceState& choice = choices_[a.choice];
    if (choice.finished()) continue;
    note_tokens(a.event);
    ChoiceOutput delta = choice.apply(a.event);
    if (std::optional<ApiError> error = choice_error(choice)) {
      // Headers (200) are long gone: the error travels as an SSE event.
      stream_failed_ = true;
      cancel_all();
      done_ = write(format_sse_error(*error)) && write(sse_done());
      return done_;
    }
    // The finish_reason goes in a chunk of its own, after the last text.
    delta.finish_reason.clear();
    const bool has_logprobs = delta.logprobs && !delta.logprobs->empty();
    const bool has_content =
        !delta.text.empty() || !delta.reasoning.empty() || !delta.tool_calls.empty() || has_logprobs;
    if ((has_content && !write(format_sse(chunk_for(delta)))) ||
        (choice.finished() && !write(format_sse(finish_chunk_for(choice))))) {
      cancel_all();
      return false;
    }
  }
  if (all_finished() && !finish_stream(write)) {
    cancel_all();
    return false;
  }
  return true;
}

bool GenerationSession::wait_all(const std::function<bool()>& give_up) {
  std::vector<Arrived> arrived;
  while (!all_finished()) {
    if (give_up && give_up()) {
      cancel_all();
      return false;
    }
    arrived.clear();
    collect(milliseconds(100), arrived);
    for (Arrived& a : arrived) {
      ChoiceState& choice = choices_[a.choice];
      if (choice.finished()) continue;
      note_tokens(a.event);
      choice.apply(a.event);
    }
    if (failed()) {
      cancel_all();  // the answer is an error whatever the other choices do
      return true;
    }
  }
  return true;
}

ApiResult<std::string> GenerationSession::response_body() const {
  for (const ChoiceState& c : choices_) {
    if (std::optional<ApiError> e = choice_error(c)) return *e;
  }
  std::vector<ChoiceOutput> outputs;
  outputs.reserve(choices_.size());
  for (const ChoiceState& c : choices_) outputs.push_back(c.full_output());
  return chat_ ? build_chat_response(meta_, outputs, usage()) : build_completion_response(meta_, outputs, usage());
}

}  // namespace omnibus::server
