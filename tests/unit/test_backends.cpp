// The fast CPU backend against the reference one (tensor/ops_reference.cpp), operation by
// operation, on random inputs of the default model's shapes and of edge shapes: one row and
// many (the small-n kernel up to 16 rows, sgemm from 17), widths that leave a tail after every
// vector width, grouped-query head ratios, queries after cached positions, rows in blocks.
//
// The tolerance is the rounding the fast path may add. The reference computes every sum in
// double and rounds once, so it is the exact result to within u·|result| (u = 2⁻²⁴, float's unit
// roundoff), and |fast − reference| is the fast path's own error, bounded by the worst case of
// float arithmetic in any order (Higham, "Accuracy and Stability of Numerical Algorithms", §3.1:
// a sum of K products, fused or not, is off by at most K·u·Σ|xᵢwᵢ|). The bounds are written with
// ε = 2⁻²³ (FLT_EPSILON = 2u), so each has a factor 2 to spare:
//   matmul_t, sgemm   |fast − ref| ≤ (K + 1)·ε·Σ|xᵢwᵢ|   (+ |β·c|, three roundings more, for sgemm)
//   rmsnorm           ≤ 4ε·|ref|          (a float scale, two float products)
//   rope              ≤ 4ε·(|a| + |b|)    (float cos and sin, two products and a sum, for the pair (a, b))
//   silu_mul          ≤ 8ε·|ref| + 1e-30  (an exponential within an ulp, a quotient, a product; the
//                                          floor covers a product that underflows on one side)
//   attention         scores off by at most Δs = (D + 4)·ε·max_j(scale·Σ|q·k_j|) change each weight p_j
//                     by a factor of at most 2Δs + 4ε; the weighted sum of n values adds n·ε:
//                     ≤ (2Δs + (n + 8)·ε)·max_j|v_j|, per output element
//   embedding, add_inplace, argmax: the same bits (a copy, one IEEE addition, comparisons)
// A wrong index, a sign or a missing max subtraction moves results by far more than these bounds.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "catch_compat.hpp"

#include "tensor/cpu_attention.hpp"
#include "tensor/ops.hpp"
#include "tensor/ops_cpu.hpp"
#include "tensor/ops_reference.hpp"
#include "tensor/tensor.hpp"
#include "test_support.hpp"

using namespace infer;
using test::ScopedCpuBackend;

namespace {

constexpr double kEps = std::numeric_limits<float>::epsilon();  // 2⁻²³

// n floats of very different sizes, as activations are (a normal times 10^e, e uniform in
// [−spread, spread]): the order of a sum matters most when its terms differ in size.
std::vector<float> mixed_sizes(int64_t n, uint32_t seed, double spread = 2.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_real_distribution<double> exponent(-spread, spread);
  std::vector<float> out(static_cast<std::size_t>(n));
  for (float& v : out) v = static_cast<float>(normal(rng) * std::pow(10.0, exponent(rng)));
  return out;
}

Tensor filled(const Shape& shape, uint32_t seed, double spread = 2.0) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return Tensor::from_vector(mixed_sizes(n, seed, spread), shape);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() &&
         std::memcmp(a.host<float>(), b.host<float>(), static_cast<std::size_t>(a.numel()) * sizeof(float)) == 0;
}

// y = x · wᵀ on the fast backend, checked element by element against the reference.
void check_matmul(int64_t N, int64_t K, int64_t M, uint32_t seed) {
  const Tensor x = filled({N, K}, seed), w = filled({M, K}, seed + 1);
  Tensor fast({N, M}), ref({N, M});
  {
    ScopedCpuBackend on(CpuBackend::fast);
    ops::matmul_t(x, w, fast);
  }
  reference::matmul_t(x, w, ref);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t j = 0; j < M; ++j) {
      double magnitude = 0;  // Σ|x_k w_k|
      for (int64_t k = 0; k < K; ++k) magnitude += std::fabs(double(x.host<float>()[i * K + k]) * w.host<float>()[j * K + k]);
      const double diff = std::fabs(double(fast.host<float>()[i * M + j]) - ref.host<float>()[i * M + j]);
      INFO("N " << N << ", K " << K << ", M " << M << ": y[" << i << ", " << j << "]");
      REQUIRE(diff <= double(K + 1) * kEps * magnitude);
    }
}

}  // namespace

