#include "engine/evaluation.h"

#include <cmath>

namespace omnibus {

double TeacherForcedResult::mean_nll() const {
  if (nll.empty()) return 0.0;
  double sum = 0.0;
  for (double v : nll) sum += v;
  return sum / static_cast<double>(nll.size());
}

Result<TeacherForcedResult> evaluate_teacher_forced(Generator& generator, std::span<const int32_t> tokens) {
  OMNIBUS_ASSIGN_OR_RETURN(std::vector<float> logits, generator.all_logits(tokens, 0));
  const size_t vocab = logits.size() / tokens.size();
  TeacherForcedResult r;
  r.argmax.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float* row = logits.data() + i * vocab;
    size_t best = 0;
    double max_logit = row[0];
    for (size_t v = 1; v < vocab; ++v)
      if (row[v] > max_logit) max_logit = row[v], best = v;
    r.argmax.push_back(static_cast<int32_t>(best));
    if (i + 1 == tokens.size()) break;
    double sum = 0.0;
    for (size_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max_logit);
    const double log_z = max_logit + std::log(sum);
    r.nll.push_back(log_z - row[tokens[i + 1]]);
  }
  return r;
}

}  // namespace omnibus
