// Line and scatter charts as standalone SVG text (no scripts, no network),
// for the HTML report.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace omnibus::bench {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
  bool scatter = false;                           // dots instead of a line
};

struct ChartSpec {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<Series> series;
};

// An SVG element; colours come from a fixed palette in series order.
std::string render_svg_chart(const ChartSpec& chart);

// Escapes &, <, >, " for XML/HTML text and attributes.
std::string xml_escape(const std::string& text);

}  // namespace omnibus::bench
