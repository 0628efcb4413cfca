#include "backends/cuda/cuda_kv_cache.h"

#include <cstring>
#include <string>

#include "base/log.h"

namespace omnibus {

Result<std::unique_ptr<CudaKvCache>> CudaKvCache::create(const ModelConfig& config, int num_blocks, int block_size,
                                                         KvCacheType type) {
  if (type != KvCacheType::kF16)
    return Status::unsupported(std::string("the CUDA backend's KV cache is f16 only; --kv-type ") +
                               kv_cache_type_name(type) + " is not implemented on it (use --kv-type f16)");
  if (num_blocks <= 0 || block_size <= 0) return Status::invalid_argument("KV cache needs at least one block and slot");
  if (config.head_dim > cuda::kMaxAttentionHeadDim)
    return Status::unsupported("the CUDA backend's attention takes head sizes up to " +
                               std::to_string(cuda::kMaxAttentionHeadDim) + "; this model's is " +
                               std::to_string(config.head_dim));
  const cuda::KvLayout layout{.n_layer = config.n_layer,
                              .n_head_kv = config.n_head_kv,
                              .head_dim = config.head_dim,
                              .block_size = block_size,
                              .num_blocks = num_blocks};
  // Checked per block first so a huge block count cannot overflow the product.
  const uint64_t block_bytes = static_cast<uint64_t>(layout.block_elements()) * 2;
  constexpr uint64_t kMaxBytes = uint64_t{1} << 40;
  if (block_bytes == 0 || static_cast<uint64_t>(num_blocks) > kMaxBytes / block_bytes)
    return Status::resource_exhausted("KV cache of " + std::to_string(num_blocks) + " blocks of " +
                                      std::to_string(block_size) + " positions is too large; lower the context");
  const uint64_t bytes = block_bytes * static_cast<uint64_t>(num_blocks);
  OMNIBUS_ASSIGN_OR_RETURN(cuda::DeviceBuffer buffer, cuda::DeviceBuffer::allocate(bytes, "the KV cache"));
  // Zeroed, as the CPU store is: a block read before it is written (it is
  // not, positions are written before attention reads them) holds zeros.
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaMemset(buffer.as<void>(), 0, bytes), "clearing the KV cache");
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), "clearing the KV cache");
  return std::unique_ptr<CudaKvCache>(new CudaKvCache(layout, std::move(buffer)));
}

Status CudaKvCache::copy_block_out(int block, int /*window_block: no window group*/, uint8_t* out) const {
  const size_t bytes = static_cast<size_t>(block_transfer_bytes());
  const uint16_t* from = buffer_.as<uint16_t>() + static_cast<int64_t>(block) * layout_.block_elements();
  // Runners synchronise at the end of run(), so the block is settled here.
  const Status s = cuda::cuda_status(cudaMemcpy(out, from, bytes, cudaMemcpyDeviceToHost), "copying a KV block out");
  if (!s.is_ok()) {
    (void)cudaGetLastError();  // handled here: not a later step's failure
    log_error("{}", s.to_string());
    std::memset(out, 0, bytes);
  }
  return s;
}

Status CudaKvCache::copy_block_in(int block, int /*window_block: no window group*/, const uint8_t* in) {
  const size_t bytes = static_cast<size_t>(block_transfer_bytes());
  uint16_t* to = buffer_.as<uint16_t>() + static_cast<int64_t>(block) * layout_.block_elements();
  // From pageable memory cudaMemcpy may return before the DMA lands; the
  // device sync makes sure the next run() on any stream sees the block.
  Status s = cuda::cuda_status(cudaMemcpy(to, in, bytes, cudaMemcpyHostToDevice), "copying a KV block in");
  if (s.is_ok()) s = cuda::cuda_status(cudaDeviceSynchronize(), "copying a KV block in");
  if (!s.is_ok()) {
    (void)cudaGetLastError();
    log_error("{}", s.to_string());
  }
  return s;
}

}  // namespace omnibus
