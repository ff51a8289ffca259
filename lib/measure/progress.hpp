// A one-line progress bar for long work (sweeps, evaluation, training). It draws only when
// stderr is a terminal, so logs and CI output stay clean.
#pragma once

#include <cstdint>
#include <string>

#include "measure/timing.hpp"

namespace infer {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();  // finishes the line
  void advance(int64_t steps = 1);
  void done();

 private:
  void draw();
  std::string label_;
  int64_t total_, current_ = 0;
  bool enabled_, finished_ = false;
  Stopwatch clock_;
  double last_draw_ = -1;
};

}  // namespace infer
