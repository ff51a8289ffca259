// The CPU backend: matrix products through OpenBLAS or our own small-batch kernel, everything
// else written with xtensor views over our own storage (xt::adapt, no copies); loops over rows
// or heads run on lib's thread pool (tensor/thread_pool.hpp).
#include "tensor/ops_cpu.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include <cblas.h>

#include <xtensor/xadapt.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "tensor/ops.hpp"
#include "tensor/ops_reference.hpp"
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

// How sgemm cuts C into blocks, each an ordinary single-threaded OpenBLAS call. Every call first
// copies ("packs") its share of A and all the columns of B it needs into OpenBLAS's own layout,
// so each extra block packs again: cut into 128-column blocks, as lib once did, a 512-token
// prefill's products (C [512 tokens, 576–1 536 features]) packed the tokens' rows 5 to 12 times
// each, nearly a quarter of their time on the Sapphire Rapids-class Xeon. So the blocks are as
// large as leaves enough of them for several threads: rows of C (a prefill's tokens) in blocks
// of 256, and the columns cut into equal parts (whole multiples of 16) until there are at least
// 4 blocks. The blocks depend on the shape alone, not on the thread count, so a product gets the
// same bits on 1 thread or 16 (OpenBLAS's kernels for AVX2 give other bits for another cut: the
// cut cannot follow the thread count). Effect: bench_decode (prefill GFLOP/s),
// compare_llama_cpp.py (prefill).
constexpr int64_t kSgemmRows = 256;
constexpr int64_t kSgemmMinBlocks = 4;

void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C) {
  // Chapter 08's training calls this entry point directly: it follows the backend choice too.
  if (cpu_backend() == CpuBackend::reference) return reference::sgemm(trans_a, trans_b, M, N, K, alpha, A, B, beta, C);
  num_threads();  // the pool and OpenBLAS's single-thread setting are in place
  const int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
  const auto ta = trans_a ? CblasTrans : CblasNoTrans, tb = trans_b ? CblasTrans : CblasNoTrans;
  const auto blocks_of = [](int64_t n, int64_t size) { return (n + size - 1) / size; };
  const int64_t row_blocks = blocks_of(M, kSgemmRows);
  const int64_t column_parts = std::min(blocks_of(N, 16), blocks_of(kSgemmMinBlocks, row_blocks));
  const int64_t columns = blocks_of(blocks_of(N, column_parts), 16) * 16;  // per block, a multiple of 16
  const int64_t column_blocks = blocks_of(N, columns);
  parallel_for(row_blocks * column_blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      const int64_t r0 = block / column_blocks * kSgemmRows, r1 = std::min<int64_t>(M, r0 + kSgemmRows);
      const int64_t c0 = block % column_blocks * columns, c1 = std::min<int64_t>(N, c0 + columns);
      const float* a = trans_a ? A + r0 : A + r0 * lda;  // rows r0 … r1 − 1 of op(A)
      const float* b = trans_b ? B + c0 * ldb : B + c0;  // columns c0 … c1 − 1 of op(B)
      cblas_sgemm(CblasRowMajor, ta, tb, static_cast<int>(r1 - r0), static_cast<int>(c1 - c0), K, alpha, a,
                  static_cast<int>(lda), b, static_cast<int>(ldb), beta, C + r0 * N + c0, N);
    }
  });
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

namespace {

// The angles RoPE turns by, position · theta^(−2j/D), as float cos and sin tables [P, D/2] for
// positions 0 … P−1 and the D/2 rotation planes j. Every row of q and k in every layer needs the
// angles of its position: 60 rotations per generated token, each of which cost D/2 cos and sin
// (and D/2 powers) in double. The table computes them once, in double exactly as that loop did, and rounds
// them to float the same way, so a rotation gets the same bits as before.
struct RopeTable {
  float theta = 0;
  int64_t head_dim = 0;
  int64_t positions = 0;        // P: the table covers positions 0 … P−1
  std::vector<float> cos, sin;  // [P, D/2]
};

RopeTable make_rope_table(float theta, int64_t head_dim, int64_t positions) {
  const int64_t half = head_dim / 2;
  RopeTable t{theta, head_dim, positions, {}, {}};
  t.cos.resize(positions * half);
  t.sin.resize(t.cos.size());
  // Frequencies of the D/2 rotation planes: theta^(-2j/D), from fast (j = 0) to slow.
  std::vector<double> inv_freq(half);
  for (int64_t j = 0; j < half; ++j)
    inv_freq[j] = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(j) / static_cast<double>(head_dim));
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(p) * inv_freq[j];
      t.cos[p * half + j] = static_cast<float>(std::cos(angle));
      t.sin[p * half + j] = static_cast<float>(std::sin(angle));
    }
  return t;
}

