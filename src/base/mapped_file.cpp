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

MappedFile::~MappedFile() {
  if (owns_mapping_ && data_ != nullptr) munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace omnibus
