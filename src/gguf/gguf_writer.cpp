// GgufWriter: serializes metadata and tensors into GGUF bytes. It checks what
// it writes (types, ranges, shapes, sizes) so that everything it produces is
// accepted by GgufFile::parse.
#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "gguf/gguf_parser.h"

namespace omnibus {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint64_t kDefaultAlignment = 32;
constexpr const char* kAlignmentKey = "general.alignment";

// Appends little-endian values to a byte vector.
class ByteSink {
 public:
  template <class T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t alignment) {
    const uint64_t rem = out_.size() % alignment;
    if (rem != 0) out_.resize(out_.size() + (alignment - rem), 0);
  }
  size_t size() const { return out_.size(); }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

// The integer payload of `v` when it lies in [lo, hi]; either variant
// alternative is accepted so callers may build values loosely.
Status check_integer(const GgufValue& v, int64_t lo, uint64_t hi) {
  const char* name = gguf_type_name(v.type);
  if (const auto* u = std::get_if<uint64_t>(&v.value)) {
    if (*u > hi) return Status::invalid_argument(std::string(name) + " value " + std::to_string(*u) + " is out of range");
    return Status::ok();
  }
  if (const auto* i = std::get_if<int64_t>(&v.value)) {
    const bool fits = *i >= lo && (*i < 0 || static_cast<uint64_t>(*i) <= hi);
    if (!fits) return Status::invalid_argument(std::string(name) + " value " + std::to_string(*i) + " is out of range");
    return Status::ok();
  }
  return Status::invalid_argument(std::string(name) + " value does not hold an integer");
}

int64_t integer_bits(const GgufValue& v) {
  if (const auto* u = std::get_if<uint64_t>(&v.value)) return static_cast<int64_t>(*u);
  return std::get<int64_t>(v.value);
}

Status put_value(ByteSink& sink, const GgufValue& v, int depth);

Status put_array(ByteSink& sink, const GgufValue& v, int depth) {
  const auto* elems = std::get_if<std::vector<GgufValue>>(&v.value);
  if (elems == nullptr) return Status::invalid_argument("array value does not hold elements");
  if (depth >= kGgufMaxArrayDepth)
    return Status::invalid_argument("arrays nested more than " + std::to_string(kGgufMaxArrayDepth) + " deep");
  if (!gguf_type_known(static_cast<uint32_t>(v.element_type)))
    return Status::invalid_argument("array has unknown element type");
  sink.put<uint32_t>(static_cast<uint32_t>(v.element_type));
  sink.put<uint64_t>(elems->size());
  for (size_t i = 0; i < elems->size(); ++i) {
    const GgufValue& e = (*elems)[i];
    if (e.type != v.element_type)
      return Status::invalid_argument("element " + std::to_string(i) + " is " + gguf_type_name(e.type) +
                                      " in an array of " + gguf_type_name(v.element_type));
    if (Status s = put_value(sink, e, depth + 1); !s) return s.with_context("element " + std::to_string(i));
  }
  return Status::ok();
}

Status put_value(ByteSink& sink, const GgufValue& v, int depth) {
  const int64_t bits = (std::holds_alternative<uint64_t>(v.value) || std::holds_alternative<int64_t>(v.value))
                           ? integer_bits(v) : 0;
  switch (v.type) {
    case GgufType::kUint8: OMNIBUS_RETURN_IF_ERROR(check_integer(v, 0, UINT8_MAX)); sink.put<uint8_t>(bits); break;
    case GgufType::kUint16: OMNIBUS_RETURN_IF_ERROR(check_integer(v, 0, UINT16_MAX)); sink.put<uint16_t>(bits); break;
    case GgufType::kUint32: OMNIBUS_RETURN_IF_ERROR(check_integer(v, 0, UINT32_MAX)); sink.put<uint32_t>(bits); break;
    case GgufType::kUint64: OMNIBUS_RETURN_IF_ERROR(check_integer(v, 0, UINT64_MAX)); sink.put<uint64_t>(bits); break;
    case GgufType::kInt8: OMNIBUS_RETURN_IF_ERROR(check_integer(v, INT8_MIN, INT8_MAX)); sink.put<int8_t>(bits); break;
    case GgufType::kInt16: OMNIBUS_RETURN_IF_ERROR(check_integer(v, INT16_MIN, INT16_MAX)); sink.put<int16_t>(bits); break;
    case GgufType::kInt32: OMNIBUS_RETURN_IF_ERROR(check_integer(v, INT32_MIN, INT32_MAX)); sink.put<int32_t>(bits); break;
    case GgufType::kInt64: OMNIBUS_RETURN_IF_ERROR(check_integer(v, INT64_MIN, INT64_MAX)); sink.put<int64_t>(bits); break;
    case GgufType::kFloat32:
    case GgufType::kFloat64: {
      const auto* d = std::get_if<double>(&v.value);
      if (d == nullptr) return Status::invalid_argument(std::string(gguf_type_name(v.type)) + " value does not hold a float");
      if (v.type == GgufType::kFloat32) sink.put<float>(static_cast<float>(*d));
      else sink.put<double>(*d);
      break;
    }
    case GgufType::kBool: {
      const auto* b = std::get_if<bool>(&v.value);
      if (b == nullptr) return Status::invalid_argument("bool value does not hold a bool");
      sink.put<uint8_t>(*b ? 1 : 0);
      break;
    }
    case GgufType::kString: {
      const auto* s = std::get_if<std::string>(&v.value);
      if (s == nullptr) return Status::invalid_argument("string value does not hold a string");
      sink.put_string(*s);
      break;
    }
    case GgufType::kArray: return put_array(sink, v, depth);
    default: return Status::invalid_argument("unknown value type " + std::to_string(static_cast<uint32_t>(v.type)));
  }
  return Status::ok();
}

template <class T>
std::vector<GgufValue> to_values(const std::vector<T>& v, GgufValue (*make)(T)) {
  std::vector<GgufValue> out;
  out.reserve(v.size());
  for (const T& x : v) out.push_back(make(x));
  return out;
}

}  // namespace

