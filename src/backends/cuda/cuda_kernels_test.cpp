// Every CUDA kernel against its CPU reference on random data of awkward
// sizes. Needs a GPU: each test skips without one, saying why.
//
// Tolerances, and why: the int8 activation bytes must equal the CPU's
// (quantize_x) exactly, so matmul differs from matmul_ref only in the order
// its floats are summed (bound: 1e-5 of sum |w x| per output). Norms, adds,
// RoPE and the embedding do the reference's float operations in its order
// (RoPE and the adds bit for bit; RMSNorm's double sum in another order:
// 1e-6 relative). The activations use the device's expf / tanhf (2 ulp
// documented; 1e-5 relative). Attention: the CPU rounds the softmax
// numerators to f16 (up to 2^-11 relative each), the device does not:
// 2e-3 of max |v|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "backends/cuda/cuda_kernels.h"
#include "backends/cuda/cuda_kv_cache.h"
#include "backends/cuda/cuda_test_util.h"
#include "kernels/attention.h"
#include "kernels/matmul_internal.h"
#include "kernels/ops.h"
#include "kernels/rope.h"

namespace omnibus::cuda {
namespace {

using testing::random_floats;
using testing::random_matrix;
using testing::to_device;
using testing::to_host;
using testing::zeros_on_device;

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override { OMNIBUS_SKIP_WITHOUT_CUDA_DEVICE(); }
};

DeviceMatrix on_device(const testing::HostMatrix& m, const DeviceBuffer& bytes) {
  return DeviceMatrix{.type = static_cast<int>(m.w.dtype),
                      .data = bytes.as<const uint8_t>(),
                      .rows = m.w.rows,
                      .cols = m.w.cols,
                      .row_bytes = static_cast<int64_t>(m.w.row_bytes)};
}

TEST_F(CudaKernelsTest, ActivationBytesMatchTheCpus) {
  for (const DType type : {DType::kQ8_0, DType::kQ4_K}) {
    const int block = activation_block(static_cast<int>(type));
    for (const int64_t n_x : {1, 7, 33}) {
      const int64_t cols = block == 256 ? 768 : 96;
      std::vector<float> x = random_floats(static_cast<size_t>(n_x * cols), 3);
      for (int64_t k = 0; k < cols; ++k) x[static_cast<size_t>(k)] = 0.0f;  // an all-zero block: scale 0
      matmul_detail::QuantizedX want;
      matmul_detail::quantize_x(type, x.data(), n_x, cols, &want);
      const DeviceBuffer dx = to_device(x);
      DeviceBuffer q = zeros_on_device<int8_t>(static_cast<size_t>(n_x * cols));
      DeviceBuffer s = zeros_on_device<float>(static_cast<size_t>(n_x * cols / block));
      quantize_activations(dx.as<float>(), n_x, cols, block, q.as<int8_t>(), s.as<float>(), nullptr);
      EXPECT_EQ(to_host<int8_t>(q, want.q.size()), want.q) << dtype_name(type) << " n_x " << n_x;
      EXPECT_EQ(to_host<float>(s, want.scale.size()), want.scale) << dtype_name(type) << " n_x " << n_x;
    }
  }
}

TEST_F(CudaKernelsTest, MatmulMatchesTheReferenceForEveryType) {
  for (const DType type : testing::kAllWeightTypes) {
    const bool k_type = testing::is_k_type(type);
    const int64_t rows = 37, cols = k_type ? 512 : 160;
    const testing::HostMatrix m = random_matrix(type, rows, cols, 100 + static_cast<uint32_t>(type));
    const DeviceBuffer w_bytes = to_device(m.bytes);
    const DeviceMatrix w = on_device(m, w_bytes);
    for (const int64_t n_x : {1, 7, 33}) {
      const std::vector<float> x = random_floats(static_cast<size_t>(n_x * cols), 9);
      std::vector<float> want(static_cast<size_t>(n_x * rows));
      matmul_ref(m.w, x.data(), n_x, want.data());
      const DeviceBuffer dx = to_device(x);
      DeviceBuffer q = zeros_on_device<int8_t>(x.size());
      DeviceBuffer s = zeros_on_device<float>(x.size() / 32);
      DeviceBuffer y = zeros_on_device<float>(want.size());
      const int block = activation_block(w.type);
      if (block != 0) quantize_activations(dx.as<float>(), n_x, cols, block, q.as<int8_t>(), s.as<float>(), nullptr);
      matmul(w, dx.as<float>(), q.as<int8_t>(), s.as<float>(), n_x, y.as<float>(), nullptr);
      const std::vector<float> got = to_host<float>(y, want.size());
      for (int64_t r = 0; r < n_x; ++r)
        for (int64_t o = 0; o < rows; ++o) {
          double bound = 0;
          for (int64_t k = 0; k < cols; ++k) bound += std::fabs(double{m.values[o * cols + k]} * x[r * cols + k]);
          ASSERT_NEAR(got[r * rows + o], want[r * rows + o], 1e-5 * bound + 1e-6)
              << dtype_name(type) << " n_x " << n_x << " row " << r << " output " << o;
        }
    }
  }
}

TEST_F(CudaKernelsTest, RmsNormMatchesTheReference) {
  const int64_t n_rows = 5, n = 577;
  const std::vector<float> x = random_floats(static_cast<size_t>(n_rows * n), 1, 3.0f);
  const std::vector<float> weight = random_floats(static_cast<size_t>(n), 2);
  const std::vector<int32_t> picked = {4, 1, 3};
  const DeviceBuffer dx = to_device(x), dw = to_device(weight), rows = to_device(picked);
  DeviceBuffer all = zeros_on_device<float>(x.size()), some = zeros_on_device<float>(picked.size() * n);
  rms_norm(dx.as<float>(), nullptr, dw.as<float>(), all.as<float>(), n_rows, n, 1e-6f, nullptr);
  rms_norm(dx.as<float>(), rows.as<int32_t>(), dw.as<float>(), some.as<float>(), 3, n, 1e-6f, nullptr);
  const std::vector<float> got_all = to_host<float>(all, x.size()), got_some = to_host<float>(some, picked.size() * n);
  std::vector<float> want(static_cast<size_t>(n));
  for (int64_t r = 0; r < n_rows; ++r) {
    ref::rms_norm(x.data() + r * n, weight.data(), want.data(), n, 1e-6f);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got_all[r * n + i], want[i], 1e-6f * std::fabs(want[i]) + 1e-7f);
  }
  for (size_t j = 0; j < picked.size(); ++j) {
    ref::rms_norm(x.data() + picked[j] * n, weight.data(), want.data(), n, 1e-6f);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(got_some[j * n + i], want[i], 1e-6f * std::fabs(want[i]) + 1e-7f);
  }
}

