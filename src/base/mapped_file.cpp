#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace omnibus {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::io_error("cannot open '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::io_error("cannot stat '" + path + "': " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::invalid_argument("'" + path + "' is not a regular file");
  }
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return Status::io_error("cannot mmap '" + path + "': " + std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->owns_mapping_ = true;
  }
  ::close(fd);  // the mapping keeps the file alive
  return file;
}

std::unique_ptr<MappedFile> MappedFile::from_memory(std::span<const uint8_t> bytes) {
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->data_ = bytes.data();
  file->size_ = bytes.size();
  file->path_ = "<memory>";
  return file;
}

void MappedFile::release_pages(std::span<const uint8_t> range) const {
  if (!owns_mapping_ || range.empty()) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(range.data()) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(range.data()) + range.size()) / page * page;
  // A private read-only file mapping: MADV_DONTNEED only unmaps clean pages
  // (the page cache keeps them); a failure just leaves them resident.
  if (begin < end) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
  if (owns_mapping_ && data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace omnibus
