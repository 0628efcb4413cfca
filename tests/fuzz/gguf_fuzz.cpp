// libFuzzer target for the GGUF reader. Any input must parse or fail with a
// Status, never crash or read out of bounds (ASan/UBSan watch). When it
// parses, every metadata value and tensor byte is touched, and the file is
// written back with GgufWriter and parsed again: the reader must only accept
// what the writer can reproduce exactly.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/mapped_file.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace {

using omnibus::GgufFile;
using omnibus::GgufValue;

// Walks a value (and its elements) so every payload is read.
uint64_t touch(const GgufValue& v) {
  uint64_t h = static_cast<uint64_t>(v.type) + v.describe().size();
  if (const auto* elems = v.array()) {
    for (const GgufValue& e : *elems) h = h * 31 + touch(e);
    return h;
  }
  if (auto i = v.to_int(); i.is_ok()) h += static_cast<uint64_t>(*i);
  if (auto d = v.to_double(); d.is_ok()) h += static_cast<uint64_t>(*d != *d);
  if (auto s = v.to_string_value(); s.is_ok()) h += s->size();
  return h;
}

void check_round_trip(const GgufFile& f) {
  omnibus::GgufWriter w(f.version(), f.alignment());
  for (const auto& [key, value] : f.metadata()) w.set(key, value);
  for (const auto& t : f.tensors())
    if (!w.add_tensor(t.name, t.dims, t.dtype, t.data).is_ok()) __builtin_trap();
  auto bytes = w.build();
  if (!bytes.is_ok()) __builtin_trap();
  auto again = GgufFile::parse(omnibus::MappedFile::from_memory(*bytes));
  if (!again.is_ok()) __builtin_trap();
  const GgufFile& g = **again;
  if (g.metadata().size() != f.metadata().size() || g.tensors().size() != f.tensors().size()) __builtin_trap();
  for (size_t i = 0; i < f.metadata().size(); ++i)
    if (g.metadata()[i].first != f.metadata()[i].first || !(g.metadata()[i].second == f.metadata()[i].second))
      __builtin_trap();
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const auto& a = f.tensors()[i];
    const auto& b = g.tensors()[i];
    if (a.name != b.name || a.dims != b.dims || a.dtype != b.dtype || a.nbytes != b.nbytes) __builtin_trap();
    if (!std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end())) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = GgufFile::parse(omnibus::MappedFile::from_memory(std::span<const uint8_t>(data, size)));
  if (!parsed.is_ok()) {
    if (parsed.status().message().empty()) __builtin_trap();  // every error must say something
    return 0;
  }
  const GgufFile& f = **parsed;
  volatile uint64_t sink = 0;
  for (const auto& [key, value] : f.metadata()) {
    sink = sink + key.size() + touch(value);
    if (f.find(key) != &value) __builtin_trap();
  }
  (void)f.get_string("general.architecture");
  (void)f.get_int("general.alignment");
  (void)f.get_string_array("tokenizer.ggml.tokens");
  (void)f.get_float_array("tokenizer.ggml.scores");
  (void)f.get_int_array("tokenizer.ggml.token_type");
  for (const auto& t : f.tensors()) {
    if (t.data.data() < data || t.data.data() + t.data.size() > data + size) __builtin_trap();
    if (t.data.size() != t.nbytes || t.offset % f.alignment() != 0) __builtin_trap();
    for (uint8_t b : t.data) sink = sink + b;
    sink = sink + static_cast<uint64_t>(t.element_count());
  }
  check_round_trip(f);
  return 0;
}
