#include "bench/slo.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace omnibus::bench {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string format_ms(double seconds) { return fmt::format("{:g}ms", seconds * 1e3); }

}  // namespace

Result<double> parse_duration_seconds(std::string_view text) {
  text = trim(text);
  double scale = 1e-3;
  if (text.ends_with("ms")) {
    text.remove_suffix(2);
  } else if (text.ends_with("us")) {
    text.remove_suffix(2);
    scale = 1e-6;
  } else if (text.ends_with("s")) {
    text.remove_suffix(1);
    scale = 1;
  }
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value) || value <= 0) {
    return Status::invalid_argument(fmt::format("'{}' is not a positive duration (e.g. 500ms, 2s)", text));
  }
  return value * scale;
}

Result<Slo> parse_slo(std::string_view text) {
  Slo slo;
  while (!trim(text).empty()) {
    const size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return Status::invalid_argument(fmt::format("SLO item '{}' is not NAME=DURATION (e.g. ttft=500ms)", item));
    }
    const std::string_view name = trim(item.substr(0, eq));
    Result<double> seconds = parse_duration_seconds(item.substr(eq + 1));
    if (!seconds.is_ok()) return seconds.status().with_context(fmt::format("SLO '{}'", name));
    std::optional<double>* slot = name == "ttft" ? &slo.ttft_s
                                  : name == "tpot" ? &slo.tpot_s
                                  : name == "itl"  ? &slo.itl_s
                                  : name == "e2e"  ? &slo.e2e_s
                                                   : nullptr;
    if (!slot) return Status::invalid_argument(fmt::format("unknown SLO '{}' (know: ttft, tpot, itl, e2e)", name));
    if (slot->has_value()) return Status::invalid_argument(fmt::format("SLO '{}' given twice", name));
    *slot = *seconds;
  }
  return slo;
}

bool Slo::met_by(const RequestRecord& r) const {
  if (!r.ok) return false;
  if (ttft_s && !(r.ttft() >= 0 && r.ttft() <= *ttft_s)) return false;
  if (tpot_s && r.tpot() > *tpot_s) return false;
  if (e2e_s && r.e2e() > *e2e_s) return false;
  if (itl_s) {
    for (double gap : r.itls())
      if (gap > *itl_s) return false;
  }
  return true;
}

std::string Slo::describe() const {
  std::string out;
  auto add = [&](const char* name, const std::optional<double>& v) {
    if (!v) return;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}<={}", name, format_ms(*v));
  };
  add("ttft", ttft_s);
  add("tpot", tpot_s);
  add("itl", itl_s);
  add("e2e", e2e_s);
  return out.empty() ? "none" : out;
}

}  // namespace omnibus::bench
