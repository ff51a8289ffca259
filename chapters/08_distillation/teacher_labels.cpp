#include "teacher_labels.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/progress.hpp"

namespace infer::train {

double TeacherLabels::kept_mass(int64_t i) const {
  double sum = 0.0;
  for (int j = 0; j < k; ++j) sum += std::exp(static_cast<double>(logits[i * k + j]) - lse[i]);
  return sum;
}

int TeacherLabels::temperature_index(double T) const {
  for (std::size_t t = 0; t < temperatures.size(); ++t)
    if (temperatures[t] == static_cast<float>(T)) return static_cast<int>(t);
  return -1;
}

double TeacherLabels::tail_mass(int64_t i, int t) const {
  // p_tail = exp(tail) / (Σ_kept exp(z_j / T) + exp(tail)), stabilised by the larger of the two
  const double T = temperatures[t], tail = tail_lse[i * std::ssize(temperatures) + t];
  const double m = std::max(static_cast<double>(logits[i * k]) / T, tail);
  double kept = 0.0;
  for (int j = 0; j < k; ++j) kept += std::exp(logits[i * k + j] / T - m);
  const double rest = std::exp(tail - m);
  return rest / (kept + rest);
}

void TeacherLabels::append(int32_t token, const float* z) {
  double m = -INFINITY, sum = 0.0;
  for (int v = 0; v < vocab_size; ++v) m = std::max(m, static_cast<double>(z[v]));
  for (int v = 0; v < vocab_size; ++v) sum += std::exp(z[v] - m);
  std::vector<int32_t> order(vocab_size);
  std::iota(order.begin(), order.end(), 0);
  // the k largest, largest first (ties: the lower id), without sorting all V; order[k…V) is the tail
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [z](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
  tokens.push_back(token);
  lse.push_back(static_cast<float>(m + std::log(sum)));
  for (int j = 0; j < k; ++j) {
    ids.push_back(order[j]);
    logits.push_back(z[order[j]]);
  }
  // The tail's log Σ exp(z_v / T), summed over the tail itself (never as "all minus kept", which
  // loses every digit when the kept tokens hold nearly all of the mass).
  for (const float T : temperatures) {
    double tail_max = -INFINITY, tail_sum = 0.0;
    for (int j = k; j < vocab_size; ++j) tail_max = std::max(tail_max, z[order[j]] / static_cast<double>(T));
    for (int j = k; j < vocab_size; ++j) tail_sum += std::exp(z[order[j]] / static_cast<double>(T) - tail_max);
    tail_lse.push_back(k < vocab_size ? static_cast<float>(tail_max + std::log(tail_sum)) : -INFINITY);
  }
}

TeacherLabels teacher_pass(Llama& teacher, std::span<const int32_t> tokens, int window, int k,
                           std::span<const double> temperatures, const std::string& progress_label) {
  const LlamaConfig& c = teacher.config();
  if (window < 2 || window > c.context_length || k < 1 || k > c.vocab_size)
    throw std::invalid_argument(fmt::format("teacher pass: window {} outside 2…{} or k {} outside 1…{}", window,
                                            c.context_length, k, c.vocab_size));
  TeacherLabels t;
  t.k = k, t.vocab_size = c.vocab_size, t.window = window;
  for (double T : temperatures) {
    if (!(T > 0) || !std::isfinite(T) || t.temperature_index(T) >= 0 || t.temperatures.size() == kMaxTemperatures)
      throw std::invalid_argument(fmt::format("teacher pass: temperatures {} must be positive, distinct and at most {}",
                                              fmt::join(temperatures, ", "), kMaxTemperatures));
    t.temperatures.push_back(static_cast<float>(T));
  }
  const int64_t n_windows = std::ssize(tokens) / window;
  std::unique_ptr<ProgressBar> bar;
  if (!progress_label.empty()) bar = std::make_unique<ProgressBar>(progress_label, n_windows * window);
  GroupedKvCache cache(c, window, teacher.device());
  constexpr int kChunk = 128;  // rows of logits per forward call: 128 × V floats = 25 MB
  for (int64_t w = 0; w < n_windows; ++w) {
    cache.clear();
    for (int c0 = 0; c0 < window; c0 += kChunk) {
      const int m = std::min(kChunk, window - c0);
      const auto chunk = tokens.subspan(w * window + c0, m);
      const Tensor logits = teacher.forward(chunk, c0, cache, /*all_logits=*/true).to(Device::cpu());
      for (int64_t i = 0; i < m; ++i) t.append(chunk[i], logits.host<float>() + i * c.vocab_size);
      if (bar) bar->advance(m);
    }
  }
  return t;
}

}  // namespace infer::train
