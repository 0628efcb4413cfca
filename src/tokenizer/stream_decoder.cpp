#include "tokenizer/stream_decoder.h"

#include "tokenizer/utf8.h"

namespace omnibus {

using tokenizer_internal::kReplacementChar;
using tokenizer_internal::Utf8Step;

std::string StreamDecoder::push(int32_t id) {
  pending_ += tokenizer_.token_to_piece(id, render_special_);
  std::string ready;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const Utf8Step step = tokenizer_internal::next_utf8_sequence(std::string_view(pending_).substr(pos));
    if (step.kind == Utf8Step::kIncomplete) break;  // wait for the rest of the character
    if (step.kind == Utf8Step::kValid) {
      ready.append(pending_, pos, step.length);
    } else {
      tokenizer_internal::append_utf8(kReplacementChar, &ready);
    }
    pos += step.length;
  }
  pending_.erase(0, pos);
  return ready;
}

std::string StreamDecoder::flush() {
  std::string out;
  if (!pending_.empty()) tokenizer_internal::append_utf8(kReplacementChar, &out);
  pending_.clear();
  return out;
}

}  // namespace omnibus
