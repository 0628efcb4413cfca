// Pre-tokenization for byte-level BPE: splitting text into "words" with the
// regexes of the model's pre-tokenizer (tokenizer.ggml.pre), before merges
// run inside each word. The regexes are llama.cpp's for the same pre type,
// run with PCRE2 (UTF + UCP) so \p{L} and \p{N} are Unicode classes. A pre
// type may chain several regexes: each one splits the pieces the previous
// one left, and text a regex does not match stays a piece of its own.
//
// Where llama.cpp's own regex engine differs from a textbook regex engine
// we follow llama.cpp: \s means exactly the Unicode White_Space set (no
// U+180E), and letters/digits added in Unicode 15 count as \p{L}/\p{N} even
// when the PCRE2 build knows an older Unicode.
//
// Thread-safety: immutable after create(); split() may run concurrently.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace omnibus::tokenizer_internal {

enum class PreTokenizerKind {
  kDefault,         // llama.cpp's fallback chain (punctuation runs, GPT-2, digit runs)
  kGpt2,            // the GPT-2 regex
  kDigitsThenGpt2,  // every digit alone, then GPT-2 (smollm, starcoder, ...)
  kLlama3,          // Llama 3: contractions any case, digits in threes
  kQwen2,           // as Llama 3 but digits one by one
  kGpt4o,           // o200k (gpt-4o, gpt-oss, Phi-4-mini, Llama 4): words split at case changes
};

// How llama.cpp treats a tokenizer.ggml.pre name.
struct PreTokenizerConfig {
  PreTokenizerKind kind = PreTokenizerKind::kDefault;
  bool recognised = true;      // false: unknown name, fell back to kDefault
  bool ignore_merges = false;  // a word that is a whole token skips merging
  bool clean_spaces = true;    // decode() removes spaces before ,.?! etc.
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
};
PreTokenizerConfig pre_tokenizer_config(std::string_view pre_name);

// A piece of the split text, as byte offsets [begin, end).
struct TextSpan {
  size_t begin = 0;
  size_t end = 0;
};

class PreTokenizer {
 public:
  static Result<std::unique_ptr<PreTokenizer>> create(PreTokenizerKind kind);
  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Splits `text`, which must be valid UTF-8 (the caller sanitizes it), into
  // consecutive spans that cover it exactly and end on character boundaries.
  std::vector<TextSpan> split(std::string_view text) const;

 private:
  struct Pattern;
  PreTokenizer() = default;
  void split_with(const Pattern& pattern, std::string_view text, const std::vector<TextSpan>& in,
                  std::vector<TextSpan>* out) const;
  std::vector<std::unique_ptr<Pattern>> patterns_;
};

// Rewrites \s, \S, \p{L} and \p{N} in a regex into the explicit classes
// described above (exposed for tests).
std::string expand_pattern_classes(std::string_view pattern);

}  // namespace omnibus::tokenizer_internal
