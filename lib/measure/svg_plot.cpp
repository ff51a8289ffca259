#include "measure/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/atomic_file.hpp"

namespace infer {
namespace {

constexpr double kWidth = 640, kHeight = 400;
constexpr double kLeft = 70, kRight = 20, kTop = 40, kBottom = 55;  // margins around the plot area
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd"};

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

void LinePlot::add_series(std::string name, std::vector<double> xs, std::vector<double> ys) {
  if (xs.size() != ys.size() || xs.empty()) throw std::invalid_argument("LinePlot: series '" + name + "' needs equal, non-empty xs and ys");
  if (log_x_ && *std::min_element(xs.begin(), xs.end()) <= 0) throw std::invalid_argument("LinePlot: log-x needs x > 0");
  if (log_y_ && *std::min_element(ys.begin(), ys.end()) <= 0) throw std::invalid_argument("LinePlot: log-y needs y > 0");
  series_.push_back({std::move(name), std::move(xs), std::move(ys)});
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
  const double legend = 1.1 + 0.08 * static_cast<double>(series_.size());  // headroom for the legend
  std::vector<double> y_ticks;
  if (log_y_) {  // from the decade below the smallest y; the headroom as a factor of the range
    y_lo = std::pow(10, std::floor(std::log10(y_lo)));
    y_hi = std::max(y_hi * 1.01, y_lo * 10);
    y_hi = y_lo * std::pow(y_hi / y_lo, legend);
    for (double t = y_lo; t <= y_hi * 1.001; t *= 10) y_ticks.push_back(t);
  } else {
    y_lo = 0;
    y_hi *= legend;
    y_ticks = ticks(0, y_hi, false);
    y_hi = std::max(y_hi, y_ticks.back());
  }
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto fx = [&](double x) { return log_x_ ? std::log(x / x_lo) / std::log(x_hi / x_lo) : (x - x_lo) / (x_hi - x_lo); };
  auto fy = [&](double y) { return log_y_ ? std::log(y / y_lo) / std::log(y_hi / y_lo) : y / y_hi; };
  auto px = [&](double x) { return kLeft + pw * fx(x); };
  auto py = [&](double y) { return kTop + ph * (1 - fy(y)); };

  std::string out = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, kHeight);
  out += fmt::format("<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">{}</text>\n", kWidth / 2, escape(title_));
  for (double t : y_ticks)  // horizontal grid lines with labels
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5:g}</text>\n",
                       kLeft, kLeft + pw, py(t), kLeft - 6, py(t) + 4, t);
  for (double t : ticks(x_lo, x_hi, log_x_))  // vertical grid lines with labels
    out += fmt::format("<line x1=\"{0:.1f}\" x2=\"{0:.1f}\" y1=\"{1}\" y2=\"{2}\" stroke=\"#ddd\"/>"
                       "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
                       px(t), kTop, kTop + ph, kTop + ph + 16, t);
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"black\"/>\n", kLeft, kTop, pw, ph);
  out += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", kLeft + pw / 2, kHeight - 12,
                     escape(x_label_ + (log_x_ ? " (log scale)" : "")));
  out += fmt::format("<text transform=\"translate(18 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", kTop + ph / 2,
                     escape(y_label_ + (log_y_ ? " (log scale)" : "")));
  for (std::size_t i = 0; i < series_.size(); ++i) {
    const Series& s = series_[i];
    const char* color = kColors[i % std::size(kColors)];
    std::string points;
    for (std::size_t j = 0; j < s.xs.size(); ++j) points += fmt::format("{:.1f},{:.1f} ", px(s.xs[j]), py(s.ys[j]));
    out += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", points, color);
    for (std::size_t j = 0; j < s.xs.size(); ++j)
      out += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(s.xs[j]), py(s.ys[j]), color);
    const double ly = kTop + 16 + 18 * static_cast<double>(i);  // legend, top left inside the plot
    out += fmt::format("<line x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"2\"/>"
                       "<text x=\"{4}\" y=\"{5}\">{6}</text>\n",
                       kLeft + 10, kLeft + 34, ly, color, kLeft + 40, ly + 4, escape(s.name));
  }
  return out + "</svg>\n";
}

void LinePlot::write(const std::string& path) const { write_file_atomically(path, svg()); }

}  // namespace infer
