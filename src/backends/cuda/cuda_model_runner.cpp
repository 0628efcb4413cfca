#include "backends/cuda/cuda_model_runner.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <new>

#include "kernels/rope.h"

namespace omnibus {
namespace {

// Offsets into the per-step metadata (int32 elements), for max_batch rows.
struct MetaOffsets {
  int64_t tokens, positions, table_start, logits_rows, tables;
  explicit MetaOffsets(int max_batch)
      : tokens(0),
        positions(max_batch),
        table_start(2 * int64_t{max_batch}),
        logits_rows(3 * int64_t{max_batch}),
        tables(4 * int64_t{max_batch}) {}
};

// The sizes the growing buffers start at: logits rows, block-table
// entries, RoPE positions.
constexpr int kInitialLogitsRows = 8;
constexpr int64_t kInitialTableEntries = 4096;
constexpr int64_t kInitialRopePositions = 4096;

bool stage_implemented(BlockStage stage) {
  // The Hadamard rotation belongs to the CPU's q4_0 cache; this backend's
  // cache is f16 only, so resolve_block never asks for it here. Mixture-
  // of-experts layers have no CUDA kernels yet.
  return stage != BlockStage::kRotateQkv && stage != BlockStage::kRotateOutput && stage != BlockStage::kMoe;
}

}  // namespace

std::string CudaModelRunner::unsupported(const Model& model) {
  const ModelConfig& c = model.config();
  std::string missing = CudaWeights::unsupported_matrices(model);
  if (!missing.empty()) missing = "weight types without CUDA kernels (" + missing + ")";
  auto add = [&missing](const std::string& what) { missing += (missing.empty() ? "" : "; ") + what; };
  if (c.head_dim > cuda::kMaxAttentionHeadDim)
    add("head size " + std::to_string(c.head_dim) + " (the attention kernel takes up to " +
        std::to_string(cuda::kMaxAttentionHeadDim) + ")");
  if (c.n_head_kv <= 0 || c.n_head % c.n_head_kv != 0)
    add("query heads " + std::to_string(c.n_head) + " not a multiple of KV heads " + std::to_string(c.n_head_kv));
  for (int layer = 0; layer < c.n_layer; ++layer)
    for (BlockStage stage : resolve_block(c, layer, /*rotated_cache=*/false).stages)
      if (!stage_implemented(stage))
        add(std::string("block stage ") + block_stage_name(stage) + " (layer " + std::to_string(layer) + ")");
  return missing;
}

Result<std::unique_ptr<CudaModelRunner>> CudaModelRunner::create(std::shared_ptr<const Model> model, int max_batch,
                                                                 int64_t max_positions) {
  if (model == nullptr) return Status::invalid_argument("no model");
  if (max_batch < 1) return Status::invalid_argument("max batch must be >= 1");
  if (max_positions < 1 || max_positions > (int64_t{1} << 30))
    return Status::invalid_argument("max positions must be in [1, 2^30]");
  if (const std::string missing = unsupported(*model); !missing.empty())
    return Status::unsupported("the CUDA backend cannot run " + model->config().architecture + " model '" +
                               model->config().name + "': " + missing + " (use --backend cpu)");
  // What one launch covers (cuda_kernels.h): a step of max_batch rows must
  // fit every launch's grid.
  const ModelConfig& c = model->config();
  const int64_t widest = std::max({c.n_embd, c.q_dim(), c.kv_dim(), c.n_ff});
  if (int64_t{max_batch} * widest > cuda::kMaxLaunchElements ||
      int64_t{max_batch} * std::max(c.n_head, 1) > cuda::kMaxLaunchRows || c.n_head > cuda::kMaxAttentionHeads)
    return Status::invalid_argument("max batch " + std::to_string(max_batch) +
                                    " is more rows than the CUDA kernels' launches cover for this model (rows of " +
                                    std::to_string(widest) + " floats, " + std::to_string(c.n_head) +
                                    " heads); lower --max-batched-tokens or the chunk");
  // No exception crosses the seam: host allocations (a weight gathered
  // back into rows, the RoPE angles) that fail come back as a Status.
  try {
    return create_on_device(std::move(model), max_batch, max_positions);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("out of host memory creating the CUDA runner");
  } catch (const std::exception& e) {
    return Status::internal(std::string("creating the CUDA runner: ") + e.what());
  }
}

Result<std::unique_ptr<CudaModelRunner>> CudaModelRunner::create_on_device(std::shared_ptr<const Model> model,
                                                                           int max_batch, int64_t max_positions) {
  std::unique_ptr<CudaModelRunner> r(new CudaModelRunner());
  r->model_ = std::move(model);
  r->max_batch_ = max_batch;
  r->max_positions_ = max_positions;
  const ModelConfig& c = r->model_->config();
  for (int layer = 0; layer < c.n_layer; ++layer) r->blocks_.push_back(resolve_block(c, layer, false));
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaGetDevice(&r->device_), "reading the current device");
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&r->stream_, cudaStreamNonBlocking), "creating a stream");
  OMNIBUS_ASSIGN_OR_RETURN(r->weights_, CudaWeights::upload(*r->model_));
  OMNIBUS_RETURN_IF_ERROR(r->allocate_buffers());
  OMNIBUS_RETURN_IF_ERROR(r->ensure_rope_positions(std::min(max_positions, kInitialRopePositions)));
  // The weights went up with cudaMemcpy from pageable memory, which may
  // return before the copy lands, on the legacy stream, which does not
  // order against this runner's non-blocking stream: wait for all of it
  // here, so the first run() cannot read weights still in flight.
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize(), "uploading the weights");
  return r;
}

