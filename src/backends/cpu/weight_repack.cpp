#include "backends/cpu/weight_repack.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "kernels/weight_interleave.h"

namespace omnibus {

void WeightRepacker::prepare(ModelWeights& weights, const GgufFile& file, AlignedBuffer<uint8_t>& owned) const {
  std::vector<WeightMatrix*> todo;
  for (LayerWeights& l : weights.layers) {
    for (WeightMatrix* w : l.matrices()) todo.push_back(w);
    for (WeightMatrix* w : l.moe_matrices()) todo.push_back(w);
  }
  todo.push_back(&weights.output);
  std::erase_if(todo, [this](const WeightMatrix* w) {
    return w->data == nullptr || w->layout != WeightLayout::kRows || !can_interleave8(table_, w->dtype);
  });
  // One buffer for all of them, each copy starting on a cache line, on huge
  // pages: decode streams every byte of it each step, and with 4 KiB pages
  // that was a TLB miss every 4 KiB of each stream (the model is ~16x the
  // L2 TLB's reach).
  auto padded = [](const WeightMatrix& w) { return (interleaved8_bytes(w) + 63) / 64 * 64; };
  size_t total = 0;
  for (const WeightMatrix* w : todo) total += padded(*w);
  owned.resize(total, /*huge_pages=*/true);
  std::vector<size_t> offsets;
  size_t offset = 0;
  for (const WeightMatrix* w : todo) offsets.push_back(offset), offset += padded(*w);
  auto copy = [&](size_t i) {
    WeightMatrix* w = todo[i];
    const WeightMatrix original = *w;
    // The source pages go as the copy proceeds, a few MB at a time: released
    // only after a whole matrix, a tied 262k-token embedding (Gemma 3, 178
    // MB) was resident twice at load, and peak RSS was 440 instead of ~330
    // MiB. With a tied embedding these are also token_embd's pages, so
    // token_embd becomes the repacked copy too (below): looking a token up
    // in the file would fault its row back in and, with the kernel's fault-
    // around, up to 64 KiB of neighbours with it (a 678-token prompt added
    // 70 MiB of RSS on Gemma 3).
    const auto* source = static_cast<const uint8_t*>(original.data);
    // Each call releases from where the previous run's range began, so the
    // page two runs share (release_pages keeps partial pages) goes too; a
    // page shared with a neighbouring matrix is never released (whole pages
    // only), so matrices can be copied on different threads.
    size_t from = 0;
    *w = interleave8(original, owned.data() + offsets[i], [&](int64_t row_begin, int64_t row_end) {
      const size_t end = static_cast<size_t>(row_end) * original.row_bytes;
      file.release_pages({source + from, end - from});
      from = static_cast<size_t>(row_begin) * original.row_bytes;
    });
  };
  // Matrices are shared out over up to four threads, the next one to whoever
  // is free: most of the copy's time is the kernel zeroing fresh pages and
  // the scatter of 4-byte pieces, both of which scale with threads. On two
  // cores (three runs each, with the copy no longer cleared first;
  // docs/findings/load-time-is-page-zeroing.md): load SmolLM2 Q4_1 77-168 -> 56-57 ms, Q4_K_M 203-219 -> 101-138,
  // Gemma 3 302-326 -> 194-196; peak RSS unchanged.
  // Largest first, so that a big matrix (a vocabulary projection) does not
  // start last and leave the other threads idle.
  std::vector<size_t> order(todo.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return padded(*todo[a]) > padded(*todo[b]); });
  const unsigned n_threads = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t k; (k = next.fetch_add(1)) < order.size();) copy(order[k]);
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < n_threads && t < todo.size(); ++t) helpers.emplace_back(worker);
  worker();
  for (std::thread& t : helpers) t.join();
  if (weights.tied_output) weights.token_embd = weights.output;  // embed() reads either layout
}

}  // namespace omnibus
