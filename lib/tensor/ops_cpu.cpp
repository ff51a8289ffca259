// The CPU backend: matrix products through OpenBLAS or our own small-batch kernel, everything
// else written with xtensor views over our own storage (xt::adapt, no copies); loops over rows
// or heads run on lib's thread pool (tensor/thread_pool.hpp).
#include "tensor/ops_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include <cblas.h>

#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tensor/ops.hpp"
#include "tensor/small_matmul.hpp"
#include "tensor/thread_pool.hpp"

// OpenBLAS's own thread control (declared in its cblas.h on most builds; repeated here so that
// a cblas.h from another vendor still compiles).
extern "C" void openblas_set_num_threads(int);

namespace infer {
namespace {
int g_threads = 0;  // 0 until set: all cores
}

void set_num_threads(int n) {
  if (n <= 0) n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  g_threads = n;
  // OpenBLAS runs single-threaded inside our pool's chunks (cpu::sgemm splits the work), so that
  // the program has one set of threads, not two sets spinning against each other. OpenBLAS's
  // OpenMP build reads the thread count of the calling thread, so every worker sets it too.
  openblas_set_num_threads(1);
  resize_thread_pool(n, [] { openblas_set_num_threads(1); });
}

int num_threads() {
  if (g_threads == 0) set_num_threads(0);
  return g_threads;
}

namespace cpu {
namespace {

// A 2-D xtensor view of a tensor's host memory: shape [rows, cols], no copy.
auto view2d(Tensor& t) {
  const std::size_t rows = static_cast<std::size_t>(t.dim(0)), cols = static_cast<std::size_t>(t.dim(1));
  return xt::adapt(t.host<float>(), rows * cols, xt::no_ownership(), std::array{rows, cols});
}
auto view2d(const Tensor& t) {
  const std::size_t rows = static_cast<std::size_t>(t.dim(0)), cols = static_cast<std::size_t>(t.dim(1));
  return xt::adapt(const_cast<float*>(t.host<float>()), rows * cols, xt::no_ownership(),
                   std::array{rows, cols});
}
auto view1d(const Tensor& t) {
  const std::size_t n = static_cast<std::size_t>(t.numel());
  return xt::adapt(const_cast<float*>(t.host<float>()), n, xt::no_ownership(), std::array{n});
}

}  // namespace

// 128 rows of weights × 576 inputs is 288 KiB: a block's share of B stays in L2 while OpenBLAS
// runs through it, and packing A again for each block costs a few percent.
constexpr int64_t kSgemmBlock = 128;

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C) {
  num_threads();  // the pool and OpenBLAS's single-thread setting are in place
  const int lda = trans_a ? M : K, ldb = trans_b ? K : N;
  const auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto offset = [](int64_t i, int64_t ld) { return static_cast<std::size_t>(i * ld); };
  // Split the larger side of C in blocks of kSgemmBlock whole rows or columns; each block is an
  // ordinary single-threaded sgemm. The blocks depend on the shape alone, not on the thread
  // count, so a product gets the same bits on 1 thread or 16. (They are not always the bits of
  // one unsplit call: OpenBLAS picks different kernels for small shapes.)
  if (M >= N) {
    parallel_for(M, kSgemmBlock, [&](int64_t r0, int64_t r1) {
      const float* a = trans_a ? A + r0 : A + offset(r0, lda);
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(r1 - r0), N, K, alpha, a, lda, B, ldb, beta,
                  C + offset(r0, N), N);
    });
  } else {
    parallel_for(N, kSgemmBlock, [&](int64_t c0, int64_t c1) {
      const float* b = trans_b ? B + offset(c0, ldb) : B + c0;
      cblas_sgemm(CblasRowMajor, ta, tb, M, static_cast<int>(c1 - c0), K, alpha, A, lda, b, ldb, beta, C + c0, N);
    });
  }
}

void matmul_t(const Tensor& x, const Tensor& w, Tensor& y) {
  const int n = static_cast<int>(x.dim(0)), k = static_cast<int>(x.dim(1)), m = static_cast<int>(w.dim(0));
  num_threads();  // make sure OpenBLAS uses the configured thread count
  if (n <= kSmallN) {
    matmul_small_n(n, m, k, w.host<float>(), x.host<float>(), y.host<float>());  // decode, small batches
  } else {
    sgemm(false, true, n, m, k, 1.0f, x.host<float>(), w.host<float>(), 0.0f, y.host<float>());  // prefill
  }
}

void embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out) {
  auto tab = view2d(table);
  auto dst = view2d(out);
  for (std::size_t i = 0; i < ids.size(); ++i)
    xt::view(dst, i, xt::all()) = xt::view(tab, static_cast<std::size_t>(ids[i]), xt::all());
}

void rmsnorm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  auto src = view2d(x);
  auto dst = view2d(y);
  auto w = view1d(weight);
  const int64_t rows = x.dim(0);
  const int64_t d = x.dim(1);
  parallel_for(rows, balanced_grain(rows, 4), [&](int64_t first, int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    auto xr = xt::view(src, r, xt::all());
    // Sum of squares in double: 576 terms of very different sizes lose digits in float.
    double sum_sq = 0.0;
    for (int64_t i = 0; i < d; ++i) sum_sq += static_cast<double>(xr(i)) * xr(i);
    const float scale = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(d) + eps));
    xt::view(dst, r, xt::all()) = xr * scale * w;
  }
  });
}

void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta) {
  auto v = view2d(x);
  const int64_t rows = x.dim(0);
  const int64_t head_dim = x.dim(1) / n_heads;
  // Frequencies of the D/2 rotation planes: theta^(-2j/D), from fast (j = 0) to slow.
  std::vector<double> inv_freq(static_cast<std::size_t>(head_dim / 2));
  for (std::size_t j = 0; j < inv_freq.size(); ++j)
    inv_freq[j] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
  parallel_for(rows, balanced_grain(rows, 4), [&](int64_t first, int64_t last) {
  for (int64_t r = first; r < last; ++r) {
    for (std::size_t j = 0; j < inv_freq.size(); ++j) {
      const double angle = positions[static_cast<std::size_t>(r)] * inv_freq[j];
      const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
      for (int h = 0; h < n_heads; ++h) {
        const std::size_t i0 = static_cast<std::size_t>(h * head_dim) + 2 * j;
        const float a = v(r, i0), b = v(r, i0 + 1);
        v(r, i0) = a * c - b * s;
        v(r, i0 + 1) = a * s + b * c;
      }
    }
  }
  });
}

void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  auto g = view1d(gate);
  auto u = view1d(up);
  auto o = view1d(out);
  o = g / (1.0f + xt::exp(-g)) * u;
}

void add_inplace(Tensor& x, const Tensor& y) {
  auto a = view1d(x);
  a += view1d(y);
}

int32_t argmax(const Tensor& row) {
  const float* p = row.host<float>();
  return static_cast<int32_t>(std::max_element(p, p + row.numel()) - p);
}

}  // namespace cpu
}  // namespace infer
