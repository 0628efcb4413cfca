// Turns generated token ids into text that is safe to show now: never a
// broken UTF-8 sequence (StreamDecoder) and never the start of a stop
// string that may still complete (StopMatcher). Not thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sampling/stop_matcher.h"
#include "tokenizer/stream_decoder.h"

namespace omnibus {

class TextStream {
 public:
  // `render_special`: control tokens come out as their text (an
  // end-of-generation token ends generation before it is pushed, unless the
  // request ignores it: then it is text too).
  TextStream(const Tokenizer& tokenizer, std::vector<std::string> stop_strings, bool render_special = false)
      : decoder_(tokenizer, render_special), stops_(std::move(stop_strings)) {}

  struct Piece {
    std::string text;      // emit now
    bool stopped = false;  // a stop string matched: end generation
  };
  Piece push(int32_t token) {
    StopMatcher::Step step = stops_.feed(decoder_.push(token));
    return {std::move(step.text), step.stopped};
  }
  // Everything still held back, at the end of generation.
  std::string finish() {
    if (stops_.stopped()) return "";
    stops_.feed(decoder_.flush());
    return stops_.finish();
  }

 private:
  StreamDecoder decoder_;
  StopMatcher stops_;
};

}  // namespace omnibus
