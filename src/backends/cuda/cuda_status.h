// CUDA runtime errors as omnibus Status values: the backend never lets a
// failed call pass silently or throw across the seam.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "base/status.h"

namespace omnibus::cuda {

// Ok for cudaSuccess; otherwise an error naming `what` and CUDA's message.
// Out of memory is resource_exhausted (the caller can ask for less).
inline Status cuda_status(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status::ok();
  const std::string message = "CUDA: " + what + ": " + cudaGetErrorString(error);
  if (error == cudaErrorMemoryAllocation) return Status::resource_exhausted(message);
  return Status::internal(message);
}

}  // namespace omnibus::cuda

#define OMNIBUS_CUDA_RETURN_IF_ERROR(call, what) OMNIBUS_RETURN_IF_ERROR(::omnibus::cuda::cuda_status((call), (what)))
