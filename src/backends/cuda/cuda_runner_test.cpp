// CudaModelRunner against the CPU backend through the seam's interfaces:
// tiny random models of every architecture and several weight types, a KV
// handover from a CPU cache, the runner's errors, and (OMNIBUS_MODEL set)
// the real default model. Needs a GPU: each test skips without one.
//
// Logits are compared by the largest difference, relative to the largest
// CPU logit (the CPU rounds attention weights to f16 and both sum floats in
// their own order; see cuda_kernels_test.cpp), and by the top token, where
// a different top token is allowed only in a near tie (the CPU's logits of
// the two tokens closer than the bound).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

#include "backends/cpu/cpu_backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_model_runner.h"
#include "backends/cuda/cuda_test_util.h"
#include "real_model.h"
#include "tiny_model.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/vocab_from_gguf.h"

namespace omnibus {
namespace {

using omnibus::testing::TinyModelSpec;

struct Logits {
  std::vector<float> values;  // one vocab row per position
  int vocab = 0;
  const float* row(size_t i) const { return values.data() + i * static_cast<size_t>(vocab); }
};

// Every position's logits of `tokens`, run in chunks of `chunk` rows on
// `backend`, one sequence in blocks 0, 1, ... of 16 positions.
Logits run_sequence(Backend& backend, std::shared_ptr<const Model> model, const std::vector<int32_t>& tokens,
                    int chunk) {
  const int vocab = model->config().vocab_size;
  const int blocks = static_cast<int>(tokens.size() + 15) / 16;
  auto kv = backend.create_kv_cache(model->config(), blocks, 16, KvCacheType::kF16, 0);
  EXPECT_TRUE(kv.is_ok()) << kv.status().to_string();
  auto runner = backend.create_runner(model, chunk, static_cast<int64_t>(tokens.size()));
  EXPECT_TRUE(runner.is_ok()) << runner.status().to_string();
  Logits out{std::vector<float>(tokens.size() * static_cast<size_t>(vocab)), vocab};
  if (!kv.is_ok() || !runner.is_ok()) return out;
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = b;
  for (size_t start = 0; start < tokens.size(); start += static_cast<size_t>(chunk)) {
    std::vector<BatchRow> rows;
    for (size_t i = start; i < std::min(tokens.size(), start + static_cast<size_t>(chunk)); ++i)
      rows.push_back({.token = tokens[i], .block_table = table, .pos = static_cast<int32_t>(i), .want_logits = true});
    const Status s = (*runner)->run(rows, **kv, out.values.data() + start * static_cast<size_t>(vocab));
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  return out;
}

int argmax(const float* row, int n) { return static_cast<int>(std::max_element(row, row + n) - row); }

// The comparison the file's comment describes; `relative` bounds the
// largest difference as a fraction of the largest |CPU logit| (at least 1).
void expect_close(const Logits& cpu, const Logits& gpu, double relative, const std::string& what) {
  ASSERT_EQ(cpu.values.size(), gpu.values.size());
  const size_t positions = cpu.values.size() / static_cast<size_t>(cpu.vocab);
  for (size_t p = 0; p < positions; ++p) {
    const float *c = cpu.row(p), *g = gpu.row(p);
    double largest = 1, diff = 0;
    for (int t = 0; t < cpu.vocab; ++t) {
      largest = std::max(largest, std::fabs(double{c[t]}));
      diff = std::max(diff, std::fabs(double{c[t]} - g[t]));
    }
    const double bound = relative * largest;
    EXPECT_LE(diff, bound) << what << " position " << p;
    const int top_cpu = argmax(c, cpu.vocab), top_gpu = argmax(g, cpu.vocab);
    if (top_cpu != top_gpu) {
      EXPECT_LE(c[top_cpu] - c[top_gpu], 2 * bound) << what << " position " << p << ": top token " << top_gpu
                                                    << " on the GPU, " << top_cpu << " on the CPU, not a near tie";
    }
  }
}

std::vector<int32_t> random_tokens(int n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));
  return t;
}

class CudaRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    OMNIBUS_SKIP_WITHOUT_CUDA_DEVICE();
    auto backend = CudaBackend::create();
    ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
    cuda_ = std::move(backend).value();
  }
  std::unique_ptr<CudaBackend> cuda_;
  CpuBackend cpu_{2};
};

