// Parity of the CUDA backend with the CPU backend: every operation on random inputs, run on
// both devices, compared element by element.
//
// The comparison (require_close) accepts |gpu − cpu| ≤ rtol·(|cpu| + rms(cpu)) + atol: relative to
// the element, plus the tensor's typical size so that an output that cancels to near zero is
// judged at the scale of its neighbours. The tolerances, and why:
//   exact (0)     embedding, add_inplace, copies: no arithmetic, or one
//                 IEEE-rounded addition
//   1e-5          rmsnorm, rope, silu_mul: the same float formula; only the summation order of
//                 the mean of squares and the last ulp of exp/cos/sin differ
//   1e-4          f32 matmul and attention: sums of up to thousands of products in another
//                 order (the expected difference is ~1e-6; an indexing bug gives O(1) errors)
//   1e-4          f16/bf16 weights with one token (the decode kernel keeps x in f32)
//   1e-2 (f16), 2e-2 (bf16)   f16/bf16 weights with several tokens: cuBLAS multiplies x
//                 rounded to the weight type (2^-11 and 2^-8 relative error per element)
// The CPU reference for 16-bit weights uses the same weights widened to f32, so the tests
// measure the GPU's arithmetic, not the weights' rounding.
//
// This file has its own main: without a usable GPU it prints "skipped: no CUDA device (...)"
// and returns 77, which CTest (SKIP_RETURN_CODE 77) reports as skipped.
#define CATCH_CONFIG_RUNNER
#include "catch_compat.hpp"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "skip_without_gpu.hpp"
#include "tensor/memory.hpp"
#include "tensor/ops.hpp"
#include "tensor/tensor.hpp"

using namespace infer;

namespace {

const Device kCpu = Device::cpu();
const Device kGpu = Device::cuda();

Tensor random_tensor(Shape shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  Tensor t(std::move(shape));
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.host<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

void require_close(const Tensor& gpu, const Tensor& cpu, Tolerance tol) {
  REQUIRE(gpu.device() == kGpu);
  REQUIRE(cpu.device() == kCpu);
  REQUIRE(gpu.shape() == cpu.shape());
  const std::vector<float> a = gpu.to_vector(), b = cpu.to_vector();
  double sum_sq = 0.0;
  for (float x : b) sum_sq += static_cast<double>(x) * x;
  const double rms = b.empty() ? 0.0 : std::sqrt(sum_sq / static_cast<double>(b.size()));
  std::size_t bad = 0, worst = 0;
  double worst_ratio = 0.0, max_err = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double err = std::fabs(static_cast<double>(a[i]) - b[i]);
    const double bound = tol.rtol * (std::fabs(b[i]) + rms) + tol.atol;
    if (!(err <= bound)) {  // also catches NaN
      const double ratio = bound > 0 ? err / bound : std::numeric_limits<double>::infinity();
      if (bad == 0 || !(ratio <= worst_ratio)) {
        worst = i;
        worst_ratio = ratio;
      }
      ++bad;
    }
    if (err > max_err) max_err = err;
  }
  INFO("shape " << shape_string(cpu.shape()) << ", rms " << rms << ", max |gpu - cpu| " << max_err
                << ", rtol " << tol.rtol << ", atol " << tol.atol);
  std::ostringstream detail;
  if (bad > 0)
    detail << bad << " of " << a.size() << " elements outside the tolerance; worst at flat index "
           << worst << ": gpu " << a[worst] << ", cpu " << b[worst];
  INFO(detail.str());
  CHECK(bad == 0);
}

// Round to bfloat16, to nearest even (the test data has no NaN).
uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

// A 16-bit copy of a CPU f32 tensor (still on the CPU).
Tensor to_half(const Tensor& t, DType dtype) {
  Tensor out(t.shape(), dtype);
  const float* src = t.host<float>();
  uint16_t* dst = out.host<uint16_t>();
  for (int64_t i = 0; i < t.numel(); ++i)
    dst[i] = dtype == DType::f16 ? gguf::fp32_to_fp16(src[i]) : to_bf16(src[i]);
  return out;
}

// The same values widened back to f32: the CPU reference for 16-bit weights.
Tensor widened(const Tensor& half) {
  const std::vector<float> values = half.to_vector();
  return Tensor::from_vector(values, half.shape());
}

}  // namespace

