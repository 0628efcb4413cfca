// The stages of a transformer layer (model/block_spec.h) that both CPU
// schedules share: the per-head steps between the q/k/v projection and
// attention, the KV store, the rotation of the attention output and the
// gated activation. Each works on a slice of rows and heads (or columns),
// so the per-op schedule (forward.cpp) calls them over row ranges on the
// pool and the one-job decode step (forward_decode_step.cpp) over each
// thread's heads; an element's arithmetic is the same either way, which
// keeps the two schedules' logits bit-identical.
#include <algorithm>

#include "backends/cpu/forward.h"
#include "kernels/hadamard.h"
#include "kernels/kv_quant.h"
#include "kernels/ops.h"
#include "kernels/rope.h"
#include "tensor/quant.h"

namespace omnibus {

void ForwardPass::head_stage(BlockStage stage, const BlockSpec& block, int layer, std::span<const BatchRow> rows,
                             PagedKvStore& kv, const HeadSlice& s) {
  const ModelConfig& c = model_->config();
  const LayerWeights& l = model_->weights().layers[layer];
  const int64_t q_dim = c.q_dim(), kv_dim = c.kv_dim(), hd = c.head_dim;
  float* q = q_.data();
  float* k = k_.data();
  float* v = v_.data();
  switch (stage) {
    case BlockStage::kQkvBias:
      for (int64_t i = s.row_begin; i < s.row_end; ++i) {
        add_f32(l.bq + s.q_begin * hd, q + i * q_dim + s.q_begin * hd, (s.q_end - s.q_begin) * hd);
        add_f32(l.bk + s.kv_begin * hd, k + i * kv_dim + s.kv_begin * hd, (s.kv_end - s.kv_begin) * hd);
        add_f32(l.bv + s.kv_begin * hd, v + i * kv_dim + s.kv_begin * hd, (s.kv_end - s.kv_begin) * hd);
      }
      return;
    case BlockStage::kQkNorm:
      for (int64_t i = s.row_begin; i < s.row_end; ++i) {
        for (int h = s.q_begin; h < s.q_end; ++h) {
          float* head = q + i * q_dim + h * hd;
          rms_norm(kernels_, head, l.q_norm, head, hd, c.rms_eps);
        }
        for (int h = s.kv_begin; h < s.kv_end; ++h) {
          float* head = k + i * kv_dim + h * hd;
          rms_norm(kernels_, head, l.k_norm, head, hd, c.rms_eps);
        }
      }
      return;
    case BlockStage::kRope: {
      const int half = c.rope.rot_dims / 2 + 1;
      const int64_t set = rope_set_offset(block.window);
      for (int64_t i = s.row_begin; i < s.row_end; ++i) {
        const float* cos = rope_cos_.data() + set + i * half;
        const float* sin = rope_sin_.data() + set + i * half;
        apply_rope(*block.rope, cos, sin, q + i * q_dim + s.q_begin * hd, s.q_end - s.q_begin, c.head_dim);
        apply_rope(*block.rope, cos, sin, k + i * kv_dim + s.kv_begin * hd, s.kv_end - s.kv_begin, c.head_dim);
      }
      return;
    }
    case BlockStage::kRotateQkv: {
      // Blocks never cross a head (hadamard.h), so a head range rotates as
      // the whole row would.
      const int nk = hadamard_key_block(c.head_dim), nv = hadamard_value_block(c.head_dim);
      for (int64_t i = s.row_begin; i < s.row_end; ++i) {
        hadamard_blocks(kernels_, q + i * q_dim + s.q_begin * hd, (s.q_end - s.q_begin) * hd / nk, nk);
        hadamard_blocks(kernels_, k + i * kv_dim + s.kv_begin * hd, (s.kv_end - s.kv_begin) * hd / nk, nk);
        hadamard_blocks(kernels_, v + i * kv_dim + s.kv_begin * hd, (s.kv_end - s.kv_begin) * hd / nv, nv);
      }
      return;
    }
    case BlockStage::kKvStore:
      // Rows write distinct positions and heads distinct bytes, so slices
      // never write the same bytes.
      store_kv_rows(layer, rows, kv, s.row_begin, s.row_end, s.kv_begin, s.kv_end);
      return;
    default: return;  // not a head stage (is_head_stage)
  }
}

void ForwardPass::store_kv_rows(int layer, std::span<const BatchRow> rows, PagedKvStore& kv, int64_t begin, int64_t end,
                                int head_begin, int head_end) {
  const ModelConfig& c = model_->config();
  const int bs = kv.block_size();
  for (int64_t i = begin; i < end; ++i) {
    const int block = layer_block_table(rows[i], layer, kv)[rows[i].pos / bs];
    const int offset = rows[i].pos % bs;
    if (kv.type() == KvCacheType::kQ8_0) {
      // K's codes transposed (one element per dimension row of the block),
      // V's in order; both K's and V's scales one per group row.
      for (int h = head_begin; h < head_end; ++h) {
        const int64_t from = i * c.kv_dim() + static_cast<int64_t>(h) * c.head_dim;
        quantize_kv_q8(kernels_, k_.data() + from, c.head_dim,
                       kv.key_codes_at(layer, block, offset) + h * kv.head_stride(layer), kv.key_dim_stride(),
                       kv.key_scales_at(layer, block, offset) + h * kv.scale_head_stride(layer), kv.key_dim_stride());
        quantize_kv_q8(kernels_, v_.data() + from, c.head_dim,
                       kv.value_codes_at(layer, block, offset) + h * kv.head_stride(layer), 1,
                       kv.value_scales_at(layer, block, offset) + h * kv.scale_head_stride(layer), kv.key_dim_stride());
      }
      continue;
    }
    if (kv.type() == KvCacheType::kQ4_0) {
      // Codes one per byte on the stack, then packed into the two layouts;
      // scales as q8_0's.
      uint8_t codes[kMaxHeadDim];
      for (int h = head_begin; h < head_end; ++h) {
        const int64_t from = i * c.kv_dim() + static_cast<int64_t>(h) * c.head_dim;
        const int64_t bytes = static_cast<int64_t>(h) * (kv.head_stride(layer) / 2);
        quantize_kv_q4(k_.data() + from, c.head_dim, codes,
                       kv.key_scales_at(layer, block, offset) + h * kv.scale_head_stride(layer), kv.key_dim_stride());
        pack_key_q4(codes, c.head_dim, kv.key_octet_stride(), kv.key_q4_at(layer, block, offset) + bytes);
        quantize_kv_q4(v_.data() + from, c.head_dim, codes,
                       kv.value_scales_at(layer, block, offset) + h * kv.scale_head_stride(layer), kv.key_dim_stride());
        pack_value_q4(codes, c.head_dim, kv.value_q4_at(layer, block, offset) + bytes);
      }
      continue;
    }
    uint16_t* key = kv.key_at(layer, block, offset);
    uint16_t* value = kv.value_at(layer, block, offset);
    // f16 or bf16 (both round to nearest even).
    auto to_16bit = [bf16 = kv.type() == KvCacheType::kBF16, &table = kernels_](const float* x, uint16_t* y,
                                                                                int64_t n) {
      if (!bf16) return f32_to_f16_row(table, x, y, n);
      for (int64_t d = 0; d < n; ++d) y[d] = f32_to_bf16(x[d]);
    };
    for (int h = head_begin; h < head_end; ++h) {
      const int64_t from = i * c.kv_dim() + static_cast<int64_t>(h) * c.head_dim;
      // K is stored transposed: one element per dimension row of the block,
      // converted a chunk at a time (a stack buffer per thread).
      uint16_t* key_head = key + h * kv.head_stride(layer);
      constexpr int kChunk = 64;
      uint16_t key_half[kChunk];
      for (int d0 = 0; d0 < c.head_dim; d0 += kChunk) {
        const int m = std::min(kChunk, c.head_dim - d0);
        to_16bit(k_.data() + from + d0, key_half, m);
        for (int d = 0; d < m; ++d) key_head[(d0 + d) * kv.key_dim_stride()] = key_half[d];
      }
      to_16bit(v_.data() + from, value + h * kv.head_stride(layer), c.head_dim);
    }
  }
}

void ForwardPass::rotate_output_back(float* attn_rows, int64_t count) const {
  const ModelConfig& c = model_->config();
  const int nv = hadamard_value_block(c.head_dim);
  hadamard_blocks(kernels_, attn_rows, count * c.q_dim() / nv, nv);
}

void ForwardPass::activate(const BlockSpec& block, int64_t row_begin, int64_t row_end, int64_t col_begin,
                           int64_t col_end) {
  const int64_t n_ff = model_->config().n_ff;
  auto gated = [act = block.activation, &table = kernels_](float* gate, const float* up, int64_t n) {
    if (act == FfnActivation::kGeluTanh) return geglu(table, gate, up, n);
    if (act == FfnActivation::kSwigluOai) return swiglu_oai(gate, up, n);
    swiglu(table, gate, up, n);
  };
  if (col_begin == 0 && col_end == n_ff) {
    // Whole rows lie one after another: one call over all of them.
    gated(gate_.data() + row_begin * n_ff, up_.data() + row_begin * n_ff, (row_end - row_begin) * n_ff);
    return;
  }
  for (int64_t i = row_begin; i < row_end; ++i)
    gated(gate_.data() + i * n_ff + col_begin, up_.data() + i * n_ff + col_begin, col_end - col_begin);
}

}  // namespace omnibus