struct TinyCase {
  std::string arch;
  DType type;
};

TEST_F(CudaRunnerTest, TinyModelsMatchTheCpu) {
  const TinyCase cases[] = {{"llama", DType::kF32},  {"llama", DType::kF16},  {"llama", DType::kQ4_0},
                            {"llama", DType::kQ4_1}, {"llama", DType::kQ8_0}, {"llama", DType::kQ4_K},
                            {"llama", DType::kQ6_K}, {"qwen2", DType::kQ8_0}, {"gemma3", DType::kQ4_0},
                            {"gemma3", DType::kQ6_K}};
  for (const TinyCase& c : cases) {
    TinyModelSpec spec;
    spec.architecture = c.arch;
    spec.matrix_type = c.type;
    spec.embedding_type = c.type;
    const bool k_quant = c.type == DType::kQ4_K || c.type == DType::kQ6_K;
    if (k_quant) spec.n_embd = 256, spec.n_ff = 512;
    if (c.arch == "gemma3") spec.n_layer = 6, spec.sliding_window = 4, spec.head_dim = k_quant ? 64 : 32;
    const std::vector<uint8_t> bytes = testing::make_tiny_model_bytes(spec);
    const auto model = testing::load_tiny_model(bytes);
    const std::vector<int32_t> tokens = random_tokens(21, spec.vocab, 5);
    const std::string what = c.arch + " " + dtype_name(c.type);
    const Logits cpu = run_sequence(cpu_, model, tokens, 7);
    const Logits gpu = run_sequence(*cuda_, model, tokens, 7);
    expect_close(cpu, gpu, 2e-3, what);
    // Batch invariance: one row at a time gives the GPU's same bits.
    const Logits gpu_rows = run_sequence(*cuda_, model, tokens, 1);
    EXPECT_EQ(gpu_rows.values, gpu.values) << what << ": chunking changed the GPU's logits";
  }
}

// A prompt run on the CPU, its blocks handed to a CUDA cache in the
// transfer format, and the next token decoded on both.
TEST_F(CudaRunnerTest, DecodesFromACacheHandedOverByTheCpu) {
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ8_0;
  spec.embedding_type = DType::kQ8_0;
  const std::vector<uint8_t> bytes = testing::make_tiny_model_bytes(spec);
  const auto model = testing::load_tiny_model(bytes);
  const ModelConfig& c = model->config();
  const std::vector<int32_t> tokens = random_tokens(40, spec.vocab, 9);
  const std::vector<int32_t> table = {2, 0, 1};  // out of order on purpose
  auto cpu_kv = cpu_.create_kv_cache(c, 3, 16, KvCacheType::kF16, 0);
  auto gpu_kv = cuda_->create_kv_cache(c, 3, 16, KvCacheType::kF16, 0);
  auto cpu_run = cpu_.create_runner(model, 40, 48);
  auto gpu_run = cuda_->create_runner(model, 40, 48);
  ASSERT_TRUE(cpu_kv.is_ok() && gpu_kv.is_ok() && cpu_run.is_ok() && gpu_run.is_ok());
  std::vector<BatchRow> prompt;
  for (int i = 0; i < 39; ++i) prompt.push_back({.token = tokens[i], .block_table = table, .pos = i});
  prompt.back().want_logits = true;
  std::vector<float> ignored(static_cast<size_t>(c.vocab_size));
  ASSERT_TRUE((*cpu_run)->run(prompt, **cpu_kv, ignored.data()).is_ok());
  std::vector<uint8_t> block(static_cast<size_t>((*cpu_kv)->block_transfer_bytes()));
  ASSERT_EQ((*gpu_kv)->block_transfer_bytes(), (*cpu_kv)->block_transfer_bytes());
  for (int b = 0; b < 3; ++b) {
    ASSERT_TRUE((*cpu_kv)->copy_block_out(b, kNoKvBlock, block.data()).is_ok());
    ASSERT_TRUE((*gpu_kv)->copy_block_in(b, kNoKvBlock, block.data()).is_ok());
  }
  const BatchRow next[] = {{.token = tokens[39], .block_table = table, .pos = 39, .want_logits = true}};
  Logits cpu{std::vector<float>(static_cast<size_t>(c.vocab_size)), c.vocab_size};
  Logits gpu = cpu;
  ASSERT_TRUE((*cpu_run)->run(next, **cpu_kv, cpu.values.data()).is_ok());
  ASSERT_TRUE((*gpu_run)->run(next, **gpu_kv, gpu.values.data()).is_ok());
  expect_close(cpu, gpu, 2e-3, "after handover");
}

