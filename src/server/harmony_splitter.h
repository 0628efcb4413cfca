// HarmonySplitter: splits a gpt-oss answer, as it streams, into its
// thoughts (reasoning_content) and its answer (content). The model writes
// messages in OpenAI's harmony frame (tokenizer/chat_harmony.h), the first
// one's "<|start|>assistant" already in the prompt:
//
//   <|channel|>analysis<|message|>{thoughts}<|end|>
//   <|start|>assistant<|channel|>final<|message|>{answer}
//
// (the engine renders these special tokens as text for such a request;
// <|return|> ends generation and has none). A message's header runs up to
// <|message|>, its body up to <|end|> (or to a <|start|> that opens the next
// message without one). Bodies of the analysis channel are thoughts; every
// other channel's (final, commentary) are content. An answer that does not
// open with a header ("<|"), or a header that runs on past any real one's
// length, is plain content: the model left the format. The split does not
// depend on how the text is cut into pieces.
//
// Text comes in arbitrary pieces, so a possible start of "<|end|>" or
// "<|start|>" at the end of a body is held back until the next piece or
// finish(); a header is held until its <|message|>. A header cut off by the end of generation is
// dropped (it is markup); a body cut off is kept.
//
// Not thread-safe: one per choice, used by the thread that serves it.
#pragma once

#include <string>
#include <string_view>

#include "server/reasoning_splitter.h"

namespace omnibus::server {

class HarmonySplitter {
 public:
  ReasoningPiece feed(std::string_view text);
  ReasoningPiece finish();

 private:
  enum class State { kHeader, kBody, kPlain };
  void drain(bool final, ReasoningPiece& out);

  State state_ = State::kHeader;
  std::string pending_;       // text not yet assigned
  bool in_analysis_ = false;  // the current body is the analysis channel's
};

}  // namespace omnibus::server
