#include "convert/sentencepiece_model.h"

#include <cstring>
#include <optional>

namespace omnibus {
namespace {

// Protobuf's wire types (the deprecated groups, 3 and 4, are refused).
enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// The fields of the messages read here (sentencepiece_model.proto).
constexpr uint32_t kModelPieces = 1, kModelTrainerSpec = 2, kModelNormalizerSpec = 3;
constexpr uint32_t kPieceText = 1, kPieceScore = 2, kPieceType = 3;
constexpr uint32_t kTrainerModelType = 3, kTrainerByteFallback = 35;
constexpr uint32_t kNormalizerName = 1, kNormalizerAddDummyPrefix = 3;

// A length-checked reader of one message's fields.
class ProtoReader {
 public:
  explicit ProtoReader(std::string_view bytes) : in_(bytes) {}

  bool done() const { return at_ == in_.size(); }

  // The next field's number and wire type.
  Status next(uint32_t& field, int& wire) {
    uint64_t key = 0;
    OMNIBUS_RETURN_IF_ERROR(varint(key));
    field = static_cast<uint32_t>(key >> 3);
    wire = static_cast<int>(key & 7);
    if (field == 0 || key >> 32 != 0) return Status::corrupt("tokenizer.model has a field numbered 0 or past 2^29");
    if (wire != kVarint && wire != kFixed64 && wire != kLengthDelimited && wire != kFixed32)
      return Status::corrupt("tokenizer.model has a field of wire type " + std::to_string(wire) +
                             " (not a SentencePiece model)");
    return Status::ok();
  }

  Status varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ == in_.size()) return Status::corrupt("tokenizer.model ends inside a number");
      const auto byte = static_cast<uint8_t>(in_[at_++]);
      v |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return Status::ok();
    }
    return Status::corrupt("tokenizer.model has a number longer than ten bytes");
  }

  Status bytes(std::string_view& out) {
    uint64_t n = 0;
    OMNIBUS_RETURN_IF_ERROR(varint(n));
    if (n > in_.size() - at_) return Status::corrupt("tokenizer.model has a field longer than the file");
    out = in_.substr(at_, n);
    at_ += n;
    return Status::ok();
  }

  Status fixed32(uint32_t& v) {
    if (in_.size() - at_ < 4) return Status::corrupt("tokenizer.model ends inside a number");
    unsigned char b[4];
    std::memcpy(b, in_.data() + at_, 4);
    v = uint32_t{b[0]} | uint32_t{b[1]} << 8 | uint32_t{b[2]} << 16 | uint32_t{b[3]} << 24;  // little-endian
    at_ += 4;
    return Status::ok();
  }

  // Past a field this reader does not keep.
  Status skip(int wire) {
    uint64_t v = 0;
    uint32_t f = 0;
    std::string_view s;
    switch (wire) {
      case kVarint: return varint(v);
      case kFixed32: return fixed32(f);
      case kLengthDelimited: return bytes(s);
      default:
        if (in_.size() - at_ < 8) return Status::corrupt("tokenizer.model ends inside a number");
        at_ += 8;
        return Status::ok();
    }
  }

  // A field of the wire type its number must have, or an error naming it.
  static Status expect(int wire, int wanted, const char* what) {
    if (wire == wanted) return Status::ok();
    return Status::corrupt(std::string("tokenizer.model's ") + what + " has the wrong wire type");
  }

 private:
  std::string_view in_;
  size_t at_ = 0;
};

// Calls keep(field, wire, reader) on each field of the message in `bytes`;
// a field it does not keep (false) is skipped by its wire type.
template <class Keep>
Status for_each_field(std::string_view bytes, Keep keep) {
  ProtoReader r(bytes);
  while (!r.done()) {
    uint32_t field = 0;
    int wire = 0;
    OMNIBUS_RETURN_IF_ERROR(r.next(field, wire));
    OMNIBUS_ASSIGN_OR_RETURN(const bool kept, keep(field, wire, r));
    if (!kept) OMNIBUS_RETURN_IF_ERROR(r.skip(wire));
  }
  return Status::ok();
}

// A varint field of the wire type it must have.
Result<uint64_t> varint_of(int wire, ProtoReader& r, const char* what) {
  OMNIBUS_RETURN_IF_ERROR(ProtoReader::expect(wire, kVarint, what));
  uint64_t v = 0;
  OMNIBUS_RETURN_IF_ERROR(r.varint(v));
  return v;
}
Result<std::string_view> bytes_of(int wire, ProtoReader& r, const char* what) {
  OMNIBUS_RETURN_IF_ERROR(ProtoReader::expect(wire, kLengthDelimited, what));
  std::string_view v;
  OMNIBUS_RETURN_IF_ERROR(r.bytes(v));
  return v;
}

