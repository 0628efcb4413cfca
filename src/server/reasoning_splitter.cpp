#include "server/reasoning_splitter.h"

#include <algorithm>

namespace omnibus::server {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t leading_newlines(std::string_view s) {
  const size_t n = s.find_first_not_of('\n');
  return n == std::string_view::npos ? s.size() : n;
}

}  // namespace

size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

ReasoningPiece ReasoningSplitter::feed(std::string_view text) {
  pending_.append(text);
  ReasoningPiece out;
  drain(false, out);
  return out;
}

ReasoningPiece ReasoningSplitter::finish() {
  ReasoningPiece out;
  drain(true, out);
  return out;
}

void ReasoningSplitter::drain(bool final, ReasoningPiece& out) {
  for (;;) {
    switch (state_) {
      case State::kStart: {
        // Leading whitespace, then either "<think>" or anything else.
        const size_t first = std::find_if_not(pending_.begin(), pending_.end(), is_space) - pending_.begin();
        const std::string_view rest = std::string_view(pending_).substr(first);
        if (rest.starts_with(kOpen)) {
          pending_.erase(0, first + kOpen.size());
          state_ = State::kThinking;
          continue;
        }
        if (!final && kOpen.starts_with(rest)) return;  // all whitespace, or a prefix of "<think>"
        state_ = State::kContent;
        continue;
      }
      case State::kThinking: {
        if (!thought_started_) {  // the newlines right after "<think>"
          pending_.erase(0, leading_newlines(pending_));
        }
        const size_t close = pending_.find(kClose);
        std::string_view thought = pending_;
        if (close != std::string::npos) thought = thought.substr(0, close);
        // Hold back a possible start of "</think>" and the newlines before
        // it, which are dropped if the block closes there.
        size_t keep = close != std::string::npos || final ? 0 : partial_tag_suffix(thought, kClose);
        std::string_view emit = thought.substr(0, thought.size() - keep);
        if (close != std::string::npos || !final) {
          while (!emit.empty() && emit.back() == '\n') emit.remove_suffix(1);
        }
        if (!emit.empty()) thought_started_ = true;
        out.reasoning.append(emit);
        if (close != std::string::npos) {
          pending_.erase(0, close + kClose.size());
          state_ = State::kAfterThought;
          continue;
        }
        pending_.erase(0, emit.size());
        return;
      }
      case State::kAfterThought: {  // the newlines between "</think>" and the answer
        pending_.erase(0, leading_newlines(pending_));
        if (pending_.empty() && !final) return;
        state_ = State::kContent;
        continue;
      }
      case State::kContent:
        out.content.append(pending_);
        pending_.clear();
        return;
    }
  }
}

}  // namespace omnibus::server