TEST_F(CudaKernelsTest, AddsAreExact) {
  const int64_t n_rows = 3, n = 333;
  const std::vector<float> x = random_floats(static_cast<size_t>(n_rows * n), 1);
  const std::vector<float> y = random_floats(x.size(), 2), bias = random_floats(static_cast<size_t>(n), 3);
  DeviceBuffer dx = to_device(x), dx2 = to_device(x);
  const DeviceBuffer dy = to_device(y), db = to_device(bias);
  add(dx.as<float>(), dy.as<float>(), n_rows * n, nullptr);
  add_bias(dx2.as<float>(), db.as<float>(), n_rows, n, nullptr);
  const std::vector<float> sum = to_host<float>(dx, x.size()), biased = to_host<float>(dx2, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(sum[i], x[i] + y[i]);
    ASSERT_EQ(biased[i], x[i] + bias[i % n]);
  }
}

TEST_F(CudaKernelsTest, GatedActivationsMatchTheReference) {
  for (const bool gelu : {false, true}) {
    const std::vector<float> gate = random_floats(4099, 1, 3.0f), up = random_floats(4099, 2);
    DeviceBuffer dg = to_device(gate);
    const DeviceBuffer du = to_device(up);
    gated_activation(dg.as<float>(), du.as<float>(), 4099, gelu, nullptr);
    const std::vector<float> got = to_host<float>(dg, gate.size());
    std::vector<float> want = gate;
    if (gelu) {
      ref::geglu(want.data(), up.data(), 4099);
    } else {
      ref::swiglu(want.data(), up.data(), 4099);
    }
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-5f * std::fabs(want[i]) + 1e-6f) << (gelu ? "geglu " : "swiglu ") << i;
  }
}

