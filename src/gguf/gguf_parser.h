// Parsing GGUF bytes into a GgufFile (internal to gguf/; callers use
// GgufFile::open or GgufFile::parse).
#pragma once

#include <memory>

#include "base/mapped_file.h"
#include "base/status.h"
#include "gguf/gguf_file.h"

namespace omnibus {

// Limits that keep a hostile file from exhausting the stack or memory. Real
// models are far below them (a 256k-token vocabulary plus its merges is under
// a million elements; this cap is 8M, about 400 MB of parsed values).
inline constexpr int kGgufMaxArrayDepth = 8;                     // nested arrays
inline constexpr uint64_t kGgufMaxMetadataElements = 1ull << 23;  // all array elements together
inline constexpr uint32_t kGgufMaxDims = 4;                      // GGML_MAX_DIMS

// Validates everything (header, metadata, tensor infos, data spans) and
// returns the parsed file owning `file`.
Result<std::unique_ptr<GgufFile>> parse_gguf(std::unique_ptr<MappedFile> file);

}  // namespace omnibus
