// A heap buffer of T aligned for SIMD loads (64 bytes: one cache line).
// Sized once; used for activations and scratch so the hot loop never
// allocates.
#pragma once

#include <sys/mman.h>

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
  // write before they read). Nothing is touched here: an owner that wants
  // the pages in now (the KV store, the forward pass's activations) calls
  // zero_fill().
  //
  // huge_pages: align to 2 MiB and ask the kernel to back the buffer with
  // transparent huge pages (madvise MADV_HUGEPAGE; a hint, ignored where
  // THP is off). For large buffers streamed every step (the repacked
  // weights): one TLB entry per 2 MiB instead of per 4 KiB.
  void resize(size_t count, bool huge_pages = false) {
    std::free(data_);
    data_ = nullptr;
    size_ = count;
    if (count == 0) return;
    const size_t align = huge_pages ? kHugePageBytes : 64;
    const size_t bytes = (count * sizeof(T) + align - 1) / align * align;
    data_ = static_cast<T*>(std::aligned_alloc(align, bytes));
    if (data_ == nullptr) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (huge_pages) madvise(data_, bytes, MADV_HUGEPAGE);
#endif
  }

  // Writes zeros over the whole buffer, faulting in every page now.
  void zero_fill() {
    if (data_ != nullptr) std::memset(static_cast<void*>(data_), 0, size_ * sizeof(T));
  }

  static constexpr size_t kHugePageBytes = size_t{2} << 20;

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
