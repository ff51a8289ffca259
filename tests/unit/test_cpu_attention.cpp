// The CPU attention kernel's two exactness promises (tensor/cpu_attention.hpp), which chapter
// 05 (paged = contiguous) and chapter 07 (a verification pass = decode steps) build on, and its
// agreement with the textbook formula at the default model's head size.
#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "catch_compat.hpp"

#include "tensor/cpu_attention.hpp"
#include "tensor/ops.hpp"
#include "tensor/tensor.hpp"

using namespace infer;

namespace {

Tensor random_tensor(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tensor t(std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.host<float>()[i] = dist(rng);
  return t;
}

bool same_bits(const float* a, const float* b, int64_t n) { return std::memcmp(a, b, static_cast<std::size_t>(n) * sizeof(float)) == 0; }

}  // namespace

TEST_CASE("attention at head size 64 equals the textbook formula", "[ops]") {
  // The default model's shapes: 9 query heads over 3 key/value heads of 64; 20 queries after 11
  // cached positions (two query blocks, the second partial).
  const int H = 9, Hkv = 3, D = 64;
  const int64_t pos0 = 11, T = 20, S = pos0 + T;
  const Tensor q = random_tensor({T, H * D}, 1), k = random_tensor({S, Hkv * D}, 2), v = random_tensor({S, Hkv * D}, 3);
  Tensor out({T, H * D});
  ops::attention(q, k, v, H, Hkv, pos0, out);
  for (int64_t t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h) {
      const int g = h / (H / Hkv);
      std::vector<double> p;
      double mx = -1e300, z = 0;
      for (int64_t j = 0; j <= pos0 + t; ++j) {
        double s = 0;
        for (int i = 0; i < D; ++i) s += double(q.host<float>()[t * H * D + h * D + i]) * k.host<float>()[j * Hkv * D + g * D + i];
        p.push_back(s / std::sqrt(double(D)));
        mx = std::max(mx, p.back());
      }
      for (double& s : p) z += (s = std::exp(s - mx));
      for (int i = 0; i < D; ++i) {
        double o = 0;
        for (std::size_t j = 0; j < p.size(); ++j) o += p[j] / z * v.host<float>()[j * Hkv * D + g * D + static_cast<std::size_t>(i)];
        const float got = out.host<float>()[t * H * D + h * D + i];
        INFO("query " << t << " head " << h << " element " << i);
        REQUIRE(std::fabs(got - o) <= 1e-6 + 1e-5 * std::fabs(o));
      }
    }
}

TEST_CASE("attention gives a query the same bits alone as among many", "[ops]") {
  // 40 queries span three query blocks of the kernel; each must equal a one-query call at its
  // own position (what a decode step computes), to the bit. D = 72 and 68 leave a tail after the
  // kernel's four-register pieces, and D = 68 also floats after its last register. Groups of 3
  // query heads (the default model) fill the kernel's tiles of three rows exactly; groups of 4
  // and 1 make tiles whose rows belong to different queries, which see different numbers of keys.
  for (const auto [H, Hkv] : {std::pair{9, 3}, std::pair{8, 2}, std::pair{4, 4}})
  for (const int D : {64, 72, 68}) {
    INFO(H << " query heads, " << Hkv << " key/value heads");
    const int64_t pos0 = 5, T = 40, S = pos0 + T;
    const Tensor q = random_tensor({T, H * D}, 4), k = random_tensor({S, Hkv * D}, 5), v = random_tensor({S, Hkv * D}, 6);
    Tensor all({T, H * D}), one({1, H * D});
    ops::attention(q, k, v, H, Hkv, pos0, all);
    for (int64_t t = 0; t < T; ++t) {
      ops::attention(q.row(t), k.rows(0, pos0 + t + 1), v.rows(0, pos0 + t + 1), H, Hkv, pos0 + t, one);
      INFO("D = " << D << ", query " << t);
      REQUIRE(same_bits(all.host<float>() + t * H * D, one.host<float>(), H * D));
    }
  }
}

TEST_CASE("attention through a block table gives the bits of contiguous rows", "[ops]") {
  // The rows of k and v copied into blocks of 3 rows, laid out in a pool in scrambled order (as
  // a paged cache's blocks are); the kernel finds them through the list of block starts.
  const int H = 9, Hkv = 3, D = 64, B = 3;
  const int64_t pos0 = 7, T = 18, S = pos0 + T, n_blocks = (S + B - 1) / B, width = Hkv * D;
  const Tensor q = random_tensor({T, H * D}, 7), k = random_tensor({S, width}, 8), v = random_tensor({S, width}, 9);
  std::vector<float> key_pool(static_cast<std::size_t>(n_blocks * B * width)), value_pool(key_pool.size());
  std::vector<const float*> key_blocks, value_blocks;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t slot = (b * 5) % n_blocks;  // 5 and 9 blocks share no factor: a permutation
    float* kd = key_pool.data() + slot * B * width;
    float* vd = value_pool.data() + slot * B * width;
    for (int64_t o = 0; o < B && b * B + o < S; ++o) {
      std::memcpy(kd + o * width, k.host<float>() + (b * B + o) * width, width * sizeof(float));
      std::memcpy(vd + o * width, v.host<float>() + (b * B + o) * width, width * sizeof(float));
    }
    key_blocks.push_back(kd);
    value_blocks.push_back(vd);
  }
  Tensor contiguous({T, H * D}), paged({T, H * D});
  ops::attention(q, k, v, H, Hkv, pos0, contiguous);
  cpu::attention(q, cpu::KvRows{key_blocks, value_blocks, B, width, D}, H, Hkv, pos0, paged);
  REQUIRE(same_bits(contiguous.host<float>(), paged.host<float>(), T * H * D));
}

