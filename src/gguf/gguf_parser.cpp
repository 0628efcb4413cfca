// GgufParser: turns untrusted GGUF bytes into a GgufFile. Every count is
// bounded by the bytes left before anything is reserved, every length and
// offset is checked against the file size with overflow-safe arithmetic, and
// every error says where (byte offset, key, tensor) and what is wrong.
#include "gguf/gguf_parser.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

#include "gguf/byte_cursor.h"

namespace omnibus {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian uint32
constexpr uint64_t kDefaultAlignment = 32;
// Smallest encodings, used to bound counts by the bytes left: a key/value
// pair is a key length (8), a value type (4) and at least a 1-byte value; a
// tensor info is a name length (8), n_dims (4), one dim (8), type (4), offset (8).
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// Counts above this grow their vectors as entries parse instead of reserving.
constexpr uint64_t kReserveCap = 4096;

// Bytes the smallest value of type t takes in the file.
uint64_t min_encoded_size(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool: return 1;
    case GgufType::kUint16:
    case GgufType::kInt16: return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32: return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
    case GgufType::kString: return 8;      // a string is at least its length
    case GgufType::kArray: return 4 + 8;   // element type and count
  }
  return 1;
}

std::string count_note(uint64_t n) {
  return n > static_cast<uint64_t>(INT64_MAX) ? " (negative as int64)" : "";
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// Reads a `Wire` from the file and stores it widened to `Stored`.
template <class Wire, class Stored>
Status read_as(ByteCursor& cur, const char* what, GgufValue* out) {
  Wire v{};
  OMNIBUS_RETURN_IF_ERROR(cur.read(&v, what));
  out->value = static_cast<Stored>(v);
  return Status::ok();
}

}  // namespace

class GgufParser {
 public:
  explicit GgufParser(std::unique_ptr<MappedFile> mapped)
      : file_(new GgufFile()), cur_(mapped->bytes()) {
    file_->file_ = std::move(mapped);
  }

  Result<std::unique_ptr<GgufFile>> run() {
    uint64_t tensor_count = 0;
    uint64_t kv_count = 0;
    OMNIBUS_RETURN_IF_ERROR(parse_header(&tensor_count, &kv_count));
    OMNIBUS_RETURN_IF_ERROR(parse_metadata(kv_count));
    OMNIBUS_RETURN_IF_ERROR(read_alignment());
    OMNIBUS_RETURN_IF_ERROR(parse_tensor_infos(tensor_count));
    OMNIBUS_RETURN_IF_ERROR(place_tensors());
    return std::move(file_);
  }

 private:
  Status parse_header(uint64_t* tensor_count, uint64_t* kv_count);
  Status parse_metadata(uint64_t kv_count);
  Status parse_value(GgufType type, int depth, GgufValue* out);
  Status parse_scalar(GgufType type, GgufValue* out);
  Status parse_array(int depth, GgufValue* out);
  Status read_alignment();
  Status parse_tensor_infos(uint64_t tensor_count);
  Status parse_tensor_info(uint64_t index, GgufTensorInfo* info);
  Status parse_dims(uint64_t info_pos, GgufTensorInfo* info);
  Status place_tensors();

  std::unique_ptr<GgufFile> file_;
  ByteCursor cur_;
  uint64_t metadata_elements_ = 0;
};

