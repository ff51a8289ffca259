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

// The same over the i with mask[i] == value only (the tail: the ids the teacher file does not keep).
template <class T>
double log_sum_exp_where(const T* x, int n, double scale, const uint8_t* mask, uint8_t value) {
  double m = -INFINITY;
  for (int i = 0; i < n; ++i)
    if (mask[i] == value) m = std::max(m, x[i] * scale);
  double sum = 0.0;
  for (int i = 0; i < n; ++i)
    if (mask[i] == value) sum += std::exp(x[i] * scale - m);
  return m + std::log(sum);
}

// log(exp(a) + exp(b)), with −∞ for an empty term.
double log_add_exp(double a, double b) {
  const double m = std::max(a, b);
  return m == -INFINITY ? m : m + std::log(std::exp(a - m) + std::exp(b - m));
}

}  // namespace

template <class T>
double distillation_loss(const T* logits, int64_t N, int V, std::span<const int32_t> labels,
                         const SoftTargets* soft, const LossOptions& o, T* d_logits) {
  const double w_hard = o.labels == LabelKind::hard ? 1.0 : o.labels == LabelKind::soft ? 0.0 : o.hard_weight;
  const double w_soft = 1.0 - w_hard, tau = o.temperature;
  const bool with_tail = o.target == SoftTarget::with_tail;
  if (w_soft > 0 && (soft == nullptr || soft->k < 1 || soft->k > V ||
                     std::ssize(soft->ids) != N * soft->k ||
                     soft->logits.size() != soft->ids.size()))
    throw std::invalid_argument(fmt::format("distillation_loss: soft labels need 1…{} teacher ids and logits for each of {} rows", V, N));
  if (w_soft > 0 && with_tail && std::ssize(soft->tail) != N)
    throw std::invalid_argument(fmt::format("distillation_loss: the soft target with a tail bucket needs the teacher's tail "
                                            "for each of {} rows ({} given)", N, soft->tail.size()));
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
    std::vector<uint8_t> kept(w_soft > 0 && with_tail ? V : 0);  // [V] 1 at the row's k teacher ids
    for (int64_t r = first; r < last; ++r) {
      const T* s = logits + r * V;
      T* ds = d_logits + r * V;
      const int32_t y = labels[r];
      if (y < 0) {  // not scored: neither term sees this row
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
      // soft: τ² KL(p_τ ‖ q_τ) over k + 1 buckets, the teacher's top k and the tail t (everything else);
      // gradient τ (q_τ − p_τ) at the k ids, τ (q_v − p_tail · q_v / q_tail) at a tail token v
      if (w_soft > 0) {
        const int k = soft->k;
        const int32_t* ids = soft->ids.data() + r * k;
        const float* z = soft->logits.data() + r * k;
        const double t = with_tail ? double{soft->tail[r]} : -INFINITY;  // renormalised: no tail bucket
        const double lse_s = log_sum_exp(s, V, 1.0 / tau);
        const double lse_z = log_add_exp(log_sum_exp(z, k, 1.0 / tau), t);
        double kl = 0.0;
        for (int j = 0; j < V; ++j) ds[j] += static_cast<T>(w_soft * tau * std::exp(s[j] / tau - lse_s));
        for (int i = 0; i < k; ++i) {
          const double log_p = z[i] / tau - lse_z, log_q = s[ids[i]] / tau - lse_s, p = std::exp(log_p);
          kl += p * (log_p - log_q);
          ds[ids[i]] -= static_cast<T>(w_soft * tau * p);
        }
        if (t > -INFINITY) {  // the tail bucket: the student's share is q_tail = Σ_{v ∉ ids} q_v
          for (int i = 0; i < k; ++i) kept[ids[i]] = 1;
          const double lse_tail_s = log_sum_exp_where(s, V, 1.0 / tau, kept.data(), 0);
          const double log_p = t - lse_z, log_q = lse_tail_s - lse_s, p_tail = std::exp(log_p);
          kl += p_tail * (log_p - log_q);
          for (int v = 0; v < V; ++v)  // p_tail · q_v / q_tail: the teacher's tail mass, shaped as the student's tail
            if (!kept[v]) ds[v] -= static_cast<T>(w_soft * tau * p_tail * std::exp(s[v] / tau - lse_tail_s));
          for (int i = 0; i < k; ++i) kept[ids[i]] = 0;
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
