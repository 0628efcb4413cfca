#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_kv_cache.h"
#include "backends/cuda/cuda_model_runner.h"
#include "backends/cuda/cuda_status.h"

namespace omnibus {

Status CudaBackend::device_available() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) return Status::unsupported(std::string("no CUDA device: ") + cudaGetErrorString(error));
  if (count == 0) return Status::unsupported("no CUDA device: the driver reports none");
  return Status::ok();
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(int device) {
  OMNIBUS_RETURN_IF_ERROR(device_available());
  int count = 0;
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count), "counting devices");
  if (device < 0 || device >= count)
    return Status::invalid_argument("no CUDA device " + std::to_string(device) + " (" + std::to_string(count) +
                                    " present)");
  cudaDeviceProp prop{};
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device), "reading device properties");
  const std::string sm = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
  // dp4a (the int8 matmul) needs sm_61.
  if (prop.major * 10 + prop.minor < 61)
    return Status::unsupported(std::string("CUDA device ") + prop.name + " is " + sm +
                               "; the CUDA backend needs sm_61 or newer");
  const std::string description =
      "cuda (" + std::string(prop.name) + ", " + sm + ", " + std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
  std::unique_ptr<CudaBackend> backend(new CudaBackend(device, description));
  OMNIBUS_RETURN_IF_ERROR(backend->use_device());
  // The build has machine code for some architectures and PTX for the
  // newest (CMAKE_CUDA_ARCHITECTURES): a device it has no image for would
  // fail its first launch ("no kernel image"), so ask here, once.
  if (const cudaError_t image = cuda::kernel_image_status(); image != cudaSuccess) {
    (void)cudaGetLastError();  // handled: not a later launch's failure
    return Status::unsupported(std::string("CUDA device ") + prop.name + " (" + sm +
                               ") cannot run this build's kernels (" + cudaGetErrorString(image) +
                               "): built for CUDA architectures " + cuda::kBuiltArchitectures +
                               "; configure with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(prop.major) +
                               std::to_string(prop.minor) + " (or use --backend cpu)");
  }
  return backend;
}

Status CudaBackend::use_device() const {
  return cuda::cuda_status(cudaSetDevice(device_), "selecting device " + std::to_string(device_));
}

Result<std::unique_ptr<KvCache>> CudaBackend::create_kv_cache(const ModelConfig& config, int num_blocks, int block_size,
                                                              KvCacheType type, int window_blocks) {
  if (window_blocks > 0)
    return Status::unsupported("the CUDA backend keeps every layer's K/V for the whole context (no window group)");
  OMNIBUS_RETURN_IF_ERROR(use_device());
  OMNIBUS_ASSIGN_OR_RETURN(std::unique_ptr<CudaKvCache> cache,
                           CudaKvCache::create(config, num_blocks, block_size, type));
  return std::unique_ptr<KvCache>(std::move(cache));
}

Result<std::unique_ptr<ModelRunner>> CudaBackend::create_runner(std::shared_ptr<const Model> model, int max_batch,
                                                                int64_t max_positions) {
  OMNIBUS_RETURN_IF_ERROR(use_device());
  OMNIBUS_ASSIGN_OR_RETURN(std::unique_ptr<CudaModelRunner> runner,
                           CudaModelRunner::create(std::move(model), max_batch, max_positions));
  return std::unique_ptr<ModelRunner>(std::move(runner));
}

}  // namespace omnibus
