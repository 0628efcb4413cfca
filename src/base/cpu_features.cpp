#include "base/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

namespace omnibus {
namespace {

#if defined(__x86_64__) || defined(__i386__)

uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  const char* force = std::getenv("OMNIBUS_FORCE_SCALAR");
  if (force != nullptr && std::strcmp(force, "0") != 0 && force[0] != '\0') return f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  const bool osxsave = (ecx & bit_OSXSAVE) != 0;
  const bool ymm_enabled = osxsave && (read_xcr0() & 0x6) == 0x6;
  const bool cpu_fma = (ecx & bit_FMA) != 0;
  const bool cpu_f16c = (ecx & bit_F16C) != 0;
  bool cpu_avx2 = false, cpu_avx512f = false, cpu_avx512bw = false, cpu_avx512_vnni = false;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    cpu_avx2 = (ebx & bit_AVX2) != 0;
    cpu_avx512f = (ebx & bit_AVX512F) != 0;
    cpu_avx512bw = (ebx & bit_AVX512BW) != 0;
    cpu_avx512_vnni = (ebx & bit_AVX512BW) != 0 && (ebx & bit_AVX512VL) != 0 && (ecx & bit_AVX512VNNI) != 0;
  }
  f.avx2 = ymm_enabled && cpu_avx2;
  f.fma = ymm_enabled && cpu_fma;
  f.f16c = ymm_enabled && cpu_f16c;
  // OMNIBUS_NO_AVX512=1 hides AVX-512 (A/B runs; the kernels give the same bits).
  const char* no_avx512 = std::getenv("OMNIBUS_NO_AVX512");
  const bool avx512_allowed = no_avx512 == nullptr || no_avx512[0] == '\0' || std::strcmp(no_avx512, "0") == 0;
  f.avx512f = avx512_allowed && ymm_enabled && cpu_avx512f && (read_xcr0() & 0xe0) == 0xe0;
  f.avx512bw = f.avx512f && cpu_avx512bw;
  // CPUID.(EAX=7, ECX=1):EAX bit 4. OMNIBUS_NO_VNNI=1 turns it off (A/B runs).
  const char* no_vnni = std::getenv("OMNIBUS_NO_VNNI");
  const bool vnni_allowed = no_vnni == nullptr || no_vnni[0] == '\0' || std::strcmp(no_vnni, "0") == 0;
  if (vnni_allowed && __get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) f.avx_vnni = f.avx2 && (eax & (1u << 4)) != 0;
  // OMNIBUS_NO_AVX512=1 or OMNIBUS_NO_VNNI=1 hides it.
  f.avx512_vnni = vnni_allowed && f.avx512f && cpu_avx512_vnni;
  return f;
}

#elif defined(__aarch64__) && defined(__linux__)

CpuFeatures detect() {
  CpuFeatures f;
  const char* force = std::getenv("OMNIBUS_FORCE_SCALAR");
  if (force != nullptr && std::strcmp(force, "0") != 0 && force[0] != '\0') return f;
  // Bits of AT_HWCAP / AT_HWCAP2 (the kernel's uapi asm/hwcap.h), spelled
  // out so an older libc's headers do not matter.
  constexpr unsigned long kHwcapAsimdDp = 1ul << 20;
  constexpr unsigned long kHwcap2I8mm = 1ul << 13;
  f.neon_dotprod = (getauxval(AT_HWCAP) & kHwcapAsimdDp) != 0;
  f.neon_i8mm = (getauxval(AT_HWCAP2) & kHwcap2I8mm) != 0;
  return f;
}

#else  // another CPU: no features, so only the scalar kernels run

CpuFeatures detect() { return CpuFeatures{}; }

#endif

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512_vnni, "avx512-vnni");
  add(avx_vnni, "avx-vnni");
  add(neon_dotprod, "dotprod");
  add(neon_i8mm, "i8mm");
  return s.empty() ? "none" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

int64_t l2_cache_bytes() {
  static const int64_t bytes = [] {
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? static_cast<int64_t>(v) : int64_t{1} << 20;
  }();
  return bytes;
}

}  // namespace omnibus