Status GgufParser::parse_header(uint64_t* tensor_count, uint64_t* kv_count) {
  if (cur_.size() < 4)
    return Status::corrupt("not a GGUF file: only " + std::to_string(cur_.size()) + " bytes");
  uint32_t magic = 0;
  OMNIBUS_RETURN_IF_ERROR(cur_.read(&magic, "magic"));
  if (magic != kMagic) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "%08x", __builtin_bswap32(magic));
    return Status::corrupt(std::string("not a GGUF file: magic bytes are 0x") + hex +
                           ", expected 0x47475546 (\"GGUF\")");
  }
  uint32_t version = 0;
  OMNIBUS_RETURN_IF_ERROR(cur_.read(&version, "version"));
  if (version == 1)
    return Status::unsupported("GGUF version 1 is obsolete and not supported (versions 2 and 3 are); "
                               "re-convert the model with a current llama.cpp");
  if (version != 2 && version != 3) {
    const uint32_t swapped = __builtin_bswap32(version);
    if (swapped == 2 || swapped == 3)
      return Status::unsupported("big-endian GGUF files are not supported");
    return Status::unsupported("GGUF version " + std::to_string(version) +
                               " is not supported (versions 2 and 3 are)");
  }
  file_->version_ = version;
  OMNIBUS_RETURN_IF_ERROR(cur_.read(tensor_count, "tensor count"));
  OMNIBUS_RETURN_IF_ERROR(cur_.read(kv_count, "metadata key count"));
  // Bound both counts by what the rest of the file could hold, so a hostile
  // count fails here rather than in a loop or an allocation.
  if (*kv_count > cur_.remaining() / kMinKvBytes)
    return ByteCursor::corrupt_at(16, "metadata key count " + std::to_string(*kv_count) + count_note(*kv_count) +
                                          " is impossible: the " + std::to_string(cur_.remaining()) +
                                          " bytes after the header hold at most " +
                                          std::to_string(cur_.remaining() / kMinKvBytes) + " keys");
  if (*tensor_count > cur_.remaining() / kMinTensorInfoBytes)
    return ByteCursor::corrupt_at(8, "tensor count " + std::to_string(*tensor_count) + count_note(*tensor_count) +
                                         " is impossible: the " + std::to_string(cur_.remaining()) +
                                         " bytes after the header hold at most " +
                                         std::to_string(cur_.remaining() / kMinTensorInfoBytes) + " tensors");
  return Status::ok();
}

Status GgufParser::parse_metadata(uint64_t kv_count) {
  // kv_count is bounded by the file size; still, grow as keys actually parse.
  file_->metadata_.reserve(static_cast<size_t>(std::min<uint64_t>(kv_count, kReserveCap)));
  for (uint64_t i = 0; i < kv_count; ++i) {
    const uint64_t key_pos = cur_.pos();
    const std::string where = "key #" + std::to_string(i);
    std::string key;
    if (Status s = cur_.read_string(&key, "key name"); !s) return s.with_context(where);
    if (auto it = file_->metadata_index_.find(key); it != file_->metadata_index_.end())
      return ByteCursor::corrupt_at(key_pos, "duplicate key " + quoted(key) + " (keys #" +
                                                 std::to_string(it->second) + " and #" + std::to_string(i) + ")");
    const uint64_t type_pos = cur_.pos();
    uint32_t type_id = 0;
    if (Status s = cur_.read(&type_id, "value type"); !s) return s.with_context("key " + quoted(key));
    if (!gguf_type_known(type_id))
      return ByteCursor::corrupt_at(type_pos, "key " + quoted(key) + " has unknown value type " +
                                                  std::to_string(type_id));
    GgufValue value;
    if (Status s = parse_value(static_cast<GgufType>(type_id), 0, &value); !s)
      return s.with_context("key " + quoted(key));
    file_->metadata_index_.emplace(key, file_->metadata_.size());
    file_->metadata_.emplace_back(std::move(key), std::move(value));
  }
  return Status::ok();
}

Status GgufParser::parse_value(GgufType type, int depth, GgufValue* out) {
  if (type == GgufType::kArray) return parse_array(depth, out);
  return parse_scalar(type, out);
}

Status GgufParser::parse_scalar(GgufType type, GgufValue* out) {
  out->type = type;
  switch (type) {
    case GgufType::kUint8: return read_as<uint8_t, uint64_t>(cur_, "uint8 value", out);
    case GgufType::kUint16: return read_as<uint16_t, uint64_t>(cur_, "uint16 value", out);
    case GgufType::kUint32: return read_as<uint32_t, uint64_t>(cur_, "uint32 value", out);
    case GgufType::kUint64: return read_as<uint64_t, uint64_t>(cur_, "uint64 value", out);
    case GgufType::kInt8: return read_as<int8_t, int64_t>(cur_, "int8 value", out);
    case GgufType::kInt16: return read_as<int16_t, int64_t>(cur_, "int16 value", out);
    case GgufType::kInt32: return read_as<int32_t, int64_t>(cur_, "int32 value", out);
    case GgufType::kInt64: return read_as<int64_t, int64_t>(cur_, "int64 value", out);
    case GgufType::kFloat32: return read_as<float, double>(cur_, "float32 value", out);
    case GgufType::kFloat64: return read_as<double, double>(cur_, "float64 value", out);
    case GgufType::kBool: {
      const uint64_t pos = cur_.pos();
      uint8_t v = 0;
      OMNIBUS_RETURN_IF_ERROR(cur_.read(&v, "bool value"));
      if (v > 1) return ByteCursor::corrupt_at(pos, "bool value is " + std::to_string(v) + ", not 0 or 1");
      out->value = v == 1;
      break;
    }
    case GgufType::kString: {
      std::string s;
      OMNIBUS_RETURN_IF_ERROR(cur_.read_string(&s, "string"));
      out->value = std::move(s);
      break;
    }
    case GgufType::kArray: return Status::internal("parse_scalar called for an array");
  }
  return Status::ok();
}

