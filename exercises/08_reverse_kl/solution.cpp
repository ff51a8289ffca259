// Exercise 08 (reverse KL) — the reference solution.
//
// With q = softmax(s / T):  ∂q_i/∂s_j = q_i (δ_ij − q_j) / T. The loss per T² is
// R = Σ_i q_i (log q_i − log p_i), and ∂R/∂q_i = log q_i − log p_i + 1, so
//   ∂R/∂s_j = Σ_i (log q_i − log p_i + 1) q_i (δ_ij − q_j) / T = q_j (log q_j − log p_j − R) / T
// (the +1 cancels because Σ_i q_i = 1). Times T²:  ∂loss/∂s_j = T · q_j (log q_j − log p_j − R).
#include "reverse_kl.hpp"

namespace exercise {

double reverse_kl(std::span<const double> s, std::span<const double> z, double T, std::span<double> d_student) {
  const std::vector<double> log_q = log_softmax(s, T), log_p = log_softmax(z, T);
  double r = 0;
  for (std::size_t i = 0; i < s.size(); ++i) r += std::exp(log_q[i]) * (log_q[i] - log_p[i]);
  for (std::size_t j = 0; j < s.size(); ++j) d_student[j] = T * std::exp(log_q[j]) * (log_q[j] - log_p[j] - r);
  return T * T * r;
}

}  // namespace exercise
