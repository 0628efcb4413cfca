// Agreement with llama.cpp on the real default model (SmolLM2-135M-Instruct
// Q4_1), against golden data made by tools/make_golden.py and committed in
// tests/golden/. Needs OMNIBUS_MODEL; with OMNIBUS_REQUIRE_MODEL=1 (as
// scripts/test.sh sets) a missing model fails instead of skipping.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/weight_repack.h"
#include "engine/evaluation.h"
#include "engine/generator.h"
#include "model/model.h"
#include "real_model.h"
#include "sampling/sampling_params.h"

namespace omnibus {
namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

// The bars of check_teacher_forced: every position with a llama.cpp top-2
// gap of at least every_gap_milli must agree (0: the model's confident
// gap), at least min_confident of those at the model's confident gap, and
// at least min_overall of all positions.
struct TeacherForcedBars {
  int every_gap_milli = 0;
  double min_confident = 1.0;
  double min_overall = 0.95;
};

// A real model and the golden data made from it by tools/make_golden.py.
struct GoldenModel {
  const char* name;
  const char* env_var;     // the model's path
  const char* golden_dir;  // teacher_forced.json, perplexity.json, greedy.json
  // Top-2 gaps of llama.cpp's logits from which every argmax must agree
  // (see check_teacher_forced), in thousandths of a logit.
  int confident_gap_milli;
  // At least this share of the positions must be confident (the check
  // must cover the text): 1/2 for SmolLM2 (72% are), 2/5 for Gemma (49%).
  int min_confident_percent;
  // The q4_0 KV cache against llama.cpp's (TeacherForcedArgmaxWithQ4KvCache...).
  TeacherForcedBars q4_kv_bars;
};

// The default model (OMNIBUS_MODEL) and Gemma 3 270M (OMNIBUS_GEMMA_MODEL,
// scripts/fetch_model.sh gemma3): its sliding-window layers, q/k norms,
// GeGLU and q5_0 / q4_K / q6_K matrices checked on the real thing.
//
// Gemma 3's logits spread wider than SmolLM2's, and so do the near ties that
// flip between two correct evaluations: llama.cpp with flash attention off
// disagrees with its own golden data (flash attention on) at 169 of the
// 3,800 positions (95.55%), at top-2 gaps up to 0.818, five of them above
// 0.5 (tools/check_golden_self_agreement.py). Its bar is therefore 1.25.
const GoldenModel kSmolLm2{"smollm2", "OMNIBUS_MODEL", "tests/golden", 500, 50, {2500, 0.95, 0.85}};
const GoldenModel kGemma3{"gemma3", "OMNIBUS_GEMMA_MODEL", "tests/golden/gemma3", 1250, 40, {8000, 0.94, 0.78}};

class GoldenTest : public ::testing::TestWithParam<GoldenModel> {
 public:  // the check_* helpers below build generators too
  static void TearDownTestSuite() { models_.clear(); }

  void SetUp() override {
    const GoldenModel& g = GetParam();
    auto& entry = models_[g.name];
    if (!entry.model && entry.error.empty()) {
      const char* path = std::getenv(g.env_var);
      if (path == nullptr || *path == '\0') {
        entry.error = std::string(g.env_var) + " is not set";
      } else {
        const WeightRepacker repacker;  // as the CLI loads for the CPU backend
        auto m = Model::load(path, {.preparer = &repacker});
        if (m.is_ok()) entry.model = *m;
        else entry.error = m.status().to_string();
      }
    }
    model_ = entry.model;
    if (model_) return;
    OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL(entry.error);
  }

  std::string golden(const char* file) const { return std::string(GetParam().golden_dir) + "/" + file; }