CudaModelRunner::~CudaModelRunner() {
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

Status CudaModelRunner::allocate_buffers() {
  const ModelConfig& c = model_->config();
  const size_t rows = static_cast<size_t>(max_batch_);
  auto floats = [&](cuda::DeviceBuffer& buffer, int64_t width, const char* name) -> Status {
    OMNIBUS_ASSIGN_OR_RETURN(buffer, cuda::DeviceBuffer::allocate(rows * static_cast<size_t>(width) * 4, name));
    return Status::ok();
  };
  OMNIBUS_RETURN_IF_ERROR(floats(x_, c.n_embd, "activations"));
  OMNIBUS_RETURN_IF_ERROR(floats(xn_, c.n_embd, "activations"));
  OMNIBUS_RETURN_IF_ERROR(floats(proj_, c.n_embd, "activations"));
  OMNIBUS_RETURN_IF_ERROR(floats(q_, c.q_dim(), "queries"));
  OMNIBUS_RETURN_IF_ERROR(floats(attn_, c.q_dim(), "attention output"));
  OMNIBUS_RETURN_IF_ERROR(floats(k_, c.kv_dim(), "keys"));
  OMNIBUS_RETURN_IF_ERROR(floats(v_, c.kv_dim(), "values"));
  OMNIBUS_RETURN_IF_ERROR(floats(gate_, c.n_ff, "MLP activations"));
  OMNIBUS_RETURN_IF_ERROR(floats(up_, c.n_ff, "MLP activations"));
  OMNIBUS_RETURN_IF_ERROR(ensure_logits_rows(std::min(max_batch_, kInitialLogitsRows)));
  // Matmul inputs are n_embd (q/k/v, gate/up, output), q_dim (wo) or n_ff
  // (down) wide; scales one per 32 values at most.
  const int64_t widest = std::max({c.n_embd, c.q_dim(), c.n_ff});
  OMNIBUS_ASSIGN_OR_RETURN(xq_, cuda::DeviceBuffer::allocate(rows * static_cast<size_t>(widest), "int8 activations"));
  OMNIBUS_RETURN_IF_ERROR(floats(xs_, widest / 32 + 1, "activation scales"));
  const MetaOffsets at(max_batch_);
  // Room for short tables to start with (a few thousand block ids); a step
  // with longer ones grows it (upload_rows).
  meta_host_.resize(static_cast<size_t>(at.tables + std::max<int64_t>(kInitialTableEntries, max_batch_)));
  OMNIBUS_ASSIGN_OR_RETURN(meta_, cuda::DeviceBuffer::allocate(meta_host_.size() * 4, "block tables"));
  return Status::ok();
}

Status CudaModelRunner::ensure_logits_rows(int rows) {
  if (rows <= logits_rows_) return Status::ok();
  const int grown = std::min(max_batch_, std::max(rows, 2 * logits_rows_));
  const size_t bytes = static_cast<size_t>(grown) * static_cast<size_t>(model_->config().vocab_size) * sizeof(float);
  // The old buffer may still be read by a step that failed before its
  // synchronisation; the new one is allocated before the old is freed.
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "growing the logits buffer");
  OMNIBUS_ASSIGN_OR_RETURN(logits_, cuda::DeviceBuffer::allocate(bytes, "logits"));
  logits_rows_ = grown;
  return Status::ok();
}