GgufWriter::GgufWriter(uint32_t version, uint64_t alignment) : version_(version), alignment_(alignment) {}

void GgufWriter::set(const std::string& key, GgufValue value) {
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::set_string(const std::string& key, const std::string& v) { set(key, GgufValue::of_string(v)); }
void GgufWriter::set_uint32(const std::string& key, uint32_t v) { set(key, GgufValue::of_uint(GgufType::kUint32, v)); }
void GgufWriter::set_int32(const std::string& key, int32_t v) { set(key, GgufValue::of_int(GgufType::kInt32, v)); }
void GgufWriter::set_uint64(const std::string& key, uint64_t v) { set(key, GgufValue::of_uint(GgufType::kUint64, v)); }
void GgufWriter::set_float32(const std::string& key, float v) { set(key, GgufValue::of_float32(v)); }
void GgufWriter::set_bool(const std::string& key, bool v) { set(key, GgufValue::of_bool(v)); }

void GgufWriter::set_string_array(const std::string& key, const std::vector<std::string>& v) {
  set(key, GgufValue::of_array(GgufType::kString,
                               to_values<std::string>(v, [](std::string s) { return GgufValue::of_string(std::move(s)); })));
}

void GgufWriter::set_float32_array(const std::string& key, const std::vector<float>& v) {
  set(key, GgufValue::of_array(GgufType::kFloat32, to_values<float>(v, &GgufValue::of_float32)));
}

void GgufWriter::set_int32_array(const std::string& key, const std::vector<int32_t>& v) {
  set(key, GgufValue::of_array(GgufType::kInt32, to_values<int32_t>(v, [](int32_t x) {
                                 return GgufValue::of_int(GgufType::kInt32, x);
                               })));
}

Result<uint64_t> GgufWriter::check_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                          DType dtype) const {
  const std::string where = "tensor '" + name + "'";
  if (name.empty()) return Status::invalid_argument("tensor name is empty");
  for (const PendingTensor& t : tensors_)
    if (t.name == name) return Status::invalid_argument("duplicate " + where);
  if (dims.empty() || dims.size() > kGgufMaxDims)
    return Status::invalid_argument(where + " has " + std::to_string(dims.size()) + " dimensions; 1 to 4 are supported");
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 1) return Status::invalid_argument(where + " has dimension " + std::to_string(d));
    if (elements > INT64_MAX / d) return Status::invalid_argument(where + " has too many elements");
    elements *= d;
  }
  const DTypeInfo* info = dtype_info(dtype);
  if (info == nullptr) return Status::invalid_argument(where + " has unknown type " + dtype_name(dtype));
  if (dims[0] % info->block_size != 0)
    return Status::invalid_argument(where + " row length " + std::to_string(dims[0]) + " is not a multiple of the " +
                                    info->name + " block size");
  return dtype_bytes(dtype, elements);
}

Status GgufWriter::add_tensor(const std::string& name, const std::vector<int64_t>& dims, DType dtype,
                              std::span<const uint8_t> data) {
  OMNIBUS_ASSIGN_OR_RETURN(const uint64_t nbytes, check_tensor(name, dims, dtype));
  if (nbytes != data.size())
    return Status::invalid_argument("tensor '" + name + "' needs " + std::to_string(nbytes) + " bytes of data, got " +
                                    std::to_string(data.size()));
  tensors_.push_back({name, dims, dtype, nbytes, std::vector<uint8_t>(data.begin(), data.end()), nullptr});
  return Status::ok();
}

