// What the CPU can do, read once (cpuid on x86-64, the kernel's hwcaps on
// aarch64). Kernels pick their SIMD path from this at start; a binary built
// on one machine runs on any other of its architecture. Built for another
// CPU it reports no features: only the scalar kernels run.
#pragma once

#include <cstdint>

#include <string>

namespace omnibus {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;  // with avx512f: the attention kernels' build (q4_0 scores use 512-bit vpmaddubsw)
  // AVX-512 BW, VL and VNNI beside F (Ice Lake / Zen 4 on): the
  // interleaved int8 matrix kernels' build with 512-bit batches.
  bool avx512_vnni = false;
  bool avx_vnni = false;  // VEX-encoded vpdpbusd (Intel Alder Lake / Sapphire Rapids on, AMD Zen 5); with avx2
  // aarch64 (getauxval's hwcaps): sdot/udot (ARMv8.2 dotprod) and
  // smmla (ARMv8.6 i8mm). NEON itself is baseline there.
  bool neon_dotprod = false;
  bool neon_i8mm = false;
  // True when the AVX2+FMA+F16C kernels may run (CPU and OS support).
  bool has_avx2_fma() const { return avx2 && fma && f16c; }
  std::string describe() const;  // "avx2 fma f16c"
};

// Detected once; the OMNIBUS_FORCE_SCALAR=1 environment variable hides SIMD
// features so the reference path can be exercised on any machine.
const CpuFeatures& cpu_features();

// Bytes of one core's L2 cache (sysconf), 1 MiB where the system does not say.
int64_t l2_cache_bytes();

}  // namespace omnibus