// cos and sin of the angles of positions [0, n), n at least `positions`:
// the new positions' computed on the host by the CPU's rope_angles (double
// precision), so both backends turn q and k by the same floats; the old
// ones copied over on the device. Doubling, so a long context costs a few
// growths, and only the positions reached are ever computed or held.
Status CudaModelRunner::ensure_rope_positions(int64_t positions) {
  if (positions <= rope_positions_) return Status::ok();
  const int64_t old = rope_positions_;
  const int64_t grown = std::min(max_positions_, std::max(positions, 2 * old));
  const ModelConfig& c = model_->config();
  const RopeParams full = c.rope_for_context(max_positions_);
  const RopeParams* sets[2] = {&full, c.sliding_window > 0 ? &c.window_rope : nullptr};
  // The old tables may still be read by a step that failed before its
  // synchronisation.
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "growing the RoPE tables");
  for (int set = 0; set < 2; ++set) {
    if (sets[set] == nullptr) continue;
    const auto pairs = static_cast<size_t>(sets[set]->rot_dims / 2);
    const size_t kept = static_cast<size_t>(old) * pairs, added = static_cast<size_t>(grown - old) * pairs;
    std::vector<float> cos(added), sin(added);
    for (int64_t p = old; p < grown; ++p) {
      const size_t at = static_cast<size_t>(p - old) * pairs;
      rope_angles(*sets[set], p, cos.data() + at, sin.data() + at);
    }
    cuda::DeviceBuffer* tables[2] = {&rope_cos_[set], &rope_sin_[set]};
    const std::vector<float>* values[2] = {&cos, &sin};
    for (int t = 0; t < 2; ++t) {
      OMNIBUS_ASSIGN_OR_RETURN(cuda::DeviceBuffer table,
                               cuda::DeviceBuffer::allocate((kept + added) * sizeof(float), "RoPE angles"));
      if (kept > 0)
        OMNIBUS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(table.as<void>(), tables[t]->as<const void>(),
                                                     kept * sizeof(float), cudaMemcpyDeviceToDevice, stream_),
                                     "growing the RoPE tables");
      OMNIBUS_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(table.as<float>() + kept, values[t]->data(), added * sizeof(float),
                                                   cudaMemcpyHostToDevice, stream_),
                                   "uploading RoPE angles");
      // Both copies done before the old table is freed and the host
      // values go out of scope.
      OMNIBUS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "uploading RoPE angles");
      *tables[t] = std::move(table);
    }
  }
  rope_positions_ = grown;
  return Status::ok();
}