TEST_CASE("the CPU backend is chosen by name and holds until changed", "[backends]") {
  CHECK(parse_cpu_backend("fast") == CpuBackend::fast);
  CHECK(parse_cpu_backend("reference") == CpuBackend::reference);
  CHECK_FALSE(parse_cpu_backend("Reference").has_value());
  CHECK_FALSE(parse_cpu_backend("").has_value());
  CHECK(cpu_backend_name(CpuBackend::fast) == "fast");
  CHECK(cpu_backend_name(CpuBackend::reference) == "reference");
  const CpuBackend before = cpu_backend();
  {
    ScopedCpuBackend on(CpuBackend::reference);
    CHECK(cpu_backend() == CpuBackend::reference);
    {
      ScopedCpuBackend inner(CpuBackend::fast);
      CHECK(cpu_backend() == CpuBackend::fast);
    }
    CHECK(cpu_backend() == CpuBackend::reference);
  }
  CHECK(cpu_backend() == before);
}

TEST_CASE("matmul_t: fast within (K + 1)·ε·Σ|xw| of the reference, 1 to 33 rows", "[backends]") {
  // N ≤ 16 runs the small-n kernel, N ≥ 17 OpenBLAS's sgemm over the thread pool; K = 1, 3, 7,
  // 37 and 603 leave a tail after every vector width, 576 is the model's width.
  uint32_t seed = 1;
  for (const int64_t N : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 18, 33})
    for (const int64_t K : {1, 3, 7, 37, 576, 603}) check_matmul(N, K, 19, seed += 2);
  // The default model's products: q, k/v and the MLP for a decode step and a short prefill.
  check_matmul(1, 576, 1536, 100);
  check_matmul(5, 1536, 576, 101);
  check_matmul(20, 576, 192, 102);
}

TEST_CASE("sgemm: fast within the dot-product bound of the reference, every transpose, alpha and beta", "[backends]") {
  struct Shape3 {
    int M, N, K;
  };
  uint32_t seed = 200;
  // The fast sgemm cuts C [2, 200] in 4 blocks of columns (64, 64, 64, 8), C [300, 40] in 2 × 2
  // (rows 256 + 44, columns 32 + 8).
  for (const Shape3 s : {Shape3{1, 1, 1}, {3, 5, 7}, {17, 9, 603}, {130, 3, 37}, {2, 200, 64}, {300, 40, 33}})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const float alpha : {1.0f, 0.5f})
          for (const float beta : {0.0f, 2.0f}) {
            INFO("M " << s.M << " N " << s.N << " K " << s.K << (ta ? " Aᵀ" : "") << (tb ? " Bᵀ" : "") << " alpha " << alpha
                      << " beta " << beta);
            const std::vector<float> A = mixed_sizes(int64_t{s.M} * s.K, seed++), B = mixed_sizes(int64_t{s.K} * s.N, seed++);
            std::vector<float> C0 = mixed_sizes(int64_t{s.M} * s.N, seed++);
            // beta = 0: C is not read, whatever it holds.
            if (beta == 0.0f) std::fill(C0.begin(), C0.end(), std::numeric_limits<float>::quiet_NaN());
            std::vector<float> fast = C0, ref = C0, entry = C0;
            {
              ScopedCpuBackend on(CpuBackend::fast);
              cpu::sgemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), B.data(), beta, fast.data());
            }
            reference::sgemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), B.data(), beta, ref.data());
            {
              // Chapter 08 calls cpu::sgemm directly: on the reference backend it is the reference.
              ScopedCpuBackend on(CpuBackend::reference);
              cpu::sgemm(ta, tb, s.M, s.N, s.K, alpha, A.data(), B.data(), beta, entry.data());
            }
            REQUIRE(std::memcmp(entry.data(), ref.data(), ref.size() * sizeof(float)) == 0);
            for (int i = 0; i < s.M; ++i)
              for (int j = 0; j < s.N; ++j) {
                double magnitude = 0;
                for (int p = 0; p < s.K; ++p) {
                  const float a = ta ? A[p * s.M + i] : A[i * s.K + p];
                  const float b = tb ? B[j * s.K + p] : B[p * s.N + j];
                  magnitude += std::fabs(double(a) * b);
                }
                magnitude = alpha * magnitude + (beta == 0.0f ? 0.0 : std::fabs(double(beta) * C0[i * s.N + j]));
                const float f = fast[i * s.N + j], r = ref[i * s.N + j];
                INFO("C[" << i << ", " << j << "] fast " << f << " reference " << r);
                REQUIRE(std::isfinite(r));
                REQUIRE(std::fabs(double(f) - r) <= double(s.K + 3) * kEps * magnitude);
              }
          }
}

