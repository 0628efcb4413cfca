// The CUDA backend's KV cache: f16 keys and values of every layer in
// device memory, in blocks addressed by id (cuda_kernels.h's KvLayout). One
// block's bytes are the CPU store's transfer format for an f16 cache, so
// KV handover (copy_block_out / copy_block_in) is one copy each way.
// Other cache types are refused at creation. Not thread-safe; owned by the
// engine thread, used by the runners of the CUDA backend that made it.
#pragma once

#include <memory>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/device_buffer.h"
#include "model/kv_cache.h"
#include "model/model_config.h"

namespace omnibus {

class CudaKvCache final : public KvCache {
 public:
  static Result<std::unique_ptr<CudaKvCache>> create(const ModelConfig& config, int num_blocks, int block_size,
                                                     KvCacheType type);

  KvCacheType type() const override { return KvCacheType::kF16; }
  int num_blocks() const override { return layout_.num_blocks; }
  int block_size() const override { return layout_.block_size; }
  uint64_t bytes() const override { return buffer_.bytes(); }
  int64_t block_transfer_bytes() const override { return layout_.block_elements() * 2; }
  // Device-to-host and host-to-device copies of one block; synchronous. A
  // failed copy returns the CUDA error (and logs it); `out` is then zeroed,
  // never stale bytes passed off as the block.
  Status copy_block_out(int block, int window_block, uint8_t* out) const override;
  Status copy_block_in(int block, int window_block, const uint8_t* in) override;

  const cuda::KvLayout& layout() const { return layout_; }
  uint16_t* data() { return buffer_.as<uint16_t>(); }

 private:
  CudaKvCache(cuda::KvLayout layout, cuda::DeviceBuffer buffer) : layout_(layout), buffer_(std::move(buffer)) {}
  cuda::KvLayout layout_;
  cuda::DeviceBuffer buffer_;
};

}  // namespace omnibus
