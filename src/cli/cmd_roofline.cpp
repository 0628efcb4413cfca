// `omnibus roofline -m MODEL`: this machine's ceilings (memory read
// bandwidth, peak FP32 FMA rate, peak int8 dot-product rate), what one
// token of the model costs (bytes read, FLOPs), and measured prefill and
// decode speed against the bound each implies, with which bound applies.
// `--limits-only`: the ceilings alone, no model.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "base/log.h"
#include "bench/benchmark.h"
#include "bench/machine_limits.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "engine/generator.h"
#include "model/model_cost.h"

namespace omnibus::cli {
namespace {

struct RooflineOptions {
  ModelOptions model;
  int prefill_tokens = 512;
  int decode_tokens = 64;
  int repeats = 3;
  std::string json_path;
  bool limits_only = false;
};

struct Measured {
  double prefill_tps = 0;
  double decode_tps = 0;
};

// Median over `repeats` fresh generators (a reused one would serve the
// prompt from its cache) of prefill over `prefill_tokens` tokens and decode
// of `decode_tokens` after it.
Result<Measured> measure_speed(const LoadedModel& loaded, const RooflineOptions& o, int threads) {
  std::vector<double> prefill, decode;
  const int vocab = loaded.model->config().vocab_size;
  CpuBackend backend(threads);  // outlives the generators
  for (int rep = 0; rep < o.repeats; ++rep) {
    OMNIBUS_ASSIGN_OR_RETURN(auto gen, Generator::create(loaded.model, backend, o.prefill_tokens + o.decode_tokens + 8,
                                                         o.prefill_tokens, o.model.kv_type));
    std::vector<int32_t> prompt;
    for (int i = 0; i < o.prefill_tokens; ++i) prompt.push_back((1000 + 7 * i + 131 * rep) % vocab);
    GenerationOptions g;
    g.max_tokens = o.decode_tokens;
    g.ignore_eos = true;
    g.sampling.temperature = 0;
    OMNIBUS_ASSIGN_OR_RETURN(GenerationStats s, gen->generate(prompt, g, {}, [](int32_t) { return true; }));
    prefill.push_back(s.prefill_tokens_per_second());
    decode.push_back(s.decode_tokens_per_second());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return Measured{median(prefill), median(decode)};
}

struct Row {
  std::string name;
  double achieved = 0;       // tokens/s
  double memory_bound = 0;   // tokens/s if only bandwidth limited
  double compute_bound = 0;  // tokens/s if only FLOPs limited
  double intensity = 0;      // FLOP per byte of the step
  double bound() const { return std::min(memory_bound, compute_bound); }
  const char* limit() const { return memory_bound < compute_bound ? "memory" : "compute"; }
};

void print_limits(const bench::MachineLimits& m) {
  const auto line = [](const std::string& label, double value, const char* unit) {
    fmt::print("  {:<30} {:8.1f} {}\n", label, value, unit);
  };
  fmt::print("machine ({} threads)\n", m.threads);
  line("memory read bandwidth", m.memory_bandwidth / 1e9, "GB/s");
  line(fmt::format("peak FP32 FMA ({})", m.flops_path), m.peak_flops / 1e9, "GFLOP/s");
  line(fmt::format("peak int8 dot ({})", m.int8_path), m.peak_int8_ops / 1e9, "GOP/s (quantized weights' matmuls)");
  line("balance point, FP32", m.balance(), "FLOP/byte (below it, float work is memory-bound)");
  line("balance point, int8", m.int8_balance(), "OP/byte (the same for quantized weights)");
}

nlohmann::json limits_json(const bench::MachineLimits& m) {
  return {{"threads", m.threads},
          {"memory_bandwidth_bytes_per_s", m.memory_bandwidth},
          {"peak_flops", m.peak_flops},
          {"flops_path", m.flops_path},
          {"peak_int8_ops", m.peak_int8_ops},
          {"int8_path", m.int8_path}};
}

int run_roofline(RooflineOptions& o) {
  const int threads = resolve_threads(o.model.threads);
  if (o.limits_only) {
    fmt::print(stderr, "measuring the machine ({} threads)...\n", threads);
    const bench::MachineLimits m = bench::measure_machine_limits(threads, 0.4, /*with_int8=*/true);
    print_limits(m);
    if (o.json_path.empty()) return 0;
    Status s = bench::write_file(o.json_path, limits_json(m).dump(1) + "\n");
    return s.is_ok() ? 0 : fail(s);
  }
  auto loaded = load_model(o.model);
  if (!loaded.is_ok()) return fail(loaded.status());
  fmt::print(stderr, "measuring the machine ({} threads)...\n", threads);
  const bench::MachineLimits m = bench::measure_machine_limits(threads, 0.4, /*with_int8=*/true);
  const TokenCost cost = token_cost(*loaded->model, o.model.kv_type);
  fmt::print(stderr, "running prefill ({} tokens) and decode ({} tokens), {} times...\n", o.prefill_tokens,
             o.decode_tokens, o.repeats);
  auto speed = measure_speed(*loaded, o, threads);
  if (!speed.is_ok()) return fail(speed.status());

  // Prefill: one pass over P tokens reads the weights once and K/V of the
  // triangle; decode: each token reads the weights and its whole history.
  const double P = o.prefill_tokens;
  const double ctx = P + o.decode_tokens / 2.0;  // average context while decoding
  Row prefill{fmt::format("prefill {} tokens", o.prefill_tokens), speed->prefill_tps};
  double triangle = 0;  // positions attended over the prompt: ~P^2 / 2 without windows
  for (int64_t p = 1; p <= o.prefill_tokens; ++p) triangle += cost.attended_positions(p);
  // Every token of the prompt goes through every matrix but the output
  // head, which only the last one's logits need.
  const double prompt_matmul_flops = P * (cost.matmul_flops - cost.output_flops) + cost.output_flops;
  const double prompt_int8_flops = P * (cost.int8_matmul_flops - (cost.output_quantized ? cost.output_flops : 0)) +
                                   (cost.output_quantized ? cost.output_flops : 0);
  const double prefill_flops = prompt_matmul_flops + cost.attention_flops_per_position * triangle;
  const double prefill_bytes = cost.weight_bytes + cost.kv_bytes_per_position * triangle;
  // Seconds of arithmetic for `flops`, of which `int8` run in the int8
  // dot-product kernels (quantized weights) and the rest in FP32.
  const auto compute_seconds = [&m](double flops, double int8) {
    return int8 / m.peak_int8_ops + (flops - int8) / m.peak_flops;
  };
  prefill.memory_bound = m.memory_bandwidth / (prefill_bytes / P);
  prefill.compute_bound = P / compute_seconds(prefill_flops, prompt_int8_flops);
  prefill.intensity = prefill_flops / prefill_bytes;
  Row decode{fmt::format("decode at {:.0f} context", ctx), speed->decode_tps};
  decode.memory_bound = m.memory_bandwidth / cost.decode_bytes(static_cast<int64_t>(ctx));
  decode.compute_bound = 1 / compute_seconds(cost.flops(static_cast<int64_t>(ctx)), cost.int8_matmul_flops);
  decode.intensity = cost.flops(static_cast<int64_t>(ctx)) / cost.decode_bytes(static_cast<int64_t>(ctx));

  const ModelConfig& c = loaded->model->config();
  print_limits(m);
  fmt::print("model {} ({} layers, {:.0f} M matmul parameters)\n", c.name.empty() ? c.architecture : c.name,
             c.n_layer, cost.matmul_flops / 2e6);
  fmt::print("  weights read per step   {:8.1f} MB\n", cost.weight_bytes / 1e6);
  fmt::print("  K/V per cached position {:8.1f} KB\n", cost.kv_bytes_per_position / 1e3);
  fmt::print("  FLOPs per token         {:8.1f} MFLOP + {:.1f} KFLOP per attended position\n", cost.matmul_flops / 1e6,
             cost.attention_flops_per_position / 1e3);
  fmt::print("\n  {:<24} {:>10} {:>10} {:>8} {:>9} {:>11}\n", "", "tokens/s", "bound", "of bound", "limit",
             "FLOP/byte");
  for (const Row& r : {prefill, decode}) {
    fmt::print("  {:<24} {:>10.1f} {:>10.1f} {:>7.0f}% {:>9} {:>11.1f}\n", r.name, r.achieved, r.bound(),
               100 * r.achieved / r.bound(), r.limit(), r.intensity);
  }
  if (!o.json_path.empty()) {
    auto row_json = [](const Row& r) {
      return nlohmann::json{{"tokens_per_s", r.achieved}, {"bound_tokens_per_s", r.bound()},
                            {"fraction_of_bound", r.achieved / r.bound()}, {"limit", r.limit()},
                            {"memory_bound_tokens_per_s", r.memory_bound},
                            {"compute_bound_tokens_per_s", r.compute_bound}, {"flop_per_byte", r.intensity}};
    };
    nlohmann::json j = limits_json(m);
    j.update({{"weight_bytes_per_step", cost.weight_bytes},
              {"kv_bytes_per_position", cost.kv_bytes_per_position},
              {"matmul_flops_per_token", cost.matmul_flops},
              {"attention_flops_per_position", cost.attention_flops_per_position},
              {"int8_matmul_flops_per_token", cost.int8_matmul_flops},
              {"prefill", row_json(prefill)},
              {"decode", row_json(decode)}});
    Status s = bench::write_file(o.json_path, j.dump(1) + "\n");
    if (!s.is_ok()) return fail(s);
  }
  return 0;
}

}  // namespace

CommandRunner add_roofline_command(CLI::App& app) {
  auto o = std::make_shared<RooflineOptions>();
  CLI::App* cmd = app.add_subcommand("roofline", "Machine limits, a token's cost, and prefill/decode against them");
  add_model_options(*cmd, o->model);
  add_kv_type_option(*cmd, o->model);
  cmd->add_option("--prefill-tokens", o->prefill_tokens, "Prompt length for the prefill figure (and decode context)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--decode-tokens", o->decode_tokens, "Tokens to decode")->capture_default_str()->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--repeats", o->repeats, "Runs to take the median of")->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--json", o->json_path, "Also write the figures here");
  cmd->add_flag("--limits-only", o->limits_only, "Measure and print the machine's ceilings only (no model loaded)");
  return [o] { return run_roofline(*o); };
}

}  // namespace omnibus::cli