TEST_CASE("embedding and add_inplace: the same bits on both backends", "[backends]") {
  const Tensor table = filled({50, 37}, 300);
  const std::vector<int32_t> ids{49, 0, 7, 7, 12};
  Tensor fast({5, 37}), ref({5, 37});
  {
    ScopedCpuBackend on(CpuBackend::fast);
    ops::embedding(table, ids, fast);
  }
  reference::embedding(table, ids, ref);
  CHECK(same_bits(fast, ref));

  for (const int64_t n : {1, 7, 576, 100003}) {  // 100 003: several chunks of the fast loop's threads
    const Tensor y = filled({n}, 301);
    Tensor a = filled({n}, 302), b = a.to(Device::cpu());
    {
      ScopedCpuBackend on(CpuBackend::fast);
      ops::add_inplace(a, y);
    }
    reference::add_inplace(b, y);
    INFO("n " << n);
    CHECK(same_bits(a, b));
  }
}

TEST_CASE("rmsnorm: fast within 4ε of the reference", "[backends]") {
  uint32_t seed = 400;
  for (const int64_t N : {1, 3, 17})
    for (const int64_t d : {1, 7, 64, 576}) {
      Tensor x = filled({N, d}, seed++);
      std::fill_n(x.host<float>(), d, 0.0f);  // an all-zero row: eps keeps it finite
      const Tensor w = filled({d}, seed++, 0.5);
      Tensor fast({N, d}), ref({N, d});
      {
        ScopedCpuBackend on(CpuBackend::fast);
        ops::rmsnorm(x, w, 1e-5f, fast);
      }
      reference::rmsnorm(x, w, 1e-5f, ref);
      for (int64_t i = 0; i < N * d; ++i) {
        const float f = fast.host<float>()[i], r = ref.host<float>()[i];
        INFO("N " << N << ", d " << d << ", element " << i << ": fast " << f << " reference " << r);
        REQUIRE(std::isfinite(r));
        REQUIRE(std::fabs(double(f) - r) <= 4 * kEps * std::fabs(double(r)));
      }
    }
}

TEST_CASE("rope: fast within 4ε·(|a| + |b|) of the reference for each pair (a, b)", "[backends]") {
  const std::vector<int32_t> positions{0, 1, 2, 17, 100, 1000, 8191};
  const int64_t N = std::ssize(positions);
  uint32_t seed = 500;
  for (const int heads : {1, 3, 9})
    for (const int64_t D : {2, 8, 64}) {
      const Tensor before = filled({N, heads * D}, seed++, 1.0);
      Tensor fast = before.to(Device::cpu()), ref = before.to(Device::cpu());
      {
        ScopedCpuBackend on(CpuBackend::fast);
        ops::rope(fast, heads, positions, 10000.0f);
      }
      reference::rope(ref, heads, positions, 10000.0f);
      const float* x = before.host<float>();
      for (int64_t i = 0; i < N * heads * D; i += 2) {
        const double pair = std::fabs(double(x[i])) + std::fabs(double(x[i + 1]));
        for (const int64_t e : {i, i + 1}) {
          INFO(heads << " heads of " << D << ", row " << i / (heads * D) << ", element " << e % (heads * D));
          REQUIRE(std::fabs(double(fast.host<float>()[e]) - ref.host<float>()[e]) <= 4 * kEps * pair);
        }
      }
      // Position 0 turns by nothing: the first row is unchanged on both.
      CHECK(std::memcmp(ref.host<float>(), x, static_cast<std::size_t>(heads * D) * sizeof(float)) == 0);
      CHECK(std::memcmp(fast.host<float>(), x, static_cast<std::size_t>(heads * D) * sizeof(float)) == 0);
    }
}

