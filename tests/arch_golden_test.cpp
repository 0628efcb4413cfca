// Each architecture against llama.cpp, on the small random-weight models of
// arch_golden_models.cpp: llama.cpp's full rows of logits at every
// teacher-forced position and its greedy continuations, made by
// tools/make_arch_golden.py and committed in tests/golden/arch/<name>/.
// The model bytes are rebuilt here (their sha256 must match the one the
// golden data was made from), so no model file or download is needed.
//
// Bars: the mean KL(llama.cpp || omnibus) over the positions within 1.1x
// llama.cpp's own between its flash attention on and off settings
// (measured by the same script, in golden.json); top-1 agreement >= 99%
// where llama.cpp's top-2 gap is >= 0.5; greedy continuations equal up to
// the first step where llama.cpp was close to a tie.
//
// Why 1.1x and not 1.0x: omnibus, llama.cpp with flash attention on and
// llama.cpp with it off sit about equally far apart. Against the off
// setting's logits omnibus measured 1.00-1.05x of the on/off KL, against
// the on setting's 0.92-1.03x (docs/correctness.md): each pair differs by
// float rounding in attention that the int8 rounding of the activations
// turns into whole steps downstream. A real error (a wrong RoPE style, a
// missing q/k norm) is 100-1000x.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

#include "arch_golden_models.h"
#include "backends/cpu/cpu_backend.h"
#include "engine/evaluation.h"
#include "engine/generator.h"
#include "golden_compare.h"
#include "server/sha256.h"
#include "tensor/quant.h"

namespace omnibus::testing {
namespace {

constexpr int kConfidentGapMilli = 500;

std::string golden_dir(const ArchGoldenModel& m) { return "tests/golden/arch/" + m.name + "/"; }

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path + " (run from the repository root)");
  return nlohmann::json::parse(in);
}

class ArchGoldenTest : public ::testing::TestWithParam<ArchGoldenModel> {
 protected:
  void SetUp() override {
    golden_ = read_json(golden_dir(GetParam()) + "golden.json");
    bytes_ = make_tiny_model_bytes(GetParam().spec);
    const std::string digest =
        server::sha256_hex(std::string_view(reinterpret_cast<const char*>(bytes_.data()), bytes_.size()));
    ASSERT_EQ(digest, golden_["model_sha256"].get<std::string>())
        << "the " << GetParam().name << " model's bytes changed since its golden data was made: remake it with "
        << "tools/make_arch_golden.py " << GetParam().name;
    model_ = load_tiny_model(bytes_);
  }

  nlohmann::json golden_;
  std::vector<uint8_t> bytes_;  // the model's file: must outlive model_
  std::shared_ptr<const Model> model_;
  CpuBackend backend_{2};
};

TEST_P(ArchGoldenTest, LogitsMatchLlamaCppWithinItsOwnNoise) {
  const int vocab = golden_["vocab"].get<int>();
  ASSERT_EQ(vocab, model_->config().vocab_size);
  const auto want = read_f16_file(golden_dir(GetParam()) + golden_["logits_file"].get<std::string>());
  auto evaluator = LogitsEvaluator::create(model_, backend_, golden_.value("context", 1024), 256);
  ASSERT_TRUE(evaluator.is_ok()) << evaluator.status().to_string();
  size_t position = 0;
  double kl_sum = 0, kl_max = 0;
  int confident = 0, confident_agree = 0, agree = 0;
  for (const auto& seq : golden_["sequences"]) {
    const auto tokens = seq["tokens"].get<std::vector<int32_t>>();
    // Long-context models keep llama.cpp's rows of the last positions only.
    const size_t from = seq.value("logits_from", size_t{0});
    auto got = (*evaluator)->all_logits(tokens);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_LE((position + tokens.size() - from) * vocab, want.size()) << "logits.f16 is shorter than its sequences";
    for (size_t i = from; i < tokens.size(); ++i, ++position) {
      const float* ref = want.data() + position * vocab;
      const float* ours = got->data() + i * vocab;
      const double kl = kl_divergence(ref, ours, vocab);
      kl_sum += kl;
      kl_max = std::max(kl_max, kl);
      const bool same = argmax(ref, vocab) == argmax(ours, vocab);
      agree += same;
      if (top2_gap(ref, vocab) >= kConfidentGapMilli / 1000.0) {
        ++confident;
        confident_agree += same;
      }
    }
  }
  ASSERT_EQ(position * vocab, want.size()) << "logits.f16 is longer than its sequences";
  const auto& noise = golden_["llama_cpp_flash_attention_off"];
  const double mean_kl = kl_sum / position, llama_mean_kl = noise["mean_kl"].get<double>();
  std::printf(
      "%s: %zu positions: mean KL(llama.cpp || omnibus) %.3e (llama.cpp flash attention on vs off %.3e), "
      "max %.3e; top-1 %d / %zu, at top-2 gaps >= 0.5 %d / %d\n",
      GetParam().name.c_str(), position, mean_kl, llama_mean_kl, kl_max, agree, position, confident_agree, confident);
  EXPECT_GE(position, 200u);
  EXPECT_GE(confident * 2, static_cast<int>(position)) << "too few confident positions for the top-1 check";
  EXPECT_GE(confident_agree, 0.99 * confident);
  EXPECT_LE(mean_kl, 1.1 * llama_mean_kl);
}

TEST_P(ArchGoldenTest, GreedyContinuationsMatchLlamaCppUntilATie) {
  auto gen = Generator::create(model_, backend_, 1024, 256);
  ASSERT_TRUE(gen.is_ok()) << gen.status().to_string();
  int identical = 0;
  for (const auto& p : golden_["greedy"]) {
    const auto prompt = p["prompt_tokens"].get<std::vector<int32_t>>();
    const auto want = p["generated_tokens"].get<std::vector<int32_t>>();
    const auto gaps = p["top2_gap_milli"].get<std::vector<int>>();
    GenerationOptions options;
    options.max_tokens = static_cast<int>(want.size());
    options.ignore_eos = true;
    options.sampling.temperature = 0.0f;
    std::vector<int32_t> got;
    auto stats = (*gen)->generate(prompt, options, {}, [&](int32_t t) {
      got.push_back(t);
      return true;
    });
    ASSERT_TRUE(stats.is_ok()) << stats.status().to_string();
    ASSERT_EQ(got.size(), want.size());
    size_t first = 0;
    while (first < got.size() && got[first] == want[first]) ++first;
    if (first == got.size()) {
      ++identical;
      continue;
    }
    std::printf("  parts at step %zu (llama.cpp top-2 gap %.3f)\n", first, gaps[first] / 1000.0);
    EXPECT_LT(gaps[first], kConfidentGapMilli)
        << "greedy output parts from llama.cpp at step " << first << " where llama.cpp was confident";
  }
  std::printf("%s: greedy continuations identical to llama.cpp's: %d / %zu\n", GetParam().name.c_str(), identical,
              golden_["greedy"].size());
}

std::string model_name(const ::testing::TestParamInfo<ArchGoldenModel>& info) { return info.param.name; }
INSTANTIATE_TEST_SUITE_P(Architectures, ArchGoldenTest, ::testing::ValuesIn(arch_golden_models()), model_name);

}  // namespace
}  // namespace omnibus::testing
