// A tiny line-plot writer: a few named series of (x, y) points, drawn as an SVG file with axes,
// tick labels, axis titles and a legend below the plot (never over the data). Enough for "how
// does this grow" plots without a plotting dependency; any browser shows the file.
// A series may share another's colour with a dashed line (measured vs predicted), or be a
// reference (grey, dotted, no markers: a baseline such as "plain decoding, 1×").
// The file also carries the plotted numbers, unrendered: a <metadata id="plot-data"> element holds
// JSON with each series' name, style and points at full precision, the axes' ranges and the plot
// area; each polyline and marker names its series (data-series="i") and each tick label its axis
// (data-tick="x" or "y"). The course report's check (tests/report/check_report.py) compares the
// points with the run's record and every drawn point and tick with the points.
#pragma once

#include <string>
#include <vector>

namespace infer {

struct SeriesStyle {
  int color = -1;          // index into the palette; -1: the series' own (its position)
  bool dashed = false;     // dashed line, hollow markers: a prediction beside its measurement
  bool reference = false;  // grey dotted line without markers: a baseline
};

class LinePlot {
 public:
  LinePlot(std::string title, std::string x_label, std::string y_label);
  void set_log_x(bool log_x) { log_x_ = log_x; }  // x axis on a log scale (every x must be > 0)
  void set_log_y(bool log_y) { log_y_ = log_y; }  // y axis on a log scale (every y must be > 0)
  void add_series(std::string name, std::vector<double> xs, std::vector<double> ys, SeriesStyle style = {});

  std::string svg() const;                 // the whole document
  void write(const std::string& path) const;  // throws std::runtime_error if it cannot write

 private:
  struct Series {
    std::string name;
    std::vector<double> xs, ys;
    SeriesStyle style;
  };
  std::string title_, x_label_, y_label_;
  bool log_x_ = false, log_y_ = false;
  std::vector<Series> series_;
};

}  // namespace infer