TEST_CASE("silu_mul: fast within 8ε of the reference, in place too", "[backends]") {
  for (const int64_t n : {1, 7, 1536, 3 * 1536 + 5}) {
    Tensor gate = filled({1, n}, 600 + static_cast<uint32_t>(n), 1.0);
    const Tensor up = filled({1, n}, 700 + static_cast<uint32_t>(n));
    const float edges[] = {0.0f, -0.0f, 1e-3f, -1e-3f, 20.0f, -20.0f, 100.0f, -100.0f, 500.0f, -500.0f};
    for (int64_t i = 0; i < std::min<int64_t>(std::ssize(edges), n); ++i) gate.host<float>()[i] = edges[i];
    Tensor fast({1, n}), ref({1, n});
    {
      ScopedCpuBackend on(CpuBackend::fast);
      ops::silu_mul(gate, up, fast);
    }
    reference::silu_mul(gate, up, ref);
    for (int64_t i = 0; i < n; ++i) {
      const float f = fast.host<float>()[i], r = ref.host<float>()[i];
      INFO("n " << n << ", gate " << gate.host<float>()[i] << ": fast " << f << " reference " << r);
      REQUIRE(std::fabs(double(f) - r) <= 8 * kEps * std::fabs(double(r)) + 1e-30);
    }
    // out = gate, as the forward pass calls it: each element is read before it is written.
    Tensor in_place = gate.to(Device::cpu());
    reference::silu_mul(in_place, up, in_place);
    CHECK(same_bits(in_place, ref));
  }
}

TEST_CASE("argmax: the same index on both backends, ties to the lowest", "[backends]") {
  std::vector<std::vector<float>> rows = {{1.0f}, {2.0f, 5.0f, 5.0f, -1.0f}, mixed_sizes(49152, 800)};
  std::vector<float> with_inf(100, -std::numeric_limits<float>::infinity());
  with_inf[63] = -1e30f;
  rows.push_back(with_inf);
  rows.push_back(std::vector<float>(33, 0.25f));  // all equal: index 0
  for (const std::vector<float>& v : rows) {
    const Tensor row = Tensor::from_vector(v, {1, std::ssize(v)});
    const int32_t ref = reference::argmax(row);
    ScopedCpuBackend on(CpuBackend::fast);
    CHECK(ops::argmax(row) == ref);
    CHECK(ref == static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin()));
  }
}

namespace {

// out = attention(q, k, v) on the fast backend against the reference, each element within the
// bound derived at the top of this file.
void check_attention(const Tensor& q, const Tensor& k, const Tensor& v, int H, int Hkv, int64_t pos0,
                     const Tensor& fast, const Tensor& ref) {
  const int64_t T = q.dim(0), D = q.dim(1) / H, width = k.dim(1);
  const double scale = 1.0 / std::sqrt(double(D));
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      const int64_t g = h / (H / Hkv), n = pos0 + t + 1;
      const float* qh = q.host<float>() + t * H * D + h * D;
      double score_size = 0;  // max_j scale·Σ|q·k_j|
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t i = 0; i < D; ++i) s += std::fabs(double(qh[i]) * k.host<float>()[j * width + g * D + i]);
        score_size = std::max(score_size, scale * s);
      }
      const double delta_s = double(D + 4) * kEps * score_size;
      for (int64_t i = 0; i < D; ++i) {
        double value_size = 0;  // max_j |v_j[i]|
        for (int64_t j = 0; j < n; ++j) value_size = std::max(value_size, std::fabs(double(v.host<float>()[j * width + g * D + i])));
        const int64_t at = t * H * D + h * D + i;
        INFO(H << " query heads over " << Hkv << ", D " << D << ", pos0 " << pos0 << ": query " << t << " head " << h
                << " element " << i);
        REQUIRE(std::fabs(double(fast.host<float>()[at]) - ref.host<float>()[at]) <=
                (2 * delta_s + double(n + 8) * kEps) * value_size);
      }
    }
}

}  // namespace

