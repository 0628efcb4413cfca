#include "backends/cuda/cuda_weights.h"

#include "kernels/weight_interleave.h"
#include "tensor/dtype.h"

namespace omnibus {
namespace {

std::string layer_name(int layer, const char* tensor) { return "blk." + std::to_string(layer) + "." + tensor; }

}  // namespace

std::string CudaWeights::unsupported_matrices(const Model& model) {
  std::string missing;
  auto check = [&missing](const WeightMatrix& w, const std::string& name) {
    if (cuda::weight_type_supported(static_cast<int>(w.dtype))) return;
    if (!missing.empty()) missing += ", ";
    missing += name + ": " + dtype_name(w.dtype);
  };
  const ModelWeights& mw = model.weights();
  check(mw.token_embd, "token_embd");
  check(mw.output, "output");
  static constexpr const char* kNames[7] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                            "ffn_gate", "ffn_up", "ffn_down"};
  for (size_t layer = 0; layer < mw.layers.size(); ++layer) {
    const auto matrices = mw.layers[layer].matrices();
    for (size_t m = 0; m < matrices.size(); ++m) check(*matrices[m], layer_name(static_cast<int>(layer), kNames[m]));
  }
  return missing;
}

Result<cuda::DeviceMatrix> CudaWeights::matrix(const WeightMatrix& w, const std::string& name) {
  for (const auto& [host, device] : uploaded_)
    if (host == w.data) return device;
  const size_t bytes = static_cast<size_t>(w.rows) * w.row_bytes;
  OMNIBUS_ASSIGN_OR_RETURN(cuda::DeviceBuffer buffer, cuda::DeviceBuffer::allocate(bytes, name));
  if (w.layout == WeightLayout::kRows) {
    OMNIBUS_CUDA_RETURN_IF_ERROR(cudaMemcpy(buffer.as<void>(), w.data, bytes, cudaMemcpyHostToDevice),
                                 "uploading " + name);
  } else {
    // Repacked for the CPU's int8 kernels: back to GGUF's rows first.
    std::vector<uint8_t> rows(bytes);
    for (int64_t o = 0; o < w.rows; ++o) gather_row_blocks(w, o, rows.data() + static_cast<size_t>(o) * w.row_bytes);
    OMNIBUS_CUDA_RETURN_IF_ERROR(cudaMemcpy(buffer.as<void>(), rows.data(), bytes, cudaMemcpyHostToDevice),
                                 "uploading " + name);
  }
  const cuda::DeviceMatrix device{.type = static_cast<int>(w.dtype),
                                  .data = buffer.as<const uint8_t>(),
                                  .rows = w.rows,
                                  .cols = w.cols,
                                  .row_bytes = static_cast<int64_t>(w.row_bytes)};
  buffers_.push_back(std::move(buffer));
  uploaded_.emplace_back(w.data, device);
  bytes_ += bytes;
  return device;
}

Result<const float*> CudaWeights::vector(const float* v, int64_t n, const std::string& name) {
  if (v == nullptr) return static_cast<const float*>(nullptr);
  const size_t bytes = static_cast<size_t>(n) * sizeof(float);
  OMNIBUS_ASSIGN_OR_RETURN(cuda::DeviceBuffer buffer, cuda::DeviceBuffer::allocate(bytes, name));
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaMemcpy(buffer.as<void>(), v, bytes, cudaMemcpyHostToDevice), "uploading " + name);
  const float* device = buffer.as<const float>();
  buffers_.push_back(std::move(buffer));
  bytes_ += bytes;
  return device;
}

Result<std::unique_ptr<CudaWeights>> CudaWeights::upload(const Model& model) {
  const ModelConfig& c = model.config();
  const ModelWeights& mw = model.weights();
  std::unique_ptr<CudaWeights> out(new CudaWeights());
  OMNIBUS_ASSIGN_OR_RETURN(out->token_embd, out->matrix(mw.token_embd, "token_embd"));
  OMNIBUS_ASSIGN_OR_RETURN(out->output, out->matrix(mw.output, "output"));
  OMNIBUS_ASSIGN_OR_RETURN(out->output_norm, out->vector(mw.output_norm, c.n_embd, "output_norm"));
  for (int i = 0; i < c.n_layer; ++i) {
    const LayerWeights& l = mw.layers[static_cast<size_t>(i)];
    CudaLayerWeights d;
    OMNIBUS_ASSIGN_OR_RETURN(d.wq, out->matrix(l.wq, layer_name(i, "attn_q")));
    OMNIBUS_ASSIGN_OR_RETURN(d.wk, out->matrix(l.wk, layer_name(i, "attn_k")));
    OMNIBUS_ASSIGN_OR_RETURN(d.wv, out->matrix(l.wv, layer_name(i, "attn_v")));
    OMNIBUS_ASSIGN_OR_RETURN(d.wo, out->matrix(l.wo, layer_name(i, "attn_output")));
    OMNIBUS_ASSIGN_OR_RETURN(d.w_gate, out->matrix(l.w_gate, layer_name(i, "ffn_gate")));
    OMNIBUS_ASSIGN_OR_RETURN(d.w_up, out->matrix(l.w_up, layer_name(i, "ffn_up")));
    OMNIBUS_ASSIGN_OR_RETURN(d.w_down, out->matrix(l.w_down, layer_name(i, "ffn_down")));
    OMNIBUS_ASSIGN_OR_RETURN(d.attn_norm, out->vector(l.attn_norm, c.n_embd, layer_name(i, "attn_norm")));
    OMNIBUS_ASSIGN_OR_RETURN(d.ffn_norm, out->vector(l.ffn_norm, c.n_embd, layer_name(i, "ffn_norm")));
    OMNIBUS_ASSIGN_OR_RETURN(d.bq, out->vector(l.bq, c.q_dim(), layer_name(i, "attn_q.bias")));
    OMNIBUS_ASSIGN_OR_RETURN(d.bk, out->vector(l.bk, c.kv_dim(), layer_name(i, "attn_k.bias")));
    OMNIBUS_ASSIGN_OR_RETURN(d.bv, out->vector(l.bv, c.kv_dim(), layer_name(i, "attn_v.bias")));
    OMNIBUS_ASSIGN_OR_RETURN(d.q_norm, out->vector(l.q_norm, c.head_dim, layer_name(i, "attn_q_norm")));
    OMNIBUS_ASSIGN_OR_RETURN(d.k_norm, out->vector(l.k_norm, c.head_dim, layer_name(i, "attn_k_norm")));
    OMNIBUS_ASSIGN_OR_RETURN(d.post_attn_norm,
                             out->vector(l.post_attn_norm, c.n_embd, layer_name(i, "post_attention_norm")));
    OMNIBUS_ASSIGN_OR_RETURN(d.post_ffn_norm, out->vector(l.post_ffn_norm, c.n_embd, layer_name(i, "post_ffw_norm")));
    out->layers.push_back(d);
  }
  return out;
}

}  // namespace omnibus
