// Every CPU operation of tensor/ops.hpp against a straightforward loop on small shapes.
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "catch_compat.hpp"

#include "tensor/memory.hpp"
#include "tensor/ops.hpp"
#include "tensor/tensor.hpp"
#include "test_support.hpp"

using namespace infer;

namespace {

Tensor random_tensor(Shape shape, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t(std::move(shape));
  float* p = t.host<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

void require_close(const Tensor& got, const std::vector<float>& want, float rel = 1e-5f, float abs = 1e-6f) {
  REQUIRE(got.numel() == std::ssize(want));
  const float* g = got.host<float>();
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::fabs(g[i] - want[i]) <= abs + rel * std::fabs(want[i]));
  }
}

}  // namespace

TEST_CASE("Tensor views share storage and check their bounds", "[tensor]") {
  Tensor t = Tensor::zeros({4, 3});
  t.host<float>()[7] = 5.0f;
  Tensor r = t.rows(2, 2);
  REQUIRE(r.shape() == Shape{2, 3});
  REQUIRE(r.host<float>()[1] == 5.0f);
  REQUIRE(t.reshape({12}).host<float>()[7] == 5.0f);
  REQUIRE_THROWS_AS(t.rows(3, 2), std::out_of_range);
  REQUIRE_THROWS_AS(t.reshape({5, 3}), std::invalid_argument);
  REQUIRE_THROWS_AS(t.host<int32_t>(), std::logic_error);
  Tensor c = t.to(Device::cpu());
  c.host<float>()[7] = 1.0f;
  REQUIRE(t.host<float>()[7] == 5.0f);  // to() copies
}

TEST_CASE("the allocator counts current and peak bytes", "[tensor]") {
  reset_peak_memory(Device::cpu());
  const MemoryStats before = memory_stats(Device::cpu());
  {
    Tensor a({1000});
    Tensor b({500});
    REQUIRE(memory_stats(Device::cpu()).current_bytes == before.current_bytes + 6000);
  }
  const MemoryStats after = memory_stats(Device::cpu());
  REQUIRE(after.current_bytes == before.current_bytes);
  REQUIRE(after.peak_bytes == before.current_bytes + 6000);
}

TEST_CASE("the allocator starts a buffer of 2 MiB or more on a 2 MiB boundary", "[tensor]") {
  // tensor/memory.cpp offers the whole 2 MiB pages inside such a buffer to Linux as huge pages
  // (on the fast backend; the reference backend asks for none).
  const test::ScopedCpuBackend fast(CpuBackend::fast);
  const Tensor big({int64_t{1} << 20});  // 4 MiB
  const Tensor just_under({(int64_t{2} << 20) / 4 - 16});
  const Tensor small({1000});
  CHECK(reinterpret_cast<std::uintptr_t>(big.raw()) % (std::uintptr_t{2} << 20) == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(just_under.raw()) % 64 == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(small.raw()) % 64 == 0);
}

TEST_CASE("matmul_t equals the triple loop, for one row and for many", "[ops]") {
  // k = 603 takes the small-n kernel's pieces of k (n = 5) and leaves a tail after them.
  for (const auto [n, k] : {std::pair<int64_t, int64_t>{1, 37}, {5, 37}, {40, 37}, {1, 603}, {5, 603}, {16, 603}}) {
    const int64_t m = 23;
    Tensor x = random_tensor({n, k}, 1), w = random_tensor({m, k}, 2), y({n, m});
    reset_op_counters();
    ops::matmul_t(x, w, y);
    REQUIRE(op_counters().matmul_macs == n * m * k);
    std::vector<float> want(static_cast<std::size_t>(n * m));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) s += double(x.host<float>()[i * k + p]) * w.host<float>()[j * k + p];
        want[i * m + j] = static_cast<float>(s);
      }
    require_close(y, want, 1e-4f, 1e-5f);
  }
  Tensor x({2, 3}), w({4, 5}), y({2, 4});
  REQUIRE_THROWS_WITH(ops::matmul_t(x, w, y), Catch::Contains("inner sizes differ"));
}

TEST_CASE("a row multiplied beside a few others gets exactly the bits it gets alone", "[ops]") {
  // Decode batches and speculative verification (n ≤ 16) must compute each token exactly as a
  // single decode step does, so that batching and verifying change nothing but cost.
  // k = 37 · 16 + 11: every register width leaves a tail to sum; m = 4 · 4 + 3: rows left over.
  const int64_t k = 603, m = 19;
  const Tensor w = random_tensor({m, k}, 7);
  for (int64_t n = 2; n <= 16; ++n) {
    const Tensor x = random_tensor({n, k}, static_cast<unsigned>(n));
    Tensor y({n, m});
    ops::matmul_t(x, w, y);
    for (int64_t i = 0; i < n; ++i) {
      Tensor alone({1, m});
      ops::matmul_t(x.row(i), w, alone);
      for (int64_t j = 0; j < m; ++j) {
        INFO("n = " << n << ", row " << i << ", column " << j);
        REQUIRE(y.host<float>()[i * m + j] == alone.host<float>()[j]);
      }
    }
  }
}

