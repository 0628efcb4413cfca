#include "server/choice_state.h"

#include <utility>

namespace omnibus::server {

std::string openai_finish_reason(const std::string& engine_reason) {
  if (engine_reason == "stop" || engine_reason == "length") return engine_reason;
  return "";
}

ChoiceState::ChoiceState(int32_t index, const Tokenizer& tokenizer, bool logprobs, std::string echo_text,
                         bool split_reasoning, bool opens_thought, bool harmony)
    : index_(index),
      tokenizer_(tokenizer),
      logprobs_(logprobs),
      text_(std::move(echo_text)),
      split_reasoning_(split_reasoning),
      harmony_(harmony),
      splitter_(opens_thought) {
  next_offset_ = static_cast<int64_t>(text_.size());
}

GeneratedTokenLogprobs ChoiceState::token_logprobs(const GeneratedToken& token) {
  GeneratedTokenLogprobs out;
  // Control tokens (end of turn, ...) are shown by name in logprobs, though
  // they add nothing to the text and so do not move text_offset.
  out.chosen.token = tokenizer_.token_to_piece(token.token, /*render_special=*/true);
  out.chosen.logprob = token.logprob;
  out.top.reserve(token.top.size());
  for (const TokenLogprob& alt : token.top) {
    out.top.push_back(TokenLogprobText{tokenizer_.token_to_piece(alt.token, /*render_special=*/true), alt.logprob});
  }
  out.text_offset = next_offset_;
  next_offset_ += static_cast<int64_t>(tokenizer_.token_to_piece(token.token).size());
  return out;
}

ChoiceOutput ChoiceState::apply(const StreamEvent& event) {
  ChoiceOutput delta;
  delta.index = index_;
  if (finished_) return delta;
  if (split_reasoning_) {
    ReasoningPiece piece = harmony_ ? harmony_splitter_.feed(event.text) : splitter_.feed(event.text);
    if (event.finished) {
      ReasoningPiece rest = harmony_ ? harmony_splitter_.finish() : splitter_.finish();
      piece.reasoning += rest.reasoning;
      piece.content += rest.content;
    }
    delta.text = std::move(piece.content);
    delta.reasoning = std::move(piece.reasoning);
    reasoning_ += delta.reasoning;
  } else {
    delta.text = event.text;
  }
  if (tool_splitter_) {
    ToolCallPiece piece = tool_splitter_->feed(delta.text);
    if (event.finished) {
      // Content after a call in the last piece goes after it (there is no
      // later chunk to put it in).
      ToolCallPiece rest = tool_splitter_->finish();
      piece.content += rest.content;
      for (ToolCall& c : rest.calls) piece.calls.push_back(std::move(c));
    }
    delta.text = std::move(piece.content);
    delta.first_tool_call = static_cast<int32_t>(tool_calls_.size());
    tool_calls_.insert(tool_calls_.end(), piece.calls.begin(), piece.calls.end());
    delta.tool_calls = std::move(piece.calls);
  }
  text_ += delta.text;
  if (!event.tokens.empty()) has_tokens_ = true;
  tokens_seen_ += static_cast<int64_t>(event.tokens.size());
  if (logprobs_) {
    std::vector<GeneratedTokenLogprobs> added;
    added.reserve(event.tokens.size());
    for (const GeneratedToken& t : event.tokens) added.push_back(token_logprobs(t));
    all_logprobs_.insert(all_logprobs_.end(), added.begin(), added.end());
    delta.logprobs = std::move(added);
  }
  if (event.finished) {
    finished_ = true;
    finish_reason_ = event.finish_reason.empty() ? "error" : event.finish_reason;
    error_ = event.error;
    completion_tokens_ = event.completion_tokens;
    cached_tokens_ = event.cached_tokens;
    delta.finish_reason = client_finish_reason();
  }
  return delta;
}

void ChoiceState::read_tool_calls(std::vector<std::string> tool_names, uint64_t id_seed) {
  tool_splitter_.emplace(std::move(tool_names), id_seed);
}

std::string ChoiceState::client_finish_reason() const {
  std::string reason = openai_finish_reason(finish_reason_);
  return reason == "stop" && !tool_calls_.empty() ? "tool_calls" : reason;
}

void ChoiceState::finish_without_generating() {
  if (finished_) return;
  finished_ = true;
  finish_reason_ = "length";
}

ChoiceOutput ChoiceState::full_output() const {
  ChoiceOutput out;
  out.index = index_;
  out.text = text_;
  out.reasoning = reasoning_;
  out.finish_reason = client_finish_reason();
  out.tool_calls = tool_calls_;
  if (logprobs_) out.logprobs = all_logprobs_;
  return out;
}

}  // namespace omnibus::server