TEST_F(CudaRunnerTest, RefusesWhatItCannotRun) {
  TinyModelSpec spec;
  const std::vector<uint8_t> bytes = testing::make_tiny_model_bytes(spec);
  const auto model = testing::load_tiny_model(bytes);
  const ModelConfig& c = model->config();
  auto q8 = cuda_->create_kv_cache(c, 2, 16, KvCacheType::kQ8_0, 0);
  ASSERT_FALSE(q8.is_ok());
  EXPECT_NE(q8.status().message().find("f16 only"), std::string::npos) << q8.status().to_string();
  auto runner = cuda_->create_runner(model, 4, 32);
  ASSERT_TRUE(runner.is_ok()) << runner.status().to_string();
  auto cpu_kv = cpu_.create_kv_cache(c, 2, 16, KvCacheType::kF16, 0);
  ASSERT_TRUE(cpu_kv.is_ok());
  const std::vector<int32_t> table = {0, 1};
  std::vector<float> logits(static_cast<size_t>(c.vocab_size));
  const BatchRow row[] = {{.token = 1, .block_table = table, .pos = 0, .want_logits = true}};
  EXPECT_EQ((*runner)->run(row, **cpu_kv, logits.data()).code(), StatusCode::kInvalidArgument);
  auto kv = cuda_->create_kv_cache(c, 2, 16, KvCacheType::kF16, 0);
  ASSERT_TRUE(kv.is_ok());
  const BatchRow bad_token[] = {{.token = c.vocab_size, .block_table = table, .pos = 0, .want_logits = true}};
  EXPECT_EQ((*runner)->run(bad_token, **kv, logits.data()).code(), StatusCode::kInvalidArgument);
  const BatchRow past_table[] = {{.token = 1, .block_table = table, .pos = 32, .want_logits = true}};
  EXPECT_FALSE((*runner)->run(past_table, **kv, logits.data()).is_ok());
}

// Positions past the RoPE tables' first size (4096): the runner grows them
// in the step that needs them, and agrees with the CPU there.
TEST_F(CudaRunnerTest, RopeTablesGrowForLatePositions) {
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ8_0;
  spec.embedding_type = DType::kQ8_0;
  const std::vector<uint8_t> bytes = testing::make_tiny_model_bytes(spec);
  const auto model = testing::load_tiny_model(bytes);
  const ModelConfig& c = model->config();
  const int context = 6016, blocks = context / 16;
  std::vector<int32_t> table(static_cast<size_t>(blocks));
  for (int b = 0; b < blocks; ++b) table[static_cast<size_t>(b)] = b;
  const std::vector<int32_t> tokens = random_tokens(16, spec.vocab, 13);
  Logits out[2];
  Backend* backends[2] = {&cpu_, cuda_.get()};
  for (int i = 0; i < 2; ++i) {
    auto kv = backends[i]->create_kv_cache(c, blocks, 16, KvCacheType::kF16, 0);
    auto runner = backends[i]->create_runner(model, 8, context);
    ASSERT_TRUE(kv.is_ok() && runner.is_ok());
    out[i] = Logits{std::vector<float>(16 * static_cast<size_t>(c.vocab_size)), c.vocab_size};
    // Positions 0..7, then 6000..6007 (the cache between is zeros on both).
    for (int part = 0; part < 2; ++part) {
      std::vector<BatchRow> rows;
      for (int r = 0; r < 8; ++r)
        rows.push_back({.token = tokens[static_cast<size_t>(part * 8 + r)],
                        .block_table = table,
                        .pos = part * 6000 + r,
                        .want_logits = true});
      const Status s = (*runner)->run(rows, **kv, out[i].values.data() + static_cast<size_t>(part * 8) * c.vocab_size);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
    }
  }
  expect_close(out[0], out[1], 2e-3, "late positions");
}

