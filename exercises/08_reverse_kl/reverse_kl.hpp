// Exercise 08 — the reverse-KL distillation loss and its gradient.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace exercise {

// For one position, with student logits s[V], teacher logits z[V] and temperature T:
//   q = softmax(s / T) (the student),  p = softmax(z / T) (the teacher)
//   loss = T² · KL(q ‖ p) = T² · Σ_i q_i (log q_i − log p_i)
// YOUR PART: return the loss and WRITE d_student[V] = ∂loss/∂s.
double reverse_kl(std::span<const double> student_logits, std::span<const double> teacher_logits, double T,
                  std::span<double> d_student);

// Given: log softmax(x / T), stabilised by the largest term.
inline std::vector<double> log_softmax(std::span<const double> x, double T) {
  double m = -INFINITY, sum = 0;
  for (double v : x) m = std::max(m, v / T);
  for (double v : x) sum += std::exp(v / T - m);
  std::vector<double> out;
  for (double v : x) out.push_back(v / T - m - std::log(sum));
  return out;
}

// Given: the direction chapter 08 trains with, T² · KL(p ‖ q), and its gradient T (q − p).
inline double forward_kl(std::span<const double> s, std::span<const double> z, double T, std::span<double> d_student) {
  const std::vector<double> log_q = log_softmax(s, T), log_p = log_softmax(z, T);
  double f = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    f += std::exp(log_p[i]) * (log_p[i] - log_q[i]);
    d_student[i] = T * (std::exp(log_q[i]) - std::exp(log_p[i]));
  }
  return T * T * f;
}

}  // namespace exercise
