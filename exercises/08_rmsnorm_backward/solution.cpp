// Exercise 08 (RMSNorm backward) — the reference solution.
//
// Per row, with r = 1 / sqrt(mean(x²) + eps) and g = d_out ⊙ w:
//   y_i = x_i · r · w_i,   ∂r/∂x_j = −r³ x_j / d
//   ∂L/∂x_j = g_j r + Σ_i g_i x_i · ∂r/∂x_j = r g_j − x_j · r³ · (Σ_i g_i x_i) / d
//   ∂L/∂w_i = Σ_rows d_out_i · x_i · r
#include <cmath>

#include "rmsnorm_backward.hpp"

namespace exercise {

void rmsnorm_backward(const double* d_out, const double* x, const double* w, int N, int d, double eps, double* dx,
                      double* dw) {
  for (int n = 0; n < N; ++n) {
    const double* xr = x + n * d;
    const double* gr = d_out + n * d;
    double sum_sq = 0, dot = 0;  // Σ x², Σ (d_out ⊙ w) ⊙ x
    for (int i = 0; i < d; ++i) sum_sq += xr[i] * xr[i], dot += gr[i] * w[i] * xr[i];
    const double r = 1.0 / std::sqrt(sum_sq / d + eps);
    for (int i = 0; i < d; ++i) {
      dx[n * d + i] += r * gr[i] * w[i] - xr[i] * r * r * r * dot / d;
      dw[i] += gr[i] * xr[i] * r;
    }
  }
}

}  // namespace exercise
