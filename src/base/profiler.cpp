#include "base/profiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace omnibus {

const char* profile_op_name(ProfileOp op) {
  switch (op) {
    case ProfileOp::kForward: return "forward";
    case ProfileOp::kEmbed: return "embedding";
    case ProfileOp::kRmsNorm: return "rms_norm";
    case ProfileOp::kAttnQkv: return "attn_qkv";
    case ProfileOp::kAttnOutput: return "attn_output";
    case ProfileOp::kFfnGateUp: return "ffn_gate_up";
    case ProfileOp::kFfnDown: return "ffn_down";
    case ProfileOp::kMoeRouting: return "moe_routing";
    case ProfileOp::kOutput: return "output";
    case ProfileOp::kBias: return "bias";
    case ProfileOp::kRope: return "rope";
    case ProfileOp::kKvStore: return "kv_store";
    case ProfileOp::kAttention: return "attention";
    case ProfileOp::kFfnActivation: return "ffn_act";
    case ProfileOp::kResidual: return "residual_add";
    case ProfileOp::kSampling: return "sampling";
    case ProfileOp::kThreadWait: return "thread_wait";
    case ProfileOp::kWorkerIdle: return "worker_idle";
    case ProfileOp::kCount: break;
  }
  return "?";
}

const char* profile_phase_name(ProfilePhase phase) {
  return phase == ProfilePhase::kPrefill ? "prefill" : "decode";
}

void Profiler::enable(size_t max_events) {
  stats_ = {};
  events_.clear();
  // reserve() only maps address space; pages are touched as events arrive.
  events_.reserve(max_events);
  max_events_ = max_events;
  dropped_ = 0;
  origin_ = std::chrono::steady_clock::now();
  enabled_ = true;
}

void Profiler::record(ProfileOp op, int64_t start_ns, int64_t end_ns, int64_t wait_ns) {
  if (!enabled_) return;
  const int64_t ns = end_ns - start_ns;
  OpStats& s = stats_[static_cast<int>(phase_)][static_cast<int>(op)];
  ++s.calls;
  s.total_ns += ns;
  s.wait_ns += wait_ns;
  if (events_.size() < max_events_) {
    events_.push_back({start_ns, ns, op, phase_});
  } else {
    ++dropped_;
  }
}

void Profiler::add_time(ProfileOp op, int64_t ns, int64_t calls) {
  if (!enabled_) return;
  OpStats& s = stats_[static_cast<int>(phase_)][static_cast<int>(op)];
  s.calls += calls;
  s.total_ns += ns;
}

namespace {

struct TableRow {
  const char* name;
  int64_t calls;
  int64_t ns;
  int64_t wait_ns = -1;  // -1: no wait column for this row
};

void append_row(std::string& out, const TableRow& r, double denominator_ns) {
  const double ms = r.ns * 1e-6;
  const double share = denominator_ns > 0 ? 100.0 * r.ns / denominator_ns : 0.0;
  const double us_per_call = r.calls > 0 ? r.ns * 1e-3 / r.calls : 0.0;
  out += fmt::format("  {:<14} {:>8} {:>11.3f} {:>6.1f} {:>10.2f}", r.name, r.calls, ms, share, us_per_call);
  if (r.wait_ns >= 0) {
    const double wait_share = r.ns > 0 ? 100.0 * r.wait_ns / r.ns : 0.0;
    out += fmt::format(" {:>9.3f} {:>6.1f}", r.wait_ns * 1e-6, wait_share);
  }
  out += "\n";
}

}  // namespace

