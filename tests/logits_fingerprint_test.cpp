// Logits fingerprints: a hash of every logit of tiny models of each
// architecture and KV cache type, prompt in chunks then decode, checked
// against tests/golden/logits_fingerprints.txt. Refactors of the forward
// pass (the backend seam, one transformer block: docs/design/backend-seam.md)
// must keep these bits; a change that means to alter the arithmetic
// re-records them (below) and says why in its commit.
//
// Two checks:
// - In every build: 1, 2 and 3 threads give the same hash (batch and thread
//   invariance, end to end), and so does decode op by op on 2 threads (the
//   per-op and one-job schedules run the same block description).
// - In GCC Release builds (the build the file was recorded with): the hash
//   equals the one recorded for this process's kernel table. Every SIMD
//   table promises the avx2 table's bits, so a SIMD table with no lines of
//   its own is held to avx2's (a table recorded on its own machine must
//   show the avx2 hashes too). Other compilers may contract or order float
//   operations differently: they print their hashes and skip the
//   comparison, saying so.
//
// Record: OMNIBUS_RECORD_FINGERPRINTS=1 build/tests/integration_test
//   --gtest_filter='LogitsFingerprint*' (with OMNIBUS_KERNELS=<table> for
//   each table the machine runs); it rewrites that table's lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/forward.h"
#include "backends/cpu/paged_kv_store.h"
#include "base/thread_pool.h"
#include "kernels/kernel_table.h"
#include "tiny_model.h"

namespace omnibus::testing {
namespace {

constexpr const char* kFingerprintFile = "tests/golden/logits_fingerprints.txt";

struct FingerprintCase {
  const char* name;
  const char* architecture;
  DType matrix_type;
  KvCacheType kv_type;
};

// Each architecture with a quantized matrix type, each cache type on one.
constexpr FingerprintCase kCases[] = {
    {"llama-q4_1-f16", "llama", DType::kQ4_1, KvCacheType::kF16},
    {"llama-q8_0-bf16", "llama", DType::kQ8_0, KvCacheType::kBF16},
    {"llama-q4_0-q8_0", "llama", DType::kQ4_0, KvCacheType::kQ8_0},
    {"llama-q8_0-q4_0", "llama", DType::kQ8_0, KvCacheType::kQ4_0},
    {"qwen2-q8_0-f16", "qwen2", DType::kQ8_0, KvCacheType::kF16},
    {"gemma3-q4_0-f16", "gemma3", DType::kQ4_0, KvCacheType::kF16},
    {"gemma3-f16-q8_0", "gemma3", DType::kF16, KvCacheType::kQ8_0},
};

// FNV-1a over the bytes: stable, no dependency, plenty for spotting a change.
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// Every logit of 40 tokens: a prompt of 30 in chunks of 7 (the last
// partial), then 10 decode steps of one row, on `threads` threads, the
// decode steps as one pool job (the default on two or more threads) or op
// by op.
uint64_t logits_hash(const FingerprintCase& c, int threads, bool decode_as_one_job = true) {
  TinyModelSpec spec;
  spec.architecture = c.architecture;
  spec.matrix_type = c.matrix_type;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.head_dim = 32;  // whole q8_0/q4_0 groups
  spec.n_embd = 64;
  spec.sliding_window = 8;
  spec.n_layer = std::string(c.architecture) == "gemma3" ? 6 : 2;  // gemma3: five window layers, one global
  const auto bytes = make_tiny_model_bytes(spec);
  auto model = load_tiny_model(bytes);
  const int vocab = model->config().vocab_size;
  std::mt19937 rng(7);
  std::vector<int32_t> tokens(40);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(vocab));

