#include "train_kernels.hpp"

#include <cmath>
#include <vector>

#include "gemm.hpp"
#include "tensor/thread_pool.hpp"

namespace infer::train {

template <class T>
void rmsnorm_forward(const T* x, const T* w, int64_t N, int d, double eps, T* y, T* inv_rms) {
  const bool parallel = N * d >= kParallelMin;
  parallel_for(N, (parallel) ? balanced_grain(N, 1) : N, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* xr = x + r * d;
      double sum_sq = 0.0;  // in double, as lib's rmsnorm
      for (int i = 0; i < d; ++i) sum_sq += static_cast<double>(xr[i]) * xr[i];
      const T scale = static_cast<T>(1.0 / std::sqrt(sum_sq / d + eps));
      inv_rms[r] = scale;
      for (int i = 0; i < d; ++i) y[r * d + i] = xr[i] * scale * w[i];
    }
  });
}

// the-change: begin rmsnorm_backward
template <class T>
void rmsnorm_backward(const T* d_out, const T* x, const T* w, const T* inv_rms, int64_t N, int d, T* dx, T* dw) {
  const bool parallel = N * d >= kParallelMin;
  parallel_for(N, (parallel) ? balanced_grain(N, 1) : N, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const T* xr = x + r * d;
      const T* dyr = d_out + r * d;
      const double s = inv_rms[r];
      double dot = 0.0;  // Σ_i (dy ⊙ w)_i x_i
      for (int i = 0; i < d; ++i) dot += static_cast<double>(dyr[i]) * w[i] * xr[i];
      const double c = dot * s * s * s / d;
      for (int i = 0; i < d; ++i)
        dx[r * d + i] += static_cast<T>(s * dyr[i] * w[i] - c * xr[i]);
    }
  });
  // dw sums over rows: split the columns between threads so that no two write one element.
  parallel_for(d, (parallel) ? balanced_grain(d, 16) : d, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      double sum = 0.0;
      for (int64_t r = 0; r < N; ++r)
        sum += static_cast<double>(d_out[r * d + i]) * x[r * d + i] * inv_rms[r];
      dw[i] += static_cast<T>(sum);
    }
  });
}
// the-change: end rmsnorm_backward

template <class T>
void linear_forward(const T* x, const T* W, int N, int K, int M, T* y) {
  gemm(false, true, N, M, K, T(1), x, W, T(0), y);  // y[N, M] = x[N, K] · W[M, K]ᵀ
}

template <class T>
void linear_backward(const T* d_out, const T* x, const T* W, int N, int K, int M, T* dx, T* dW) {
  if (dx != nullptr) gemm(false, false, N, K, M, T(1), d_out, W, T(1), dx);  // dx[N, K] += d_out[N, M] · W[M, K]
  if (dW != nullptr) gemm(true, false, M, K, N, T(1), d_out, x, T(1), dW);   // dW[M, K] += d_out[N, M]ᵀ · x[N, K]
}

namespace {
// Turns every pair by sign · angle; the forward (sign +1) computes exactly what ops::rope does.
template <class T>
void rotate_pairs(T* x, int64_t N, int seq_len, int heads, int D, double theta, double sign) {
  std::vector<double> inv_freq(D / 2);  // theta^(−2j/D)
  for (int j = 0; j < D / 2; ++j) inv_freq[j] = std::pow(theta, -2.0 * j / D);
  parallel_for(N, (N * heads * D >= kParallelMin) ? balanced_grain(N, 1) : N, [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t position = r % seq_len;
      for (int j = 0; j < D / 2; ++j) {
        const double angle = position * inv_freq[j];
        const T c = static_cast<T>(std::cos(angle)), s = static_cast<T>(sign * std::sin(angle));
        for (int h = 0; h < heads; ++h) {
          T* p = x + r * heads * D + h * D + 2 * j;
          const T a = p[0], b = p[1];
          p[0] = a * c - b * s;
          p[1] = a * s + b * c;
        }
      }
    }
  });
}
}  // namespace

template <class T>
void rope_forward(T* x, int64_t N, int seq_len, int heads, int D, double theta) {
  rotate_pairs(x, N, seq_len, heads, D, theta, +1.0);
}

template <class T>
void rope_backward(T* d_out, int64_t N, int seq_len, int heads, int D, double theta) {
  rotate_pairs(d_out, N, seq_len, heads, D, theta, -1.0);
}

template <class T>
void swiglu_forward(const T* g, const T* u, int64_t n, T* out) {
  parallel_for(n, (n >= kParallelMin) ? balanced_grain(n, 4096) : n, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i)
        out[i] = g[i] / (T(1) + std::exp(-g[i])) * u[i];
  });
}

template <class T>
void swiglu_backward(const T* d_out, const T* g, const T* u, int64_t n, T* dg, T* du) {
  parallel_for(n, (n >= kParallelMin) ? balanced_grain(n, 4096) : n, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) {
      const T sigma = T(1) / (T(1) + std::exp(-g[i]));
      const T silu = g[i] * sigma;
      dg[i] += d_out[i] * u[i] * sigma * (T(1) + g[i] * (T(1) - sigma));
      du[i] += d_out[i] * silu;
    }
  });
}

#define INSTANTIATE(T)                                                                             \
  template void rmsnorm_forward<T>(const T*, const T*, int64_t, int, double, T*, T*);                   \
  template void rmsnorm_backward<T>(const T*, const T*, const T*, const T*, int64_t, int, T*, T*);      \
  template void linear_forward<T>(const T*, const T*, int, int, int, T*);                           \
  template void linear_backward<T>(const T*, const T*, const T*, int, int, int, T*, T*);            \
  template void rope_forward<T>(T*, int64_t, int, int, int, double);                                    \
  template void rope_backward<T>(T*, int64_t, int, int, int, double);                                   \
  template void swiglu_forward<T>(const T*, const T*, int64_t, T*);                                 \
  template void swiglu_backward<T>(const T*, const T*, const T*, int64_t, T*, T*);
INSTANTIATE(float)
INSTANTIATE(double)

}  // namespace infer::train