  std::unique_ptr<Generator> generator(int context, KvCacheType kv_type = KvCacheType::kF16) {
    auto g = Generator::create(model_, backend_, context, 256, kv_type);
    EXPECT_TRUE(g.is_ok()) << g.status().to_string();
    return std::move(g).value();
  }
  std::unique_ptr<LogitsEvaluator> evaluator(int context, KvCacheType kv_type = KvCacheType::kF16) {
    auto e = LogitsEvaluator::create(model_, backend_, context, 256, kv_type);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    return std::move(e).value();
  }

 private:
  struct Loaded {
    std::shared_ptr<const Model> model;
    std::string error;
  };
  static inline std::map<std::string, Loaded> models_;  // loaded once per model for the whole suite
  std::shared_ptr<const Model> model_;
  CpuBackend backend_{2};
};

// SmolLM2-135M has massive activations (residual |x| ~ 22,500), which turn
// one-ulp differences in summation order into flipped argmaxes wherever the
// top two logits are close: llama.cpp's own flash-attention-on and -off
// settings agree at only 96.3% of these positions (docs/correctness.md).
// So the bar is: every position where llama.cpp's top-2 gap is >= 0.5 logit
// must agree, and >= 95% overall (GoldenModel::confident_gap_milli: 0.5 for
// SmolLM2, wider for Gemma 3). A real bug (a wrong RoPE, norm, bias or
// quant layout) breaks confident positions and fails this at once.

// The teacher-forced check on one KV cache type.
void check_teacher_forced(LogitsEvaluator& evaluator_under_test, const std::string& golden_path,
                          const GoldenModel& model, const TeacherForcedBars& bars = {}) {
  const int confident_gap_milli = model.confident_gap_milli;
  const int every_gap_milli = bars.every_gap_milli > 0 ? bars.every_gap_milli : confident_gap_milli;
  const auto golden = read_json(golden_path);
  int positions = 0, agree = 0, confident = 0, confident_agree = 0;
  for (const auto& seq : golden["sequences"]) {
    const auto tokens = seq["tokens"].get<std::vector<int32_t>>();
    const auto want = seq["argmax"].get<std::vector<int32_t>>();
    const auto gaps = seq["top2_gap_milli"].get<std::vector<int>>();
    auto r = evaluate_teacher_forced(evaluator_under_test, tokens);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    ASSERT_EQ(r->argmax.size(), want.size());
    ASSERT_EQ(gaps.size(), want.size());
    int seq_agree = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const bool same = r->argmax[i] == want[i];
      seq_agree += same;
      if (gaps[i] >= confident_gap_milli) {
        ++confident;
        confident_agree += same;
      }
      if (gaps[i] >= every_gap_milli) {
        EXPECT_TRUE(same) << seq["name"] << " position " << i << ": omnibus " << r->argmax[i] << ", llama.cpp "
                          << want[i] << " with a top-2 gap of " << gaps[i] / 1000.0;
      }
    }
    std::printf("  %-16s %4d / %4zu agree\n", seq["name"].get<std::string>().c_str(), seq_agree, want.size());
    agree += seq_agree;
    positions += static_cast<int>(want.size());
  }
  const double rate = static_cast<double>(agree) / positions;
  std::printf("teacher-forced argmax agreement: %d / %d = %.4f; at llama.cpp gaps >= %.1f: %d / %d\n", agree,
              positions, rate, confident_gap_milli / 1000.0, confident_agree, confident);
  EXPECT_GE(positions, 2000);
  EXPECT_GE(confident * 100, positions * model.min_confident_percent);
  EXPECT_GE(confident_agree, bars.min_confident * confident);
  EXPECT_GE(rate, bars.min_overall);
}

TEST_P(GoldenTest, TeacherForcedArgmaxAgreesWithLlamaCpp) {
  check_teacher_forced(*evaluator(1024), golden("teacher_forced.json"), GetParam());
}

// The other KV cache types against the same f16-cache golden data, on the
// default model only. On Gemma 3 the bf16 cache meets the same bars, but the
// q8_0 cache does not: perplexity +1.21% against llama.cpp's (f16 +0.21%)
// and one flip at a top-2 gap of 1.4 (docs/correctness.md).
class GoldenKvTypeTest : public GoldenTest {};