TEST_CASE("cuda: memory round trips, copies, zeros and row views", "[cuda]") {
  std::mt19937 rng(1);
  const Tensor host = random_tensor({10, 7}, rng);

  const int64_t before = memory_stats(kGpu).current_bytes;
  {
    const Tensor dev = host.to(kGpu);
    CHECK(memory_stats(kGpu).current_bytes == before + static_cast<int64_t>(dev.nbytes()));
    CHECK(dev.to_vector() == host.to_vector());

    const Tensor dev2 = dev.to(kGpu);  // device → device
    CHECK(dev2.to_vector() == host.to_vector());

    Tensor dev3(host.shape(), DType::f32, kGpu);
    dev3.copy_from(host);  // host → device into an existing tensor
    CHECK(dev3.to_vector() == host.to_vector());

    Tensor back(host.shape());
    back.copy_from(dev3);  // device → host
    CHECK(back.to_vector() == host.to_vector());

    // A row view shares the device storage at an offset.
    CHECK(dev.rows(3, 2).to_vector() == host.rows(3, 2).to_vector());

    dev3.fill_zero();
    CHECK(dev3.to_vector() == std::vector<float>(70, 0.0f));

    CHECK_THROWS_AS(dev.host<float>(), std::logic_error);

    // 16-bit data travels bit for bit.
    const Tensor h16 = to_half(host, DType::f16);
    CHECK(h16.to(kGpu).to_vector() == h16.to_vector());
  }
  CHECK(memory_stats(kGpu).current_bytes == before);

  // Zero-sized tensors are legal on the device too.
  const Tensor empty({0, 4}, DType::f32, kGpu);
  CHECK(empty.to_vector().empty());
}

TEST_CASE("cuda: operands on different devices are refused", "[cuda]") {
  std::mt19937 rng(2);
  const Tensor x = random_tensor({2, 8}, rng);
  const Tensor w = random_tensor({4, 8}, rng).to(kGpu);
  Tensor y({2, 4}, DType::f32, kGpu);
  CHECK_THROWS_WITH(ops::matmul_t(x, w, y), Catch::Contains("operands on cpu and cuda:0"));
  Tensor a = random_tensor({3}, rng);
  CHECK_THROWS_AS(ops::add_inplace(a, a.to(kGpu)), std::invalid_argument);
  CHECK_NOTHROW(require_device(kGpu));
}

TEST_CASE("cuda: matmul_t with f32 weights matches the CPU within 1e-4", "[cuda]") {
  std::mt19937 rng(3);
  struct Size { int64_t n, k, m; };
  for (const Size s : {Size{1, 576, 576}, Size{1, 576, 49152}, Size{7, 576, 1536}, Size{5, 33, 17},
                       Size{64, 1536, 576}, Size{3, 1, 5}}) {
    INFO("n " << s.n << ", k " << s.k << ", m " << s.m);
    const Tensor x = random_tensor({s.n, s.k}, rng);
    const Tensor w = random_tensor({s.m, s.k}, rng);
    Tensor y_cpu({s.n, s.m});
    ops::matmul_t(x, w, y_cpu);
    Tensor y_gpu({s.n, s.m}, DType::f32, kGpu);
    ops::matmul_t(x.to(kGpu), w.to(kGpu), y_gpu);
    require_close(y_gpu, y_cpu, {1e-4, 1e-6});
  }
  {  // x a row view at an offset (decode reads one row of a batch)
    const Tensor xs = random_tensor({5, 576}, rng);
    const Tensor w = random_tensor({300, 576}, rng);
    Tensor y_cpu({1, 300}), y_gpu({1, 300}, DType::f32, kGpu);
    ops::matmul_t(xs.row(3), w, y_cpu);
    ops::matmul_t(xs.to(kGpu).row(3), w.to(kGpu), y_gpu);
    require_close(y_gpu, y_cpu, {1e-4, 1e-6});
  }
}

