#include "convert/hf_to_gguf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "convert/element_convert.h"
#include "convert/gpt_oss_experts.h"
#include "convert/hf_tensor_names.h"
#include "convert/hf_tokenizer.h"
#include "tensor/quant.h"

namespace omnibus {
namespace {

// general.file_type (llama.cpp's LLAMA_FTYPE_*): of an all-float file, or
// MOSTLY_MXFP4_MOE where experts stay MXFP4.
uint32_t file_type(DType matrices, bool mxfp4_experts) {
  if (mxfp4_experts) return 38;
  switch (matrices) {
    case DType::kF32: return 0;
    case DType::kF16: return 1;
    default: return 32;  // BF16
  }
}

struct PlannedTensor {
  // One source, or one per expert (in expert order) stacked into one tensor.
  std::vector<const SafetensorsTensor*> sources;
  GgufTensorName gguf;
  std::vector<int64_t> dims;  // ggml order
  DType dtype;
  // Set where the bytes come from several sources in another layout
  // (gpt-oss's expert stacks): writes them, `sources` unused.
  std::function<void(std::span<uint8_t>)> fill = nullptr;
};

// Each expert's bytes, converted, one after the other; a single source is
// converted, and permuted where llama's Q/K rows need it.
Status fill_tensor(const PlannedTensor& t, std::span<uint8_t> out) {
  if (t.fill) {
    t.fill(out);
    return Status::ok();
  }
  const size_t per_source = out.size() / t.sources.size();
  const size_t out_bytes = float_dtype_bytes(t.dtype);
  for (const SafetensorsTensor* source : t.sources)  // what plan() checked; a slip here would write out of bounds
    if (static_cast<size_t>(source->elements()) * out_bytes != per_source)
      return Status::internal(t.gguf.name + ": a source's size does not match its slice of the tensor");
  if (t.gguf.permute_heads == 0) {
    for (size_t i = 0; i < t.sources.size(); ++i)
      convert_elements(t.sources[i]->bytes, t.sources[i]->dtype, out.subspan(i * per_source, per_source), t.dtype,
                       t.gguf.shift);
    return Status::ok();
  }
  const SafetensorsTensor& source = *t.sources[0];
  std::vector<uint8_t> converted(out.size());
  convert_elements(source.bytes, source.dtype, converted, t.dtype);
  permute_rope_rows(converted, out, t.gguf.permute_heads, out.size() / static_cast<size_t>(source.shape[0]));
  return Status::ok();
}

// The experts of one GGUF tensor: every one there, all of one shape and dtype.
Status check_experts(const PlannedTensor& t, int n_expert) {
  for (int e = 0; e < n_expert; ++e) {
    if (t.sources[e] == nullptr)
      return Status::corrupt(t.gguf.name + ": the checkpoint has no tensor of expert " + std::to_string(e));
    if (t.sources[e]->shape != t.sources[0]->shape || t.sources[e]->dtype != t.sources[0]->dtype)
      return Status::corrupt(t.gguf.name + ": expert " + std::to_string(e) + " differs from expert 0 in shape or type");
  }
  return Status::ok();
}

// The shape config.json gives each tensor (ggml order: columns first), so
// that a config that disagrees with its checkpoint is refused here, naming
// both, rather than written into a file the loader refuses.
std::optional<std::vector<int64_t>> expected_dims(const std::string& gguf_name, const HfModelConfig& c) {
  using Dims = std::vector<int64_t>;
  const int64_t embd = c.n_embd, q = int64_t{c.n_head} * c.head_dim, kv = int64_t{c.n_head_kv} * c.head_dim;
  const int64_t experts = c.n_expert, expert_ff = c.n_ff_expert, shared_ff = c.n_ff_shared_expert;
  if (gguf_name == "token_embd.weight" || gguf_name == "output.weight") return Dims{embd, c.vocab_size};
  if (gguf_name == "output_norm.weight") return Dims{embd};
  const size_t dot = gguf_name.find('.', 4);  // after "blk.N"
  if (!gguf_name.starts_with("blk.") || dot == std::string::npos) return std::nullopt;
  const std::string kind = gguf_name.substr(dot + 1);
  const bool phi3 = c.gguf_arch == "phi3";
  if (kind == "attn_q.weight") return Dims{embd, q};
  if (kind == "attn_k.weight" || kind == "attn_v.weight") return Dims{embd, kv};
  if (kind == "attn_qkv.weight") return Dims{embd, q + 2 * kv};
  if (kind == "attn_output.weight") return Dims{q, embd};
  if (kind == "attn_q.bias") return Dims{q};
  if (kind == "attn_k.bias" || kind == "attn_v.bias") return Dims{kv};
  if (kind == "attn_output.bias") return Dims{embd};
  if (kind == "attn_sinks.weight") return Dims{c.n_head};
  if (kind == "attn_q_norm.weight" || kind == "attn_k_norm.weight") return Dims{c.head_dim};
  if (kind == "attn_norm.weight" || kind == "ffn_norm.weight" || kind == "post_attention_norm.weight" ||
      kind == "post_ffw_norm.weight")
    return Dims{embd};
  if (c.n_expert > 0) {
    if (kind == "ffn_gate_inp.weight") return Dims{embd, experts};
    if (kind == "ffn_gate_inp.bias") return Dims{experts};
    if (kind == "ffn_gate_exps.weight" || kind == "ffn_up_exps.weight") return Dims{embd, expert_ff, experts};
    if (kind == "ffn_down_exps.weight") return Dims{expert_ff, embd, experts};
    if (kind == "ffn_gate_exps.bias" || kind == "ffn_up_exps.bias") return Dims{expert_ff, experts};
    if (kind == "ffn_down_exps.bias") return Dims{embd, experts};
    if (kind == "ffn_gate_shexp.weight" || kind == "ffn_up_shexp.weight") return Dims{embd, shared_ff};
    if (kind == "ffn_down_shexp.weight") return Dims{shared_ff, embd};
    if (kind == "ffn_gate_inp_shexp.weight") return Dims{embd, 1};
    return std::nullopt;
  }
  if (kind == "ffn_gate.weight") return Dims{embd, c.n_ff};
  if (kind == "ffn_up.weight") return Dims{embd, phi3 ? 2 * int64_t{c.n_ff} : c.n_ff};
  if (kind == "ffn_down.weight") return Dims{c.n_ff, embd};
  return std::nullopt;
}

// What every layer must hold for the GGUF architecture to load (what
// model.cpp binds), by kind: a checkpoint without one is refused by name
// before anything is written.
std::vector<std::string> required_layer_tensors(const HfModelConfig& c) {
  const std::string& a = c.gguf_arch;
  std::vector<std::string> kinds = {"attn_norm.weight", "attn_output.weight"};
  auto add = [&kinds](std::initializer_list<const char*> more) { kinds.insert(kinds.end(), more.begin(), more.end()); };
  if (a == "phi3")
    add({"attn_qkv.weight"});
  else
    add({"attn_q.weight", "attn_k.weight", "attn_v.weight"});
  if (c.attention_bias) add({"attn_q.bias", "attn_k.bias", "attn_v.bias"});
  if (a == "qwen3" || a == "qwen3moe" || a == "gemma3") add({"attn_q_norm.weight", "attn_k_norm.weight"});
  if (a == "gemma3")
    add({"ffn_norm.weight", "post_attention_norm.weight", "post_ffw_norm.weight"});
  else if (a == "gpt-oss")
    add({"post_attention_norm.weight", "attn_output.bias", "attn_sinks.weight", "ffn_gate_inp.bias"});
  else
    add({"ffn_norm.weight"});
  if (c.n_expert > 0) {
    add({"ffn_gate_inp.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"});
    if (c.n_ff_shared_expert > 0)
      add({"ffn_gate_shexp.weight", "ffn_up_shexp.weight", "ffn_down_shexp.weight", "ffn_gate_inp_shexp.weight"});
  } else if (a == "phi3") {
    add({"ffn_up.weight", "ffn_down.weight"});
  } else {
    add({"ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"});
  }
  return kinds;
}

// token_embd and rope_freqs, then the blocks in order, then output_norm and output.
auto file_order(const PlannedTensor& t) {
  const int group = t.gguf.layer >= 0 ? 1 : (t.gguf.name.starts_with("output") ? 2 : 0);
  return std::make_tuple(group, t.gguf.layer, t.gguf.name);
}

}  // namespace

std::string checkpoint_name(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "dir/" normalises to a trailing separator
  const std::string name = p.filename().string();
  return name.empty() ? "model" : name;
}

void permute_rope_rows(std::span<const uint8_t> src, std::span<uint8_t> dst, int heads, size_t row_bytes) {
  const size_t rows = src.size() / row_bytes, per_head = rows / heads, half = per_head / 2;
  for (size_t h = 0; h < static_cast<size_t>(heads); ++h)
    for (size_t i = 0; i < half; ++i)
      for (size_t j = 0; j < 2; ++j)
        std::memcpy(dst.data() + (h * per_head + 2 * i + j) * row_bytes,
                    src.data() + (h * per_head + j * half + i) * row_bytes, row_bytes);
}

Result<std::unique_ptr<HfConversion>> HfConversion::plan(const std::string& dir, const ConvertOptions& options) {
  if (options.matrix_type != DType::kF16 && options.matrix_type != DType::kBF16 && options.matrix_type != DType::kF32)
    return Status::invalid_argument("convert writes f16, bf16 or f32 matrices, not " + dtype_name(options.matrix_type) +
                                    " (quantize the converted file)");
  auto conv = std::unique_ptr<HfConversion>(new HfConversion());
  conv->dir_ = dir;
  OMNIBUS_ASSIGN_OR_RETURN(const HfFolder folder, read_hf_folder(dir));
  OMNIBUS_ASSIGN_OR_RETURN(conv->config_, parse_hf_config(folder.config));
  const HfModelConfig& c = conv->config_;
  GgufWriter& w = conv->writer_;
  add_model_keys(c, w);
  w.set_string("general.name", options.name.empty() ? checkpoint_name(dir) : options.name);
  OMNIBUS_RETURN_IF_ERROR(add_tokenizer_keys(folder, c.gguf_arch, c.vocab_size, w).with_context("tokenizer"));
  OMNIBUS_ASSIGN_OR_RETURN(conv->checkpoint_, HfCheckpoint::open(dir));

  std::vector<PlannedTensor> planned;
  std::map<std::string, PlannedTensor> expert_groups;  // by GGUF name
  // gpt-oss: each layer's fused expert tensors by part name (gpt_oss_experts.h).
  std::vector<std::map<std::string, const SafetensorsTensor*>> fused_experts(c.n_layer);
  for (const auto& [hf_name, source] : conv->checkpoint_.tensors()) {
    OMNIBUS_ASSIGN_OR_RETURN(const std::optional<GgufTensorName> gguf, gguf_tensor_name(hf_name, c));
    if (!gguf) continue;
    if (!gguf->expert_part.empty()) {
      fused_experts[gguf->layer][gguf->expert_part] = source;
      continue;
    }
    if (source->dtype == SafetensorsDType::kU8)
      return Status::unsupported("tensor '" + hf_name +
                                 "' holds bytes (U8): of those, only gpt-oss's MXFP4 expert blocks and scales convert");
    if (source->shape.empty() || source->shape.size() > 2 || source->elements() == 0)
      return Status::unsupported("tensor '" + hf_name + "' has " + std::to_string(source->shape.size()) +
                                 " dimensions or no elements; matrices and vectors convert");
    // F32 as llama.cpp keeps them: vectors, routers, and whatever is not named .weight.
    const DType dtype =
        source->shape.size() == 1 || gguf->f32 || !gguf->name.ends_with(".weight") ? DType::kF32 : options.matrix_type;
    if (gguf->expert >= 0) {
      PlannedTensor& group = expert_groups[gguf->name];
      if (group.sources.empty()) group = {std::vector<const SafetensorsTensor*>(c.n_expert), *gguf, {}, dtype};
      if (group.sources[gguf->expert] != nullptr)
        return Status::corrupt("tensor '" + hf_name + "': expert " + std::to_string(gguf->expert) + " of " +
                               gguf->name + " is in the checkpoint twice");
      group.sources[gguf->expert] = source;
      continue;
    }
    if (gguf->permute_heads > 0 && source->shape[0] % (2 * gguf->permute_heads) != 0)
      return Status::corrupt("tensor '" + hf_name + "' has " + std::to_string(source->shape[0]) +
                             " rows, not an even number per each of " + std::to_string(gguf->permute_heads) + " heads");
    planned.push_back({{source}, *gguf, {source->shape.rbegin(), source->shape.rend()}, dtype});
  }
  for (auto& [name, group] : expert_groups) {
    OMNIBUS_RETURN_IF_ERROR(check_experts(group, c.n_expert));
    const auto& shape = group.sources[0]->shape;
    group.dims.assign(shape.rbegin(), shape.rend());
    group.dims.push_back(c.n_expert);
    planned.push_back(std::move(group));
  }
  bool mxfp4_experts = false;
  if (c.gguf_arch == "gpt-oss") {
    for (int layer = 0; layer < c.n_layer; ++layer) {
      OMNIBUS_ASSIGN_OR_RETURN(auto stacks, plan_gpt_oss_experts(layer, fused_experts[layer], c, options.matrix_type));
      for (ExpertStackTensor& t : stacks) {
        mxfp4_experts |= t.dtype == DType::kMXFP4;
        GgufTensorName name{t.name, layer};
        planned.push_back({{}, std::move(name), std::move(t.dims), t.dtype, std::move(t.fill)});
      }
    }
  }
  w.set_uint32("general.file_type", file_type(options.matrix_type, mxfp4_experts));
  std::vector<bool> layer_seen(c.n_layer, false);
  std::set<std::string> names;
  for (const PlannedTensor& t : planned) {
    if (t.gguf.layer >= 0) layer_seen[t.gguf.layer] = true;
    names.insert(t.gguf.name);
    const auto want = expected_dims(t.gguf.name, c);
    if (want && *want != t.dims)
      return Status::corrupt(t.gguf.name + " is " + shape_text(t.dims) +
                             " in the checkpoint, but config.json makes it " + shape_text(*want) + " (columns first)");
  }
  for (int layer = 0; layer < c.n_layer; ++layer)
    if (!layer_seen[layer])
      return Status::corrupt("config.json has " + std::to_string(c.n_layer) +
                             " layers, but the checkpoint has no tensors of layer " + std::to_string(layer));
  const std::vector<std::string> required = required_layer_tensors(c);
  for (int layer = 0; layer < c.n_layer; ++layer)
    for (const std::string& kind : required)
      if (!names.count("blk." + std::to_string(layer) + "." + kind))
        return Status::corrupt("the checkpoint has no blk." + std::to_string(layer) + "." + kind + " (a tensor every " +
                               c.gguf_arch + " layer needs)");
  for (const char* global : {"token_embd.weight", "output_norm.weight"})
    if (!names.count(global)) return Status::corrupt(std::string("the checkpoint has no ") + global);
  if (!c.tied_embeddings && !names.count("output.weight"))
    return Status::corrupt(
        "config.json says the embeddings are not tied (tie_word_embeddings), but the checkpoint has no "
        "lm_head.weight");
  std::sort(planned.begin(), planned.end(),
            [](const PlannedTensor& a, const PlannedTensor& b) { return file_order(a) < file_order(b); });
  // Tensors the config makes: llama3's rope_freqs, phi3's longrope factors.
  int made = 0;
  for (const auto& [name, values] :
       {std::pair{"rope_freqs.weight", &c.rope_freqs}, std::pair{"rope_factors_long.weight", &c.rope_factors_long},
        std::pair{"rope_factors_short.weight", &c.rope_factors_short}}) {
    if (values->empty()) continue;
    OMNIBUS_RETURN_IF_ERROR(
        conv->writer_.add_tensor(name, {static_cast<int64_t>(values->size())}, DType::kF32,
                                 {reinterpret_cast<const uint8_t*>(values->data()), values->size() * sizeof(float)}));
    ++made;
  }
  const int count = static_cast<int>(planned.size());
  for (int index = 0; index < count; ++index) {
    const PlannedTensor& t = planned[index];
    auto fill = [t, index, count, on_tensor = options.on_tensor](std::span<uint8_t> out) {
      if (on_tensor) on_tensor(index, count, t.gguf.name);
      return fill_tensor(t, out);
    };
    OMNIBUS_RETURN_IF_ERROR(conv->writer_.add_tensor_filled(t.gguf.name, t.dims, t.dtype, std::move(fill)));
  }
  conv->tensor_count_ = count + made;
  return conv;
}

Status HfConversion::write(const std::string& path) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty() || fs::path(path).filename().empty())
    return Status::invalid_argument("'" + path + "' names no file");
  const auto type = fs::status(path, ec).type();
  if (type != fs::file_type::not_found && type != fs::file_type::regular)
    return Status::invalid_argument("'" + path + "' exists and is not a regular file");
  if (type == fs::file_type::regular) {  // never over the checkpoint's own files
    for (const char* name : kHfFolderFiles)
      if (fs::exists(fs::path(dir_) / name, ec) && fs::equivalent(path, fs::path(dir_) / name, ec))
        return Status::invalid_argument("'" + path + "' is the checkpoint's own " + name);
    for (const std::string& source : checkpoint_.paths())
      if (fs::equivalent(path, source, ec))
        return Status::invalid_argument("'" + path + "' is a file of the checkpoint");
  }
  const std::string partial = path + ".partial";
  if (Status s = writer_.write(partial); !s) {
    std::remove(partial.c_str());
    return s;
  }
  std::filesystem::rename(partial, path, ec);
  if (ec) return Status::io_error("cannot rename '" + partial + "' to '" + path + "': " + ec.message());
  return Status::ok();
}

}  // namespace omnibus
