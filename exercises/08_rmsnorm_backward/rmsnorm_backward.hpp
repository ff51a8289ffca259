// Exercise 08 — the backward pass of RMSNorm, checked against finite differences.
#pragma once

#include <cmath>

namespace exercise {

// The forward pass (given): y[N, d] = x / rms(x) ⊙ w per row, rms(x) = sqrt(mean(x²) + eps).
inline void rmsnorm_forward(const double* x, const double* w, int N, int d, double eps, double* y) {
  for (int r = 0; r < N; ++r) {
    double sum_sq = 0;
    for (int i = 0; i < d; ++i) sum_sq += x[r * d + i] * x[r * d + i];
    const double inv_rms = 1.0 / std::sqrt(sum_sq / d + eps);
    for (int i = 0; i < d; ++i) y[r * d + i] = x[r * d + i] * inv_rms * w[i];
  }
}

// YOUR PART. Given d_out[N, d] = ∂L/∂y, ADD ∂L/∂x into dx[N, d] and ∂L/∂w into dw[d] (the caller
// zeroes them; adding is what lets a residual and a norm share one gradient array).
void rmsnorm_backward(const double* d_out, const double* x, const double* w, int N, int d, double eps, double* dx,
                      double* dw);

}  // namespace exercise