TEST_CASE("cuda: matmul_t with f16 and bf16 weights", "[cuda]") {
  std::mt19937 rng(4);
  struct Size { int64_t n, k, m; };
  for (const DType dtype : {DType::f16, DType::bf16}) {
    // (n = 1, k % 8 == 0): the decode kernel; other sizes: x converted, then cublasGemmEx.
    for (const Size s : {Size{1, 576, 576}, Size{1, 1536, 576}, Size{1, 576, 4099}, Size{1, 40, 3},
                         Size{1, 33, 17}, Size{7, 576, 1536}, Size{5, 33, 17}, Size{64, 576, 576}}) {
      const bool decode_kernel = s.n == 1 && s.k % 8 == 0;
      const double rtol = decode_kernel ? 1e-4 : (dtype == DType::f16 ? 1e-2 : 2e-2);
      INFO(dtype_name(dtype) << ", n " << s.n << ", k " << s.k << ", m " << s.m);
      const Tensor x = random_tensor({s.n, s.k}, rng);
      const Tensor w16 = to_half(random_tensor({s.m, s.k}, rng), dtype);
      Tensor y_cpu({s.n, s.m});
      ops::matmul_t(x, widened(w16), y_cpu);
      Tensor y_gpu({s.n, s.m}, DType::f32, kGpu);
      ops::matmul_t(x.to(kGpu), w16.to(kGpu), y_gpu);
      require_close(y_gpu, y_cpu, {rtol, 1e-6});
    }
  }
}

TEST_CASE("cuda: embedding gathers rows exactly", "[cuda]") {
  std::mt19937 rng(5);
  for (const Shape& table_shape : {Shape{1000, 576}, Shape{50, 33}}) {
    const Tensor table = random_tensor(table_shape, rng);
    const Tensor table_gpu = table.to(kGpu);
    const int32_t vocab = static_cast<int32_t>(table_shape[0]);
    std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
    std::vector<int32_t> many(200), more(300);  // over 64 ids: copied to a device buffer
    for (int32_t& id : many) id = pick(rng);
    for (int32_t& id : more) id = pick(rng);
    for (const std::vector<int32_t>& ids :
         {std::vector<int32_t>{7}, std::vector<int32_t>{0, vocab - 1, 7, 7, 3}, many, more}) {
      INFO(ids.size() << " ids into a table of shape " << shape_string(table_shape));
      const int64_t n = std::ssize(ids);
      Tensor out_cpu({n, table_shape[1]}), out_gpu({n, table_shape[1]}, DType::f32, kGpu);
      ops::embedding(table, ids, out_cpu);
      ops::embedding(table_gpu, ids, out_gpu);
      require_close(out_gpu, out_cpu, {0.0, 0.0});
    }
  }
}

TEST_CASE("cuda: rmsnorm matches the CPU within 1e-5", "[cuda]") {
  std::mt19937 rng(6);
  for (const int64_t rows : {1, 7, 130}) {
    for (const int64_t d : {576, 33}) {
      INFO(rows << " rows of width " << d);
      const Tensor x = random_tensor({rows, d}, rng, -3.0f, 3.0f);
      const Tensor w = random_tensor({d}, rng, 0.5f, 1.5f);
      Tensor y_cpu({rows, d}), y_gpu({rows, d}, DType::f32, kGpu);
      ops::rmsnorm(x, w, 1e-5f, y_cpu);
      ops::rmsnorm(x.to(kGpu), w.to(kGpu), 1e-5f, y_gpu);
      require_close(y_gpu, y_cpu, {1e-5, 0.0});
    }
  }
}