  constexpr int kBlock = 8, kPositions = 64, kPrompt = 30, kChunk = 7;
  ThreadPool runner_pool(threads);
  ForwardPass runner(model, runner_pool, kChunk, kPositions);
  runner.set_decode_as_one_job(decode_as_one_job);
  auto kv = PagedKvStore::create(model->config(), kPositions / kBlock, kBlock, c.kv_type);
  EXPECT_TRUE(kv.is_ok());
  std::vector<int32_t> table(kPositions / kBlock);
  for (size_t b = 0; b < table.size(); ++b) table[b] = static_cast<int32_t>(b);
  std::vector<float> logits(static_cast<size_t>(kChunk) * vocab);
  uint64_t h = 1469598103934665603ull;
  int start = 0;
  while (start < static_cast<int>(tokens.size())) {
    const int end = start < kPrompt ? std::min(kPrompt, start + kChunk) : start + 1;
    std::vector<BatchRow> rows;
    for (int p = start; p < end; ++p) rows.push_back({tokens[p], table, p, true});
    EXPECT_TRUE(runner.run(rows, *kv, logits.data()).is_ok());
    h = fnv1a(logits.data(), rows.size() * vocab * sizeof(float), h);
    start = end;
  }
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The recorded file: "<kernel table> <case> <hash>" per line; # comments.
std::map<std::string, std::string> read_recorded() {
  std::map<std::string, std::string> out;
  std::ifstream in(kFingerprintFile);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string kind, name, hash;
    if (fields >> kind >> name >> hash) out[kind + " " + name] = hash;
  }
  return out;
}

constexpr bool kRecordedBuild =
#if defined(__GNUC__) && !defined(__clang__) && defined(NDEBUG)
    true;
#else
    false;
#endif

TEST(LogitsFingerprintTest, EveryArchitectureAndCacheTypeKeepsItsBits) {
  const std::string kind = kernels().name;
  std::map<std::string, std::string> now;
  for (const FingerprintCase& c : kCases) {
    SCOPED_TRACE(c.name);
    const uint64_t one = logits_hash(c, 1);
    EXPECT_EQ(hex(logits_hash(c, 2)), hex(one)) << "2 threads differ from 1";
    EXPECT_EQ(hex(logits_hash(c, 3)), hex(one)) << "3 threads differ from 1";
    // The two schedules of the one block description (model/block_spec.h).
    EXPECT_EQ(hex(logits_hash(c, 2, /*decode_as_one_job=*/false)), hex(one)) << "per-op decode differs";
    now[kind + " " + c.name] = hex(one);
  }
  if (std::getenv("OMNIBUS_RECORD_FINGERPRINTS") != nullptr) {
    std::map<std::string, std::string> all = read_recorded();
    for (const auto& [key, hash] : now) all[key] = hash;
    std::ofstream out(kFingerprintFile);
    out << "# Logits fingerprints (tests/logits_fingerprint_test.cpp): kernel table, case, FNV-1a of every logit.\n"
        << "# Recorded by a GCC Release build; re-record only for a change meant to alter the arithmetic.\n";
    for (const auto& [key, hash] : all) out << key << " " << hash << "\n";
    ASSERT_TRUE(out.good()) << "cannot write " << kFingerprintFile;
    GTEST_SKIP() << "recorded " << now.size() << " fingerprints for the " << kind << " table";
  }
  auto print_hashes = [&now] {
    for (const auto& [key, hash] : now) std::printf("fingerprint %s %s\n", key.c_str(), hash.c_str());
  };
  if (!kRecordedBuild) {
    print_hashes();
    GTEST_SKIP() << "not a GCC Release build: the recorded hashes do not apply (printed above; threads agree)";
  }
  const auto recorded = read_recorded();
  ASSERT_FALSE(recorded.empty()) << "no fingerprints in " << kFingerprintFile << " (run from the repository root)";
  // The lines this table is held to: its own, else (a SIMD table) avx2's.
  std::string expected_kind = kind;
  if (recorded.find(kind + " " + kCases[0].name) == recorded.end()) {
    if (kind == "scalar") {
      print_hashes();
      GTEST_SKIP() << "no fingerprints recorded for the scalar table (printed above; threads agree)";
    }
    expected_kind = "avx2";
  }
  for (const auto& [key, hash] : now) {
    const std::string expected_key = expected_kind + key.substr(kind.size());
    auto it = recorded.find(expected_key);
    ASSERT_NE(it, recorded.end()) << "no recorded fingerprint for " << expected_key;
    EXPECT_EQ(hash, it->second) << key << ": the logits changed (held to " << expected_key << ")";
  }
}

}  // namespace
}  // namespace omnibus::testing