Status GgufParser::parse_array(int depth, GgufValue* out) {
  const uint64_t start = cur_.pos();
  if (depth >= kGgufMaxArrayDepth)
    return ByteCursor::corrupt_at(start, "arrays nested more than " + std::to_string(kGgufMaxArrayDepth) +
                                             " deep");
  uint32_t element_id = 0;
  OMNIBUS_RETURN_IF_ERROR(cur_.read(&element_id, "array element type"));
  if (!gguf_type_known(element_id))
    return ByteCursor::corrupt_at(start, "array has unknown element type " + std::to_string(element_id));
  const auto element_type = static_cast<GgufType>(element_id);
  uint64_t count = 0;
  OMNIBUS_RETURN_IF_ERROR(cur_.read(&count, "array length"));
  const uint64_t min_size = min_encoded_size(element_type);
  if (count > cur_.remaining() / min_size)
    return ByteCursor::corrupt_at(start, "array of " + std::to_string(count) + count_note(count) + " " +
                                             gguf_type_name(element_type) + " runs past the end of the file (" +
                                             std::to_string(cur_.remaining()) + " bytes left)");
  if (count > kGgufMaxMetadataElements - metadata_elements_)
    return ByteCursor::corrupt_at(start, "metadata arrays hold more than " +
                                             std::to_string(kGgufMaxMetadataElements) + " elements in all");
  metadata_elements_ += count;
  out->type = GgufType::kArray;
  out->element_type = element_type;
  std::vector<GgufValue> elements(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    if (Status s = parse_value(element_type, depth + 1, &elements[i]); !s)
      return s.with_context("element " + std::to_string(i));
  }
  out->value = std::move(elements);
  return Status::ok();
}

Status GgufParser::read_alignment() {
  const GgufValue* v = file_->find("general.alignment");
  if (v == nullptr) {
    file_->alignment_ = kDefaultAlignment;
    return Status::ok();
  }
  if (v->type != GgufType::kUint32)
    return Status::corrupt(std::string("general.alignment has type ") + gguf_type_name(v->type) +
                           "; it must be uint32");
  const uint64_t a = std::get<uint64_t>(v->value);
  if (a == 0 || (a & (a - 1)) != 0)
    return Status::corrupt("general.alignment is " + std::to_string(a) + "; it must be a nonzero power of two");
  file_->alignment_ = a;
  return Status::ok();
}

Status GgufParser::parse_tensor_infos(uint64_t tensor_count) {
  if (tensor_count > cur_.remaining() / kMinTensorInfoBytes)
    return ByteCursor::corrupt_at(cur_.pos(), "tensor count " + std::to_string(tensor_count) +
                                                  " is impossible: only " + std::to_string(cur_.remaining()) +
                                                  " bytes are left for the tensor infos");
  file_->tensors_.reserve(static_cast<size_t>(std::min<uint64_t>(tensor_count, kReserveCap)));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo& info = file_->tensors_.emplace_back();
    OMNIBUS_RETURN_IF_ERROR(parse_tensor_info(i, &info));
    if (auto it = file_->tensor_index_.find(info.name); it != file_->tensor_index_.end())
      return Status::corrupt("duplicate tensor name " + quoted(info.name) + " (tensors #" +
                             std::to_string(it->second) + " and #" + std::to_string(i) + ")");
    file_->tensor_index_.emplace(info.name, static_cast<size_t>(i));
  }
  // The data section starts at the next multiple of the alignment.
  const uint64_t pos = cur_.pos();
  const uint64_t a = file_->alignment_;
  const uint64_t rem = pos % a;
  if (rem != 0 && a - rem > UINT64_MAX - pos) return Status::corrupt("data section offset overflows");
  file_->data_offset_ = rem == 0 ? pos : pos + (a - rem);
  return Status::ok();
}

