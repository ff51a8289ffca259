// Exercise 08 (LayerNorm backward) — your answer goes here (see README.md).
#include <stdexcept>

#include "layernorm_backward.hpp"

namespace exercise {

void layernorm_backward(const double* d_out, const double* x, const double* w, int N, int d, double eps, double* dx,
                        double* dw, double* db) {
  // Per row: recompute the mean, the variance and x̂. Then dw and db are the easy part; dx has
  // three terms, because every x_i also moves the mean and the variance, and both shift or scale
  // the whole row.
  (void)d_out; (void)x; (void)w; (void)N; (void)d; (void)eps; (void)dx; (void)dw; (void)db;
  throw std::logic_error("exercise 08_layernorm_backward: layernorm_backward is not written yet");
}

}  // namespace exercise