TEST_F(CudaKernelsTest, RopeMatchesTheReference) {
  const int n_rows = 3, n_heads = 3, head_dim = 64, max_pos = 50;
  const std::vector<int32_t> positions = {0, 17, 49};
  for (const RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
    for (const int rot_dims : {64, 32}) {  // whole heads, and a partial rotation
      const RopeParams p{
          .style = style, .rot_dims = rot_dims, .freq_base = 10000.0f, .freq_scale = 1.0f, .freq_factors = {}};
      const int pairs = rot_dims / 2;
      std::vector<float> cos(static_cast<size_t>(max_pos * pairs)), sin(cos.size());
      for (int pos = 0; pos < max_pos; ++pos) rope_angles(p, pos, cos.data() + pos * pairs, sin.data() + pos * pairs);
      const std::vector<float> x = random_floats(static_cast<size_t>(n_rows * n_heads * head_dim), 4);
      DeviceBuffer dx = to_device(x);
      const DeviceBuffer dp = to_device(positions), dc = to_device(cos), ds = to_device(sin);
      rope(dx.as<float>(), n_rows, n_heads, head_dim, rot_dims, style == RopeStyle::kNeox, dp.as<int32_t>(),
           dc.as<float>(), ds.as<float>(), nullptr);
      const std::vector<float> got = to_host<float>(dx, x.size());
      std::vector<float> want = x;
      for (int r = 0; r < n_rows; ++r)
        apply_rope(p, cos.data() + positions[r] * pairs, sin.data() + positions[r] * pairs,
                   want.data() + r * n_heads * head_dim, n_heads, head_dim);
      for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-6f * std::fabs(want[i]) + 1e-7f) << i;
    }
  }
}

TEST_F(CudaKernelsTest, EmbedMatchesTheReferenceForEveryType) {
  for (const DType type : testing::kAllWeightTypes) {
    const int64_t vocab = 11, n_embd = testing::is_k_type(type) ? 256 : 96;
    const testing::HostMatrix m = random_matrix(type, vocab, n_embd, 50);
    const DeviceBuffer bytes = to_device(m.bytes);
    const std::vector<int32_t> tokens = {10, 0, 3, 3};
    const DeviceBuffer dt = to_device(tokens);
    DeviceBuffer x = zeros_on_device<float>(tokens.size() * n_embd);
    for (const float scale : {1.0f, 8.0f}) {
      embed(on_device(m, bytes), dt.as<int32_t>(), static_cast<int64_t>(tokens.size()), scale, x.as<float>(), nullptr);
      const std::vector<float> got = to_host<float>(x, tokens.size() * n_embd);
      for (size_t r = 0; r < tokens.size(); ++r)
        for (int64_t k = 0; k < n_embd; ++k) {
          const float want = m.values[tokens[r] * n_embd + k] * scale;
          ASSERT_NEAR(got[r * n_embd + k], want, 1e-6f * std::fabs(want) + 1e-7f) << dtype_name(type);
        }
    }
  }
}