// The q8_0 KV cache (--kv-type q8_0): the same bars (every confident
// position, >= 95% overall).
TEST_P(GoldenKvTypeTest, TeacherForcedArgmaxWithQ8KvCacheAgreesWithLlamaCpp) {
  check_teacher_forced(*evaluator(1024, KvCacheType::kQ8_0), golden("teacher_forced.json"), GetParam());
}

// The bf16 KV cache (--kv-type bf16), the same bars.
TEST_P(GoldenKvTypeTest, TeacherForcedArgmaxWithBf16KvCacheAgreesWithLlamaCpp) {
  check_teacher_forced(*evaluator(1024, KvCacheType::kBF16), golden("teacher_forced.json"), GetParam());
}

// The q4_0 KV cache (--kv-type q4_0) against llama.cpp with its own q4_0
// cache (tools/make_golden.py --kv-type q4_0: the same text, type_k = type_v
// = q4_0, which llama.cpp stores Hadamard-rotated, as omnibus does). A 4-bit
// code moves a whole step when a value before quantization moves across a
// rounding boundary, so float noise the f16 cache shrugs off flips codes:
// llama.cpp's own q4_0 logits agree with its f16 ones at 88% of SmolLM2's
// positions, and omnibus's with llama.cpp's q4_0 ones at 87.5% with flips
// at top-2 gaps up to 1.97 (docs/correctness.md). SmolLM2's
// bars: every position from a gap of 2.5, 95% from 0.5, 85% overall.
// Gemma 3: 81.5% of the positions agree, 96.5% of those at
// gaps >= 1.25, with flips at gaps up to 6.9 (two in 02_code_python, at
// positions where llama.cpp's f16 logits agree with its q4_0 ones; our q4_0
// logits agree with llama.cpp's f16 ones at 84.0% of the positions, its q4_0
// ones at 83.3%, flips up to 3.3). Bars: every position from 8.0, 94% from
// 1.25, 78% overall: a coarse guard. Without the Hadamard rotation Gemma
// gets 77.5% overall and 94.6% from 1.25 (SmolLM2 78.1% and 89.0%); the
// perplexity test below is what catches that on Gemma (-5.3%).
TEST_P(GoldenTest, TeacherForcedArgmaxWithQ4KvCacheAgreesWithLlamaCppsQ4Cache) {
  check_teacher_forced(*evaluator(1024, KvCacheType::kQ4_0), golden("kv_q4_0/teacher_forced.json"), GetParam(),
                       GetParam().q4_kv_bars);
}

// Perplexity over the golden text on one KV cache type, against
// `golden_file` (the model's perplexity.json unless given).
// tolerance: the largest |ppl / llama.cpp's - 1|.
void check_perplexity(GoldenTest* test, KvCacheType kv_type, const std::string& golden_file = "",
                      double tolerance = 0.01);
// Against llama.cpp's q4_0 cache (kv_q4_0/perplexity.json in each model's
// golden directory). SmolLM2 (head size 64): +1.13%; rotating with the
// explicit matrix instead of the fast transform (rounding alone) gave
// +1.54%, and without the rotation omnibus and llama.cpp
// (LLAMA_ATTN_ROT_DISABLE=1) agree to +0.10% at a perplexity 13% higher.
// Gemma 3 (head size 256: K rotated in blocks of 256, V of 64): +0.12%.
// Bar: 2.5%.
TEST_P(GoldenTest, PerplexityWithQ4KvCacheWithinTwoAndAHalfPercentOfLlamaCppsQ4Cache) {
  check_perplexity(this, KvCacheType::kQ4_0, golden("kv_q4_0/perplexity.json"), 0.025);
}