Status CudaModelRunner::check(std::span<const BatchRow> rows, const CudaKvCache& kv) const {
  const ModelConfig& c = model_->config();
  const cuda::KvLayout& l = kv.layout();
  if (l.n_layer != c.n_layer || l.n_head_kv != c.n_head_kv || l.head_dim != c.head_dim)
    return Status::invalid_argument("the KV cache was made for another model (" + std::to_string(l.n_layer) +
                                    " layers of " + std::to_string(l.n_head_kv) + " x " + std::to_string(l.head_dim) +
                                    ")");
  if (rows.size() > static_cast<size_t>(max_batch_))
    return Status::invalid_argument("batch of " + std::to_string(rows.size()) + " rows exceeds max " +
                                    std::to_string(max_batch_));
  for (const BatchRow& r : rows) {
    if (r.token < 0 || r.token >= c.vocab_size)
      return Status::invalid_argument("token id " + std::to_string(r.token) + " is outside the vocabulary [0, " +
                                      std::to_string(c.vocab_size) + ")");
    if (r.pos < 0 || r.pos >= max_positions_)
      return Status::out_of_range("position " + std::to_string(r.pos) + " is past the context of " +
                                  std::to_string(max_positions_));
    const size_t last_block = static_cast<size_t>(r.pos / l.block_size);
    if (last_block >= r.block_table.size())
      return Status::out_of_range("position " + std::to_string(r.pos) + " is past its block table of " +
                                  std::to_string(r.block_table.size()) + " blocks");
    for (size_t b = 0; b <= last_block; ++b)
      if (r.block_table[b] < 0 || r.block_table[b] >= l.num_blocks)
        return Status::invalid_argument("KV block id " + std::to_string(r.block_table[b]) + " is outside [0, " +
                                        std::to_string(l.num_blocks) + ")");
  }
  return Status::ok();
}

Status CudaModelRunner::upload_rows(std::span<const BatchRow> rows, int* logits_rows) {
  const MetaOffsets at(max_batch_);
  int64_t tables = at.tables;
  int out = 0;
  const int32_t* last_table = nullptr;
  size_t last_size = 0;
  int32_t last_start = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const BatchRow& r = rows[i];
    // Rows of one sequence share one table: copied once.
    if (r.block_table.data() != last_table || r.block_table.size() != last_size) {
      last_table = r.block_table.data();
      last_size = r.block_table.size();
      last_start = static_cast<int32_t>(tables - at.tables);
      if (static_cast<size_t>(tables) + last_size > meta_host_.size()) meta_host_.resize((tables + last_size) * 2);
      std::copy(r.block_table.begin(), r.block_table.end(), meta_host_.begin() + tables);
      tables += static_cast<int64_t>(last_size);
    }
    meta_host_[static_cast<size_t>(at.tokens) + i] = r.token;
    meta_host_[static_cast<size_t>(at.positions) + i] = r.pos;
    meta_host_[static_cast<size_t>(at.table_start) + i] = last_start;
    if (r.want_logits) meta_host_[static_cast<size_t>(at.logits_rows + out++)] = static_cast<int32_t>(i);
  }
  *logits_rows = out;
  const size_t bytes = static_cast<size_t>(tables) * 4;
  if (bytes > meta_.bytes()) {
    // A step with longer tables than any before: the one allocation a run
    // may make (after the device has finished with the old buffer).
    OMNIBUS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "growing the block tables");
    OMNIBUS_ASSIGN_OR_RETURN(meta_, cuda::DeviceBuffer::allocate(meta_host_.size() * 4, "block tables"));
  }
  OMNIBUS_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(meta_.as<void>(), meta_host_.data(), bytes, cudaMemcpyHostToDevice, stream_),
      "copying the step's rows");
  return Status::ok();
}

void CudaModelRunner::project(std::span<const Target> targets, const float* input, int n) {
  int quantized_block = 0;  // the block size input's int8 form in xq_ has (0: none yet)
  for (const Target& t : targets) {
    const int block = cuda::activation_block(t.w->type);
    if (block != 0 && block != quantized_block) {
      cuda::quantize_activations(input, n, t.w->cols, block, xq_.as<int8_t>(), xs_.as<float>(), stream_);
      quantized_block = block;
    }
    cuda::matmul(*t.w, input, xq_.as<int8_t>(), xs_.as<float>(), n, t.y, stream_);
  }
}

