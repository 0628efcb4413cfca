// Teacher-forced evaluation: next-token negative log-likelihood and argmax
// over a token sequence, as perplexity tools and the golden tests use it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "engine/generator.h"

namespace omnibus {

struct TeacherForcedResult {
  std::vector<int32_t> argmax;  // predicted next token after each position
  std::vector<double> nll;      // -log p(tokens[i+1] | tokens[0..i]), size n-1
  double mean_nll() const;
};

// Runs `tokens` from a fresh cache (log-softmax in double precision).
Result<TeacherForcedResult> evaluate_teacher_forced(Generator& generator, std::span<const int32_t> tokens);

}  // namespace omnibus