// One step of more rows than a grid's y dimension takes (65535): the
// matmul splits its launch, attention has the rows on grid x. 70,000
// one-position sequences, a few wanting logits (the logits buffer grows to
// them), against the same rows run 1,000 at a time: the same bits (batch
// invariance).
TEST_F(CudaRunnerTest, StepsLongerThanAGridDimension) {
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ4_0;
  spec.embedding_type = DType::kQ4_0;
  const std::vector<uint8_t> bytes = testing::make_tiny_model_bytes(spec);
  const auto model = testing::load_tiny_model(bytes);
  const ModelConfig& c = model->config();
  const int n = 70000, chunk = 1000, every = 5000;
  const std::vector<int32_t> tokens = random_tokens(n, spec.vocab, 21);
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(n));
  std::vector<BatchRow> rows(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    tables[static_cast<size_t>(i)] = {i};
    rows[static_cast<size_t>(i)] = {.token = tokens[static_cast<size_t>(i)],
                                    .block_table = tables[static_cast<size_t>(i)],
                                    .pos = 0,
                                    .want_logits = i % every == every - 1};
  }
  const size_t wanted = n / every, vocab = static_cast<size_t>(c.vocab_size);
  std::vector<float> whole(wanted * vocab), chunked(wanted * vocab);
  {
    auto kv = cuda_->create_kv_cache(c, n, 16, KvCacheType::kF16, 0);
    auto runner = cuda_->create_runner(model, n, 16);
    ASSERT_TRUE(kv.is_ok() && runner.is_ok());
    const Status s = (*runner)->run(rows, **kv, whole.data());
    ASSERT_TRUE(s.is_ok()) << s.to_string();
  }
  auto kv = cuda_->create_kv_cache(c, n, 16, KvCacheType::kF16, 0);
  auto runner = cuda_->create_runner(model, chunk, 16);
  ASSERT_TRUE(kv.is_ok() && runner.is_ok());
  size_t out = 0;
  for (int start = 0; start < n; start += chunk) {
    const std::span<const BatchRow> part(rows.data() + start, static_cast<size_t>(chunk));
    const Status s = (*runner)->run(part, **kv, chunked.data() + out * vocab);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    for (const BatchRow& r : part) out += r.want_logits ? 1 : 0;
  }
  ASSERT_EQ(out, wanted);
  EXPECT_EQ(whole, chunked);
}

