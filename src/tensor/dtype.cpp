#include "tensor/dtype.h"

#include <array>

namespace omnibus {
namespace {

// Sizes of every ggml type, so that files holding types we cannot compute
// still parse (and `inspect` can show them). Ids 4, 5 and 31-33 were removed
// from ggml and stay unknown. One type a line (clang-format would pack them).
// clang-format off
constexpr std::array<DTypeInfo, 32> kTypes = {{
    {0, "f32", 1, 4, true},
    {1, "f16", 1, 2, true},
    {2, "q4_0", 32, 18, true},
    {3, "q4_1", 32, 20, true},
    {6, "q5_0", 32, 22, true},
    {7, "q5_1", 32, 24, true},
    {8, "q8_0", 32, 34, true},
    {9, "q8_1", 32, 36, false},
    {10, "q2_K", 256, 84, true},
    {11, "q3_K", 256, 110, true},
    {12, "q4_K", 256, 144, true},
    {13, "q5_K", 256, 176, true},
    {14, "q6_K", 256, 210, true},
    {15, "q8_K", 256, 292, false},
    {16, "iq2_xxs", 256, 66, false},
    {17, "iq2_xs", 256, 74, false},
    {18, "iq3_xxs", 256, 98, false},
    {19, "iq1_s", 256, 50, false},
    {20, "iq4_nl", 32, 18, true},
    {21, "iq3_s", 256, 110, false},
    {22, "iq2_s", 256, 82, false},
    {23, "iq4_xs", 256, 136, true},
    {24, "i8", 1, 1, false},
    {25, "i16", 1, 2, false},
    {26, "i32", 1, 4, false},
    {27, "i64", 1, 8, false},
    {28, "f64", 1, 8, false},
    {29, "iq1_m", 256, 56, false},
    {30, "bf16", 1, 2, true},
    {34, "tq1_0", 256, 54, false},
    {35, "tq2_0", 256, 66, false},
    {39, "mxfp4", 32, 17, true},
}};
// clang-format on

}  // namespace

const DTypeInfo* dtype_info(uint32_t id) {
  for (const auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

std::string dtype_name(DType t) {
  const DTypeInfo* info = dtype_info(t);
  return info ? info->name : "type#" + std::to_string(static_cast<uint32_t>(t));
}

Result<uint64_t> dtype_bytes(DType t, int64_t elements) {
  const DTypeInfo* info = dtype_info(t);
  if (info == nullptr) return Status::unsupported("unknown tensor type id " + std::to_string(static_cast<uint32_t>(t)));
  if (elements < 0) return Status::invalid_argument("negative element count");
  if (elements % info->block_size != 0)
    return Status::invalid_argument(std::to_string(elements) + " elements is not a multiple of the " +
                                    info->name + " block size " + std::to_string(info->block_size));
  const uint64_t blocks = static_cast<uint64_t>(elements / info->block_size);
  const uint64_t per = static_cast<uint64_t>(info->block_bytes);
  if (blocks != 0 && per > UINT64_MAX / blocks) return Status::out_of_range("tensor byte size overflows 64 bits");
  return blocks * per;
}

}  // namespace omnibus
