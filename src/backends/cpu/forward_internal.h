// Helpers shared by the files of ForwardPass.
#pragma once

#include "backends/cpu/paged_kv_store.h"
#include "kernels/hadamard.h"

namespace omnibus::forward_internal {

// Whether this cache stores K and V rotated (kernels/hadamard.h): the q4_0
// cache, as llama.cpp's quantized caches, where the head size allows.
// (The q8_0 cache does not: it predates llama.cpp's rotation and meets its
// golden bars without it.)
inline bool rotates_kv(const PagedKvStore& kv) {
  return kv.type() == KvCacheType::kQ4_0 && hadamard_key_block(static_cast<int>(kv.position_stride())) > 0;
}

}  // namespace omnibus::forward_internal

namespace omnibus {
// ForwardPass::set_decode_as_one_job's default (forward_decode_step.cpp).
bool decode_as_one_job_by_default();
}  // namespace omnibus
