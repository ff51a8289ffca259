// Exercise 08 (LayerNorm backward) — the reference solution.
//
// Per row, with s = 1 / sqrt(var + eps), x̂ = (x − mu) · s and g = d_out ⊙ w:
//   ∂x̂_i/∂x_j = s · (δ_ij − 1/d − x̂_i x̂_j / d)
//   ∂L/∂x_j = s · (g_j − mean(g) − x̂_j · mean(g ⊙ x̂))
//   ∂L/∂w_i = Σ_rows d_out_i · x̂_i,   ∂L/∂b_i = Σ_rows d_out_i
#include <cmath>
#include <vector>

#include "layernorm_backward.hpp"

namespace exercise {

void layernorm_backward(const double* d_out, const double* x, const double* w, int N, int d, double eps, double* dx,
                        double* dw, double* db) {
  std::vector<double> x_hat(static_cast<std::size_t>(d));
  for (int n = 0; n < N; ++n) {
    const double* xr = x + n * d;
    const double* gr = d_out + n * d;
    double mean = 0, var = 0;
    for (int i = 0; i < d; ++i) mean += xr[i];
    mean /= d;
    for (int i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= d;
    const double s = 1.0 / std::sqrt(var + eps);
    double mean_g = 0, mean_g_xhat = 0;  // mean(g), mean(g ⊙ x̂), with g = d_out ⊙ w
    for (int i = 0; i < d; ++i) {
      x_hat[i] = (xr[i] - mean) * s;
      mean_g += gr[i] * w[i];
      mean_g_xhat += gr[i] * w[i] * x_hat[i];
    }
    mean_g /= d;
    mean_g_xhat /= d;
    for (int i = 0; i < d; ++i) {
      dx[n * d + i] += s * (gr[i] * w[i] - mean_g - x_hat[i] * mean_g_xhat);
      dw[i] += gr[i] * x_hat[i];
      db[i] += gr[i];
    }
  }
}

}  // namespace exercise
