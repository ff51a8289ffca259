// Exercise 08 — the backward pass of LayerNorm, checked against finite differences.
#pragma once

#include <cmath>

namespace exercise {

// The forward pass (given), one row of d numbers at a time:
//   mu = mean(x),  var = mean((x − mu)²)  (divided by d, not d − 1),  s = 1 / sqrt(var + eps)
//   x̂ = (x − mu) · s,  y = x̂ ⊙ w + b
inline void layernorm_forward(const double* x, const double* w, const double* b, int N, int d, double eps,
                              double* y) {
  for (int r = 0; r < N; ++r) {
    const double* xr = x + r * d;
    double mean = 0;
    for (int i = 0; i < d; ++i) mean += xr[i];
    mean /= d;
    double var = 0;
    for (int i = 0; i < d; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= d;
    const double inv_std = 1.0 / std::sqrt(var + eps);
    for (int i = 0; i < d; ++i) y[r * d + i] = (xr[i] - mean) * inv_std * w[i] + b[i];
  }
}

// YOUR PART. Given d_out[N, d] = ∂L/∂y, ADD ∂L/∂x into dx[N, d], ∂L/∂w into dw[d] and ∂L/∂b into
// db[d] (the caller zeroes them; adding is what lets a residual and a norm share one gradient array).
void layernorm_backward(const double* d_out, const double* x, const double* w, int N, int d, double eps, double* dx,
                        double* dw, double* db);

}  // namespace exercise
