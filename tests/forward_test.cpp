// The forward pass on tiny random-weight models (every architecture and
// weight type, GQA and MQA) against the plain reference in tiny_model.cpp,
// and its batch invariance: bit-identical logits however rows are batched,
// chunked or threaded.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <tuple>

#include "backends/cpu/forward.h"
#include "base/thread_pool.h"
#include "kernels/kernel_table.h"
#include "kernels/kernel_table_test_util.h"
#include "kernels/weight_interleave.h"
#include "tiny_model.h"

namespace omnibus::testing {
namespace {

struct Case {
  std::string arch;
  DType type;
  int n_head_kv;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  std::string arch = info.param.arch;
  std::replace(arch.begin(), arch.end(), '-', '_');  // gtest names: letters, digits, '_'
  return arch + "_" + dtype_name(info.param.type) + "_kv" + std::to_string(info.param.n_head_kv);
}

TinyModelSpec spec_for(const Case& c) {
  TinyModelSpec s;
  s.architecture = c.arch;
  s.matrix_type = c.type;
  s.embedding_type = c.type;
  s.n_head_kv = c.n_head_kv;
  s.tied_output = c.n_head_kv != 1;  // cover both tied and separate outputs
  if (c.arch == "gemma3") {
    // Six layers: five with a window of 4 positions (shorter than the test
    // sequences), the sixth global; heads wider than n_embd / n_head.
    s.n_layer = 6;
    s.sliding_window = 4;
  }
  if (c.arch == "gpt-oss") {
    // Every other layer a window of 4 positions, YaRN on all of them,
    // sinks, biases everywhere, experts with the clamped SwiGLU.
    s.n_layer = 4;
    s.sliding_window = 4;
    s.yarn_factor = 4;
  }
  const bool k_quant = dtype_info(c.type)->block_size == 256;
  if (c.arch == "gemma3") s.head_dim = k_quant ? 64 : 32;  // q_dim a whole number of K-quant blocks
  if (k_quant) {
    s.n_embd = 256;
    s.n_ff = 512;
  }
  if (c.arch == "phi3") {
    // Fused q/k/v and gate/up, partial RoPE (3/4 of each head, as
    // Phi-4-mini) with longrope's short factors and attention factor.
    s.fused_qkv = true;
    s.longrope = true;
    s.rope_dims = s.n_embd / s.n_head * 3 / 4;
  }
  return s;
}

std::vector<int32_t> random_tokens(int n, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(rng() % vocab);
  return t;
}

// Blocks 0..n-1: one sequence owning the store in order.
std::vector<int32_t> contiguous_table(int n) {
  std::vector<int32_t> table(n);
  for (int b = 0; b < n; ++b) table[b] = b;
  return table;
}

// Logits of every position, running the tokens in chunks of `chunk` rows,
// with the sequence in blocks 0, 1, ... of `block_size` positions, on
// `table`'s kernels.
std::vector<float> engine_logits(std::shared_ptr<const Model> model, const std::vector<int32_t>& tokens, int chunk,
                                 int threads, int block_size = 16, int max_positions = 64,
                                 KvCacheType kv_type = KvCacheType::kF16, const KernelTable& kernel_table = kernels()) {
  ThreadPool pool(threads);
  ForwardPass fp(model, pool, chunk, max_positions, kernel_table);
  const int blocks = (max_positions + block_size - 1) / block_size;
  auto kv = PagedKvStore::create(model->config(), blocks, block_size, kv_type);
  EXPECT_TRUE(kv.is_ok());
  const auto table = contiguous_table(blocks);
  const int vocab = model->config().vocab_size;
  std::vector<float> out(tokens.size() * vocab);
  for (size_t start = 0; start < tokens.size(); start += chunk) {
    std::vector<BatchRow> rows;
    for (size_t p = start; p < std::min(tokens.size(), start + chunk); ++p)
      rows.push_back({tokens[p], table, static_cast<int32_t>(p), true});
    EXPECT_TRUE(fp.run(rows, *kv, out.data() + start * vocab).is_ok());
  }
  return out;
}

class ForwardTest : public ::testing::TestWithParam<Case> {};

// The reference rounds each activation to int8 itself, from its own double
// values. When one lands within float error of a rounding boundary, the
// engine and the reference round it apart by one step, and that flip moves
// the logits by up to about 1% of their scale: measured over token seeds
// 1-16 for every case here, the error was either float rounding (at most
// 1.2e-4 of max|logit|) or a flip (8e-4 to 8.4e-3; docs/findings/
// tiny-reference-flips-on-activation-rounding.md), a flip in
// up to 7 of 16 seeds of a case, with the same kernels as before and after
// a change of summation order alike. So each case runs five token
// sequences: every one within 2e-2 of the logit scale, and at least one
// clean, within 5e-4 (a wrong op shows in all five). Float weight types
// quantize nothing, so every sequence must be clean for them.
// The whole forward pass runs once per kernel table this CPU runs (the
// OMNIBUS_KERNELS names), the model loaded for the table (its weight
// layout) and the runner holding it: each table against the reference as
// above and against the scalar table within twice those tolerances (both
// are that close to the reference), and the SIMD tables bit for bit
// against each other (kernel_table.h: they share one reduction order).
TEST_P(ForwardTest, MatchesReferenceForward) {
  const auto bytes = make_tiny_model_bytes(spec_for(GetParam()));
  const bool int8_activations = dtype_info(GetParam().type)->block_size > 1;
  const double tolerance = int8_activations ? 2e-2 : 5e-4;
  // Relative: the largest error over max(1, max |want|).
  auto relative_error = [](const std::vector<float>& want, const std::vector<float>& got) {
    double max_abs = 0, max_err = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_abs = std::max(max_abs, std::fabs(double(want[i])));
      max_err = std::max(max_err, std::fabs(double(want[i]) - got[i]));
    }
    return max_err / std::max(1.0, max_abs);
  };
  const auto tables = testing_util::runnable_tables();
  std::vector<double> cleanest(tables.size(), INFINITY);
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    auto reference_model = load_tiny_model(bytes);
    const auto tokens = random_tokens(9, reference_model->config().vocab_size, seed);
    const auto want = reference_logits(*reference_model, tokens);
    double max_abs = 0;
    for (float x : want) max_abs = std::max(max_abs, std::fabs(double(x)));
    EXPECT_GT(max_abs, 0.1) << "logits too small to be a meaningful check";
    std::vector<float> scalar, first_simd;
    const char* first_simd_name = nullptr;
    for (size_t t = 0; t < tables.size(); ++t) {
      const KernelTable& table = *tables[t];
      const auto got = engine_logits(load_tiny_model(bytes, &table), tokens, 4, 2, 16, 64, KvCacheType::kF16, table);
      ASSERT_EQ(want.size(), got.size());
      const double relative = relative_error(want, got);
      EXPECT_LT(relative, tolerance) << table.name << ", seed " << seed << ": max |logit| " << max_abs;
      cleanest[t] = std::min(cleanest[t], relative);
      if (table.isa == Isa::kScalar) {
        scalar = got;
      } else if (first_simd.empty()) {
        first_simd = got;
        first_simd_name = table.name;
      } else {
        EXPECT_EQ(0, std::memcmp(first_simd.data(), got.data(), got.size() * sizeof(float)))
            << table.name << " against " << first_simd_name << ", seed " << seed;
      }
    }
    // runnable_tables() ends with the scalar one.
    ASSERT_FALSE(scalar.empty());
    if (!first_simd.empty()) {
      EXPECT_LT(relative_error(scalar, first_simd), 2 * tolerance)
          << first_simd_name << " against scalar, seed " << seed;
    }
  }
  for (size_t t = 0; t < tables.size(); ++t)
    EXPECT_LT(cleanest[t], 5e-4) << tables[t]->name
                                 << ": no token sequence matched the reference within float rounding";
}