Status GgufParser::parse_tensor_info(uint64_t index, GgufTensorInfo* info) {
  const uint64_t info_pos = cur_.pos();
  if (Status s = cur_.read_string(&info->name, "tensor name"); !s)
    return s.with_context("tensor #" + std::to_string(index));
  // Tensors are looked up by name, so a nameless one is a broken file.
  if (info->name.empty())
    return ByteCursor::corrupt_at(info_pos, "tensor #" + std::to_string(index) + " has an empty name");
  const std::string where = "tensor " + quoted(info->name);
  OMNIBUS_RETURN_IF_ERROR(parse_dims(info_pos, info));
  const uint64_t type_pos = cur_.pos();
  uint32_t type_id = 0;
  if (Status s = cur_.read(&type_id, "tensor type"); !s) return s.with_context(where);
  const DTypeInfo* dt = dtype_info(type_id);
  if (dt == nullptr)
    return Status::unsupported("at byte " + std::to_string(type_pos) + ": " + where + " has unknown type id " +
                               std::to_string(type_id));
  info->dtype = static_cast<DType>(type_id);
  if (info->dims[0] % dt->block_size != 0)
    return ByteCursor::corrupt_at(info_pos, where + " row length " + std::to_string(info->dims[0]) +
                                                " is not a multiple of the " + dt->name + " block size " +
                                                std::to_string(dt->block_size));
  auto nbytes = dtype_bytes(info->dtype, info->element_count());
  if (!nbytes) return nbytes.status().with_context("at byte " + std::to_string(info_pos) + ": " + where);
  info->nbytes = *nbytes;
  const uint64_t offset_pos = cur_.pos();
  if (Status s = cur_.read(&info->offset, "tensor data offset"); !s) return s.with_context(where);
  if (info->offset % file_->alignment_ != 0)
    return ByteCursor::corrupt_at(offset_pos, where + " data offset " + std::to_string(info->offset) +
                                                  " is not a multiple of the alignment " +
                                                  std::to_string(file_->alignment_));
  return Status::ok();
}

Status GgufParser::parse_dims(uint64_t info_pos, GgufTensorInfo* info) {
  const std::string where = "tensor " + quoted(info->name);
  uint32_t n_dims = 0;
  if (Status s = cur_.read(&n_dims, "dimension count"); !s) return s.with_context(where);
  if (n_dims == 0 || n_dims > kGgufMaxDims)
    return ByteCursor::corrupt_at(info_pos, where + " has " + std::to_string(n_dims) + " dimensions; 1 to " +
                                                std::to_string(kGgufMaxDims) + " are supported");
  info->dims.resize(n_dims);
  int64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    uint64_t dim = 0;
    if (Status s = cur_.read(&dim, "dimension"); !s) return s.with_context(where);
    // Zero-sized tensors are legal in ggml but useless for inference and a
    // divide-by-zero trap for shape code downstream, so we refuse them.
    if (dim == 0 || dim > static_cast<uint64_t>(INT64_MAX))
      return ByteCursor::corrupt_at(info_pos, where + " dimension " + std::to_string(d) + " is " +
                                                  std::to_string(dim) + count_note(dim) +
                                                  "; dimensions must be at least 1");
    const auto dim_signed = static_cast<int64_t>(dim);
    if (elements > INT64_MAX / dim_signed)
      return ByteCursor::corrupt_at(info_pos, where + " has too many elements: the product of its "
                                                      "dimensions overflows int64");
    elements *= dim_signed;
    info->dims[d] = dim_signed;
  }
  return Status::ok();
}

Status GgufParser::place_tensors() {
  const uint64_t size = cur_.size();
  const uint64_t base = file_->data_offset_;
  for (GgufTensorInfo& info : file_->tensors_) {
    const std::string where = "tensor " + quoted(info.name);
    if (info.offset > UINT64_MAX - base || info.nbytes > UINT64_MAX - (base + info.offset))
      return Status::corrupt(where + " data offset " + std::to_string(info.offset) + " overflows");
    const uint64_t start = base + info.offset;
    const uint64_t end = start + info.nbytes;
    if (end > size)
      return Status::corrupt(where + " data (bytes " + std::to_string(start) + " to " + std::to_string(end) +
                             ") runs past the end of the file (size " + std::to_string(size) +
                             "); is the file truncated?");
    info.data = file_->file_->bytes().subspan(static_cast<size_t>(start), static_cast<size_t>(info.nbytes));
  }
  return Status::ok();
}

Result<std::unique_ptr<GgufFile>> parse_gguf(std::unique_ptr<MappedFile> file) {
  if (file == nullptr) return Status::invalid_argument("no file to parse");
  GgufParser parser(std::move(file));
  return parser.run();
}

}  // namespace omnibus
