// The optimiser and what steers it: AdamW, the learning-rate schedule, gradient-norm clipping
// and the seeded order in which training windows are visited.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace infer::train {

struct AdamWOptions {
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  // Decoupled weight decay pulls every weight toward zero; a student initialised from the
  // teacher wants to stay near the teacher's weights, so the chapter's default is none.
  double weight_decay = 0.0;
};

// AdamW (Loshchilov & Hutter): per parameter, with t = steps taken so far + 1,
//   m = β1 m + (1 − β1) g,   v = β2 v + (1 − β2) g²,   m̂ = m / (1 − β1ᵗ),   v̂ = v / (1 − β2ᵗ)
//   θ −= lr · (m̂ / (√v̂ + ε) + λ θ)
class AdamW {
 public:
  explicit AdamW(AdamWOptions options = {}) : o_(options) {}
  // One update of params from grads; the moments are sized (zero) at the first call.
  void step(std::span<float> params, std::span<const float> grads, double lr);
  int steps_taken() const { return t_; }

 private:
  AdamWOptions o_;
  std::vector<float> m_, v_;
  int t_ = 0;
};

// Linear warm-up from peak/warmup to peak over `warmup` steps, then a cosine from peak down to
// peak·floor_ratio at step `total` (and flat after it).
struct LrSchedule {
  double peak = 3e-4;
  double floor_ratio = 0.1;
  int warmup = 10;
  int total = 100;
  double at(int step) const;  // step counts from 0
};

// Scales grads so that their Euclidean norm is at most max_norm; returns the norm before.
double clip_grad_norm(std::span<float> grads, double max_norm);

// 0 … n−1 in an order drawn from the seed (Fisher–Yates over std::mt19937_64, whose sequence
// the standard fixes — std::shuffle's use of it is left to each library).
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed);

}  // namespace infer::train