Status GgufWriter::add_tensor_filled(const std::string& name, const std::vector<int64_t>& dims, DType dtype,
                                     TensorFill fill) {
  OMNIBUS_ASSIGN_OR_RETURN(const uint64_t nbytes, check_tensor(name, dims, dtype));
  if (!fill) return Status::invalid_argument("tensor '" + name + "' has no fill function");
  tensors_.push_back({name, dims, dtype, nbytes, {}, std::move(fill)});
  return Status::ok();
}

Result<std::vector<uint8_t>> GgufWriter::header() const {
  if (version_ != 2 && version_ != 3)
    return Status::invalid_argument("GGUF version " + std::to_string(version_) + " cannot be written (2 or 3 can)");
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > UINT32_MAX)
    return Status::invalid_argument("alignment " + std::to_string(alignment_) + " is not a power of two below 2^32");
  bool has_alignment_key = false;
  for (const auto& [key, value] : metadata_) {
    if (key != kAlignmentKey) continue;
    has_alignment_key = true;
    if (value.type != GgufType::kUint32 || !(value == GgufValue::of_uint(GgufType::kUint32, alignment_)))
      return Status::invalid_argument("general.alignment is set to " + value.describe() +
                                      " but the writer aligns to " + std::to_string(alignment_));
  }
  const bool add_alignment_key = !has_alignment_key && alignment_ != kDefaultAlignment;

  ByteSink sink;
  sink.put<uint32_t>(kMagic);
  sink.put<uint32_t>(version_);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(metadata_.size() + (add_alignment_key ? 1 : 0));
  for (const auto& [key, value] : metadata_) {
    sink.put_string(key);
    sink.put<uint32_t>(static_cast<uint32_t>(value.type));
    if (Status s = put_value(sink, value, 0); !s) return s.with_context("key '" + key + "'");
  }
  if (add_alignment_key) {
    sink.put_string(kAlignmentKey);
    sink.put<uint32_t>(static_cast<uint32_t>(GgufType::kUint32));
    sink.put<uint32_t>(static_cast<uint32_t>(alignment_));
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    sink.put_string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (int64_t d : t.dims) sink.put<uint64_t>(static_cast<uint64_t>(d));
    sink.put<uint32_t>(static_cast<uint32_t>(t.dtype));
    sink.put<uint64_t>(offset);
    offset += (t.nbytes + alignment_ - 1) / alignment_ * alignment_;
  }
  // With no tensors there is no data section to align: padding would only
  // add bytes (up to 4 GiB of them for a large alignment).
  if (!tensors_.empty()) sink.pad_to(alignment_);
  return sink.take();
}

Status GgufWriter::for_each_tensor_bytes(const std::function<Status(std::span<const uint8_t>)>& out) const {
  std::vector<uint8_t> filled;
  for (const PendingTensor& t : tensors_) {
    std::span<const uint8_t> bytes = t.data;
    if (t.fill) {
      filled.assign(t.nbytes, 0);
      if (Status s = t.fill(filled); !s) return s.with_context("tensor '" + t.name + "'");
      bytes = filled;
    }
    const uint64_t padded = (t.nbytes + alignment_ - 1) / alignment_ * alignment_;
    OMNIBUS_RETURN_IF_ERROR(out(bytes));
    if (padded != t.nbytes) {
      const std::vector<uint8_t> zeros(padded - t.nbytes, 0);
      OMNIBUS_RETURN_IF_ERROR(out(zeros));
    }
  }
  return Status::ok();
}

Result<std::vector<uint8_t>> GgufWriter::build() const {
  OMNIBUS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, header());
  OMNIBUS_RETURN_IF_ERROR(for_each_tensor_bytes([&](std::span<const uint8_t> b) {
    bytes.insert(bytes.end(), b.begin(), b.end());
    return Status::ok();
  }));
  return bytes;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  auto bytes = build();
  return bytes ? std::move(bytes).value() : std::vector<uint8_t>{};
}

Status GgufWriter::write(const std::string& path) const {
  OMNIBUS_ASSIGN_OR_RETURN(const std::vector<uint8_t> head, header());
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return Status::io_error("cannot create '" + path + "': " + std::strerror(errno));
  auto put = [&](std::span<const uint8_t> b) {
    if (std::fwrite(b.data(), 1, b.size(), f) != b.size())
      return Status::io_error("cannot write '" + path + "': " + std::strerror(errno));
    return Status::ok();
  };
  Status status = put(head);
  if (status) status = for_each_tensor_bytes(put);
  const int close_errno = std::fclose(f) == 0 ? 0 : errno;
  if (status && close_errno != 0)
    status = Status::io_error("cannot write '" + path + "': " + std::strerror(close_errno));
  return status;
}

}  // namespace omnibus
