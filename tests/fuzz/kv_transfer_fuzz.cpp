// libFuzzer target for the KV handover blob's decoder (engine/kv_transfer.h,
// what POST /v1/kv/import feeds it). Each input is decoded twice: as it is,
// and with a correct checksum appended, so mutations reach the field and
// size checks behind the checksum. Any input must give contents or an
// error, never a crash, a sanitizer report or a hang; accepted contents
// must be exactly what the header promised. Run:
// scripts/fuzz_kv_transfer.sh [seconds].
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/kv_transfer.h"

using namespace omnibus;

namespace {

KvTransferShape expected() {
  KvTransferShape s;
  s.model_fingerprint = 0x0123456789abcdefull;
  s.kv_type = KvCacheType::kF16;
  s.block_size = 2;
  s.n_layer = 1;
  s.n_head_kv = 1;
  s.head_dim = 2;
  s.block_bytes = 16;
  return s;
}

void decode(std::string_view blob) {
  static const KvTransferShape shape = expected();
  Result<KvTransferContents> r = decode_kv_transfer(blob, shape, 64);
  if (!r.is_ok()) return;
  const size_t n_blocks = r->tokens.size() / static_cast<size_t>(shape.block_size);
  if (r->tokens.empty() || r->tokens.size() % shape.block_size != 0 ||
      r->blocks.size() != n_blocks * static_cast<size_t>(shape.block_bytes))
    std::abort();
  for (int32_t t : r->tokens)
    if (t < 0 || t >= 64) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view raw(reinterpret_cast<const char*>(data), size);
  decode(raw);
  std::string fixed(raw);
  const uint64_t sum = kv_transfer_checksum(fixed);
  fixed.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  decode(fixed);
  return 0;
}
