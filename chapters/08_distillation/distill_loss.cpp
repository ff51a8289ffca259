#include "distill_loss.hpp"
#include "train_kernels.hpp"  // kParallelMin

#include <algorithm>
#include <cmath>
#include <iterator>  // std::ssize
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tensor/thread_pool.hpp"

namespace infer::train {
namespace {

// log Σ_i exp(x_i · scale), stabilised by the largest term.
template <class T>
double log_sum_exp(const T* x, int n, double scale) {
  double m = -INFINITY;
  for (int i = 0; i < n; ++i) m = std::max(m, x[i] * scale);
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += std::exp(x[i] * scale - m);
  return m + std::log(sum);
}

}  // namespace

template <class T>
double distillation_loss(const T* logits, int64_t N, int V, std::span<const int32_t> labels,
                         const SoftTargets* soft, const LossOptions& o, T* d_logits) {
  const double w_hard = o.labels == LabelKind::hard ? 1.0 : o.labels == LabelKind::soft ? 0.0 : o.hard_weight;
  const double w_soft = 1.0 - w_hard, tau = o.temperature;
  if (w_soft > 0 && (soft == nullptr || soft->k < 1 ||
                     std::ssize(soft->ids) != N * soft->k ||
                     soft->logits.size() != soft->ids.size()))
    throw std::invalid_argument(fmt::format("distillation_loss: soft labels need k ≥ 1 teacher ids and logits for each of {} rows", N));
  if (!(tau > 0)) throw std::invalid_argument(fmt::format("distillation_loss: temperature {} must be positive", tau));
  if (std::ssize(labels) != N) throw std::invalid_argument("distillation_loss: one label per row");

  int scored = 0;
  for (int32_t y : labels) {
    if (y >= V) throw std::invalid_argument(fmt::format("distillation_loss: label {} outside the vocabulary of {}", y, V));
    scored += y >= 0 ? 1 : 0;
  }
  const double inv_count = scored > 0 ? 1.0 / scored : 0.0;
  std::vector<double> row_loss(N, 0.0);  // summed in order below: same run, same bits

  parallel_for(N, (N * V >= kParallelMin) ? balanced_grain(N, 1) : N, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* s = logits + r * V;
      T* ds = d_logits + r * V;
      const int32_t y = labels[r];
      if (y < 0) {
        std::fill(ds, ds + V, T(0));
        continue;
      }
      double loss = 0.0;
      // the-change: begin hard_loss
      // hard: −log q_1[y], gradient q_1 − onehot(y)
      if (w_hard > 0) {
        const double lse = log_sum_exp(s, V, 1.0);
        loss += w_hard * (lse - s[y]);
        for (int j = 0; j < V; ++j) ds[j] = static_cast<T>(w_hard * std::exp(s[j] - lse));
        ds[y] -= static_cast<T>(w_hard);
      } else {
        std::fill(ds, ds + V, T(0));
      }
      // the-change: end hard_loss
      // the-change: begin soft_loss
      // soft: τ² KL(p_τ ‖ q_τ), gradient τ (q_τ − p_τ)
      if (w_soft > 0) {
        const int k = soft->k;
        const int32_t* ids = soft->ids.data() + r * k;
        const float* z = soft->logits.data() + r * k;
        const double lse_s = log_sum_exp(s, V, 1.0 / tau), lse_z = log_sum_exp(z, k, 1.0 / tau);
        double kl = 0.0;
        for (int j = 0; j < V; ++j) ds[j] += static_cast<T>(w_soft * tau * std::exp(s[j] / tau - lse_s));
        for (int i = 0; i < k; ++i) {
          const double log_p = z[i] / tau - lse_z, log_q = s[ids[i]] / tau - lse_s, p = std::exp(log_p);
          kl += p * (log_p - log_q);
          ds[ids[i]] -= static_cast<T>(w_soft * tau * p);
        }
        loss += w_soft * tau * tau * kl;
      }
      // the-change: end soft_loss
      for (int j = 0; j < V; ++j) ds[j] = static_cast<T>(ds[j] * inv_count);
      row_loss[r] = loss;
    }
  });
  double total = 0.0;
  for (double l : row_loss) total += l;
  return total * inv_count;
}

template double distillation_loss<float>(const float*, int64_t, int, std::span<const int32_t>, const SoftTargets*,
                                         const LossOptions&, float*);
template double distillation_loss<double>(const double*, int64_t, int, std::span<const int32_t>, const SoftTargets*,
                                          const LossOptions&, double*);

}  // namespace infer::train