// The greedy continuation scripts/test_cuda.sh prints: the prompt
// (OMNIBUS_CUDA_PROMPT, default "The capital of France is", encoded as
// `omnibus run` encodes it) and 32 greedy tokens of the CPU, every step also
// run on the GPU on the CPU's tokens. The GPU's top token must be the
// CPU's except in a near tie: the CPU's logits of the two within 2 x 1e-2
// of its largest |logit| (expect_close, as the tests above). Both texts
// are printed: the CPU's greedy one and the GPU's top tokens on it.
TEST_F(CudaRunnerTest, DefaultModelGreedyPromptMatchesTheCpu) {
  const std::string path = testing::real_model_path();
  if (path.empty()) OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL("OMNIBUS_MODEL is not set");
  auto loaded = Model::load(path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  const std::shared_ptr<const Model> model = std::move(loaded).value();
  auto vocab = vocab_from_gguf(model->gguf());
  ASSERT_TRUE(vocab.is_ok()) << vocab.status().to_string();
  auto tokenizer = Tokenizer::create(std::move(vocab).value());
  ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().to_string();
  const char* env_prompt = std::getenv("OMNIBUS_CUDA_PROMPT");
  const std::string prompt = env_prompt != nullptr ? env_prompt : "The capital of France is";
  std::vector<int32_t> tokens = (*tokenizer)->encode(prompt, /*add_special=*/true, /*parse_special=*/true);
  ASSERT_FALSE(tokens.empty());
  const ModelConfig& c = model->config();
  const int steps = 32, context = 128;
  const std::vector<int32_t> table = {0, 1, 2, 3, 4, 5, 6, 7};
  auto cpu_kv = cpu_.create_kv_cache(c, 8, 16, KvCacheType::kF16, 0);
  auto gpu_kv = cuda_->create_kv_cache(c, 8, 16, KvCacheType::kF16, 0);
  auto cpu_run = cpu_.create_runner(model, 64, context);
  auto gpu_run = cuda_->create_runner(model, 64, context);
  ASSERT_TRUE(cpu_kv.is_ok() && gpu_kv.is_ok() && cpu_run.is_ok() && gpu_run.is_ok());
  Logits cpu{std::vector<float>(static_cast<size_t>(c.vocab_size)), c.vocab_size};
  Logits gpu = cpu;
  std::vector<BatchRow> rows;
  for (size_t i = 0; i < tokens.size(); ++i)
    rows.push_back({.token = tokens[i], .block_table = table, .pos = static_cast<int32_t>(i)});
  rows.back().want_logits = true;
  std::vector<int32_t> cpu_text, gpu_text;
  for (int step = 0; step < steps; ++step) {
    ASSERT_TRUE((*cpu_run)->run(rows, **cpu_kv, cpu.values.data()).is_ok());
    ASSERT_TRUE((*gpu_run)->run(rows, **gpu_kv, gpu.values.data()).is_ok());
    expect_close(cpu, gpu, 1e-2, "greedy step " + std::to_string(step));
    const int next = argmax(cpu.row(0), c.vocab_size);
    cpu_text.push_back(next);
    gpu_text.push_back(argmax(gpu.row(0), c.vocab_size));
    rows = {{.token = next, .block_table = table, .pos = static_cast<int32_t>(tokens.size()), .want_logits = true}};
    tokens.push_back(next);
  }
  int agreed = 0;
  for (size_t i = 0; i < cpu_text.size(); ++i) agreed += cpu_text[i] == gpu_text[i];
  std::printf("greedy prompt: top-1 agreed on %d of %d steps (a difference allowed only in a near tie)\n", agreed,
              steps);
  std::printf("cpu greedy:             %s%s\n", prompt.c_str(), (*tokenizer)->decode(cpu_text).c_str());
  std::printf("cuda top-1 on cpu text: %s%s\n", prompt.c_str(), (*tokenizer)->decode(gpu_text).c_str());
}

// The default model: a prompt, then 16 greedy steps fed the CPU's tokens,
// each step's logits compared.
TEST_F(CudaRunnerTest, DefaultModelMatchesTheCpu) {
  const std::string path = testing::real_model_path();
  if (path.empty()) OMNIBUS_SKIP_OR_FAIL_WITHOUT_MODEL("OMNIBUS_MODEL is not set");
  auto loaded = Model::load(path);
  ASSERT_TRUE(loaded.is_ok()) << loaded.status().to_string();
  const std::shared_ptr<const Model> model = std::move(loaded).value();
  const ModelConfig& c = model->config();
  std::vector<int32_t> tokens = random_tokens(24, c.vocab_size, 3);
  const int steps = 16, context = 64;
  const std::vector<int32_t> table = {0, 1, 2, 3};
  auto cpu_kv = cpu_.create_kv_cache(c, 4, 16, KvCacheType::kF16, 0);
  auto gpu_kv = cuda_->create_kv_cache(c, 4, 16, KvCacheType::kF16, 0);
  auto cpu_run = cpu_.create_runner(model, 32, context);
  auto gpu_run = cuda_->create_runner(model, 32, context);
  ASSERT_TRUE(cpu_kv.is_ok() && gpu_kv.is_ok() && cpu_run.is_ok() && gpu_run.is_ok());
  Logits cpu{std::vector<float>(static_cast<size_t>(c.vocab_size)), c.vocab_size};
  Logits gpu = cpu;
  std::vector<BatchRow> rows;
  for (size_t i = 0; i < tokens.size(); ++i)
    rows.push_back({.token = tokens[i], .block_table = table, .pos = static_cast<int32_t>(i)});
  rows.back().want_logits = true;
  int agreed = 0;
  for (int step = 0; step <= steps; ++step) {
    ASSERT_TRUE((*cpu_run)->run(rows, **cpu_kv, cpu.values.data()).is_ok());
    ASSERT_TRUE((*gpu_run)->run(rows, **gpu_kv, gpu.values.data()).is_ok());
    expect_close(cpu, gpu, 1e-2, "SmolLM2 step " + std::to_string(step));
    const int next = argmax(cpu.row(0), c.vocab_size);
    agreed += next == argmax(gpu.row(0), c.vocab_size);
    rows = {{.token = next, .block_table = table, .pos = static_cast<int32_t>(tokens.size()), .want_logits = true}};
    tokens.push_back(next);
  }
  std::printf("default model: top token agreed on %d of %d steps\n", agreed, steps + 1);
}

}  // namespace
}  // namespace omnibus
