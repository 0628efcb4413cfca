// Nothing per token that need not be: a decode step of the forward pass
// makes no heap allocation once warmed up. This binary replaces the global
// operator new to count allocations (so it is its own test executable).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "model/forward.h"
#include "model/paged_kv_store.h"
#include "tiny_model.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace omnibus::testing {
namespace {

TEST(DecodeAllocationTest, DecodeStepsAllocateNothing) {
  TinyModelSpec spec;
  spec.matrix_type = DType::kQ4_1;
  spec.embedding_type = DType::kQ8_0;
  const auto bytes = make_tiny_model_bytes(spec);  // the model reads its weights from here
  auto model = load_tiny_model(bytes);
  constexpr int kBlockSize = 4, kBlocks = 16;
  for (int threads : {1, 2}) {
    ForwardPass fp(model, 8, kBlocks * kBlockSize, threads);
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

}  // namespace
}  // namespace omnibus::testing