std::string Profiler::format_table() const {
  std::string out;
  for (int p = 0; p < kProfilePhaseCount; ++p) {
    const auto& s = stats_[p];
    const OpStats& forward = s[static_cast<int>(ProfileOp::kForward)];
    const OpStats& sampling = s[static_cast<int>(ProfileOp::kSampling)];
    if (forward.calls == 0 && sampling.calls == 0) continue;
    std::vector<TableRow> rows;
    int64_t covered_ns = 0;
    const OpStats& wait = s[static_cast<int>(ProfileOp::kThreadWait)];
    // Per-op waits are shown when the run counted waits and the ops carry them.
    bool per_op_waits = false;
    for (int op = 0; op < kProfileOpCount; ++op)
      per_op_waits |= op != static_cast<int>(ProfileOp::kForward) && s[op].wait_ns > 0;
    for (int op = 0; op < kProfileOpCount; ++op) {
      const auto kind = static_cast<ProfileOp>(op);
      if (kind == ProfileOp::kForward || kind == ProfileOp::kThreadWait || kind == ProfileOp::kWorkerIdle ||
          s[op].calls == 0)
        continue;
      rows.push_back({profile_op_name(kind), s[op].calls, s[op].total_ns, per_op_waits ? s[op].wait_ns : -1});
      if (kind != ProfileOp::kSampling) covered_ns += s[op].total_ns;
    }
    rows.push_back({"other", forward.calls, std::max<int64_t>(0, forward.total_ns - covered_ns)});
    std::stable_sort(rows.begin(), rows.end(), [](const TableRow& a, const TableRow& b) { return a.ns > b.ns; });
    const double total_ns = static_cast<double>(forward.total_ns + sampling.total_ns);
    out += fmt::format("profile: {}: {} forward calls, {:.3f} ms forward + {:.3f} ms sampling\n",
                       profile_phase_name(static_cast<ProfilePhase>(p)), forward.calls, forward.total_ns * 1e-6,
                       sampling.total_ns * 1e-6);
    out += fmt::format("  {:<14} {:>8} {:>11} {:>6} {:>10}", "op", "calls", "total ms", "%", "us/call");
    out += per_op_waits ? fmt::format(" {:>9} {:>6}\n", "wait ms", "wait%") : "\n";
    for (const TableRow& r : rows) append_row(out, r, total_ns);
    append_row(out, {"total", forward.calls, forward.total_ns + sampling.total_ns}, total_ns);
    if (per_op_waits)
      out += "  (wait: thread 0 idle inside the op until the other workers finish their share;\n"
             "   load imbalance plus hand-off latency; wait% is of the op's own time)\n";
    if (wait.calls > 0) {
      out += "  (thread 0 waiting for the other workers; already inside the rows above)\n";
      append_row(out, {"thread_wait", wait.calls, wait.total_ns}, total_ns);
    }
    const OpStats& idle = s[static_cast<int>(ProfileOp::kWorkerIdle)];
    if (idle.calls > 0) {
      out += "  (the other workers outside jobs while the forward calls ran, per worker: thread 0's\n"
             "   serial ops between jobs, hand-offs, and jobs where they finished first)\n";
      append_row(out, {"worker_idle", idle.calls, idle.total_ns}, total_ns);
    }
  }
  if (dropped_ > 0) out += fmt::format("profile: trace buffer full, {} events not in the trace\n", dropped_);
  if (out.empty()) out = "profile: nothing recorded\n";
  return out;
}

void Profiler::write_trace(std::FILE* out) const {
  fmt::print(out, "{{\"displayTimeUnit\":\"ms\",\"otherData\":{{\"dropped_events\":{}}},\"traceEvents\":[\n", dropped_);
  fmt::print(out, "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{{\"name\":\"omnibus\"}}}}");
  fmt::print(out, ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{{\"name\":\"engine\"}}}}");
  for (const Event& e : events_) {
    // Nanosecond events become fractional microseconds, as the format allows.
    fmt::print(out, ",\n{{\"name\":\"{}\",\"cat\":\"{}\",\"ph\":\"X\",\"ts\":{:.3f},\"dur\":{:.3f},\"pid\":1,\"tid\":0}}",
               profile_op_name(e.op), profile_phase_name(e.phase), e.start_ns * 1e-3, e.duration_ns * 1e-3);
  }
  fmt::print(out, "\n]}}\n");
}

Status Profiler::write_trace_file(const std::string& path) const {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return Status::io_error("cannot write the trace to '" + path + "': " + std::strerror(errno));
  write_trace(f);
  const bool failed = std::ferror(f) != 0;
  if (std::fclose(f) != 0 || failed) return Status::io_error("error while writing the trace to '" + path + "'");
  return Status::ok();
}

}  // namespace omnibus