TEST_P(ForwardTest, LogitsAreBatchInvariant) {
  const auto bytes = make_tiny_model_bytes(spec_for(GetParam()));
  auto model = load_tiny_model(bytes);
  const auto tokens = random_tokens(13, model->config().vocab_size, 11);
  const auto whole = engine_logits(model, tokens, 13, 1);
  // Steps of fewer than 4 rows per thread run as one pool job with barriers
  // (forward_decode_step.cpp); 1 thread, or more rows, take the per-op path.
  for (auto [chunk, threads] : {std::pair{1, 1}, {1, 2}, {3, 2}, {5, 3}, {1, 4}, {13, 2}}) {
    const auto other = engine_logits(model, tokens, chunk, threads);
    ASSERT_EQ(0, std::memcmp(whole.data(), other.data(), whole.size() * sizeof(float)))
        << "chunk " << chunk << " threads " << threads;
  }
}

// The interleaved weight layout (the default on AVX2 for Q4_0 / Q4_1 / Q5_0
// / Q8_0 and the K-quants) changes speed only: logits are bit-identical to the row layout's.
TEST_P(ForwardTest, InterleavedWeightsGiveTheRowLayoutsLogits) {
  const auto bytes = make_tiny_model_bytes(spec_for(GetParam()));
  auto rows_model = load_tiny_model(bytes, nullptr);
  auto default_model = load_tiny_model(bytes);
  const auto tokens = random_tokens(11, rows_model->config().vocab_size, 5);
  for (auto [chunk, threads] : {std::pair{1, 2}, {11, 2}, {4, 1}}) {
    const auto want = engine_logits(rows_model, tokens, chunk, threads);
    const auto got = engine_logits(default_model, tokens, chunk, threads);
    ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
        << "chunk " << chunk << " threads " << threads;
  }
}