TEST_CASE("attention over many chunks of keys gives a query the same bits alone as among many", "[ops]") {
  // 40 queries after 700 cached positions: their keys cross the kernel's chunk boundaries (every
  // 256 positions), so each query's softmax is assembled from three chunks, and a decode step
  // splits its keys among the threads by chunk. A prefill from position 0 covers the diagonal.
  const int H = 9, Hkv = 3, D = 64;
  for (const int64_t pos0 : {int64_t{700}, int64_t{0}}) {
    const int64_t T = pos0 == 0 ? 530 : 40, S = pos0 + T;
    const Tensor q = random_tensor({T, H * D}, 11), k = random_tensor({S, Hkv * D}, 12), v = random_tensor({S, Hkv * D}, 13);
    Tensor all({T, H * D}), one({1, H * D});
    ops::attention(q, k, v, H, Hkv, pos0, all);
    for (int64_t t = 0; t < T; t += pos0 == 0 ? 37 : 1) {
      ops::attention(q.row(t), k, v, H, Hkv, pos0 + t, one);
      INFO("pos0 " << pos0 << ", query " << t);
      REQUIRE(same_bits(all.host<float>() + t * H * D, one.host<float>(), H * D));
    }
  }
}

TEST_CASE("attention gives the same bits over keys stored head-major as position-major", "[ops]") {
  // Chapter 03's two layouts of the same cache: [S, H_kv·D] (a row per position) and
  // [H_kv, S, D] (a stream per head). The kernel reads the same numbers at other addresses.
  const int H = 9, Hkv = 3, D = 64;
  const int64_t pos0 = 300, T = 20, S = pos0 + T + 5;  // capacity past the last query: never read
  const Tensor q = random_tensor({T, H * D}, 14), k = random_tensor({S, Hkv * D}, 15), v = random_tensor({S, Hkv * D}, 16);
  Tensor k_heads({Hkv, S, D}), v_heads({Hkv, S, D});
  for (int64_t j = 0; j < S; ++j)
    for (int g = 0; g < Hkv; ++g) {
      std::memcpy(k_heads.host<float>() + (g * S + j) * D, k.host<float>() + j * Hkv * D + g * D, D * sizeof(float));
      std::memcpy(v_heads.host<float>() + (g * S + j) * D, v.host<float>() + j * Hkv * D + g * D, D * sizeof(float));
    }
  Tensor by_position({T, H * D}), by_head({T, H * D});
  ops::attention(q, k, v, H, Hkv, pos0, by_position);
  ops::attention(q, k_heads, v_heads, H, Hkv, pos0, by_head);
  REQUIRE(same_bits(by_position.host<float>(), by_head.host<float>(), T * H * D));
}