TEST_P(GoldenTest, PerplexityWithinOnePercentOfLlamaCpp) { check_perplexity(this, KvCacheType::kF16); }
TEST_P(GoldenKvTypeTest, PerplexityWithQ8KvCacheWithinOnePercentOfLlamaCpp) { check_perplexity(this, KvCacheType::kQ8_0); }
TEST_P(GoldenKvTypeTest, PerplexityWithBf16KvCacheWithinOnePercentOfLlamaCpp) { check_perplexity(this, KvCacheType::kBF16); }

void check_perplexity(GoldenTest* test, KvCacheType kv_type, const std::string& golden_file, double tolerance) {
  const auto golden = read_json(golden_file.empty() ? test->golden("perplexity.json") : golden_file);
  const int chunk = golden["chunk_size"].get<int>();
  const auto tokens = golden["tokens"].get<std::vector<int32_t>>();
  const double want = golden["ppl"].get<double>();
  auto evaluator = test->evaluator(chunk, kv_type);
  double total = 0;
  size_t count = 0;
  for (size_t start = 0; start + chunk <= tokens.size(); start += chunk) {
    auto r = evaluate_teacher_forced(*evaluator, std::span(tokens).subspan(start, chunk));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    for (double v : r->nll) total += v;
    count += r->nll.size();
  }
  const double ppl = std::exp(total / count);
  std::printf("perplexity, %s KV cache: omnibus %.4f, llama.cpp %.4f (%+.3f%%)\n", kv_cache_type_name(kv_type), ppl,
              want, 100 * (ppl / want - 1));
  EXPECT_NEAR(ppl / want, 1.0, tolerance);
}

// Greedy continuations must be identical up to the first step where
// llama.cpp itself was close to a tie (gap < 0.5); past a tie the texts may
// legitimately part (llama.cpp's own settings part on 15 of these 20).
TEST_P(GoldenTest, GreedyContinuationsMatchLlamaCppUntilATie) {
  const auto golden = read_json(this->golden("greedy.json"));
  const int n = golden["n_generated"].get<int>();
  auto gen = generator(1024);
  int identical = 0, total = 0, tokens_matched = 0;
  for (const auto& p : golden["prompts"]) {
    const auto prompt = p["prompt_tokens"].get<std::vector<int32_t>>();
    const auto want = p["generated_tokens"].get<std::vector<int32_t>>();
    const auto gaps = p["top2_gap_milli"].get<std::vector<int>>();
    GenerationOptions options;
    options.max_tokens = n;
    options.ignore_eos = true;
    options.sampling.temperature = 0.0f;
    std::vector<int32_t> got;
    auto stats = gen->generate(prompt, options, {}, [&](int32_t t) {
      got.push_back(t);
      return true;
    });
    ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
    ASSERT_EQ(got.size(), want.size());
    ++total;
    size_t first = 0;
    while (first < got.size() && got[first] == want[first]) ++first;
    tokens_matched += static_cast<int>(first);
    if (first == got.size()) {
      ++identical;
      continue;
    }
    std::printf("  parts at step %2zu (llama.cpp gap %.3f): %s\n", first, gaps[first] / 1000.0,
                p["text"].get<std::string>().substr(0, 40).c_str());
    EXPECT_LT(gaps[first], GetParam().confident_gap_milli) << "greedy text parts from llama.cpp at step " << first
                                               << " where llama.cpp was confident";
  }
  std::printf("greedy continuations identical for all %d tokens: %d / %d; tokens before parting: %d / %d\n", n,
              identical, total, tokens_matched, total * n);
  EXPECT_EQ(total, 20);
}

std::string model_name(const ::testing::TestParamInfo<GoldenModel>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(RealModels, GoldenTest, ::testing::Values(kSmolLm2, kGemma3), model_name);
INSTANTIATE_TEST_SUITE_P(DefaultModel, GoldenKvTypeTest, ::testing::Values(kSmolLm2), model_name);

}  // namespace
}  // namespace omnibus