Status CudaModelRunner::run_block(int layer, const BlockSpec& block, int n, CudaKvCache& kv) {
  const ModelConfig& c = model_->config();
  const CudaLayerWeights& l = weights_->layers[static_cast<size_t>(layer)];
  const MetaOffsets at(max_batch_);
  const auto* meta = meta_.as<const int32_t>();
  const cuda::RowTables tables{meta + at.positions, meta + at.table_start, meta + at.tables};
  float *x = x_.as<float>(), *xn = xn_.as<float>(), *q = q_.as<float>(), *k = k_.as<float>(), *v = v_.as<float>();
  float *attn = attn_.as<float>(), *proj = proj_.as<float>(), *gate = gate_.as<float>(), *up = up_.as<float>();
  for (const BlockStage stage : block.stages) {
    switch (stage) {
      case BlockStage::kAttnNorm: cuda::rms_norm(x, nullptr, l.attn_norm, xn, n, c.n_embd, c.rms_eps, stream_); break;
      case BlockStage::kFfnNorm: cuda::rms_norm(x, nullptr, l.ffn_norm, xn, n, c.n_embd, c.rms_eps, stream_); break;
      case BlockStage::kPostAttnNorm:
        cuda::rms_norm(proj, nullptr, l.post_attn_norm, proj, n, c.n_embd, c.rms_eps, stream_);
        break;
      case BlockStage::kPostFfnNorm:
        cuda::rms_norm(proj, nullptr, l.post_ffn_norm, proj, n, c.n_embd, c.rms_eps, stream_);
        break;
      case BlockStage::kQkv: {
        const Target qkv[] = {{&l.wq, q}, {&l.wk, k}, {&l.wv, v}};
        project(qkv, xn, n);
        break;
      }
      case BlockStage::kQkvBias:
        cuda::add_bias(q, l.bq, n, c.q_dim(), stream_);
        cuda::add_bias(k, l.bk, n, c.kv_dim(), stream_);
        cuda::add_bias(v, l.bv, n, c.kv_dim(), stream_);
        break;
      case BlockStage::kQkNorm:
        // Each head of each row is one RMSNorm row of head_dim.
        cuda::rms_norm(q, nullptr, l.q_norm, q, int64_t{n} * c.n_head, c.head_dim, c.rms_eps, stream_);
        cuda::rms_norm(k, nullptr, l.k_norm, k, int64_t{n} * c.n_head_kv, c.head_dim, c.rms_eps, stream_);
        break;
      case BlockStage::kRope: {
        // Window layers turn by the window set's angles (ModelConfig::layer_rope).
        const int set = block.window ? 1 : 0;
        const bool neox = block.rope->style == RopeStyle::kNeox;
        const float *cos = rope_cos_[set].as<float>(), *sin = rope_sin_[set].as<float>();
        cuda::rope(q, n, c.n_head, c.head_dim, block.rope->rot_dims, neox, tables.positions, cos, sin, stream_);
        cuda::rope(k, n, c.n_head_kv, c.head_dim, block.rope->rot_dims, neox, tables.positions, cos, sin, stream_);
        break;
      }
      case BlockStage::kKvStore: cuda::store_kv(kv.data(), kv.layout(), layer, k, v, n, tables, stream_); break;
      case BlockStage::kAttention:
        cuda::attention(kv.data(), kv.layout(), layer, q, n, c.n_head, c.attention_scale,
                        block.window ? c.sliding_window : 0, tables, attn, stream_);
        break;
      case BlockStage::kAttnOutput: {
        const Target wo[] = {{&l.wo, proj}};
        project(wo, attn, n);
        break;
      }
      case BlockStage::kAttnResidual:
      case BlockStage::kFfnResidual: cuda::add(x, proj, int64_t{n} * c.n_embd, stream_); break;
      case BlockStage::kGateUp: {
        const Target gate_up[] = {{&l.w_gate, gate}, {&l.w_up, up}};
        project(gate_up, xn, n);
        break;
      }
      case BlockStage::kActivation:
        cuda::gated_activation(gate, up, int64_t{n} * c.n_ff, block.activation == FfnActivation::kGeluTanh, stream_);
        break;
      case BlockStage::kDown: {
        const Target down[] = {{&l.w_down, proj}};
        project(down, gate, n);
        break;
      }
      case BlockStage::kRotateQkv:
      case BlockStage::kRotateOutput:
      case BlockStage::kMoe: break;  // refused at create (stage_implemented)
    }
    // A launch error (a bad configuration, no kernel image) is this
    // stage's: forward() cleared any older one before the first launch.
    if (const cudaError_t error = cudaPeekAtLastError(); error != cudaSuccess)
      return cuda::cuda_status(
          error, std::string("launching ") + block_stage_name(stage) + " (layer " + std::to_string(layer) + ")");
  }
  return Status::ok();
}

