// The plain path: the operations of the forward pass (tensor/ops.hpp) as loops over float arrays,
// in the order a forward pass uses them (lib/model/llama.cpp): embedding, rmsnorm, matmul_t, rope,
// attention, silu_mul, add_inplace, then argmax over the logits; last, sgemm, which chapter 08's
// training calls. One thread, no SIMD (this file is compiled without auto-vectorisation), no BLAS.
//
// Shapes in brackets, row-major: x[N, d] is N rows of d floats, row i starting at x + i·d.
//   N tokens (rows), d model width (576 in the default model), H and H_kv query and key/value
//   heads (9 and 3) of D floats each (64), F the MLP's width (1536), V the vocabulary (49152).
//
// Why sums are kept in double: this backend is the yardstick the fast one is measured against.
// A float times a float is exact in double, and a double sum of K such products is off by about
// K · 2⁻⁵³ of the sum of their sizes, far below float's own rounding; so every result here is
// the exact answer rounded once to float, and |fast − reference| is the fast path's own rounding
// (tests/unit/test_backends.cpp states the bound for each operation).
#include "tensor/ops_reference.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace infer::reference {
namespace {

// a · b over n floats, summed in double.
double dot(const float* a, const float* b, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(a[i]) * b[i];
  return sum;
}

}  // namespace

// out[N, d] = table[ids[i], :]: a token's vector is a row of the table [V, d].
void embedding(const Tensor& table, std::span<const int32_t> ids, Tensor& out) {
  const int64_t d = table.dim(1);
  const float* rows = table.host<float>();
  float* o = out.host<float>();
  for (std::size_t i = 0; i < ids.size(); ++i) std::copy_n(rows + ids[i] * d, d, o + static_cast<int64_t>(i) * d);
}

// y[N, d] = x / sqrt(mean(x²) + eps) · weight[d], row by row: each token's vector is scaled to
// unit root-mean-square, then each channel by its learned weight. eps keeps an all-zero row finite.
void rmsnorm(const Tensor& x, const Tensor& weight, float eps, Tensor& y) {
  const int64_t N = x.dim(0), d = x.dim(1);
  const float* w = weight.host<float>();
  for (int64_t r = 0; r < N; ++r) {
    const float* xr = x.host<float>() + r * d;
    float* yr = y.host<float>() + r * d;
    const double inv_rms = 1.0 / std::sqrt(dot(xr, xr, d) / static_cast<double>(d) + eps);
    for (int64_t i = 0; i < d; ++i) yr[i] = static_cast<float>(xr[i] * inv_rms * w[i]);
  }
}

// y[N, M] = x[N, K] · w[M, K]ᵀ: output j of token i is row i of x dotted with row j of w. A
// weight matrix is stored one output per row (as GGUF stores it), so both rows are read in order.
// Every row of y is computed alone: a token gets the same bits however many share the call.
void matmul_t(const Tensor& x, const Tensor& w, Tensor& y) {
  const int64_t N = x.dim(0), K = x.dim(1), M = w.dim(0);
  const float* xp = x.host<float>();
  const float* wp = w.host<float>();
  float* yp = y.host<float>();
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < M; ++j) yp[i * M + j] = static_cast<float>(dot(xp + i * K, wp + j * K, K));
}

// Rotary position embedding, in place on x[N, n_heads·D]: in every head of row r, the pair
// (x[2j], x[2j+1]) is turned by the angle positions[r] · theta^(−2j/D). A query and a key turned
// by their positions have a dot product that depends only on how far apart they are: attention
// sees relative positions. Pairs are adjacent elements (llama.cpp's layout for Llama GGUFs).
void rope(Tensor& x, int n_heads, std::span<const int32_t> positions, float theta) {
  const int64_t N = x.dim(0), width = x.dim(1), D = width / n_heads;
  for (int64_t r = 0; r < N; ++r)
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x.host<float>() + r * width + h * D;
      for (int64_t j = 0; j < D / 2; ++j) {
        // Pair 0 turns fastest (a radian per position), the last pair slowest.
        const double frequency = std::pow(static_cast<double>(theta), -2.0 * static_cast<double>(j) / static_cast<double>(D));
        const double angle = static_cast<double>(positions[r]) * frequency;
        const double c = std::cos(angle), s = std::sin(angle);
        const double a = head[2 * j], b = head[2 * j + 1];
        head[2 * j] = static_cast<float>(a * c - b * s);
        head[2 * j + 1] = static_cast<float>(a * s + b * c);
      }
    }
}

