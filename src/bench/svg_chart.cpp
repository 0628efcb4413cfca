#include "bench/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

namespace omnibus::bench {
namespace {

constexpr std::array<const char*, 8> kPalette = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                                 "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr double kWidth = 560, kHeight = 320;
constexpr double kLeft = 64, kRight = 16, kTop = 32, kBottom = 48;

// A "nice" tick step (1, 2 or 5 × 10^k) giving about `target` ticks.
double nice_step(double span, int target) {
  if (!(span > 0)) return 1;
  const double raw = span / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) return m * power;
  return 10 * power;
}

struct Axis {
  double lo = 0, hi = 1, step = 1;
};

Axis axis_for(double lo, double hi) {
  if (!(hi > lo)) hi = lo + 1;
  Axis a;
  a.step = nice_step(hi - lo, 5);
  a.lo = std::floor(lo / a.step) * a.step;
  a.hi = std::ceil(hi / a.step) * a.step;
  return a;
}

std::string tick_label(double v) { return fmt::format("{:g}", std::abs(v) < 1e-12 ? 0.0 : v); }

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_svg_chart(const ChartSpec& chart) {
  double x_lo = std::numeric_limits<double>::infinity(), x_hi = -x_lo, y_hi = 0;
  for (const Series& s : chart.series) {
    for (auto [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x_lo = std::min(x_lo, x);
      x_hi = std::max(x_hi, x);
      y_hi = std::max(y_hi, y);
    }
  }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1;
  const Axis xa = axis_for(std::min(x_lo, 0.0), x_hi);
  const Axis ya = axis_for(0, y_hi);
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - xa.lo) / (xa.hi - xa.lo) * pw; };
  auto py = [&](double y) { return kTop + ph - (y - ya.lo) / (ya.hi - ya.lo) * ph; };

  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n"
      "<text x=\"{2}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">{3}</text>\n",
      kWidth, kHeight, kWidth / 2, xml_escape(chart.title));
  for (double x = xa.lo; x <= xa.hi + xa.step / 2; x += xa.step) {
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>\n",
                       px(x), kTop, kTop + ph, kTop + ph + 14, tick_label(x));
  }
  for (double y = ya.lo; y <= ya.hi + ya.step / 2; y += ya.step) {
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                       kLeft, py(y), kLeft + pw, kLeft - 4, py(y) + 4, tick_label(y));
  }
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#888\"/>\n", kLeft,
                     kTop, pw, ph);
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2, kHeight - 8,
                     xml_escape(chart.x_label));
  svg += fmt::format("<text x=\"14\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 14 {0})\">{1}</text>\n",
                     kTop + ph / 2, xml_escape(chart.y_label));
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    const char* color = kPalette[i % kPalette.size()];
    if (s.scatter) {
      for (auto [x, y] : s.points) {
        if (std::isfinite(x) && std::isfinite(y)) {
          svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\" fill-opacity=\"0.7\"/>\n", px(x),
                             py(y), color);
        }
      }
    } else if (!s.points.empty()) {
      std::string path;
      for (auto [x, y] : s.points) {
        if (!std::isfinite(x) || !std::isfinite(y)) continue;
        path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", px(x), py(y));
      }
      svg += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\"/>\n", path, color);
    }
    // Legend, top-left inside the plot.
    const double ly = kTop + 14 + 14 * static_cast<double>(i);
    svg += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                       "<text x=\"{}\" y=\"{:.1f}\">{}</text>\n",
                       kLeft + 8, ly - 9, color, kLeft + 22, ly, xml_escape(s.name));
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace omnibus::bench
