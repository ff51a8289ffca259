// Draws a plot with lib's SVG plotter (lib/measure/svg_plot) from points given on stdin, so that
// tests/report/test_own_plots.py can check the course report's comparison of a binary's own plot
// with its record (check_report.py's check_own_plots) on a file the real plotter wrote.
//
//     svg_plot_sample OUT.svg [--log-x] [--log-y] < series
//
// One curve per line of stdin, four tab-separated fields: its name, its style ("measured",
// "predicted" or "reference"), its x values and its y values (each separated by spaces).
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "measure/svg_plot.hpp"

namespace {

std::vector<double> numbers(const std::string& field) {
  std::istringstream in(field);
  std::vector<double> out;
  for (double v; in >> v;) out.push_back(v);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: svg_plot_sample OUT.svg [--log-x] [--log-y] < series\n";
    return 2;
  }
  infer::LinePlot plot("A made-up sweep (a test of the course report's check)", "prompt length P, tokens",
                       "milliseconds per token");
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--log-x") plot.set_log_x(true);
    else if (flag == "--log-y") plot.set_log_y(true);
    else {
      std::cerr << "svg_plot_sample: unknown option " << flag << "\n";
      return 2;
    }
  }
  int colour = 0;
  for (std::string line; std::getline(std::cin, line);) {
    std::vector<std::string> fields;
    std::istringstream in(line);
    for (std::string f; std::getline(in, f, '\t');) fields.push_back(f);
    if (fields.size() != 4) {
      std::cerr << "svg_plot_sample: a line needs 4 tab-separated fields: " << line << "\n";
      return 2;
    }
    const bool predicted = fields[1] == "predicted", reference = fields[1] == "reference";
    plot.add_series(fields[0], numbers(fields[2]), numbers(fields[3]),
                    {.color = predicted ? colour - 1 : colour, .dashed = predicted, .reference = reference});
    if (!predicted) ++colour;
  }
  plot.write(argv[1]);
  return 0;
}