// Attention of rows of one sequence against a paged cache whose blocks are
// out of order, against the CPU's attention_row over the same f16 K/V laid
// out contiguously; with GQA, and with and without a window.
TEST_F(CudaKernelsTest, PagedAttentionMatchesTheCpu) {
  const int n_head = 6, n_head_kv = 2, head_dim = 64, block_size = 16, n_pos = 300;
  const int kv_dim = n_head_kv * head_dim, q_dim = n_head * head_dim;
  const KvLayout layout{
      .n_layer = 2, .n_head_kv = n_head_kv, .head_dim = head_dim, .block_size = block_size, .num_blocks = 24};
  std::vector<int32_t> table(20);
  for (int b = 0; b < 20; ++b) table[b] = (b * 7 + 3) % 24;  // distinct, shuffled
  const std::vector<float> k = random_floats(static_cast<size_t>(n_pos * kv_dim), 1);
  const std::vector<float> v = random_floats(k.size(), 2);
  std::vector<int32_t> positions(n_pos), starts(n_pos, 0);
  std::iota(positions.begin(), positions.end(), 0);
  auto cache = zeros_on_device<uint16_t>(static_cast<size_t>(layout.block_elements() * layout.num_blocks));
  const DeviceBuffer dk = to_device(k), dv = to_device(v), dp = to_device(positions), ds = to_device(starts),
                     dt = to_device(table);
  const RowTables all_rows{dp.as<int32_t>(), ds.as<int32_t>(), dt.as<int32_t>()};
  store_kv(cache.as<uint16_t>(), layout, 1, dk.as<float>(), dv.as<float>(), n_pos, all_rows, nullptr);

  std::vector<uint16_t> kh(k.size()), vh(v.size());
  for (size_t i = 0; i < k.size(); ++i) kh[i] = f32_to_f16(k[i]), vh[i] = f32_to_f16(v[i]);
  const std::vector<int32_t> query_pos = {0, 1, 15, 16, 130, 299};
  const std::vector<float> q = random_floats(query_pos.size() * q_dim, 3);
  const DeviceBuffer dq = to_device(q), dqp = to_device(query_pos),
                     dqs = to_device(std::vector<int32_t>(query_pos.size(), 0));
  const RowTables query_rows{dqp.as<int32_t>(), dqs.as<int32_t>(), dt.as<int32_t>()};
  const float scale = 0.125f;
  for (const int window : {0, 40}) {
    DeviceBuffer out = zeros_on_device<float>(q.size());
    attention(cache.as<uint16_t>(), layout, 1, dq.as<float>(), static_cast<int64_t>(query_pos.size()), n_head, scale,
              window, query_rows, out.as<float>(), nullptr);
    const std::vector<float> got = to_host<float>(out, q.size());
    const AttentionShape shape{.n_head = n_head, .n_head_kv = n_head_kv, .head_dim = head_dim, .scale = scale};
    std::vector<float> want(static_cast<size_t>(q_dim)), scores(static_cast<size_t>(n_head * n_pos));
    float vmax = 0;
    for (float x : v) vmax = std::max(vmax, std::fabs(x));
    for (size_t r = 0; r < query_pos.size(); ++r) {
      const int pos = query_pos[r];
      const int first = window > 0 && pos >= window ? pos - window + 1 : 0;
      attention_row(shape, q.data() + r * q_dim, kh.data() + first * kv_dim, vh.data() + first * kv_dim, kv_dim,
                    pos - first + 1, scores.data(), want.data(), 0, n_head);
      for (int i = 0; i < q_dim; ++i)
        ASSERT_NEAR(got[r * q_dim + i], want[i], 2e-3f * vmax) << "window " << window << " pos " << pos << " " << i;
    }
  }
}

// A block copied in comes out the same, and it is the CPU store's transfer
// format: K of a (layer, KV head) transposed, then V.
TEST_F(CudaKernelsTest, KvBlocksCopyInAndOut) {
  ModelConfig config;
  config.n_layer = 2, config.n_head = 4, config.n_head_kv = 2, config.head_dim = 32;
  auto cache = CudaKvCache::create(config, 5, 8, KvCacheType::kF16);
  ASSERT_TRUE(cache.is_ok()) << cache.status().to_string();
  CudaKvCache& kv = **cache;
  EXPECT_EQ(kv.block_transfer_bytes(), kv_bytes_per_token(config) * 8);
  std::vector<uint8_t> in(static_cast<size_t>(kv.block_transfer_bytes()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 31 + 7);
  ASSERT_TRUE(kv.copy_block_in(3, kNoKvBlock, in.data()).is_ok());
  std::vector<uint8_t> out(in.size()), empty(in.size());
  ASSERT_TRUE(kv.copy_block_out(3, kNoKvBlock, out.data()).is_ok());
  EXPECT_EQ(out, in);
  ASSERT_TRUE(kv.copy_block_out(2, kNoKvBlock, empty.data()).is_ok());
  EXPECT_EQ(empty, std::vector<uint8_t>(in.size(), 0));
  EXPECT_FALSE(CudaKvCache::create(config, 5, 8, KvCacheType::kQ8_0).is_ok());
}

}  // namespace
}  // namespace omnibus::cuda