// The table for (theta, D) covering at least positions 0 … max_position. One table per (theta, D)
// serves every model and thread of the program (a draft and a target model share it). A table
// handed out is never changed: when a later position needs more, a table twice as long (at least
// 1024 positions) replaces it, and a caller still holding the old one keeps a valid table.
std::shared_ptr<const RopeTable> rope_table(float theta, int64_t head_dim, int64_t max_position) {
  static std::mutex mutex;
  static std::vector<std::shared_ptr<const RopeTable>> tables;  // one per (theta, D)
  std::lock_guard<std::mutex> lock(mutex);
  auto same_kind = [&](const auto& t) { return t->theta == theta && t->head_dim == head_dim; };
  auto found = std::find_if(tables.begin(), tables.end(), same_kind);
  if (found != tables.end() && max_position < (*found)->positions) return *found;
  int64_t positions = std::max<int64_t>(1024, found != tables.end() ? 2 * (*found)->positions : 0);
  while (positions <= max_position) positions *= 2;
  auto grown = std::make_shared<const RopeTable>(make_rope_table(theta, head_dim, positions));
  if (found != tables.end()) *found = grown;
  else tables.push_back(grown);
  return grown;
}

}  // namespace

// Turns the D/2 pairs (head[2j], head[2j+1]) of one head by the angles whose cos and sin are
// given. Each product is rounded to float before the sum, as RoPE always computed it here: left
// to itself the compiler may fuse a product and a sum into one multiply-add instruction (one
// rounding fewer), which would change the last bit of some q and k values, and through them the
// logits. The attribute tells GCC not to; Clang fuses only within one expression, and every
// product below is a statement of its own.
#if defined(__GNUC__) && !defined(__clang__)
[[gnu::optimize("fp-contract=off")]]
#endif
static void rotate_pairs(float* head, const float* cos, const float* sin, int64_t half) {
  for (int64_t j = 0; j < half; ++j) {
    const float a = head[2 * j], b = head[2 * j + 1];
    const float a_cos = a * cos[j], b_sin = b * sin[j], a_sin = a * sin[j], b_cos = b * cos[j];
    head[2 * j] = a_cos - b_sin;
    head[2 * j + 1] = a_sin + b_cos;
  }
}

void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta) {
  float* v = x.host<float>();
  const int64_t rows = x.dim(0), width = x.dim(1);
  const int64_t head_dim = width / n_heads, half = head_dim / 2;
  const std::shared_ptr<const RopeTable> table =
      rope_table(theta, head_dim, *std::max_element(positions.begin(), positions.end()));
  parallel_for(rows, balanced_grain(rows, 4), [&](int64_t first, int64_t last) {
    for (int64_t r = first; r < last; ++r) {
      const int64_t at = positions[r] * half;
      for (int h = 0; h < n_heads; ++h)  // every head of a row turns by its position's angles
        rotate_pairs(v + r * width + h * head_dim, table->cos.data() + at, table->sin.data() + at, half);
    }
  });
}

// silu_mul: tensor/cpu_silu.cpp (compiled once per SIMD target).

// x += y elementwise (the residual adds).
void add_inplace(Tensor& x, const Tensor& y) {
  float* a = x.host<float>();
  const float* b = y.host<float>();
  const int64_t n = x.numel();
  parallel_for(n, balanced_grain(n, 16384), [&](int64_t first, int64_t last) {
#pragma omp simd
    for (int64_t i = first; i < last; ++i) a[i] += b[i];
  });
}

int32_t argmax(const Tensor& row) {
  const float* p = row.host<float>();
  return static_cast<int32_t>(std::max_element(p, p + row.numel()) - p);
}

}  // namespace cpu
}  // namespace infer
