// A heap buffer of T aligned for SIMD loads (64 bytes: one cache line).
// Sized once; used for activations and scratch so the hot loop never
// allocates.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>

namespace omnibus {

template <class T>
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t count) { resize(count); }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(o.data_), size_(o.size_) { o.data_ = nullptr; o.size_ = 0; }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) { std::free(data_); data_ = o.data_; size_ = o.size_; o.data_ = nullptr; o.size_ = 0; }
    return *this;
  }

  // Discards the old contents; the new contents are unspecified (callers
  // write before they read). Not touching the memory here keeps untouched
  // pages of large buffers (the KV cache) out of the resident set.
  void resize(size_t count) {
    std::free(data_);
    data_ = nullptr;
    size_ = count;
    if (count == 0) return;
    size_t bytes = (count * sizeof(T) + 63) / 64 * 64;
    data_ = static_cast<T*>(std::aligned_alloc(64, bytes));
    if (data_ == nullptr) throw std::bad_alloc();
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace omnibus