TEST_CASE("attention: fast within the softmax's rounding bound of the reference", "[backends]") {
  // Grouped-query ratios 3 (the default model), 4, 1 (every head its own) and 6 (multi-query);
  // D = 2, 8 and 68 leave tails after the kernel's vector pieces; T = 17 and 40 span several
  // query blocks; queries after 0, 3 and 21 cached positions.
  uint32_t seed = 900;
  for (const auto [H, Hkv] : {std::pair{9, 3}, std::pair{8, 2}, std::pair{4, 4}, std::pair{6, 1}})
    for (const int64_t D : {2, 8, 64, 68})
      for (const int64_t T : {1, 2, 17, 40})
        for (const int64_t pos0 : {0, 3, 21}) {
          const int64_t S = pos0 + T + 2;  // keys past the last query are never read
          const Tensor q = filled({T, H * D}, seed++, 0.3), k = filled({S, Hkv * D}, seed++, 0.3);
          const Tensor v = filled({S, Hkv * D}, seed++, 0.3);
          Tensor fast({T, H * D}), ref({T, H * D});
          {
            ScopedCpuBackend on(CpuBackend::fast);
            ops::attention(q, k, v, H, Hkv, pos0, fast);
          }
          reference::attention(q, k, v, H, Hkv, pos0, ref);
          check_attention(q, k, v, H, Hkv, pos0, fast, ref);
        }
  // Scores in the thousands: exp of one overflows even in double unless the largest score is
  // subtracted first. The weights are then almost all on one key.
  const int64_t T = 17, pos0 = 21, S = pos0 + T;
  Tensor q = filled({T, 9 * 64}, 950, 0.0), k = filled({S, 3 * 64}, 951, 0.0);
  const Tensor v = filled({S, 3 * 64}, 952, 0.3);
  for (Tensor* t : {&q, &k})
    for (int64_t i = 0; i < t->numel(); ++i) t->host<float>()[i] *= 30.0f;
  Tensor fast({T, 9 * 64}), ref({T, 9 * 64});
  {
    ScopedCpuBackend on(CpuBackend::fast);
    ops::attention(q, k, v, 9, 3, pos0, fast);
  }
  reference::attention(q, k, v, 9, 3, pos0, ref);
  check_attention(q, k, v, 9, 3, pos0, fast, ref);
}

