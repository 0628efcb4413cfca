// Synthetic text of a given length in tokens: random English words (unique
// per call, so prompts do not share cached prefixes by accident) or
// repetitive source code. Lengths are measured with the TokenCounter and
// fitted within ~2% in a few counts. Not thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <utility>

namespace omnibus::bench {

class TextSource {
 public:
  using Counter = std::function<int64_t(const std::string&)>;
  TextSource(uint64_t seed, Counter counter) : rng_(seed), counter_(std::move(counter)) {}

  // `lead` then random words: the text and its measured token count.
  std::pair<std::string, int64_t> words_of_tokens(int64_t tokens, const std::string& lead);
  // Python functions in one repeated pattern, ending mid-function so that the
  // natural continuation is more of the same. `variant` varies the names.
  std::pair<std::string, int64_t> code_of_tokens(int64_t tokens, int64_t variant);

 private:
  // Finds the number of units (words, functions) whose text is closest to
  // `tokens`, starting from `units_per_token`, which it then updates.
  std::pair<std::string, int64_t> fit(int64_t tokens, double& units_per_token,
                                      const std::function<std::string(int64_t units)>& make);

  std::mt19937_64 rng_;
  Counter counter_;
  double words_per_token_ = 0.75;
  double functions_per_token_ = 1.0 / 40;
};

}  // namespace omnibus::bench