// A tied embedding is looked up in the output projection's repacked copy,
// not in the file, whose pages the repacking released (a lookup there
// would fault them back in with their neighbours: RSS). The logits above
// show the lookup reads the same values.
TEST(ForwardLoadTest, TiedEmbeddingIsReadFromTheRepackedCopy) {
  if (!can_interleave8(DType::kQ8_0)) GTEST_SKIP() << "no interleaved layout on this CPU";
  TinyModelSpec spec;
  spec.matrix_type = spec.embedding_type = DType::kQ8_0;
  spec.tied_output = true;
  auto model = load_tiny_model(make_tiny_model_bytes(spec));
  const ModelWeights& w = model->weights();
  EXPECT_EQ(w.output.layout, WeightLayout::kInterleaved8);
  EXPECT_EQ(w.token_embd.data, w.output.data);
  EXPECT_EQ(w.token_embd.layout, WeightLayout::kInterleaved8);
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, ForwardTest,
    ::testing::Values(Case{"llama", DType::kF32, 2}, Case{"llama", DType::kF32, 1}, Case{"llama", DType::kF16, 4},
                      Case{"llama", DType::kBF16, 2}, Case{"llama", DType::kQ8_0, 2}, Case{"llama", DType::kQ4_0, 2},
                      Case{"llama", DType::kQ4_1, 2}, Case{"llama", DType::kQ4_1, 1}, Case{"llama", DType::kQ5_0, 2},
                      Case{"llama", DType::kQ5_1, 2}, Case{"llama", DType::kQ4_K, 2}, Case{"llama", DType::kQ5_K, 2},
                      Case{"llama", DType::kQ6_K, 1}, Case{"qwen2", DType::kF32, 2}, Case{"qwen2", DType::kQ4_1, 1},
                      Case{"qwen2", DType::kQ8_0, 4}, Case{"gemma3", DType::kF32, 1}, Case{"gemma3", DType::kQ8_0, 2},
                      Case{"gemma3", DType::kQ4_K, 1}, Case{"gemma3", DType::kQ5_0, 1}, Case{"llama", DType::kQ2_K, 2},
                      Case{"llama", DType::kQ3_K, 2}, Case{"llama", DType::kIQ4_NL, 2},
                      Case{"llama", DType::kIQ4_XS, 1}, Case{"qwen2", DType::kQ3_K, 1},
                      Case{"gemma3", DType::kIQ4_XS, 1}, Case{"qwen3", DType::kQ8_0, 2}, Case{"qwen3", DType::kQ4_K, 1},
                      Case{"qwen3moe", DType::kQ8_0, 2}, Case{"qwen3moe", DType::kQ4_K, 1},
                      Case{"qwen3moe", DType::kF32, 2}, Case{"phi3", DType::kQ8_0, 4}, Case{"phi3", DType::kQ4_K, 2},
                      Case{"phi3", DType::kF32, 4}, Case{"qwen2moe", DType::kQ8_0, 2},
                      Case{"qwen2moe", DType::kQ4_K, 2}, Case{"llama", DType::kMXFP4, 2},
                      Case{"qwen3moe", DType::kMXFP4, 1}, Case{"gpt-oss", DType::kF32, 2},
                      Case{"gpt-oss", DType::kQ8_0, 1}, Case{"gpt-oss", DType::kMXFP4, 2}),
    case_name);

// MQA with more heads than one attention call takes (ForwardPass::
// kHeadsPerCall = 16): prefill splits each row's 24 heads into items of 16
// and 8, and every head must still be computed, as in the reference.
TEST(ForwardBatchTest, ManyHeadsPerKvHeadMatchTheReference) {
  TinyModelSpec spec;
  spec.n_embd = 192;  // 24 heads of 8
  spec.n_head = 24;
  spec.n_head_kv = 1;
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = load_tiny_model(bytes);
  const auto tokens = random_tokens(12, model->config().vocab_size, 3);
  const auto want = reference_logits(*model, tokens);
  const auto got = engine_logits(model, tokens, 12, 2);
  double max_abs = 0, max_err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(double(want[i])));
    max_err = std::max(max_err, std::fabs(double(want[i]) - got[i]));
  }
  EXPECT_LT(max_err, 2e-3 * std::max(1.0, max_abs)) << "max |logit| " << max_abs;
}