Result<SentencePiece> parse_piece(std::string_view bytes) {
  SentencePiece p;
  bool has_text = false;
  OMNIBUS_RETURN_IF_ERROR(for_each_field(bytes, [&](uint32_t field, int wire, ProtoReader& r) -> Result<bool> {
    if (field == kPieceText) {
      OMNIBUS_ASSIGN_OR_RETURN(const std::string_view text, bytes_of(wire, r, "piece"));
      p.text.assign(text);
      has_text = true;
    } else if (field == kPieceScore) {
      OMNIBUS_RETURN_IF_ERROR(ProtoReader::expect(wire, kFixed32, "score"));
      uint32_t bits = 0;
      OMNIBUS_RETURN_IF_ERROR(r.fixed32(bits));
      std::memcpy(&p.score, &bits, 4);
    } else if (field == kPieceType) {
      OMNIBUS_ASSIGN_OR_RETURN(const uint64_t type, varint_of(wire, r, "piece type"));
      if (type < 1 || type > 6)
        return Status::corrupt("tokenizer.model has a piece of unknown type " + std::to_string(type));
      p.type = static_cast<int>(type);
    } else {
      return false;
    }
    return true;
  }));
  if (!has_text) return Status::corrupt("tokenizer.model has a piece without its text");
  return p;
}

Status parse_trainer_spec(std::string_view bytes, SentencePieceModel& m) {
  return for_each_field(bytes, [&](uint32_t field, int wire, ProtoReader& r) -> Result<bool> {
    if (field == kTrainerModelType) {
      OMNIBUS_ASSIGN_OR_RETURN(const uint64_t v, varint_of(wire, r, "model_type"));
      m.model_type = v > 100 ? 0 : static_cast<int>(v);  // 0: unknown, refused by the caller
    } else if (field == kTrainerByteFallback) {
      OMNIBUS_ASSIGN_OR_RETURN(const uint64_t v, varint_of(wire, r, "byte_fallback"));
      m.byte_fallback = v != 0;
    } else {
      return false;
    }
    return true;
  });
}

Status parse_normalizer_spec(std::string_view bytes, SentencePieceModel& m) {
  return for_each_field(bytes, [&](uint32_t field, int wire, ProtoReader& r) -> Result<bool> {
    if (field == kNormalizerName) {
      OMNIBUS_ASSIGN_OR_RETURN(const std::string_view name, bytes_of(wire, r, "normalizer name"));
      m.normalizer_name.assign(name.substr(0, 256));
    } else if (field == kNormalizerAddDummyPrefix) {
      OMNIBUS_ASSIGN_OR_RETURN(const uint64_t v, varint_of(wire, r, "add_dummy_prefix"));
      m.add_dummy_prefix = v != 0;
    } else {
      return false;
    }
    return true;
  });
}

}  // namespace

Result<SentencePieceModel> parse_sentencepiece_model(std::string_view bytes, size_t max_pieces) {
  SentencePieceModel m;
  size_t pieces = 0;
  OMNIBUS_RETURN_IF_ERROR(for_each_field(bytes, [&](uint32_t field, int wire, ProtoReader& r) -> Result<bool> {
    if (field != kModelPieces && field != kModelTrainerSpec && field != kModelNormalizerSpec) return false;
    OMNIBUS_ASSIGN_OR_RETURN(const std::string_view message, bytes_of(wire, r, "message"));
    if (field == kModelPieces) {
      if (++pieces > (1u << 24)) return Status::corrupt("tokenizer.model has more than 2^24 pieces");
      OMNIBUS_ASSIGN_OR_RETURN(SentencePiece p, parse_piece(message));
      if (m.pieces.size() < max_pieces) m.pieces.push_back(std::move(p));
    } else if (field == kModelTrainerSpec) {
      OMNIBUS_RETURN_IF_ERROR(parse_trainer_spec(message, m));
    } else {
      OMNIBUS_RETURN_IF_ERROR(parse_normalizer_spec(message, m));
    }
    return true;
  }));
  if (pieces == 0) return Status::corrupt("tokenizer.model has no pieces (not a SentencePiece model)");
  return m;
}

}  // namespace omnibus
