// Owned device memory: one cudaMalloc'd range, freed with its owner.
// Move-only. Not thread-safe (as the runner and cache that own them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "backends/cuda/cuda_status.h"

namespace omnibus::cuda {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { release(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // `bytes` of device memory (at least one byte is asked for, so data() is
  // never null); `what` names it in the error.
  static Result<DeviceBuffer> allocate(size_t bytes, const std::string& what) {
    DeviceBuffer buffer;
    void* p = nullptr;
    const cudaError_t error = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
    if (error != cudaSuccess) {
      // A failed cudaMalloc also sets the runtime's last error, which a
      // later cudaGetLastError would report as that call's failure: this
      // one is handled here (returned), so clear it.
      (void)cudaGetLastError();
      return cuda_status(error, "allocating " + std::to_string(bytes) + " bytes for " + what);
    }
    buffer.data_ = p;
    buffer.bytes_ = bytes;
    return buffer;
  }

  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (data_ != nullptr) cudaFree(data_);  // an error here has no one to go to
    data_ = nullptr;
    bytes_ = 0;
  }
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace omnibus::cuda
