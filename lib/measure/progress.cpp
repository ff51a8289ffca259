#include "measure/progress.hpp"

#include <algorithm>
#include <cstdio>

#include <unistd.h>

#include <fmt/format.h>

namespace infer {

ProgressBar::ProgressBar(std::string label, int64_t total)
    : label_(std::move(label)), total_(std::max<int64_t>(total, 1)), enabled_(isatty(STDERR_FILENO) != 0) {
  draw();
}

ProgressBar::~ProgressBar() { done(); }

void ProgressBar::advance(int64_t steps) {
  current_ = std::min(total_, current_ + steps);
  // Redraw at most ten times a second.
  if (clock_.seconds() - last_draw_ > 0.1 || current_ == total_) draw();
}

void ProgressBar::draw() {
  if (!enabled_ || finished_) return;
  last_draw_ = clock_.seconds();
  constexpr int kWidth = 30;
  const double frac = static_cast<double>(current_) / static_cast<double>(total_);
  const int filled = static_cast<int>(frac * kWidth);
  const double eta = current_ > 0 ? last_draw_ / static_cast<double>(current_) * static_cast<double>(total_ - current_) : 0;
  fmt::print(stderr, "\r{} [{}{}] {}/{} {:.0f}s left ", label_, std::string(filled, '#'),
             std::string(kWidth - filled, '.'), current_, total_, eta);
  std::fflush(stderr);
}

void ProgressBar::done() {
  if (!enabled_ || finished_) return;
  current_ = total_;
  draw();
  finished_ = true;
  fmt::print(stderr, "\n");
}

}  // namespace infer
