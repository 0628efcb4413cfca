// Which kernel table each kind of CPU gets, and that every table is whole.
#include "kernels/kernel_table.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

namespace omnibus {
namespace {

CpuFeatures avx2_cpu() {
  CpuFeatures c;
  c.avx2 = c.fma = c.f16c = true;
  return c;
}

// The name of the table a CPU gets, or the next compiled one below it when
// the compiler left the wanted build out (OMNIBUS_NO_<SET>_BUILD); below
// them all, the table every CPU of this build runs (neon on aarch64).
std::string best_compiled(std::initializer_list<const char*> wanted_in_order) {
  for (const char* name : wanted_in_order) {
    if (find_kernel_table(name) != nullptr) return name;
  }
  return find_kernel_table("neon") != nullptr ? "neon" : "scalar";
}

TEST(KernelTableTest, EachCpuGetsItsBestTable) {
  // No x86 features: Nehalem, or OMNIBUS_FORCE_SCALAR; on aarch64 (which
  // has none of them either) NEON, part of every ARMv8-A CPU.
  const std::string baseline = best_compiled({});
  EXPECT_EQ(select_kernel_table(CpuFeatures{}).name, baseline);

  CpuFeatures zen1 = avx2_cpu();
  EXPECT_EQ(select_kernel_table(zen1).name, best_compiled({"avx2"}));

  CpuFeatures no_f16c = avx2_cpu();  // all three or none: the AVX2 files use each
  no_f16c.f16c = false;
  EXPECT_EQ(select_kernel_table(no_f16c).name, baseline);

  CpuFeatures alder_lake = avx2_cpu();
  alder_lake.avx_vnni = true;
  EXPECT_EQ(select_kernel_table(alder_lake).name, best_compiled({"avx-vnni", "avx2"}));

  CpuFeatures skylake_x = avx2_cpu();
  skylake_x.avx512f = skylake_x.avx512bw = true;
  EXPECT_EQ(select_kernel_table(skylake_x).name, best_compiled({"avx512"}));

  CpuFeatures zen4 = skylake_x;
  zen4.avx512_vnni = true;
  EXPECT_EQ(select_kernel_table(zen4).name, best_compiled({"avx512-vnni", "avx512"}));

  CpuFeatures sapphire_rapids = zen4;
  sapphire_rapids.avx_vnni = true;
  EXPECT_EQ(select_kernel_table(sapphire_rapids).name, best_compiled({"avx512-vnni", "avx512"}));
}

TEST(KernelTableTest, TablesAreWholeAndBestFirst) {
  const auto tables = compiled_kernel_tables();
  ASSERT_FALSE(tables.empty());
  EXPECT_STREQ(tables.back()->name, "scalar");
  EXPECT_TRUE(tables.back()->runs_on(CpuFeatures{}));
  std::set<std::string> names;
  for (const KernelTable* t : tables) {
    SCOPED_TRACE(t->name);
    EXPECT_TRUE(names.insert(t->name).second) << "two tables with one name";
    EXPECT_EQ(find_kernel_table(t->name), t);
    EXPECT_NE(t->rows_float, nullptr);
    EXPECT_NE(t->rows_q8, nullptr);
    // Only the x86 SIMD tables interleave weights at load.
    EXPECT_EQ(t->rows_interleaved == nullptr, t->isa == Isa::kScalar || is_neon(t->isa));
    EXPECT_NE(t->quantize_x_rows, nullptr);
    EXPECT_NE(t->rms_norm, nullptr);
    EXPECT_NE(t->swiglu, nullptr);
    EXPECT_NE(t->geglu, nullptr);
    EXPECT_NE(t->dot_f32, nullptr);
    EXPECT_NE(t->axpy_f32, nullptr);
    EXPECT_NE(t->f32_to_f16_row, nullptr);
    EXPECT_NE(t->quantize_kv_q8, nullptr);
    EXPECT_NE(t->hadamard_blocks, nullptr);
    EXPECT_GE(t->hadamard_lanes, 1);
    EXPECT_NE(t->attention_chunk, nullptr);
    EXPECT_NE(t->attention_chunk_q4, nullptr);
    // Every fallback chain ends at a table that takes every shape.
    const KernelTable* last = t;
    while (last->attention_fallback != nullptr) last = last->attention_fallback;
    EXPECT_EQ(last->attention_lanes, 0);
  }
  // Best first: a table never comes after one that needs less.
  for (size_t i = 0; i + 1 < tables.size(); ++i) {
    EXPECT_GT(static_cast<int>(tables[i]->isa), static_cast<int>(tables[i + 1]->isa)) << tables[i]->name;
  }
#if defined(__aarch64__)
  EXPECT_NE(find_kernel_table("neon"), nullptr);
  EXPECT_EQ(find_kernel_table("avx2"), nullptr);
  CpuFeatures dotprod;
  dotprod.neon_dotprod = true;
  EXPECT_EQ(select_kernel_table(dotprod).name, best_compiled({"neon-dotprod"}));
  CpuFeatures i8mm = dotprod;
  i8mm.neon_i8mm = true;
  EXPECT_EQ(select_kernel_table(i8mm).name, best_compiled({"neon-i8mm", "neon-dotprod"}));
  CpuFeatures i8mm_alone;  // no CPU has it without dotprod; the table needs both
  i8mm_alone.neon_i8mm = true;
  EXPECT_EQ(select_kernel_table(i8mm_alone).name, best_compiled({}));
#else
  EXPECT_EQ(find_kernel_table("neon"), nullptr);
  EXPECT_EQ(find_kernel_table("neon-dotprod"), nullptr);
  EXPECT_EQ(find_kernel_table("neon-i8mm"), nullptr);
#endif
}

TEST(KernelTableTest, ThisProcessRunsTheSelectedTable) {
  const char* forced = std::getenv("OMNIBUS_KERNELS");
  const KernelTable* want = forced != nullptr ? find_kernel_table(forced) : nullptr;
  if (want == nullptr || !want->runs_on(cpu_features())) want = &select_kernel_table(cpu_features());
  EXPECT_EQ(&kernels(), want);
  EXPECT_TRUE(kernels().runs_on(cpu_features()));
}

// OMNIBUS_KERNELS: any compiled table the CPU runs, by name; anything else
// is an error that says why and what the CPU runs.
TEST(KernelTableTest, ChoosingByNameTakesOnlyRunnableTables) {
  auto best = choose_kernel_table(avx2_cpu(), "");
  ASSERT_TRUE(best.is_ok());
  EXPECT_EQ(best.value(), &select_kernel_table(avx2_cpu()));
  auto scalar = choose_kernel_table(avx2_cpu(), "scalar");
  ASSERT_TRUE(scalar.is_ok());
  EXPECT_STREQ(scalar.value()->name, "scalar");
  if (find_kernel_table("avx2") != nullptr) {
    auto avx2 = choose_kernel_table(avx2_cpu(), "avx2");
    ASSERT_TRUE(avx2.is_ok());
    EXPECT_STREQ(avx2.value()->name, "avx2");
    auto lacking = choose_kernel_table(CpuFeatures{}, "avx2");
    ASSERT_FALSE(lacking.is_ok());
    EXPECT_EQ(lacking.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(lacking.status().message().find("lacks"), std::string::npos) << lacking.status().message();
    EXPECT_NE(lacking.status().message().find("this CPU runs: scalar"), std::string::npos);
  }
  auto unknown = choose_kernel_table(avx2_cpu(), "neon-sve9");
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("not a kernel table"), std::string::npos) << unknown.status().message();
}

// Which table's attention kernels run a shape: the table's own where it
// takes the shape, else its fallback's (resolution only: nothing runs, so
// every compiled table is checked on any CPU).
TEST(KernelTableTest, AttentionResolvesDownTheFallbackChain) {
  auto shape = [](int head_dim, KvCacheType type, bool paged) {
    AttentionShape s{8, 2, head_dim, 0.125f};
    s.kv_type = type;
    if (paged) s.kv_head_stride = int64_t{head_dim} * 16, s.k_dim_stride = 16;
    return s;
  };
  const KernelTable& scalar = *find_kernel_table("scalar");
  EXPECT_STREQ(resolve_attention(scalar, shape(64, KvCacheType::kF16, true)).name, "scalar");
  EXPECT_EQ(resolve_attention(scalar, shape(64, KvCacheType::kF16, true)).pair, nullptr);
  if (const KernelTable* avx2 = find_kernel_table("avx2")) {
    EXPECT_STREQ(resolve_attention(*avx2, shape(64, KvCacheType::kF16, true)).name, "avx2");
    EXPECT_NE(resolve_attention(*avx2, shape(64, KvCacheType::kF16, true)).pair, nullptr);
    EXPECT_EQ(resolve_attention(*avx2, shape(64, KvCacheType::kF16, false)).pair, nullptr);       // row-major K
    EXPECT_STREQ(resolve_attention(*avx2, shape(20, KvCacheType::kF16, true)).name, "scalar");    // not whole vectors
    EXPECT_STREQ(resolve_attention(*avx2, shape(512, KvCacheType::kF16, true)).name, "scalar");   // > kMaxHeadDim
    EXPECT_STREQ(resolve_attention(*avx2, shape(48, KvCacheType::kQ8_0, true)).name, "scalar");   // not whole groups
    EXPECT_STREQ(resolve_attention(*avx2, shape(64, KvCacheType::kQ4_0, false)).name, "scalar");  // not paged
    EXPECT_STREQ(resolve_attention(*avx2, shape(64, KvCacheType::kQ4_0, true)).name, "avx2");
    EXPECT_EQ(resolve_attention(*avx2, shape(64, KvCacheType::kQ4_0, true)).pair,
              nullptr);  // AVX2 pairs split q4_0 groups
  }
  if (const KernelTable* neon = find_kernel_table("neon")) {  // avx2's shapes, no pair kernel
    for (KvCacheType type : {KvCacheType::kF16, KvCacheType::kQ8_0, KvCacheType::kBF16, KvCacheType::kQ4_0}) {
      EXPECT_STREQ(resolve_attention(*neon, shape(64, type, true)).name, "neon");
      EXPECT_EQ(resolve_attention(*neon, shape(64, type, true)).pair, nullptr);
    }
    EXPECT_STREQ(resolve_attention(*neon, shape(20, KvCacheType::kF16, true)).name, "scalar");    // not whole vectors
    EXPECT_STREQ(resolve_attention(*neon, shape(48, KvCacheType::kQ8_0, true)).name, "scalar");   // not whole groups
    EXPECT_STREQ(resolve_attention(*neon, shape(64, KvCacheType::kQ4_0, false)).name, "scalar");  // not paged
  }
  for (const KernelTable* t : compiled_kernel_tables()) {
    if (t->attention_lanes != 16) continue;  // the AVX-512 builds
    SCOPED_TRACE(t->name);
    EXPECT_STREQ(resolve_attention(*t, shape(64, KvCacheType::kF16, true)).name, t->name);
    EXPECT_STREQ(resolve_attention(*t, shape(24, KvCacheType::kF16, true)).name, "avx2");  // 8s, not 16s
    EXPECT_NE(resolve_attention(*t, shape(64, KvCacheType::kQ4_0, true)).pair, nullptr);
    const bool vnni = t->isa == Isa::kAvx512Vnni;
    EXPECT_EQ(resolve_attention(*t, shape(64, KvCacheType::kQ4_0, true)).chunk == t->attention_chunk, !vnni);
  }
}

}  // namespace
}  // namespace omnibus