TEST_CASE("cuda: rope matches the CPU within 1e-5, at large positions too", "[cuda]") {
  std::mt19937 rng(7);
  std::vector<int32_t> scattered(100);  // over 64 positions: copied to a device buffer
  std::uniform_int_distribution<int32_t> pick(0, 8191);
  for (int32_t& p : scattered) p = pick(rng);
  std::vector<int32_t> from0(7), from37(5);
  std::iota(from0.begin(), from0.end(), 0);
  std::iota(from37.begin(), from37.end(), 37);
  struct Heads { int n_heads; int64_t head_dim; };
  for (const Heads hd : {Heads{9, 64}, Heads{3, 64}, Heads{2, 128}, Heads{5, 6}}) {
    for (const float theta : {10000.0f, 100000.0f}) {
      for (const std::vector<int32_t>& positions :
           {from0, from37, std::vector<int32_t>{8191}, scattered}) {
        INFO(hd.n_heads << " heads of " << hd.head_dim << ", theta " << theta << ", "
                        << positions.size() << " positions from " << positions[0]);
        const int64_t rows = std::ssize(positions);
        Tensor x_cpu = random_tensor({rows, hd.n_heads * hd.head_dim}, rng);
        Tensor x_gpu = x_cpu.to(kGpu);
        ops::rope(x_cpu, hd.n_heads, positions, theta);
        ops::rope(x_gpu, hd.n_heads, positions, theta);
        require_close(x_gpu, x_cpu, {1e-5, 1e-6});
      }
    }
  }
}

TEST_CASE("cuda: silu_mul within 1e-5 and add_inplace exactly", "[cuda]") {
  std::mt19937 rng(8);
  for (const Shape& shape : {Shape{1, 1536}, Shape{7, 1537}, Shape{1, 1}}) {
    INFO("shape " << shape_string(shape));
    const Tensor gate = random_tensor(shape, rng, -8.0f, 8.0f);
    const Tensor up = random_tensor(shape, rng, -2.0f, 2.0f);
    Tensor out_cpu(shape), out_gpu(shape, DType::f32, kGpu);
    ops::silu_mul(gate, up, out_cpu);
    ops::silu_mul(gate.to(kGpu), up.to(kGpu), out_gpu);
    require_close(out_gpu, out_cpu, {1e-5, 1e-7});

    Tensor sum_cpu = random_tensor(shape, rng);
    Tensor sum_gpu = sum_cpu.to(kGpu);
    ops::add_inplace(sum_cpu, up);
    ops::add_inplace(sum_gpu, up.to(kGpu));
    require_close(sum_gpu, sum_cpu, {0.0, 0.0});
  }
}

TEST_CASE("cuda: attention matches the CPU within 1e-4", "[cuda]") {
  std::mt19937 rng(9);
  struct Case {
    const char* what;
    int64_t t, pos0, extra_keys;  // keys = pos0 + t + extra_keys; the extra ones are never seen
    int heads, kv_heads;
    int64_t head_dim;
  };
  const Case cases[] = {
      {"prefill, grouped heads 9/3", 7, 0, 0, 9, 3, 64},
      {"decode (T = 1) over a cache, grouped heads", 1, 40, 0, 9, 3, 64},
      {"a chunk after a prefix, unused keys after it", 5, 12, 6, 9, 3, 64},
      {"long prefill", 130, 0, 0, 9, 3, 64},
      {"multi-head (H = H_kv), small heads", 3, 2, 0, 4, 4, 32},
      {"multi-query (H_kv = 1), D = 128", 2, 100, 0, 8, 1, 128},
      {"head size above the block size", 3, 5, 2, 2, 1, 256},
      {"odd head size", 4, 9, 0, 2, 2, 81},
      {"decode over a context too long for shared memory", 1, 13000, 0, 2, 1, 64},
      {"two queries over a context too long for shared memory", 2, 13000, 3, 3, 3, 64},
  };
  for (const Case& c : cases) {
    INFO(c.what << ": T " << c.t << ", pos0 " << c.pos0 << ", H " << c.heads << ", H_kv "
                << c.kv_heads << ", D " << c.head_dim);
    const int64_t keys = c.pos0 + c.t + c.extra_keys;
    const Tensor q = random_tensor({c.t, c.heads * c.head_dim}, rng, -2.0f, 2.0f);
    Tensor k = random_tensor({keys, c.kv_heads * c.head_dim}, rng);
    Tensor v = random_tensor({keys, c.kv_heads * c.head_dim}, rng);
    // Keys and values past the last query's position must not be read: make them poison.
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = (c.pos0 + c.t) * k.dim(1); i < k.numel(); ++i) {
      k.host<float>()[i] = nan;
      v.host<float>()[i] = nan;
    }
    Tensor out_cpu(q.shape()), out_gpu(q.shape(), DType::f32, kGpu);
    ops::attention(q, k, v, c.heads, c.kv_heads, c.pos0, out_cpu);
    ops::attention(q.to(kGpu), k.to(kGpu), v.to(kGpu), c.heads, c.kv_heads, c.pos0, out_gpu);
    require_close(out_gpu, out_cpu, {1e-4, 1e-6});
  }
}

