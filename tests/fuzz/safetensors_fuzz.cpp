// libFuzzer target for what `omnibus convert` reads from a Hugging Face
// folder. The first byte picks the reader: 0 a .safetensors file (and
// gpt-oss's expert stacks planned from its tensors), 1
// config.json, 2 tokenizer.json, 3 a SentencePiece tokenizer.model (mod 4). Any input must be read or refused
// with a Status, never crash, throw, or read out of bounds (ASan/UBSan
// watch). What is accepted is touched (every tensor byte) or written into
// a GGUF writer and built.
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "convert/gpt_oss_experts.h"
#include "convert/hf_config.h"
#include "convert/hf_tokenizer.h"
#include "convert/safetensors_file.h"
#include "gguf/gguf_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  switch (data[0] % 4) {
    case 0: {
      auto file = omnibus::SafetensorsFile::parse(rest);
      if (!file.is_ok()) return 0;
      uint64_t sum = 0;
      for (const auto& t : (*file)->tensors())
        for (uint8_t b : t.bytes) sum += b;
      // Keeps the loop (a trap on sum == 1, its stand-in before, was
      // reachable: a tensor of one byte of 1).
      asm volatile("" : : "r"(sum) : "memory");
      // Tensors named model.layers.0.mlp.experts.<part>: gpt-oss's expert
      // stacks planned from them and every byte filled (a small config's
      // shapes: 2 experts, hidden 32, ff 32).
      std::map<std::string, const omnibus::SafetensorsTensor*> parts;
      const std::string prefix = "model.layers.0.mlp.experts.";
      for (const auto& t : (*file)->tensors())
        if (t.name.starts_with(prefix) && omnibus::is_gpt_oss_expert_part(t.name.substr(prefix.size())))
          parts[t.name.substr(prefix.size())] = &t;
      omnibus::HfModelConfig c;
      c.gguf_arch = "gpt-oss";
      c.n_expert = 2;
      c.n_embd = c.n_ff = c.n_ff_expert = 32;
      auto stacks = omnibus::plan_gpt_oss_experts(0, parts, c, omnibus::DType::kF16);
      if (!stacks.is_ok()) return 0;
      for (const auto& t : *stacks) {
        int64_t elements = 1;
        for (int64_t d : t.dims) elements *= d;
        auto bytes = omnibus::dtype_bytes(t.dtype, elements);
        if (!bytes.is_ok()) __builtin_trap();  // a planned tensor's size is always whole blocks
        std::vector<uint8_t> out(*bytes);
        t.fill(out);
      }
      return 0;
    }
    case 1: {
      const auto json = nlohmann::json::parse(rest.begin(), rest.end(), nullptr, false);
      if (json.is_discarded()) return 0;
      auto config = omnibus::parse_hf_config(json);
      if (!config.is_ok()) return 0;
      omnibus::GgufWriter w;
      omnibus::add_model_keys(*config, w);
      if (!w.build().is_ok()) __builtin_trap();  // what the config gave must be writable
      return 0;
    }
    case 3: {
      omnibus::HfFolder files;
      files.sentencepiece_model = std::string(rest.begin(), rest.end());
      files.tokenizer = files.tokenizer_config = files.config = files.added_tokens = nlohmann::json::object();
      omnibus::GgufWriter w;
      if (omnibus::add_tokenizer_keys(files, "llama", 512, w).is_ok() && !w.build().is_ok()) __builtin_trap();
      return 0;
    }
    default: {
      omnibus::HfFolder files;
      files.tokenizer = nlohmann::json::parse(rest.begin(), rest.end(), nullptr, false);
      if (files.tokenizer.is_discarded() || !files.tokenizer.is_object()) return 0;
      files.tokenizer_config = nlohmann::json::object();
      files.config = nlohmann::json::object();
      omnibus::GgufWriter w;
      if (omnibus::add_tokenizer_keys(files, "qwen2", 512, w).is_ok() && !w.build().is_ok()) __builtin_trap();
      return 0;
    }
  }
}