Status CudaModelRunner::forward(std::span<const BatchRow> rows, CudaKvCache& kv, float* logits) {
  const ModelConfig& c = model_->config();
  const int n = static_cast<int>(rows.size());
  // The runtime's last error may hold an earlier failure that was handled
  // and returned then (an allocation, a KV block copy): clear it, so the
  // checks below see only this step's launches. (A sticky error, a kernel
  // fault, stays and fails the step, as it must.)
  (void)cudaGetLastError();
  int64_t last_position = 0;
  for (const BatchRow& r : rows) last_position = std::max<int64_t>(last_position, r.pos);
  OMNIBUS_RETURN_IF_ERROR(ensure_rope_positions(last_position + 1));
  int n_out = 0;
  OMNIBUS_RETURN_IF_ERROR(upload_rows(rows, &n_out));
  OMNIBUS_RETURN_IF_ERROR(ensure_logits_rows(n_out));
  const MetaOffsets at(max_batch_);
  const auto* meta = meta_.as<const int32_t>();
  const float embed_scale = c.spec->embedding_scaled ? std::sqrt(static_cast<float>(c.n_embd)) : 1.0f;
  cuda::embed(weights_->token_embd, meta + at.tokens, n, embed_scale, x_.as<float>(), stream_);
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError(), "launching the embedding lookup");
  for (int layer = 0; layer < c.n_layer; ++layer)
    OMNIBUS_RETURN_IF_ERROR(run_block(layer, blocks_[static_cast<size_t>(layer)], n, kv));
  if (n_out > 0) {
    // The final norm of the rows that want logits, gathered and packed,
    // then the output projection of those rows only.
    cuda::rms_norm(x_.as<float>(), meta + at.logits_rows, weights_->output_norm, xn_.as<float>(), n_out, c.n_embd,
                   c.rms_eps, stream_);
    const Target output[] = {{&weights_->output, logits_.as<float>()}};
    project(output, xn_.as<float>(), n_out);
    OMNIBUS_CUDA_RETURN_IF_ERROR(cudaPeekAtLastError(), "launching the output projection");
    const size_t bytes = static_cast<size_t>(n_out) * static_cast<size_t>(c.vocab_size) * sizeof(float);
    OMNIBUS_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(logits, logits_.as<const void>(), bytes, cudaMemcpyDeviceToHost, stream_), "copying logits");
  }
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_), "running the forward pass");
  return Status::ok();
}

Status CudaModelRunner::run(std::span<const BatchRow> rows, KvCache& cache, float* logits) {
  auto* kv = dynamic_cast<CudaKvCache*>(&cache);
  if (kv == nullptr) return Status::invalid_argument("the CUDA runner needs a cache of the CUDA backend");
  OMNIBUS_RETURN_IF_ERROR(check(rows, *kv));
  if (rows.empty()) return Status::ok();
  // The current device is per host thread, and the engine's step thread is
  // not the one that made the runner.
  OMNIBUS_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_), "selecting the runner's device");
  // No exception crosses the seam: a host allocation that fails (a grown
  // block table, new RoPE angles) is a Status.
  try {
    if (profiler_ == nullptr || !profiler_->enabled()) return forward(rows, *kv, logits);
    profiler_->set_phase(rows.size() > 1 ? ProfilePhase::kPrefill : ProfilePhase::kDecode);
    ProfileScope scope(profiler_, ProfileOp::kForward);
    return forward(rows, *kv, logits);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("out of host memory running a step on the CUDA backend");
  } catch (const std::exception& e) {
    return Status::internal(std::string("running a step on the CUDA backend: ") + e.what());
  }
}

}  // namespace omnibus