TEST_CASE("embedding copies rows and rejects ids outside the vocabulary", "[ops]") {
  Tensor table = random_tensor({10, 4}, 3), out({3, 4});
  const std::vector<int32_t> ids{7, 0, 7};
  ops::embedding(table, ids, out);
  std::vector<float> want;
  for (int32_t id : ids)
    for (int i = 0; i < 4; ++i) want.push_back(table.host<float>()[id * 4 + i]);
  require_close(out, want, 0, 0);
  const std::vector<int32_t> bad{10};
  Tensor one({1, 4});
  REQUIRE_THROWS_WITH(ops::embedding(table, bad, one), Catch::Contains("outside the vocabulary"));
}

TEST_CASE("rmsnorm equals its definition", "[ops]") {
  Tensor x = random_tensor({3, 16}, 4), w = random_tensor({16}, 5), y({3, 16});
  ops::rmsnorm(x, w, 1e-5f, y);
  std::vector<float> want;
  for (int r = 0; r < 3; ++r) {
    double ss = 0;
    for (int i = 0; i < 16; ++i) ss += double(x.host<float>()[r * 16 + i]) * x.host<float>()[r * 16 + i];
    const double inv = 1.0 / std::sqrt(ss / 16 + 1e-5);
    for (int i = 0; i < 16; ++i) want.push_back(static_cast<float>(x.host<float>()[r * 16 + i] * inv * w.host<float>()[i]));
  }
  require_close(y, want);
}

TEST_CASE("rope rotates adjacent pairs by position times frequency", "[ops]") {
  const int heads = 2, D = 8;
  Tensor x = random_tensor({3, heads * D}, 6);
  const std::vector<float> before(x.host<float>(), x.host<float>() + x.numel());
  const std::vector<int32_t> pos{0, 5, 100};
  ops::rope(x, heads, pos, 10000.0f);
  std::vector<float> want(before.size());
  for (int r = 0; r < 3; ++r)
    for (int h = 0; h < heads; ++h)
      for (int j = 0; j < D / 2; ++j) {
        const double ang = pos[r] * std::pow(10000.0, -2.0 * j / D);
        const std::size_t i = static_cast<std::size_t>(r * heads * D + h * D + 2 * j);
        want[i] = static_cast<float>(before[i] * std::cos(ang) - before[i + 1] * std::sin(ang));
        want[i + 1] = static_cast<float>(before[i] * std::sin(ang) + before[i + 1] * std::cos(ang));
      }
  require_close(x, want);
  // position 0 is the identity
  for (int i = 0; i < heads * D; ++i) REQUIRE(x.host<float>()[i] == before[i]);
}

TEST_CASE("silu_mul and add_inplace are elementwise", "[ops]") {
  Tensor g = random_tensor({2, 7}, 7), u = random_tensor({2, 7}, 8), out({2, 7});
  ops::silu_mul(g, u, out);
  std::vector<float> want;
  for (int i = 0; i < 14; ++i) {
    const float a = g.host<float>()[i];
    want.push_back(a / (1.0f + std::exp(-a)) * u.host<float>()[i]);
  }
  require_close(out, want);
  std::vector<float> sum;
  for (int i = 0; i < 14; ++i) sum.push_back(out.host<float>()[i] + u.host<float>()[i]);
  ops::add_inplace(out, u);
  require_close(out, sum, 0, 0);
}

TEST_CASE("attention equals the textbook formula, causal and with grouped heads", "[ops]") {
  // H = 6 query heads share H_kv = 2 key/value heads; 3 new queries after 4 cached positions.
  const int H = 6, Hkv = 2, D = 8;
  const int64_t pos0 = 4, T = 3, S = 9;  // S > pos0 + T: keys past the last query are ignored
  Tensor q = random_tensor({T, H * D}, 9), k = random_tensor({S, Hkv * D}, 10), v = random_tensor({S, Hkv * D}, 11);
  Tensor out({T, H * D});
  reset_op_counters();
  ops::attention(q, k, v, H, Hkv, pos0, out);
  REQUIRE(op_counters().attention_macs == 2 * H * D * (T * pos0 + T * (T + 1) / 2));
  std::vector<float> want(static_cast<std::size_t>(T * H * D));
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      const int g = h / (H / Hkv);
      std::vector<double> p;
      double mx = -1e300;
      for (int64_t j = 0; j <= pos0 + t; ++j) {
        double s = 0;
        for (int i = 0; i < D; ++i) s += double(q.host<float>()[t * H * D + h * D + i]) * k.host<float>()[j * Hkv * D + g * D + i];
        p.push_back(s / std::sqrt(double(D)));
        mx = std::max(mx, p.back());
      }
      double z = 0;
      for (double& s : p) z += (s = std::exp(s - mx));
      for (int i = 0; i < D; ++i) {
        double o = 0;
        for (std::size_t j = 0; j < p.size(); ++j) o += p[j] / z * v.host<float>()[j * Hkv * D + g * D + static_cast<std::size_t>(i)];
        want[t * H * D + h * D + i] = static_cast<float>(o);
      }
    }
  require_close(out, want, 1e-5f, 1e-6f);
  Tensor k_short = k.rows(0, 6), v_short = v.rows(0, 6);
  REQUIRE_THROWS_WITH(ops::attention(q, k_short, v_short, H, Hkv, pos0, out), Catch::Contains("need 7 keys"));
}

TEST_CASE("argmax picks the first of equal maxima", "[ops]") {
  const std::vector<float> v{1, 3, 2, 3};
  REQUIRE(ops::argmax(Tensor::from_vector(v, {1, 4})) == 1);
}
