#include "adamw.hpp"
#include "train_kernels.hpp"  // kParallelMin

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>
#include <utility>

#include "tensor/thread_pool.hpp"

namespace infer::train {

// the-change: begin AdamW::step
void AdamW::step(std::span<float> params, std::span<const float> grads, double lr) {
  if (grads.size() != params.size()) throw std::invalid_argument("AdamW: parameters and gradients differ in size");
  if (m_.size() != params.size()) m_.assign(params.size(), 0.0f), v_.assign(params.size(), 0.0f);
  ++t_;
  const double bias1 = 1.0 - std::pow(o_.beta1, t_), bias2 = 1.0 - std::pow(o_.beta2, t_);
  const float b1 = static_cast<float>(o_.beta1), b2 = static_cast<float>(o_.beta2);
  const int64_t n = std::ssize(params);
  parallel_for(n, (n >= kParallelMin) ? balanced_grain(n, 4096) : n, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const float g = grads[i];
      m_[i] = b1 * m_[i] + (1.0f - b1) * g;
      v_[i] = b2 * v_[i] + (1.0f - b2) * g * g;
      const double m_hat = m_[i] / bias1, v_hat = v_[i] / bias2;
      params[i] -= static_cast<float>(lr * (m_hat / (std::sqrt(v_hat) + o_.eps) + o_.weight_decay * params[i]));
    }
  });
}
// the-change: end AdamW::step

double LrSchedule::at(int step) const {
  if (step < warmup) return peak * (step + 1) / warmup;
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / std::max(1, total - warmup));
  const double floor = peak * floor_ratio;
  return floor + (peak - floor) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

double clip_grad_norm(std::span<float> grads, double max_norm) {
  double sum_sq = 0.0;  // one thread, in order: the same gradients give the same bits
  for (float g : grads) sum_sq += static_cast<double>(g) * g;
  const double norm = std::sqrt(sum_sq);
  if (norm > max_norm && norm > 0) {
    const float scale = static_cast<float>(max_norm / norm);
    for (float& g : grads) g *= scale;
  }
  return norm;
}

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(std::max<int64_t>(n, 0));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[rng() % static_cast<uint64_t>(i + 1)]);
  return order;
}

}  // namespace infer::train