// The runner takes only caches of its own backend and model: anything else
// is refused before a row runs.
TEST(ForwardBatchTest, RefusesACacheOfAnotherBackendOrModel) {
  TinyModelSpec spec;
  const auto bytes = make_tiny_model_bytes(spec);  // the model reads these
  auto model = load_tiny_model(bytes);
  ThreadPool pool(1);
  ForwardPass fp(model, pool, 4, 64);
  ModelRunner& runner = fp;
  class ForeignCache final : public KvCache {
   public:
    KvCacheType type() const override { return KvCacheType::kF16; }
    int num_blocks() const override { return 8; }
    int block_size() const override { return 16; }
    uint64_t bytes() const override { return 0; }
    int64_t block_transfer_bytes() const override { return 0; }
    Status copy_block_out(int, int, uint8_t*) const override { return Status::ok(); }
    Status copy_block_in(int, int, const uint8_t*) override { return Status::ok(); }
  } foreign;
  const std::vector<int32_t> table = {0};
  const BatchRow row{1, table, 0, true};
  std::vector<float> logits(model->config().vocab_size);
  Status s = runner.run(std::span(&row, 1), foreign, logits.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();

  TinyModelSpec other_spec;
  other_spec.n_layer = spec.n_layer + 1;
  const auto other_bytes = make_tiny_model_bytes(other_spec);
  auto other = load_tiny_model(other_bytes);
  auto other_kv = PagedKvStore::create(other->config(), 8, 16);
  ASSERT_TRUE(other_kv.is_ok());
  s = runner.run(std::span(&row, 1), *other_kv, logits.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.message();
  EXPECT_NE(s.message().find("another model"), std::string::npos) << s.message();

  auto own_kv = PagedKvStore::create(model->config(), 8, 16);
  ASSERT_TRUE(own_kv.is_ok());
  EXPECT_TRUE(runner.run(std::span(&row, 1), *own_kv, logits.data()).is_ok());
  EXPECT_EQ(runner.stats().shared_prefix_units, 0u);
}

// Two sequences sharing batches, their blocks interleaved and out of order in
// one store, give exactly what each gives alone in contiguous blocks.
TEST(ForwardBatchTest, InterleavedPagedSequencesMatchSoloRuns) {
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ4_1;
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = load_tiny_model(bytes);
  const int vocab = model->config().vocab_size;
  const int n = 11;  // three blocks of 4, the last one partial
  const auto a = random_tokens(n, vocab, 3), b = random_tokens(n, vocab, 4);
  const auto solo_a = engine_logits(model, a, n, 2, 4), solo_b = engine_logits(model, b, n, 2, 4);
  ThreadPool pool(2);
  ForwardPass fp(model, pool, 2 * n, 64);
  auto kv = PagedKvStore::create(model->config(), 8, 4);
  ASSERT_TRUE(kv.is_ok());
  const std::vector<int32_t> table_a = {5, 1, 7}, table_b = {0, 6, 2};
  std::vector<float> out(2 * n * vocab);
  // Two steps (a prompt chunk, then the rest) so attention also reads blocks
  // written by an earlier call.
  for (auto [begin, end] : {std::pair{0, 6}, {6, n}}) {
    std::vector<BatchRow> rows;
    for (int p = begin; p < end; ++p) {
      rows.push_back({a[p], table_a, p, true});
      rows.push_back({b[p], table_b, p, true});
    }
    ASSERT_TRUE(fp.run(rows, *kv, out.data() + 2 * begin * vocab).is_ok());
  }
  for (int p = 0; p < n; ++p) {
    EXPECT_EQ(0, std::memcmp(out.data() + (2 * p) * vocab, solo_a.data() + p * vocab, vocab * sizeof(float))) << p;
    EXPECT_EQ(0, std::memcmp(out.data() + (2 * p + 1) * vocab, solo_b.data() + p * vocab, vocab * sizeof(float)))
        << p;
  }
}

// Decode rows of several sequences that took the same 512-position prompt
// prefix from a prefix cache (the same KV blocks), batched in one step:
// attention pairs rows of different sequences over the shared chunks (many
// rows: attend_rows' units; few: attend_chunks' and the one-job decode
// step's chunk units), and every row's logits are bit-identical to its
// sequence run alone.
void check_decode_rows_sharing_a_prefix(int n_seqs, int threads, bool gemma = false) {
  SCOPED_TRACE("sequences " + std::to_string(n_seqs) + ", threads " + std::to_string(threads) +
               (gemma ? ", gemma3" : ""));
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ8_0;
  if (gemma) {
    // Five window layers (4 positions: rows start at different positions
    // there, so they are never paired) and one global layer.
    spec.architecture = "gemma3";
    spec.n_layer = 6;
    spec.sliding_window = 4;
    spec.head_dim = 32;
  }
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = load_tiny_model(bytes);
  const int vocab = model->config().vocab_size;
  constexpr int kBlock = 16, kShared = 512, kMaxPositions = 640;
  const auto prefix = random_tokens(kShared, vocab, 21);
  ThreadPool pool(threads);
  ForwardPass fp(model, pool, kShared, kMaxPositions);
  fp.set_shared_prefix_min_bytes(0);  // the tiny model's prefix K/V is far smaller than an L2
  auto kv = PagedKvStore::create(model->config(), kShared / kBlock + n_seqs * 2, kBlock);
  ASSERT_TRUE(kv.is_ok());
  // Sequence s: the prefix's blocks 0..31, then its own two blocks; its own
  // tokens after the prefix, 3 + s of them (prompt and decode).
  std::vector<std::vector<int32_t>> tables(n_seqs), tokens(n_seqs);
  for (int s = 0; s < n_seqs; ++s) {
    tables[s] = contiguous_table(kShared / kBlock);
    tables[s].push_back(kShared / kBlock + 2 * s);
    tables[s].push_back(kShared / kBlock + 2 * s + 1);
    tokens[s] = prefix;
    const auto own = random_tokens(3 + s, vocab, 30 + s);
    tokens[s].insert(tokens[s].end(), own.begin(), own.end());
  }
  // The prefix once, through sequence 0's table (what the prefix cache keeps).
  std::vector<BatchRow> rows;
  for (int p = 0; p < kShared; ++p) rows.push_back({prefix[p], tables[0], p, false});
  std::vector<float> logits(kShared * vocab);
  ASSERT_TRUE(fp.run(rows, *kv, logits.data()).is_ok());
  // Each sequence's own prompt tokens but its last two, alone.
  for (int s = 0; s < n_seqs; ++s) {
    rows.clear();
    for (int p = kShared; p + 2 < static_cast<int>(tokens[s].size()); ++p)
      rows.push_back({tokens[s][p], tables[s], p, false});
    ASSERT_TRUE(fp.run(rows, *kv, logits.data()).is_ok());
  }
  // Each sequence alone: the logits of every position.
  std::vector<std::vector<float>> solo(n_seqs);
  for (int s = 0; s < n_seqs; ++s) solo[s] = engine_logits(model, tokens[s], 64, 2, kBlock, kMaxPositions);
  // Two decode steps of all the sequences together.
  const uint64_t units_before = fp.stats().shared_prefix_units;
  for (int step = 2; step >= 1; --step) {
    rows.clear();
    for (int s = 0; s < n_seqs; ++s) {
      const int p = static_cast<int>(tokens[s].size()) - step;
      rows.push_back({tokens[s][p], tables[s], p, true});
    }
    ASSERT_TRUE(fp.run(rows, *kv, logits.data()).is_ok());
    for (int s = 0; s < n_seqs; ++s) {
      const int p = static_cast<int>(tokens[s].size()) - step;
      EXPECT_EQ(0, std::memcmp(logits.data() + s * vocab, solo[s].data() + static_cast<size_t>(p) * vocab,
                               vocab * sizeof(float)))
          << "sequence " << s << " position " << p;
    }
  }
  // Every row paired but an odd one out, in both layers and both steps: the
  // shared path ran. Fewer than two rows per thread stay unpaired.
  // A kernel table without a pair kernel (scalar) computes every row alone.
  const bool pair_kernel = kernels().attention_chunk_pair != nullptr;
  const uint64_t pairs = pair_kernel && n_seqs >= 2 * threads ? n_seqs / 2 : 0;
  const uint64_t paired_layers = gemma ? 1 : 2;
  EXPECT_EQ(fp.stats().shared_prefix_units - units_before, pairs * paired_layers * 2);
}

TEST(ForwardBatchTest, DecodeRowsSharingACachedPrefixMatchSoloRuns) {
  for (auto [n_seqs, threads] : {std::pair{8, 2}, {5, 2}, {4, 2}, {3, 2}, {2, 1}, {3, 1}, {5, 1}})
    check_decode_rows_sharing_a_prefix(n_seqs, threads);
  for (auto [n_seqs, threads] : {std::pair{8, 2}, {4, 2}, {3, 1}})
    check_decode_rows_sharing_a_prefix(n_seqs, threads, /*gemma=*/true);
}

// The block size changes only where K/V are stored, never the logits.
TEST(ForwardBatchTest, LogitsDoNotDependOnBlockSize) {
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ8_0;
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = load_tiny_model(bytes);
  const auto tokens = random_tokens(19, model->config().vocab_size, 5);
  const auto want = engine_logits(model, tokens, 5, 2, 64);
  for (int block_size : {1, 3, 16}) {
    const auto got = engine_logits(model, tokens, 5, 2, block_size);
    ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float))) << "block size " << block_size;
  }
}

