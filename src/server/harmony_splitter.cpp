#include "server/harmony_splitter.h"

#include <algorithm>

namespace omnibus::server {
namespace {

constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEnd = "<|end|>";
constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
// Longer than any header the format writes ("<|start|>assistant to=
// functions.name<|channel|>commentary <|constrain|>json" and the like).
constexpr size_t kMaxHeader = 256;

// The channel a header names: the word after <|channel|>, "" without one.
std::string_view channel_of(std::string_view header) {
  const size_t at = header.find(kChannel);
  if (at == std::string_view::npos) return {};
  const std::string_view rest = header.substr(at + kChannel.size());
  return rest.substr(0, rest.find_first_of(" <"));
}

}  // namespace

ReasoningPiece HarmonySplitter::feed(std::string_view text) {
  pending_.append(text);
  ReasoningPiece out;
  drain(false, out);
  return out;
}

ReasoningPiece HarmonySplitter::finish() {
  ReasoningPiece out;
  drain(true, out);
  return out;
}

void HarmonySplitter::drain(bool final, ReasoningPiece& out) {
  for (;;) {
    switch (state_) {
      case State::kPlain:
        out.content += pending_;
        pending_.clear();
        return;
      case State::kHeader: {
        // A header starts with a tag and ends at <|message|> within
        // kMaxHeader bytes; anything else is the model writing plain text.
        // Decided the same way however the text is cut into pieces.
        const bool tag_start = pending_.starts_with("<|") || std::string_view("<|").starts_with(pending_);
        if (!tag_start) {
          state_ = State::kPlain;
          continue;
        }
        const size_t at = pending_.find(kMessage);
        if (at != std::string::npos && at <= kMaxHeader) {
          in_analysis_ = channel_of(std::string_view(pending_).substr(0, at)) == "analysis";
          pending_.erase(0, at + kMessage.size());
          state_ = State::kBody;
          continue;
        }
        if (at != std::string::npos || pending_.size() > kMaxHeader + kMessage.size() - 1) {
          state_ = State::kPlain;
          continue;
        }
        if (final) pending_.clear();  // a header cut off: markup, dropped
        return;
      }
      case State::kBody: {
        // A body ends at <|end|>, or at a <|start|> that opens the next
        // message without one (kept: it begins that message's header).
        const size_t end = pending_.find(kEnd), start = pending_.find(kStart);
        const bool ends_at_start = start < end;
        const size_t stop = std::min(end, start);
        std::string_view body = pending_;
        if (stop != std::string::npos) body = body.substr(0, stop);
        const size_t keep = stop != std::string::npos || final
                                ? 0
                                : std::max(partial_tag_suffix(body, kEnd), partial_tag_suffix(body, kStart));
        const std::string_view emit = body.substr(0, body.size() - keep);
        (in_analysis_ ? out.reasoning : out.content).append(emit);
        if (stop != std::string::npos) {
          pending_.erase(0, ends_at_start ? stop : stop + kEnd.size());
          state_ = State::kHeader;
          continue;
        }
        pending_.erase(0, emit.size());
        return;
      }
    }
  }
}

}  // namespace omnibus::server
