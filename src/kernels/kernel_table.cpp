// The tables themselves: constant data (taking a function's address runs
// none of its instructions, so this file is compiled for baseline x86-64).
#include "kernels/kernel_table.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "kernels/attention.h"
#include "kernels/hadamard.h"
#include "kernels/kv_quant.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"

namespace omnibus {
namespace {

namespace md = matmul_detail;

bool any_cpu(const CpuFeatures&) { return true; }
// Unused where the x86 tables are not built (OMNIBUS_NO_AVX2_BUILD).
[[maybe_unused]] bool avx2_cpu(const CpuFeatures& c) { return c.has_avx2_fma(); }
[[maybe_unused]] bool avxvnni_cpu(const CpuFeatures& c) { return c.has_avx2_fma() && c.avx_vnni; }
[[maybe_unused]] bool avx512_cpu(const CpuFeatures& c) { return c.has_avx2_fma() && c.avx512f && c.avx512bw; }
[[maybe_unused]] bool avx512vnni_cpu(const CpuFeatures& c) { return avx512_cpu(c) && c.avx512_vnni; }

constexpr KernelTable kScalar{
    .isa = Isa::kScalar,
    .name = "scalar",
    .runs_on = any_cpu,
    .rows_float = md::rows_scalar,
    .rows_q8 = md::rows_scalar,
    .rows_interleaved = nullptr,  // no interleaved copy: the reference reads row layout
    .quantize_x_rows = md::quantize_x_rows,
    .rms_norm = ref::rms_norm,
    .swiglu = ref::swiglu,
    .geglu = ref::geglu,
    .dot_f32 = ref::dot_f32,
    .axpy_f32 = ref::axpy_f32,
    .f32_to_f16_row = ref::f32_to_f16_row,
    .quantize_kv_q8 = ref::quantize_kv_q8,
    .hadamard_blocks = ref::hadamard_blocks,
    .hadamard_lanes = 1,
    .attention_chunk = ref::attention_chunk,
    .attention_chunk_q4 = ref::attention_chunk,
    .attention_chunk_pair = nullptr,
    .attention_pairs_q4 = false,
    .attention_lanes = 0,  // every shape
    .attention_fallback = nullptr,
};

// A copy of table `t` under another ISA's name and CPU check (the tables
// that differ from their base in a kernel or two).
constexpr KernelTable with(KernelTable t, Isa isa, const char* name, bool (*runs_on)(const CpuFeatures&)) {
  t.isa = isa;
  t.name = name;
  t.runs_on = runs_on;
  return t;
}

#if !defined(OMNIBUS_NO_AVX2_BUILD)

// The AVX2+FMA+F16C kernels every SIMD table starts from.
constexpr KernelTable kAvx2{
    .isa = Isa::kAvx2,
    .name = "avx2",
    .runs_on = avx2_cpu,
    .rows_float = md::rows_avx2_float,
    .rows_q8 = md::rows_avx2_q8,
    .rows_interleaved = md::rows_avx2_interleaved,
    .quantize_x_rows = md::quantize_x_rows_avx2,
    .rms_norm = avx2::rms_norm,
    .swiglu = avx2::swiglu,
    .geglu = avx2::geglu,
    .dot_f32 = avx2::dot_f32,
    .axpy_f32 = avx2::axpy_f32,
    .f32_to_f16_row = avx2::f32_to_f16_row,
    .quantize_kv_q8 = avx2::quantize_kv_q8,
    .hadamard_blocks = avx2::hadamard_blocks,
    .hadamard_lanes = 8,
    .attention_chunk = avx2::attention_chunk,
    .attention_chunk_q4 = avx2::attention_chunk,
    .attention_chunk_pair = avx2::attention_chunk_pair,
    .attention_pairs_q4 = false,  // its 16-float value slices would split a q4_0 group's nibble halves
    .attention_lanes = 8,
    .attention_fallback = &kScalar,
};

#if !defined(OMNIBUS_NO_AVXVNNI_BUILD)
constexpr KernelTable avxvnni_table() {
  KernelTable t = with(kAvx2, Isa::kAvxVnni, "avx-vnni", avxvnni_cpu);
  t.rows_q8 = md::rows_avxvnni_q8;
  t.rows_interleaved = md::rows_avxvnni_interleaved;
  return t;
}
constexpr KernelTable kAvxVnni = avxvnni_table();
#endif

// The AVX-512 attention kernels over a copy of `t`; shapes they cannot
// take (head_dim a multiple of 8 but not of 16) go to the AVX2 ones.
constexpr KernelTable with_avx512_attention(KernelTable t) {
#if !defined(OMNIBUS_NO_AVX512_BUILD)
  t.attention_chunk = avx512::attention_chunk;
  t.attention_chunk_q4 = avx512::attention_chunk;
  t.attention_chunk_pair = avx512::attention_chunk_pair;
  t.attention_pairs_q4 = true;
  t.attention_lanes = 16;
  t.attention_fallback = &kAvx2;
#endif
  return t;
}

// The matmul kernels have no AVX-512 build of their own: AVX2's.
constexpr KernelTable kAvx512 = with_avx512_attention(with(kAvx2, Isa::kAvx512, "avx512", avx512_cpu));

#if !defined(OMNIBUS_NO_AVX512VNNI_BUILD)
// Row-layout int8 matrices (only Q5_1 and --no-interleave use them) take
// their own AVX-512 VNNI build of the 256-bit kernels: the EVEX vpdpbusd,
// the same bits as AVX2's.
constexpr KernelTable avx512vnni_table() {
  KernelTable t = with_avx512_attention(with(kAvx2, Isa::kAvx512Vnni, "avx512-vnni", avx512vnni_cpu));
  t.rows_q8 = md::rows_avx512vnni_q8;
  t.rows_interleaved = md::rows_avx512vnni_interleaved;
  t.attention_chunk_q4 = avx512vnni::attention_chunk;  // VNNI for the q4_0 scores, the same bits
  return t;
}
constexpr KernelTable kAvx512Vnni = avx512vnni_table();
#endif

#endif  // !OMNIBUS_NO_AVX2_BUILD

#if !defined(OMNIBUS_NO_NEON_BUILD)
// aarch64: NEON is part of ARMv8-A, so every CPU this build runs on has it. Its matmul, small-op and attention kernels
// follow the avx2 kernels' arithmetic per output, so they give the avx2 table's bits (Q2_K, Q3_K, IQ4_NL, IQ4_XS and
// MXFP4 weights excepted: rows_neon_q8 hands them to the scalar reference; ops_neon.cpp names the other exception, a
// dot_f32 tail; attention_neon.cpp takes the same shapes as avx2's, every cache type). The rest is the scalar table's:
// x quantization, KV quantization and the Hadamard rotation write the same bytes on every path, so nothing is lost but
// speed. No pair kernel: two rows go one at a time, the same bits.
constexpr KernelTable kNeon{
    .isa = Isa::kNeon,
    .name = "neon",
    .runs_on = any_cpu,
    .rows_float = md::rows_neon_float,
    .rows_q8 = md::rows_neon_q8,
    .rows_interleaved = nullptr,  // no interleaved kernels: weights keep row layout
    .quantize_x_rows = md::quantize_x_rows,
    .rms_norm = neon::rms_norm,
    .swiglu = neon::swiglu,
    .geglu = neon::geglu,
    .dot_f32 = neon::dot_f32,
    .axpy_f32 = neon::axpy_f32,
    .f32_to_f16_row = neon::f32_to_f16_row,
    .quantize_kv_q8 = ref::quantize_kv_q8,
    .hadamard_blocks = ref::hadamard_blocks,
    .hadamard_lanes = 1,
    .attention_chunk = neon::attention_chunk,
    .attention_chunk_q4 = neon::attention_chunk,
    .attention_chunk_pair = nullptr,
    .attention_pairs_q4 = false,
    .attention_lanes = 8,
    .attention_fallback = &kScalar,
};

#if !defined(OMNIBUS_NO_NEONDOT_BUILD)
bool neondot_cpu(const CpuFeatures& c) { return c.neon_dotprod; }
// With the dot-product extension: the row-layout int8 matmuls by sdot (the
// same integers, so the neon table's bits); the rest is neon's.
constexpr KernelTable neondot_table() {
  KernelTable t = with(kNeon, Isa::kNeonDotprod, "neon-dotprod", neondot_cpu);
  t.rows_q8 = md::rows_neondot_q8;
  return t;
}
constexpr KernelTable kNeonDotprod = neondot_table();

#if !defined(OMNIBUS_NO_NEONI8MM_BUILD)
bool neoni8mm_cpu(const CpuFeatures& c) { return c.neon_dotprod && c.neon_i8mm; }
// With the int8 matrix multiply as well: batches of four x rows by smmla
// (the same integers again); single rows by sdot, as neon-dotprod's.
constexpr KernelTable neoni8mm_table() {
  KernelTable t = with(kNeonDotprod, Isa::kNeonI8mm, "neon-i8mm", neoni8mm_cpu);
  t.rows_q8 = md::rows_neoni8mm_q8;
  return t;
}
constexpr KernelTable kNeonI8mm = neoni8mm_table();
#endif
#endif
#endif

constexpr auto kTables = std::to_array<const KernelTable*>({
#if !defined(OMNIBUS_NO_NEON_BUILD)
#if !defined(OMNIBUS_NO_NEONDOT_BUILD)
#if !defined(OMNIBUS_NO_NEONI8MM_BUILD)
  &kNeonI8mm,
#endif
      &kNeonDotprod,
#endif
      &kNeon,
#endif
#if !defined(OMNIBUS_NO_AVX2_BUILD)
#if !defined(OMNIBUS_NO_AVX512VNNI_BUILD)
      &kAvx512Vnni,
#endif
      &kAvx512,
#if !defined(OMNIBUS_NO_AVXVNNI_BUILD)
      &kAvxVnni,
#endif
      &kAvx2,
#endif
      &kScalar,
});

}  // namespace

std::span<const KernelTable* const> compiled_kernel_tables() { return kTables; }

const KernelTable& select_kernel_table(const CpuFeatures& cpu) {
  for (const KernelTable* t : kTables) {
    if (t->runs_on(cpu)) return *t;
  }
  return kScalar;
}

const KernelTable* find_kernel_table(std::string_view name) {
  for (const KernelTable* t : kTables) {
    if (name == t->name) return t;
  }
  return nullptr;
}

namespace {

std::string_view forced_table_name() {
  const char* v = std::getenv("OMNIBUS_KERNELS");
  return v == nullptr ? std::string_view() : std::string_view(v);
}

}  // namespace

Result<const KernelTable*> choose_kernel_table(const CpuFeatures& cpu, std::string_view forced) {
  if (forced.empty()) return &select_kernel_table(cpu);
  const KernelTable* t = find_kernel_table(forced);
  if (t != nullptr && t->runs_on(cpu)) return t;
  std::string runnable;
  for (const KernelTable* c : kTables) {
    if (!c->runs_on(cpu)) continue;
    if (!runnable.empty()) runnable += ", ";
    runnable += c->name;
  }
  const std::string why = t == nullptr ? "not a kernel table of this build" : "this CPU lacks the features it needs";
  return Status::invalid_argument(std::string("OMNIBUS_KERNELS=").append(forced).append(": ").append(why) +
                                  "; this CPU runs: " + runnable);
}

Status kernel_choice_status() { return choose_kernel_table(cpu_features(), forced_table_name()).status(); }

const KernelTable& kernels() {
  static const KernelTable& chosen = []() -> const KernelTable& {
    auto t = choose_kernel_table(cpu_features(), forced_table_name());
    if (t.is_ok()) return *t.value();
    std::fprintf(stderr, "omnibus: %s; choosing by the CPU's features\n", t.status().message().c_str());
    return select_kernel_table(cpu_features());
  }();
  return chosen;
}

}  // namespace omnibus