// Long rows of `model`: the logits of n random tokens are bit-identical
// however they are chunked, threaded and cut into KV blocks, and match the
// reference forward.
void check_long_rows(std::shared_ptr<const Model> model, int n, uint32_t seed, int max_positions,
                     std::initializer_list<std::tuple<int, int, int>> chunk_threads_block) {
  const auto tokens = random_tokens(n, model->config().vocab_size, seed);
  const auto whole = engine_logits(model, tokens, n, 2, 16, max_positions);
  for (auto [chunk, threads, block_size] : chunk_threads_block) {
    const auto other = engine_logits(model, tokens, chunk, threads, block_size, max_positions);
    ASSERT_EQ(0, std::memcmp(whole.data(), other.data(), whole.size() * sizeof(float)))
        << "chunk " << chunk << " threads " << threads << " block size " << block_size;
  }
  const auto want = reference_logits(*model, tokens);
  double max_abs = 0, max_err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(double(want[i])));
    max_err = std::max(max_err, std::fabs(double(want[i]) - whole[i]));
  }
  EXPECT_LT(max_err, 2e-3 * std::max(1.0, max_abs)) << "max |logit| " << max_abs;
}

// Rows longer than one softmax chunk (kAttentionChunk = 256 positions):
// decode steps spread a row's chunks over the threads and merge them after,
// a prefill chunk runs whole rows per item; the logits are bit-identical
// either way, and match the reference forward (one softmax over the row).
TEST(ForwardBatchTest, LongRowsSplitIntoSoftmaxChunksAreBatchInvariant) {
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ8_0;
  const auto bytes = make_tiny_model_bytes(spec);
  // 600 positions: three chunks, the last partial.
  check_long_rows(load_tiny_model(bytes), 600, 9, 640, {{1, 2, 16}, {1, 3, 3}, {7, 2, 100}, {1, 1, 16}});
}

