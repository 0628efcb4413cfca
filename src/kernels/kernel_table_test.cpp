// Which kernel table each kind of CPU gets, and that every table is whole.
#include "kernels/kernel_table.h"

#include <gtest/gtest.h>

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
// the compiler left the wanted build out (OMNIBUS_NO_<SET>_BUILD).
std::string best_compiled(std::initializer_list<const char*> wanted_in_order) {
  for (const char* name : wanted_in_order) {
    if (find_kernel_table(name) != nullptr) return name;
  }
  return "scalar";
}

TEST(KernelTableTest, EachCpuGetsItsBestTable) {
  EXPECT_STREQ(select_kernel_table(CpuFeatures{}).name, "scalar");  // Nehalem, or OMNIBUS_FORCE_SCALAR

  CpuFeatures zen1 = avx2_cpu();
  EXPECT_STREQ(select_kernel_table(zen1).name, "avx2");

  CpuFeatures no_f16c = avx2_cpu();  // all three or none: the AVX2 files use each
  no_f16c.f16c = false;
  EXPECT_STREQ(select_kernel_table(no_f16c).name, "scalar");

  CpuFeatures alder_lake = avx2_cpu();
  alder_lake.avx_vnni = true;
  EXPECT_EQ(select_kernel_table(alder_lake).name, best_compiled({"avx-vnni", "avx2"}));

  CpuFeatures skylake_x = avx2_cpu();
  skylake_x.avx512f = skylake_x.avx512bw = true;
  EXPECT_STREQ(select_kernel_table(skylake_x).name, "avx512");

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
    EXPECT_EQ(t->rows_interleaved == nullptr, t->isa == Isa::kScalar);
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
  }
  // Best first: a table never comes after one that needs less.
  for (size_t i = 0; i + 1 < tables.size(); ++i) {
    EXPECT_GT(static_cast<int>(tables[i]->isa), static_cast<int>(tables[i + 1]->isa)) << tables[i]->name;
  }
  EXPECT_EQ(find_kernel_table("neon"), nullptr);
}

TEST(KernelTableTest, ThisProcessRunsTheSelectedTable) {
  EXPECT_EQ(&kernels(), &select_kernel_table(cpu_features()));
  EXPECT_TRUE(kernels().runs_on(cpu_features()));
}

}  // namespace
}  // namespace omnibus
