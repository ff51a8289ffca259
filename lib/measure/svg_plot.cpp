#include "measure/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "measure/atomic_file.hpp"

namespace infer {
namespace {

constexpr double kWidth = 640, kHeight = 400;
constexpr double kLeft = 84, kRight = 20, kTop = 40, kBottom = 55;  // margins around the plot area
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                         "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"};
constexpr const char* kReferenceColor = "#555555";
constexpr double kLegendRow = 18, kCharWidth = 7;  // legend row height; a character's width at 12 px, generously

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return out;
}

// Tick values: 1-2-5 steps for a linear axis from 0; for a log axis powers of two over a short
// range, 1-2-5 × 10^k over a long one.
std::vector<double> ticks(double lo, double hi, bool log) {
  std::vector<double> out;
  if (log && hi / lo <= 4096) {  // a short log range: powers of two
    for (double t = std::pow(2, std::ceil(std::log2(lo * 0.999))); t <= hi * 1.001; t *= 2) out.push_back(t);
    return out;
  }
  if (log) {
    for (double decade = std::pow(10, std::floor(std::log10(lo))); decade <= hi; decade *= 10)
      for (double m : {1.0, 2.0, 5.0})
        if (m * decade >= lo * 0.999 && m * decade <= hi * 1.001) out.push_back(m * decade);
    return out;
  }
  const double raw = hi / 5, mag = std::pow(10, std::floor(std::log10(raw)));
  const double step = raw / mag <= 1 ? mag : raw / mag <= 2 ? 2 * mag : raw / mag <= 5 ? 5 * mag : 10 * mag;
  for (double t = 0; t <= hi * 1.0001; t += step) out.push_back(t);
  return out;
}

}  // namespace

LinePlot::LinePlot(std::string title, std::string x_label, std::string y_label)
    : title_(std::move(title)), x_label_(std::move(x_label)), y_label_(std::move(y_label)) {}

void LinePlot::add_series(std::string name, std::vector<double> xs, std::vector<double> ys, SeriesStyle style) {
  if (xs.size() != ys.size() || xs.empty()) throw std::invalid_argument("LinePlot: series '" + name + "' needs equal, non-empty xs and ys");
  if (log_x_ && *std::min_element(xs.begin(), xs.end()) <= 0) throw std::invalid_argument("LinePlot: log-x needs x > 0");
  if (log_y_ && *std::min_element(ys.begin(), ys.end()) <= 0) throw std::invalid_argument("LinePlot: log-y needs y > 0");
  series_.push_back({std::move(name), std::move(xs), std::move(ys), style});
}