// Gemma 3's window layers over rows longer than one softmax chunk: a row
// past its window reads from its first visible position, and its chunks
// count from there, so decode (chunks over threads) and prefill (whole rows,
// pairs only while the window has not slid) still give the same bits, and
// the reference (one softmax over the window) agrees.
TEST(ForwardBatchTest, SlidingWindowRowsAreBatchInvariantAndMatchTheReference) {
  TinyModelSpec spec;
  spec.architecture = "gemma3";
  spec.n_layer = 6;
  // f32 matrices: with int8 activations one rounding tie (at position 31)
  // moves every later logit by ~0.1 against the double-precision reference.
  spec.matrix_type = DType::kF32;
  spec.sliding_window = 300;  // past one chunk of 256, so the window's rows are two chunks
  const auto bytes = make_tiny_model_bytes(spec);
  check_long_rows(load_tiny_model(bytes), 560, 17, 576, {{1, 2, 16}, {1, 3, 7}, {9, 2, 100}});
}

// The window is real: in a model of one window layer (span 4), changing
// token 0 changes the logits of positions 0-3 only; with six layers, the
// sixth global, it changes every position's.
TEST(ForwardBatchTest, SlidingWindowHidesTokensBeforeTheWindowFromWindowLayers) {
  TinyModelSpec spec;
  spec.architecture = "gemma3";
  spec.sliding_window = 4;
  for (int layers : {1, 6}) {
    spec.n_layer = layers;
    const auto bytes = make_tiny_model_bytes(spec);
    auto model = load_tiny_model(bytes);
    const int vocab = model->config().vocab_size;
    const auto a = random_tokens(12, vocab, 21);
    auto b = a;
    b[0] = (b[0] + 1) % vocab;
    const auto la = engine_logits(model, a, 12, 2), lb = engine_logits(model, b, 12, 2);
    for (int p = 0; p < 12; ++p) {
      const bool same = std::memcmp(la.data() + p * vocab, lb.data() + p * vocab, vocab * sizeof(float)) == 0;
      EXPECT_EQ(same, layers == 1 && p >= 4) << layers << " layers, position " << p;
    }
  }
}

// Logits as engine_logits gives them, but from a store whose window layers
// have a group of their own (PagedKvStore window_blocks), as the serving
// engine's: the window layers' blocks a ring just long enough for one
// step's window, each reused once its positions fall behind every later
// row's window (what KvManager's release does), with kNoKvBlock in the
// table elsewhere; the full layers' blocks ids a window pool's size apart,
// so that a window layer that indexed its group with them would write a
// neighbouring head's or layer's live block.
std::vector<float> window_group_logits(std::shared_ptr<const Model> model, const std::vector<int32_t>& tokens,
                                       int chunk, int threads, int block_size, int max_positions, KvCacheType kv_type) {
  ThreadPool pool(threads);
  ForwardPass fp(model, pool, chunk, max_positions, kernels());
  const ModelConfig& c = model->config();
  const int blocks = (max_positions + block_size - 1) / block_size;
  const int ring = (c.sliding_window + chunk + block_size - 1) / block_size + 1;
  const int window_blocks = ring + 2;
  auto kv = PagedKvStore::create(c, blocks * window_blocks + 2, block_size, kv_type, window_blocks);
  EXPECT_TRUE(kv.is_ok()) << kv.status().message();
  std::vector<int32_t> table(blocks);
  for (int b = 0; b < blocks; ++b) table[b] = 1 + b * window_blocks;
  const int vocab = c.vocab_size;
  std::vector<float> out(tokens.size() * vocab);
  for (size_t start = 0; start < tokens.size(); start += chunk) {
    const size_t end = std::min(tokens.size(), start + chunk);
    std::vector<int32_t> window(blocks, kNoKvBlock);
    const int64_t first = std::max<int64_t>(0, static_cast<int64_t>(start) - c.sliding_window + 1) / block_size;
    for (int64_t b = first; b <= static_cast<int64_t>(end - 1) / block_size; ++b)
      window[b] = 1 + static_cast<int32_t>(b % ring);
    std::vector<BatchRow> rows;
    for (size_t p = start; p < end; ++p) rows.push_back({tokens[p], table, static_cast<int32_t>(p), true, window});
    const Status st = fp.run(rows, *kv, out.data() + start * vocab);
    EXPECT_TRUE(st.is_ok()) << st.message();
  }
  return out;
}

