// ReasoningSplitter: splits a reasoning model's answer, as it streams, into
// its thoughts (the API's reasoning_content) and the rest (content), the way
// llama-server's and vLLM's reasoning parsers do for Qwen3 and DeepSeek-R1:
// an answer that opens with "<think>" (after any whitespace) is thought up
// to "</think>"; the newlines just inside the block and just after it are
// dropped (as the chat template writes them). An answer that does not open
// with a think block is all content; one cut off inside the block is all
// thought.
//
// Text comes in arbitrary pieces (a tag may be split across tokens), so a
// piece that could be the start of a tag, or newlines that could be the
// block's last, are held back until the next piece says what they are, or
// until finish().
//
// Not thread-safe: one per choice, used by the thread that serves it.
#pragma once

#include <string>
#include <string_view>

namespace omnibus::server {

struct ReasoningPiece {
  std::string reasoning;
  std::string content;
};

// The length of the longest suffix of `s` that is a proper prefix of `tag`:
// text that may turn into the tag with the next piece.
size_t partial_tag_suffix(std::string_view s, std::string_view tag);

class ReasoningSplitter {
 public:
  // `in_thought`: the prompt already opened the block (a thinking-only
  // model's template ends with "<think>\n"), so the answer starts inside it.
  explicit ReasoningSplitter(bool in_thought = false) : state_(in_thought ? State::kThinking : State::kStart) {}

  // The next piece of the answer; returns what can be told apart so far.
  ReasoningPiece feed(std::string_view text);
  // The end of the answer: whatever was held back.
  ReasoningPiece finish();

 private:
  enum class State { kStart, kThinking, kAfterThought, kContent };
  void drain(bool final, ReasoningPiece& out);

  State state_;
  std::string pending_;           // text not yet assigned
  bool thought_started_ = false;  // a thought character was emitted (leading newlines are skipped until then)
};

}  // namespace omnibus::server