std::string LinePlot::svg() const {
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = 0;
  for (const Series& s : series_) {
    x_lo = std::min(x_lo, *std::min_element(s.xs.begin(), s.xs.end()));
    x_hi = std::max(x_hi, *std::max_element(s.xs.begin(), s.xs.end()));
    y_lo = std::min(y_lo, *std::min_element(s.ys.begin(), s.ys.end()));
    y_hi = std::max(y_hi, *std::max_element(s.ys.begin(), s.ys.end()));
  }
  if (series_.empty()) x_lo = 1, x_hi = 10, y_lo = 1;
  if (x_hi <= x_lo) x_hi = x_lo + 1;
  if (y_hi <= 0) y_hi = 1;
  std::vector<double> y_ticks;
  if (log_y_) {  // from the decade below the smallest y; a little headroom as a factor of the range
    y_lo = std::pow(10, std::floor(std::log10(y_lo)));
    y_hi = std::max(y_hi * 1.01, y_lo * 10);
    y_hi = y_lo * std::pow(y_hi / y_lo, 1.05);
    for (double t = y_lo; t <= y_hi * 1.001; t *= 10) y_ticks.push_back(t);
  } else {
    y_lo = 0;
    y_hi *= 1.08;
    y_ticks = ticks(0, y_hi, false);
    y_hi = std::max(y_hi, y_ticks.back());
  }
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  // The legend: below the axis title, in two columns when the names fit, so it never covers data.
  std::size_t longest = 0;
  for (const Series& s : series_) longest = std::max(longest, s.name.size());
  const double entry = 40 + kCharWidth * static_cast<double>(longest);
  const std::size_t columns = 2 * entry <= pw ? 2 : 1;
  const std::size_t rows = (series_.size() + columns - 1) / columns;
  const double height = kHeight + kLegendRow * static_cast<double>(rows) + 6;
  auto fx = [&](double x) { return log_x_ ? std::log(x / x_lo) / std::log(x_hi / x_lo) : (x - x_lo) / (x_hi - x_lo); };
  auto fy = [&](double y) { return log_y_ ? std::log(y / y_lo) / std::log(y_hi / y_lo) : y / y_hi; };
  auto px = [&](double x) { return kLeft + pw * fx(x); };
  auto py = [&](double y) { return kTop + ph * (1 - fy(y)); };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, height);
  // The plotted numbers themselves, for a reader that checks the figure against the run's record
  // (the course report's tests/report/check_report.py): each series' points at full precision,
  // and the axes' ranges and the plot area, so that every drawn point and tick can be recomputed.
  // <metadata> is never rendered: the figure looks the same with it.
  nlohmann::json data{{"title", title_}, {"x_label", x_label_}, {"y_label", y_label_}, {"log_x", log_x_}, {"log_y", log_y_},
                      {"x_range", {x_lo, x_hi}}, {"y_range", {y_lo, y_hi}},
                      {"area", {{"left", kLeft}, {"top", kTop}, {"width", pw}, {"height", ph}}}, {"series", nlohmann::json::array()}};
  for (const Series& s : series_)
    data["series"].push_back({{"name", s.name},
                              {"style", s.style.reference ? "reference" : s.style.dashed ? "predicted" : "measured"},
                              {"x", s.xs}, {"y", s.ys}});
  out += "<metadata id=\"plot-data\">" + escape(data.dump()) + "</metadata>\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // The title: one line, or two when it would not fit the width (split before its last "(", or
  // at the last space that fits), both inside the top margin.
  auto chars = [](const std::string& s) {
    return static_cast<double>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
  };
  std::vector<std::string> title_lines{title_};
  const double fits = (kWidth - 20) / 8.4;  // characters of 14 px
  if (chars(title_) > fits) {
    std::size_t cut = title_.rfind(" (");
    if (cut == std::string::npos || chars(title_.substr(0, cut)) > fits || chars(title_.substr(cut + 1)) > fits)
      for (cut = title_.find(' '); cut != std::string::npos;) {
        const std::size_t next = title_.find(' ', cut + 1);
        if (next == std::string::npos || chars(title_.substr(0, next)) > fits) break;
        cut = next;
      }
    if (cut != std::string::npos) title_lines = {title_.substr(0, cut), title_.substr(cut + 1)};
  }
  for (std::size_t i = 0; i < title_lines.size(); ++i)
    out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n", kWidth / 2,
                       title_lines.size() == 1 ? 22 : 16 + 17 * static_cast<int>(i), escape(title_lines[i]));
  for (double t : y_ticks)  // horizontal grid lines with labels
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\" data-tick=\"y\">{5:g}</text>\n",
                       kLeft, kLeft + pw, py(t), kLeft - 8, py(t) + 4, t);
  for (double t : ticks(x_lo, x_hi, log_x_))  // vertical grid lines with labels, within the axis
    if (t >= x_lo * (1 - 1e-9) && t <= x_hi * (1 + 1e-9))
      out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#ddd\"/>"
                         "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\" data-tick=\"x\">{4:g}</text>\n",
                         px(t), kTop, kTop + ph, kTop + ph + 18, t);
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", kLeft, kTop, pw, ph);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2, kHeight - 18,
                     escape(x_label_ + (log_x_ ? " (log scale)" : "")));
  out += fmt::format("<text transform=\"translate(16 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", kTop + ph / 2,
                     escape(y_label_ + (log_y_ ? " (log scale)" : "")));
  for (std::size_t i = 0; i < series_.size(); ++i) {
    const Series& s = series_[i];
    const std::size_t c = s.style.color >= 0 ? static_cast<std::size_t>(s.style.color) : i;
    const char* color = s.style.reference ? kReferenceColor : kColors[c % std::size(kColors)];
    const std::string dash = s.style.reference ? " stroke-dasharray=\"2 4\"" : s.style.dashed ? " stroke-dasharray=\"7 4\"" : "";
    std::string points;
    for (std::size_t j = 0; j < s.xs.size(); ++j) points += fmt::format("{:.1f},{:.1f} ", px(s.xs[j]), py(s.ys[j]));
    out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"{} data-series=\"{}\"/>\n",
                       points, color, dash, i);
    const std::string marker = s.style.dashed ? fmt::format("fill=\"white\" stroke=\"{}\" stroke-width=\"1.5\"", color)
                                              : fmt::format("fill=\"{}\"", color);
    for (std::size_t j = 0; j < s.xs.size() && !s.style.reference; ++j)
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" {} data-series=\"{}\"/>\n", px(s.xs[j]), py(s.ys[j]),
                         marker, i);
    const double lx = kLeft + static_cast<double>(i % columns) * entry, ly = kHeight + kLegendRow * static_cast<double>(i / columns);
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"2\"{4}/>"
                       "<text x=\"{5}\" y=\"{6}\">{7}</text>\n",
                       lx, lx + 28, ly, color, dash, lx + 34, ly + 4, escape(s.name));
  }
  return out + "</svg>\n";
}

void LinePlot::write(const std::string& path) const { write_file_atomically(path, svg()); }

}  // namespace infer