// Window layers in a group of their own, their blocks reused as the window
// moves on: the same bits as every layer in one pool, for each cache type,
// one row a step (decode) and several (prefill chunks), windows inside one
// softmax chunk and across two.
TEST(ForwardBatchTest, WindowGroupGivesTheSameBitsAsOnePool) {
  for (int window : {5, 300}) {
    TinyModelSpec spec;
    spec.architecture = "gemma3";
    spec.n_layer = 6;
    spec.head_dim = 32;  // whole q8_0 / q4_0 groups
    spec.sliding_window = window;
    const auto bytes = make_tiny_model_bytes(spec);
    auto model = load_tiny_model(bytes);
    const int n = window == 5 ? 40 : 420;
    const auto tokens = random_tokens(n, model->config().vocab_size, 5);
    for (KvCacheType type : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kQ4_0}) {
      for (auto [chunk, block_size] : {std::pair{1, 4}, {7, 16}, {64, 8}}) {
        const auto one_pool = engine_logits(model, tokens, chunk, 2, block_size, n + 8, type);
        const auto grouped = window_group_logits(model, tokens, chunk, 2, block_size, n + 8, type);
        EXPECT_EQ(0, std::memcmp(one_pool.data(), grouped.data(), one_pool.size() * sizeof(float)))
            << "window " << window << ", " << kv_cache_type_name(type) << ", chunk " << chunk << ", block size "
            << block_size;
      }
    }
  }
}

// The runner refuses a row whose window block table lacks a block its
// window reads.
TEST(ForwardBatchTest, WindowGroupRefusesAMissingWindowBlock) {
  TinyModelSpec spec;
  spec.architecture = "gemma3";
  spec.n_layer = 6;
  spec.sliding_window = 4;
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = load_tiny_model(bytes);
  ThreadPool pool(1);
  ForwardPass fp(model, pool, 4, 64, kernels());
  auto kv = PagedKvStore::create(model->config(), 8, 4, KvCacheType::kF16, 3);
  ASSERT_TRUE(kv.is_ok());
  const std::vector<int32_t> table = contiguous_table(8);
  std::vector<float> logits(model->config().vocab_size);
  // Position 5 sees 2..5: window blocks 0 and 1.
  const std::vector<int32_t> missing = {kNoKvBlock, 2};
  const BatchRow row{1, table, 5, true, missing};
  const Status st = fp.run(std::span(&row, 1), *kv, logits.data());
  EXPECT_FALSE(st.is_ok());
  const std::vector<int32_t> beyond = {0, 3};
  const BatchRow row2{1, table, 5, true, beyond};
  EXPECT_FALSE(fp.run(std::span(&row2, 1), *kv, logits.data()).is_ok());
  const std::vector<int32_t> fine = {0, 2};
  const BatchRow row3{1, table, 5, true, fine};
  EXPECT_TRUE(fp.run(std::span(&row3, 1), *kv, logits.data()).is_ok());
  const std::vector<int32_t> later = {kNoKvBlock, 2};
  const BatchRow row4{1, table, 7, true, later};  // sees 4..7: block 1 only
  EXPECT_TRUE(fp.run(std::span(&row4, 1), *kv, logits.data()).is_ok());
}

// bit-identical however rows are batched, chunked, threaded or cut into
// blocks (rows past one softmax chunk included), and within
// `tolerance` x max |logit| of the f16 cache's.
void check_kv_cache_type(KvCacheType type, int n_embd, double tolerance) {
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ8_0;
  spec.n_embd = n_embd;
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = load_tiny_model(bytes);
  const int n = 300;
  const auto tokens = random_tokens(n, model->config().vocab_size, 13);
  const auto whole = engine_logits(model, tokens, n, 2, 16, 320, type);
  for (auto [chunk, threads, block_size] : {std::tuple{1, 2, 16}, {1, 3, 5}, {7, 2, 100}}) {
    const auto other = engine_logits(model, tokens, chunk, threads, block_size, 320, type);
    ASSERT_EQ(0, std::memcmp(whole.data(), other.data(), whole.size() * sizeof(float)))
        << kv_cache_type_name(type) << " chunk " << chunk << " threads " << threads << " block size " << block_size;
  }
  const auto f16 = engine_logits(model, tokens, n, 2, 16, 320, KvCacheType::kF16);
  double max_abs = 0, max_err = 0;
  for (size_t i = 0; i < f16.size(); ++i) {
    max_abs = std::max(max_abs, std::fabs(double(f16[i])));
    max_err = std::max(max_err, std::fabs(double(f16[i]) - whole[i]));
  }
  EXPECT_GT(max_err, 0.0) << "the " << kv_cache_type_name(type) << " cache was not used";
  EXPECT_LT(max_err, tolerance * std::max(1.0, max_abs)) << "max |logit| " << max_abs;
  std::printf("%s vs f16 cache: max |logit difference| %.2e (max |logit| %.2f)\n", kv_cache_type_name(type), max_err,
              max_abs);
}