TEST_CASE("attention over rows in blocks: the reference gives the bits of contiguous rows, the fast kernel is within the bound",
          "[backends]") {
  // Chapter 05's paged cache: the rows of k and v copied into blocks of B rows, laid out in a
  // pool in scrambled order, found through the list of block starts.
  const int H = 9, Hkv = 3, D = 64;
  const int64_t pos0 = 7, T = 18, S = pos0 + T, width = Hkv * D;
  const Tensor q = filled({T, H * D}, 1000, 0.3), k = filled({S, width}, 1001, 0.3), v = filled({S, width}, 1002, 0.3);
  Tensor contiguous({T, H * D});
  reference::attention(q, k, v, H, Hkv, pos0, contiguous);
  for (const int64_t B : {1, 3, 16}) {
    INFO("blocks of " << B << " rows");
    const int64_t n_blocks = (S + B - 1) / B;
    std::vector<float> key_pool(static_cast<std::size_t>(n_blocks * B * width)), value_pool(key_pool.size());
    std::vector<const float*> key_blocks, value_blocks;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const int64_t slot = (b * 7) % n_blocks;  // 7 shares no factor with 25, 9 or 2 blocks: a permutation
      float* kd = key_pool.data() + slot * B * width;
      float* vd = value_pool.data() + slot * B * width;
      for (int64_t o = 0; o < B && b * B + o < S; ++o) {
        std::copy_n(k.host<float>() + (b * B + o) * width, width, kd + o * width);
        std::copy_n(v.host<float>() + (b * B + o) * width, width, vd + o * width);
      }
      key_blocks.push_back(kd);
      value_blocks.push_back(vd);
    }
    const cpu::KvRows rows{key_blocks, value_blocks, B, width, D};
    Tensor paged_ref({T, H * D}), paged_fast({T, H * D}), entry({T, H * D});
    reference::attention(q, rows, H, Hkv, pos0, paged_ref);
    CHECK(same_bits(paged_ref, contiguous));
    {
      ScopedCpuBackend on(CpuBackend::fast);
      cpu::attention(q, rows, H, Hkv, pos0, paged_fast);
    }
    check_attention(q, k, v, H, Hkv, pos0, paged_fast, paged_ref);
    {
      // Chapter 05 calls cpu::attention directly: on the reference backend it is the reference.
      ScopedCpuBackend on(CpuBackend::reference);
      cpu::attention(q, rows, H, Hkv, pos0, entry);
    }
    CHECK(same_bits(entry, paged_ref));
  }
}

TEST_CASE("on the reference backend ops:: runs the reference loops, and a row's bits do not depend on its batch",
          "[backends]") {
  ScopedCpuBackend on(CpuBackend::reference);
  // 17 rows would be OpenBLAS's on the fast backend.
  const Tensor x = filled({17, 64}, 1100), w = filled({23, 64}, 1101);
  Tensor y({17, 23}), want({17, 23});
  ops::matmul_t(x, w, y);
  reference::matmul_t(x, w, want);
  CHECK(same_bits(y, want));
  for (int64_t i = 0; i < 17; ++i) {  // what chapters 04 and 07 rely on: a row alone = the row in a batch
    Tensor alone({1, 23});
    ops::matmul_t(x.row(i), w, alone);
    CHECK(std::memcmp(alone.host<float>(), y.host<float>() + i * 23, 23 * sizeof(float)) == 0);
  }

  const Tensor q = filled({5, 9 * 8}, 1102, 0.3), k = filled({9, 3 * 8}, 1103, 0.3), v = filled({9, 3 * 8}, 1104, 0.3);
  Tensor out({5, 9 * 8}), want_out({5, 9 * 8});
  ops::attention(q, k, v, 9, 3, 4, out);
  reference::attention(q, k, v, 9, 3, 4, want_out);
  CHECK(same_bits(out, want_out));
  for (int64_t t = 0; t < 5; ++t) {  // a query alone (a decode step) = the query among others (a prefill)
    Tensor one({1, 9 * 8});
    ops::attention(q.row(t), k.rows(0, 4 + t + 1), v.rows(0, 4 + t + 1), 9, 3, 4 + t, one);
    CHECK(std::memcmp(one.host<float>(), out.host<float>() + t * 9 * 8, 9 * 8 * sizeof(float)) == 0);
  }

  Tensor normed({17, 64}), want_normed({17, 64});
  const Tensor weight = filled({64}, 1105);
  ops::rmsnorm(x, weight, 1e-5f, normed);
  reference::rmsnorm(x, weight, 1e-5f, want_normed);
  CHECK(same_bits(normed, want_normed));
  Tensor turned = x.to(Device::cpu()), want_turned = x.to(Device::cpu());
  const std::vector<int32_t> positions(17, 5);
  ops::rope(turned, 4, positions, 10000.0f);
  reference::rope(want_turned, 4, positions, 10000.0f);
  CHECK(same_bits(turned, want_turned));
  Tensor gated({17, 64}), want_gated({17, 64});
  ops::silu_mul(x, x, gated);
  reference::silu_mul(x, x, want_gated);
  CHECK(same_bits(gated, want_gated));
}
