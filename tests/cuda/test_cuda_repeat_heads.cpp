// Chapter 02's repeat_heads (a gather through lib's embedding lookup) on the GPU equals the CPU's
// bit for bit: it copies, with no arithmetic.
//
// This file has its own main: without a usable GPU it prints "skipped: no CUDA device (...)"
// and returns 77, which CTest (SKIP_RETURN_CODE 77) reports as skipped.
#define CATCH_CONFIG_RUNNER
#include "catch_compat.hpp"

#include <cstdint>
#include <random>
#include <vector>

#include "repeat_heads.hpp"
#include "skip_without_gpu.hpp"
#include "tensor/tensor.hpp"

using namespace infer;

TEST_CASE("cuda: repeat_heads copies heads exactly", "[cuda]") {
  const Device gpu = Device::cuda();
  std::mt19937 rng(12);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  struct Case { int64_t rows; int kv_heads, repeats; int64_t head_dim; };
  for (const Case c : {Case{7, 3, 3, 64}, Case{1, 3, 3, 64}, Case{5, 1, 8, 128}, Case{3, 2, 1, 33}}) {
    INFO(c.rows << " rows, " << c.kv_heads << " heads of " << c.head_dim << ", repeated " << c.repeats);
    std::vector<float> values(static_cast<std::size_t>(c.rows * c.kv_heads * c.head_dim));
    for (float& v : values) v = dist(rng);
    const Tensor x = Tensor::from_vector(values, {c.rows, c.kv_heads * c.head_dim});
    const Shape out_shape{c.rows, c.kv_heads * c.repeats * c.head_dim};
    Tensor out_cpu(out_shape), out_gpu(out_shape, DType::f32, gpu);
    ops::repeat_heads(x, c.kv_heads, c.repeats, out_cpu);
    ops::repeat_heads(x.to(gpu), c.kv_heads, c.repeats, out_gpu);
    CHECK(out_gpu.to_vector() == out_cpu.to_vector());
  }
}

int main(int argc, char** argv) { return test::run_cuda_tests_or_skip(argc, argv); }