// Causal grouped-query attention of T queries q[T, H·D] over the key and value rows kv locates
// (row j of head g: D floats at kv.key(j, g), kv.value(j, g)) → out[T, H·D]. Query t sits at
// position pos0 + t and sees rows 0 … pos0 + t (causal: never a later token). Query head h reads
// key/value head h / (H / H_kv): H / H_kv query heads share one stored head (grouped-query
// attention).
// For each query and head:
//   s_j = q · k_j / sqrt(D)                    how well key j matches the query
//   p_j = exp(s_j − max s) / Σ exp(s − max s)  softmax: weights ≥ 0 that sum to 1
//   out = Σ p_j · v_j                          the matching values, mixed by weight
// Subtracting max s changes no p_j (it cancels above and below) but keeps exp from overflowing.
void attention(const Tensor& q, const cpu::KvRows& kv, int n_heads, int n_kv_heads, int64_t pos0, Tensor& out) {
  const int64_t T = q.dim(0), D = q.dim(1) / n_heads, group = n_heads / n_kv_heads;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> p;         // [n]: the scores, then the weights, of the keys one query sees
  std::vector<double> mixed(D);  // [D]: Σ p_j · v_j
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < n_heads; ++h) {
      const float* qh = q.host<float>() + t * n_heads * D + h * D;
      const int64_t g = h / group;              // the key/value head this query head reads
      const int64_t n = pos0 + t + 1;           // keys seen: positions 0 … pos0 + t
      p.resize(n);
      for (int64_t j = 0; j < n; ++j) p[j] = dot(qh, kv.key(j, g), D) * scale;
      const double max_score = *std::max_element(p.begin(), p.end());
      double sum = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        p[j] = std::exp(p[j] - max_score);
        sum += p[j];
      }
      for (int64_t j = 0; j < n; ++j) p[j] /= sum;
      std::fill(mixed.begin(), mixed.end(), 0.0);
      for (int64_t j = 0; j < n; ++j) {
        const float* vj = kv.value(j, g);  // the block it is in, then its place there (KvRows)
        for (int64_t i = 0; i < D; ++i) mixed[i] += p[j] * vj[i];
      }
      float* oh = out.host<float>() + t * n_heads * D + h * D;
      for (int64_t i = 0; i < D; ++i) oh[i] = static_cast<float>(mixed[i]);
    }
}

// The same over contiguous k, v: [S, H_kv·D] or [H_kv, S, D], one block of S rows.
void attention(const Tensor& q, const Tensor& k, const Tensor& v, int n_heads, int n_kv_heads, int64_t pos0,
               Tensor& out) {
  std::array<const float*, 2> blocks;
  reference::attention(q, cpu::contiguous_rows(k, v, n_kv_heads, blocks), n_heads, n_kv_heads, pos0, out);
}

// out[N, F] = silu(gate) · up, silu(g) = g / (1 + e^−g): the SwiGLU MLP's gate, a smooth ReLU
// that lets the up projection through where the gate is positive. out may be gate itself.
void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  const float* g = gate.host<float>();
  const float* u = up.host<float>();
  float* o = out.host<float>();
  for (int64_t i = 0; i < gate.numel(); ++i) {
    const double gi = g[i];
    o[i] = static_cast<float>(gi / (1.0 + std::exp(-gi)) * u[i]);
  }
}

// x += y: the residual connection, each sub-layer's output added to the stream it read.
void add_inplace(Tensor& x, const Tensor& y) {
  float* a = x.host<float>();
  const float* b = y.host<float>();
  for (int64_t i = 0; i < x.numel(); ++i) a[i] += b[i];
}

// The index of the largest logit: greedy decoding's next token. Ties go to the lowest index.
int32_t argmax(const Tensor& row) {
  const float* p = row.host<float>();
  int64_t best = 0;
  for (int64_t i = 1; i < row.numel(); ++i)
    if (p[best] < p[i]) best = i;
  return static_cast<int32_t>(best);
}

// C[M, N] = alpha · op(A) · op(B) + beta · C, row-major; op(A) [M, K] is A [M, K] or, transposed,
// A [K, M]; op(B) [K, N] is B [K, N] or B [N, K]. As in BLAS, C is not read when beta is 0 (it
// may hold anything, NaN included).
void sgemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, const float* B,
           float beta, float* C) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < K; ++p) {
        const float a = trans_a ? A[p * M + i] : A[i * K + p];  // op(A)[i, p]
        const float b = trans_b ? B[j * K + p] : B[p * N + j];  // op(B)[p, j]
        sum += static_cast<double>(a) * b;
      }
      float& c = C[i * N + j];
      c = static_cast<float>(beta == 0.0f ? alpha * sum : alpha * sum + static_cast<double>(beta) * c);
    }
}

}  // namespace infer::reference