// head_dim 32: one q8_0 group per head vector. Measured 0.18 at max |logit|
// 78 (0.23%).
TEST(ForwardBatchTest, Q8KvCacheIsBatchInvariantAndCloseToF16) { check_kv_cache_type(KvCacheType::kQ8_0, 128, 5e-3); }

// head_dim 16 (the tiny model's): one split-lane pair per head vector.
TEST(ForwardBatchTest, Bf16KvCacheIsBatchInvariantAndCloseToF16) { check_kv_cache_type(KvCacheType::kBF16, 64, 5e-3); }

// head_dim 32, 4-bit codes: the logits move about seven times as much as with
// q8_0 (measured 1.29 at max |logit| 78, 1.7%; q8_0 0.18).
TEST(ForwardBatchTest, Q4KvCacheIsBatchInvariantAndCloseToF16) { check_kv_cache_type(KvCacheType::kQ4_0, 128, 4e-2); }

// head_dim 64: K, Q and V are rotated (kernels/hadamard.h) and the output
// rotated back; the same invariances, and as close to the f16 cache.
TEST(ForwardBatchTest, RotatedQ4KvCacheIsBatchInvariantAndCloseToF16) {
  check_kv_cache_type(KvCacheType::kQ4_0, 256, 4e-2);
}

TEST(ForwardBatchTest, QuantizedKvCachesNeedHeadSizeInGroupsOf32) {
  auto model = load_tiny_model(make_tiny_model_bytes(TinyModelSpec{}));  // head_dim 16
  for (KvCacheType type : {KvCacheType::kQ8_0, KvCacheType::kQ4_0}) {
    auto kv = PagedKvStore::create(model->config(), 4, 16, type);
    ASSERT_FALSE(kv.is_ok());
    EXPECT_NE(std::string::npos, kv.status().message().find(std::string("--kv-type ") + kv_cache_type_name(type)))
        << kv.status().message();
  }
}

TEST(ForwardBatchTest, RejectsBadTokenIdsPositionsAndBlocks) {
  const auto bytes = make_tiny_model_bytes(TinyModelSpec{});
  auto model = load_tiny_model(bytes);
  ThreadPool pool(1);
  ForwardPass fp(model, pool, 4, 8);
  auto kv = PagedKvStore::create(model->config(), 3, 4);
  ASSERT_TRUE(kv.is_ok());
  std::vector<float> out(model->config().vocab_size);
  const std::vector<int32_t> table = {2, 0};  // covers positions 0..7
  BatchRow bad_token{model->config().vocab_size, table, 0, true};
  EXPECT_EQ(fp.run(std::span(&bad_token, 1), *kv, out.data()).code(), StatusCode::kInvalidArgument);
  BatchRow past_table{1, table, 8, true};
  EXPECT_EQ(fp.run(std::span(&past_table, 1), *kv, out.data()).code(), StatusCode::kOutOfRange);
  const std::vector<int32_t> long_table = {2, 0, 1, 2, 0};  // ids may repeat; covers 20 positions
  BatchRow past_context{1, long_table, 16, true};
  EXPECT_EQ(fp.run(std::span(&past_context, 1), *kv, out.data()).code(), StatusCode::kOutOfRange);
  const std::vector<int32_t> bad_ids = {1, 3};
  BatchRow bad_block{1, bad_ids, 5, true};
  EXPECT_EQ(fp.run(std::span(&bad_block, 1), *kv, out.data()).code(), StatusCode::kInvalidArgument);
  BatchRow bad_unused_entry{1, bad_ids, 2, true};  // reads block 0 only: entries past it are not checked
  EXPECT_TRUE(fp.run(std::span(&bad_unused_entry, 1), *kv, out.data()).is_ok());
  const std::vector<int32_t> negative = {-1};
  BatchRow negative_id{1, negative, 0, true};
  EXPECT_EQ(fp.run(std::span(&negative_id, 1), *kv, out.data()).code(), StatusCode::kInvalidArgument);
  BatchRow empty_table{1, {}, 0, true};
  EXPECT_EQ(fp.run(std::span(&empty_table, 1), *kv, out.data()).code(), StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace omnibus::testing