TEST_CASE("cuda: argmax agrees with the CPU, ties to the lowest index", "[cuda]") {
  std::mt19937 rng(10);
  auto both = [](const Tensor& row) {
    const int32_t cpu = ops::argmax(row);
    const int32_t gpu = ops::argmax(row.to(kGpu));
    CHECK(gpu == cpu);
    return gpu;
  };
  both(random_tensor({1, 49152}, rng));
  both(random_tensor({1, 1001}, rng, -5.0f, -1.0f));  // all negative
  both(random_tensor({1, 1}, rng));

  Tensor tie = random_tensor({1, 49152}, rng);
  tie.host<float>()[30000] = 5.0f;
  tie.host<float>()[1000] = 5.0f;
  CHECK(both(tie) == 1000);

  Tensor last = random_tensor({1, 4099}, rng);
  last.host<float>()[4098] = 2.0f;
  CHECK(both(last) == 4098);

  CHECK(both(Tensor::zeros({1, 300})) == 0);

  // One row of a batch of logits, on the device.
  const Tensor batch = random_tensor({5, 4099}, rng);
  CHECK(ops::argmax(batch.to(kGpu).row(3)) == ops::argmax(batch.row(3)));
}

TEST_CASE("cuda: one attention block chained on the device matches the CPU", "[cuda]") {
  // The ops composed as the forward pass uses them, with every intermediate on the device:
  // x → rmsnorm → q, k, v → rope(q, k) → attention → output projection → residual add.
  std::mt19937 rng(11);
  const int heads = 9, kv_heads = 3;
  const int64_t d = 576, head_dim = 64, t = 6, pos0 = 0;
  const Tensor x0 = random_tensor({t, d}, rng);
  const Tensor norm_w = random_tensor({d}, rng, 0.5f, 1.5f);
  const float s = 1.0f / std::sqrt(static_cast<float>(d));
  const Tensor wq = random_tensor({heads * head_dim, d}, rng, -s, s);
  const Tensor wk = random_tensor({kv_heads * head_dim, d}, rng, -s, s);
  const Tensor wv = random_tensor({kv_heads * head_dim, d}, rng, -s, s);
  const Tensor wo = random_tensor({d, heads * head_dim}, rng, -s, s);
  std::vector<int32_t> positions(t);
  std::iota(positions.begin(), positions.end(), 0);

  auto block = [&](const Device& dev) {
    Tensor x = x0.to(dev);
    Tensor h({t, d}, DType::f32, dev), q({t, heads * head_dim}, DType::f32, dev);
    Tensor k({t, kv_heads * head_dim}, DType::f32, dev), v({t, kv_heads * head_dim}, DType::f32, dev);
    Tensor att({t, heads * head_dim}, DType::f32, dev), o({t, d}, DType::f32, dev);
    ops::rmsnorm(x, norm_w.to(dev), 1e-5f, h);
    ops::matmul_t(h, wq.to(dev), q);
    ops::matmul_t(h, wk.to(dev), k);
    ops::matmul_t(h, wv.to(dev), v);
    ops::rope(q, heads, positions, 100000.0f);
    ops::rope(k, kv_heads, positions, 100000.0f);
    ops::attention(q, k, v, heads, kv_heads, pos0, att);
    ops::matmul_t(att, wo.to(dev), o);
    ops::add_inplace(x, o);
    return x;
  };
  require_close(block(kGpu), block(kCpu), {1e-4, 1e-6});
}

int main(int argc, char** argv) { return test::run_cuda_tests_or_skip(argc, argv); }
