// Which instructions slow a stream of zmm FMAs down: each case times a loop
// of twelve independent `vfmadd231ps` with other independent instructions
// beside it (inline asm, no dependences between them), in cycles an
// iteration at the clock measured by a dependent add chain. The case that
// matters for the attention's value loop
// (docs/findings/zen4-broadcast-from-memory-costs-a-pipe.md): its
// per-position mix with the weights broadcast by `vbroadcastss` from
// memory, against the same mix with the broadcasts folded into the FMAs'
// `{1to16}` memory operands (fmadd_broadcast in
// src/kernels/attention_avx512_kernels.h).
//
// The registers' contents do not matter (no instruction here has
// data-dependent timing). Not part of the build (needs AVX-512F to run):
//   g++ -O2 -mavx512f bench/micro/fma_port_mix.cpp -o /tmp/fma_port_mix && /tmp/fma_port_mix
#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

alignas(64) char scratch[4096];

constexpr long kIterations = 20'000'000;

// Nanoseconds per iteration of `body`, best of five.
template <class Body>
double best_ns(Body body) {
  double best = 1e9;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < kIterations; ++i) body();
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns / kIterations);
  }
  return best;
}

// Cycles per nanosecond: four dependent adds an iteration, one a cycle.
double clock_ghz() {
  long x = 0;
  const double ns = best_ns([&] { asm volatile("add $1, %0\n add $1, %0\n add $1, %0\n add $1, %0" : "+r"(x)); });
  return 4.0 / ns;
}

#define TWELVE_FMAS                                                             \
  "vfmadd231ps %%zmm0, %%zmm1, %%zmm2\n vfmadd231ps %%zmm0, %%zmm1, %%zmm3\n"   \
  "vfmadd231ps %%zmm0, %%zmm1, %%zmm4\n vfmadd231ps %%zmm0, %%zmm1, %%zmm5\n"   \
  "vfmadd231ps %%zmm0, %%zmm1, %%zmm6\n vfmadd231ps %%zmm0, %%zmm1, %%zmm7\n"   \
  "vfmadd231ps %%zmm0, %%zmm1, %%zmm8\n vfmadd231ps %%zmm0, %%zmm1, %%zmm9\n"   \
  "vfmadd231ps %%zmm0, %%zmm1, %%zmm10\n vfmadd231ps %%zmm0, %%zmm1, %%zmm11\n" \
  "vfmadd231ps %%zmm0, %%zmm1, %%zmm12\n vfmadd231ps %%zmm0, %%zmm1, %%zmm13\n"
#define TWELVE_BROADCAST_FMAS                                                                     \
  "vfmadd231ps 0(%0)%{1to16%}, %%zmm1, %%zmm2\n vfmadd231ps 0(%0)%{1to16%}, %%zmm1, %%zmm3\n"     \
  "vfmadd231ps 4(%0)%{1to16%}, %%zmm1, %%zmm4\n vfmadd231ps 4(%0)%{1to16%}, %%zmm1, %%zmm5\n"     \
  "vfmadd231ps 8(%0)%{1to16%}, %%zmm1, %%zmm6\n vfmadd231ps 8(%0)%{1to16%}, %%zmm1, %%zmm7\n"     \
  "vfmadd231ps 12(%0)%{1to16%}, %%zmm1, %%zmm8\n vfmadd231ps 12(%0)%{1to16%}, %%zmm1, %%zmm9\n"   \
  "vfmadd231ps 16(%0)%{1to16%}, %%zmm1, %%zmm10\n vfmadd231ps 16(%0)%{1to16%}, %%zmm1, %%zmm11\n" \
  "vfmadd231ps 20(%0)%{1to16%}, %%zmm1, %%zmm12\n vfmadd231ps 20(%0)%{1to16%}, %%zmm1, %%zmm13\n"
// The q4_0 value loop's decode of one position: two widenings, two
// shifts, four table lookups.
#define DECODE                                                                                            \
  "vpmovzxbd 64(%0), %%zmm14\n vpmovzxbd 80(%0), %%zmm15\n vpsrld $4, %%zmm14, %%zmm16\n"                 \
  "vpsrld $4, %%zmm15, %%zmm17\n vpermps %%zmm18, %%zmm14, %%zmm19\n vpermps %%zmm18, %%zmm15, %%zmm20\n" \
  "vpermps %%zmm18, %%zmm16, %%zmm21\n vpermps %%zmm18, %%zmm17, %%zmm22\n"
#define SIX_BROADCASTS                                                                        \
  "vbroadcastss 0(%0), %%zmm23\n vbroadcastss 4(%0), %%zmm24\n vbroadcastss 8(%0), %%zmm25\n" \
  "vbroadcastss 12(%0), %%zmm26\n vbroadcastss 16(%0), %%zmm27\n vbroadcastss 20(%0), %%zmm28\n"
#define CLOBBERS                                                                                                  \
  "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14",    \
      "xmm15", "xmm16", "xmm17", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", \
      "xmm28"

}  // namespace

int main() {
  const double ghz = clock_ghz();
  std::printf("clock ~%.2f GHz (dependent adds)\n", ghz);
  const char* p = scratch;
  auto report = [&](const char* name, double ns) { std::printf("%-48s %5.1f cycles\n", name, ns * ghz); };
  report("12 FMAs", best_ns([&] { asm volatile(TWELVE_FMAS ::"r"(p) : CLOBBERS); }));
  report("12 FMAs + decode", best_ns([&] { asm volatile(TWELVE_FMAS DECODE ::"r"(p) : CLOBBERS); }));
  report("12 FMAs + 6 vbroadcastss", best_ns([&] { asm volatile(TWELVE_FMAS SIX_BROADCASTS ::"r"(p) : CLOBBERS); }));
  report("12 FMAs + decode + 6 vbroadcastss (the old loop)", best_ns([&] {
           asm volatile(TWELVE_FMAS DECODE SIX_BROADCASTS ::"r"(p) : CLOBBERS);
         }));
  report("12 {1to16} FMAs + decode (fmadd_broadcast)", best_ns([&] {
           asm volatile(TWELVE_BROADCAST_FMAS DECODE ::"r"(p) : CLOBBERS);
         }));
  return 0;
}
