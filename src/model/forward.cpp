#include "model/forward.h"

#include <cmath>
#include <cstring>

#include "kernels/attention.h"
#include "kernels/ops.h"
#include "tensor/quant.h"

namespace omnibus {

ForwardPass::ForwardPass(std::shared_ptr<const Model> model, int max_batch, int64_t max_positions, int threads)
    : model_(std::move(model)), max_batch_(max_batch), pool_(threads) {
  const ModelConfig& c = model_->config();
  const size_t b = static_cast<size_t>(max_batch);
  x_.resize(b * c.n_embd);
  xn_.resize(b * c.n_embd);
  q_.resize(b * c.q_dim());
  k_.resize(b * c.kv_dim());
  v_.resize(b * c.kv_dim());
  attn_.resize(b * c.q_dim());
  proj_.resize(b * c.n_embd);
  gate_.resize(b * c.n_ff);
  up_.resize(b * c.n_ff);
  rope_cos_.resize(b * (c.rope.rot_dims / 2 + 1));
  rope_sin_.resize(b * (c.rope.rot_dims / 2 + 1));
  scores_stride_ = (max_positions + 15) / 16 * 16;
  scores_.resize(static_cast<size_t>(pool_.size()) * scores_stride_);
}

Status ForwardPass::check(std::span<const BatchRow> rows, const KvCache& kv) const {
  if (rows.size() > static_cast<size_t>(max_batch_))
    return Status::invalid_argument("batch of " + std::to_string(rows.size()) + " rows exceeds max " +
                                    std::to_string(max_batch_));
  const int vocab = model_->config().vocab_size;
  for (const BatchRow& r : rows) {
    if (r.token < 0 || r.token >= vocab)
      return Status::invalid_argument("token id " + std::to_string(r.token) + " is outside the vocabulary [0, " +
                                      std::to_string(vocab) + ")");
    if (r.slot < 0 || r.slot >= kv.slots()) return Status::invalid_argument("bad KV slot " + std::to_string(r.slot));
    if (r.pos < 0 || r.pos >= kv.max_positions() || r.pos >= scores_stride_)
      return Status::out_of_range("position " + std::to_string(r.pos) + " is past the context of " +
                                  std::to_string(kv.max_positions()));
  }
  return Status::ok();
}

void ForwardPass::project(const WeightMatrix& w, const float* x, int n, float* y) {
  matmul(w, x, n, y, &pool_);
}

void ForwardPass::embed(std::span<const BatchRow> rows) {
  const ModelConfig& c = model_->config();
  const WeightMatrix& e = model_->weights().token_embd;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto* row = static_cast<const uint8_t*>(e.data) + static_cast<size_t>(rows[i].token) * e.row_bytes;
    dequantize_row_ref(e.dtype, row, x_.data() + i * c.n_embd, c.n_embd);
  }
}

void ForwardPass::attention_block(int layer, std::span<const BatchRow> rows, KvCache& kv) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  const int n = static_cast<int>(rows.size());
  for (int i = 0; i < n; ++i) rms_norm(x_.data() + i * c.n_embd, l.attn_norm, xn_.data() + i * c.n_embd, c.n_embd, c.rms_eps);
  project(l.wq, xn_.data(), n, q_.data());
  project(l.wk, xn_.data(), n, k_.data());
  project(l.wv, xn_.data(), n, v_.data());
  const int half = c.rope.rot_dims / 2 + 1;
  for (int i = 0; i < n; ++i) {
    float* q = q_.data() + static_cast<int64_t>(i) * c.q_dim();
    float* k = k_.data() + static_cast<int64_t>(i) * c.kv_dim();
    float* v = v_.data() + static_cast<int64_t>(i) * c.kv_dim();
    if (l.bq != nullptr) {
      add_f32(l.bq, q, c.q_dim());
      add_f32(l.bk, k, c.kv_dim());
      add_f32(l.bv, v, c.kv_dim());
    }
    apply_rope(c.rope, rope_cos_.data() + i * half, rope_sin_.data() + i * half, q, c.n_head, c.head_dim);
    apply_rope(c.rope, rope_cos_.data() + i * half, rope_sin_.data() + i * half, k, c.n_head_kv, c.head_dim);
    std::memcpy(kv.key_row(rows[i].slot, layer, rows[i].pos), k, sizeof(float) * c.kv_dim());
    std::memcpy(kv.value_row(rows[i].slot, layer, rows[i].pos), v, sizeof(float) * c.kv_dim());
  }
  const AttentionShape shape{c.n_head, c.n_head_kv, c.head_dim, 1.0f / std::sqrt(static_cast<float>(c.head_dim))};
  // Work items are (row, head) pairs split evenly across threads; each item's
  // arithmetic is the same whichever thread runs it.
  const int64_t items = static_cast<int64_t>(n) * c.n_head;
  pool_.run([&](int t, int count) {
    float* scores = scores_.data() + t * scores_stride_;
    for (int64_t it = items * t / count; it < items * (t + 1) / count; ++it) {
      const int i = static_cast<int>(it / c.n_head);
      const int h = static_cast<int>(it % c.n_head);
      const BatchRow& r = rows[i];
      attention_row(shape, q_.data() + static_cast<int64_t>(i) * c.q_dim(), kv.key_row(r.slot, layer, 0),
                    kv.value_row(r.slot, layer, 0), kv.row_stride(), r.pos + 1, scores,
                    attn_.data() + static_cast<int64_t>(i) * c.q_dim(), h, h + 1);
    }
  });
  project(l.wo, attn_.data(), n, proj_.data());
  add_f32(proj_.data(), x_.data(), static_cast<int64_t>(n) * c.n_embd);
}

void ForwardPass::mlp_block(int layer, int n) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  for (int i = 0; i < n; ++i) rms_norm(x_.data() + i * c.n_embd, l.ffn_norm, xn_.data() + i * c.n_embd, c.n_embd, c.rms_eps);
  project(l.w_gate, xn_.data(), n, gate_.data());
  project(l.w_up, xn_.data(), n, up_.data());
  swiglu(gate_.data(), up_.data(), static_cast<int64_t>(n) * c.n_ff);
  project(l.w_down, gate_.data(), n, proj_.data());
  add_f32(proj_.data(), x_.data(), static_cast<int64_t>(n) * c.n_embd);
}

Status ForwardPass::run(std::span<const BatchRow> rows, KvCache& kv, float* logits) {
  OMNIBUS_RETURN_IF_ERROR(check(rows, kv));
  if (rows.empty()) return Status::ok();
  const ModelConfig& c = model_->config();
  const int n = static_cast<int>(rows.size());
  const int half = c.rope.rot_dims / 2 + 1;
  for (int i = 0; i < n; ++i) rope_angles(c.rope, rows[i].pos, rope_cos_.data() + i * half, rope_sin_.data() + i * half);
  embed(rows);
  for (int layer = 0; layer < c.n_layer; ++layer) {
    attention_block(layer, rows, kv);
    mlp_block(layer, n);
  }
  // Final norm only for the rows that want logits, packed together.
  int out = 0;
  for (int i = 0; i < n; ++i) {
    if (!rows[i].want_logits) continue;
    rms_norm(x_.data() + i * c.n_embd, model_->weights().output_norm, xn_.data() + out * c.n_embd, c.n_embd, c.rms_eps);
    ++out;
  }
  if (out > 0) project(model_->weights().output, xn_.data(), out, logits);
  return Status::ok();
}

}  // namespace omnibus
