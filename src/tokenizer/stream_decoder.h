// Turns generated token ids, one at a time, into text that is safe to send
// now. A token may end in the middle of a UTF-8 character (an emoji spelled
// as four byte tokens); those trailing bytes are held back until the
// character completes. Bytes that can never form a character are replaced by
// U+FFFD at once, and flush() replaces whatever incomplete tail is left.
// Everything push() and flush() return is valid UTF-8, and their
// concatenation equals sanitize_utf8() of all pieces joined.
//
// Not thread-safe (one per sequence); the Tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"

namespace omnibus {

class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool render_special = false)
      : tokenizer_(tokenizer), render_special_(render_special) {}

  // Text completed by this token (may be empty).
  std::string push(int32_t id);
  // The held-back tail, as U+FFFD if it never completed; resets the decoder.
  std::string flush();
  // Bytes currently held back (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  const Tokenizer& tokenizer_;
  bool render_special_;
  std::string pending_;
};

}  // namespace omnibus
