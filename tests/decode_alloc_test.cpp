// Nothing per token that need not be: a decode step of the forward pass
// makes no heap allocation once warmed up. This binary replaces the global
// operator new to count allocations (so it is its own test executable).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "backends/cpu/forward.h"
#include "backends/cpu/paged_kv_store.h"
#include "base/thread_pool.h"
#include "sampling/sampler.h"
#include "tiny_model.h"

// GCC 12 sees operator delete's free() inlined against the operator new
// below and calls it a mismatch; both are this file's malloc/free pair.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
// The nothrow forms too (std::stable_sort's buffer): left to the runtime's,
// their memory would come back through the free() below (ASan: mismatch).
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace omnibus::testing {
namespace {

// A dense model, and mixtures of experts (their layers in the one-job step
// too: forward_moe.cpp's moe_share).
class DecodeAllocationTest : public ::testing::TestWithParam<const char*> {};

TEST_P(DecodeAllocationTest, DecodeStepsAllocateNothing) {
  TinyModelSpec spec;
  spec.architecture = GetParam();
  spec.matrix_type = spec.architecture == "llama" ? DType::kQ4_1 : DType::kQ8_0;
  spec.embedding_type = DType::kQ8_0;
  if (spec.architecture == "gpt-oss") {  // windows, YaRN, sinks, biases
    spec.n_layer = 4;
    spec.sliding_window = 4;
    spec.yarn_factor = 4;
  }
  const auto bytes = make_tiny_model_bytes(spec);  // the model reads its weights from here
  auto model = load_tiny_model(bytes);
  constexpr int kBlockSize = 4, kBlocks = 16;
  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    ForwardPass fp(model, pool, 8, kBlocks * kBlockSize);
    auto kv = PagedKvStore::create(model->config(), kBlocks, kBlockSize);
    ASSERT_TRUE(kv.is_ok());
    std::vector<int32_t> table(kBlocks);
    for (int i = 0; i < kBlocks; ++i) table[i] = i;
    std::vector<float> logits(static_cast<size_t>(8) * model->config().vocab_size);
    std::vector<BatchRow> prompt;
    for (int p = 0; p < 5; ++p) prompt.push_back({p + 1, table, p, p == 4});
    ASSERT_TRUE(fp.run(prompt, *kv, logits.data()).is_ok());
    std::vector<BatchRow> step(1);
    auto decode = [&](int pos) {
      step[0] = {7, table, pos, true};
      return fp.run(step, *kv, logits.data());
    };
    ASSERT_TRUE(decode(5).is_ok());  // warm-up: lazily sized scratch, thread start-up
    const long before = g_allocations.load();
    for (int pos = 6; pos < 40; ++pos) ASSERT_TRUE(decode(pos).is_ok());
    EXPECT_EQ(g_allocations.load() - before, 0) << "heap allocations in 34 decode steps, threads " << threads;
  }
}

INSTANTIATE_TEST_SUITE_P(Architectures, DecodeAllocationTest, ::testing::Values("llama", "qwen3moe", "gpt-oss"));

// The sampler's half of a decode step: penalties, logit bias, logprobs and
// top-k/top-p/min-p sampling on a full vocabulary, after the first call.
TEST(SamplingAllocationTest, SamplingStepsAllocateNothing) {
  constexpr int32_t kVocab = 49152;
  SamplingParams params;
  params.temperature = 0.8f;
  params.top_k = 40;
  params.top_p = 0.9f;
  params.min_p = 0.05f;
  params.repetition_penalty = 1.1f;
  params.presence_penalty = 0.5f;
  params.frequency_penalty = 0.25f;
  params.logit_bias = {{3, -100.0f}, {17, 2.0f}};
  params.logprobs = true;
  params.top_logprobs = 5;
  params.seed = 42;
  for (float temperature : {0.8f, 0.0f}) {  // stochastic and greedy
    params.temperature = temperature;
    Sampler sampler(params, kVocab);
    std::vector<float> logits(kVocab);
    std::vector<int32_t> prompt = {5, 6, 7, 8};
    std::vector<int32_t> generated;
    generated.reserve(64);
    auto step = [&](int i) {
      for (int32_t v = 0; v < kVocab; ++v) logits[v] = static_cast<float>((v * 7919 + i * 104729) % 1000) * 0.01f;
      generated.push_back(sampler.sample(logits, prompt, generated));
    };
    step(0);  // warm-up
    const long before = g_allocations.load();
    for (int i = 1; i < 40; ++i) step(i);
    EXPECT_EQ(g_allocations.load() - before, 0) << "heap allocations in 39 sampling steps, temperature " << temperature;
  }
}

}  // namespace
}  // namespace omnibus::testing
