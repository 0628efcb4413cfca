// StopMatcher: applies OpenAI `stop` strings to streamed text.
//
// Fed the detokenized text of each new token, it returns the text that is
// safe to send now. It holds back (a) the longest tail that could still grow
// into a stop string, and (b) a trailing incomplete UTF-8 sequence (byte-level
// BPE tokens can end inside a character), so a stop string spanning several
// tokens is never half-sent and a streamed chunk never ends mid-character.
// When a stop string completes, the text is cut just before it; the stop
// string itself is never emitted, and nothing after it either.
//
// Among several stop strings the one that completes first (earliest end,
// then the longest) wins, so the result is the same however the text is
// split into pieces. Matching is on bytes; empty stop strings are ignored.
//
// Not thread-safe; one per sequence.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace omnibus {

class StopMatcher {
 public:
  struct Step {
    std::string text;      // safe to emit now (may be empty)
    bool stopped = false;  // a stop string completed: finish the sequence
  };

  explicit StopMatcher(std::vector<std::string> stop_strings);

  // Adds a piece of generated text. After a stop, returns {"", true} forever.
  Step feed(std::string_view piece);

  // The sequence ended for another reason (EOS, max tokens): returns all
  // held-back text, even an incomplete UTF-8 tail. Empty after a stop.
  std::string finish();

  bool stopped() const { return stopped_; }
  // The stop string that matched; empty unless stopped().
  const std::string& matched_stop() const { return matched_stop_; }
  // Bytes currently held back.
  size_t held_bytes() const { return held_.size(); }

 private:
  // Position and stop index of the first stop string to complete in held_;
  // returns false if none does.
  bool find_first_stop(size_t& position, size_t& stop_index) const;
  // Length of the longest tail of held_ that is a proper prefix of a stop.
  size_t stop_prefix_tail() const;

  std::vector<std::string> stops_;
  std::string held_;
  std::string matched_stop_;
  bool stopped_ = false;
};

// Length of a trailing UTF-8 sequence that is started but not complete
// (0 when the text ends on a character boundary or in invalid bytes).
size_t incomplete_utf8_tail(std::string_view text);

}  // namespace omnibus
