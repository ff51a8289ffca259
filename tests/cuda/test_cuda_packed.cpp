// Chapter 06's packed-weight kernels on the GPU (chapters/06_quantization/packed/cuda/packed_kernels.cu)
// against each scheme's own dequantize().
//
//   packed_matmul_cuda    y[n, rows] = x · Ŵᵀ, compared with the product of dequantize()'s Ŵ and
//                         x in double: |y − exact| ≤ 1e-5 · Σ_c |x[t, c] · ŵ(r, c)|. Float sums of
//                         ≤ 576 products: the expected error is ~√cols · 2⁻²⁴ ≈ 1e-6 of that
//                         magnitude; an indexing bug gives errors of order 1.
//   packed_gather_rows    equal to dequantize()'s rows bit for bit (the decode writes the same
//                         products in the same order, without fused multiply-adds)
//
// n runs over 1 and 5 (one pass of the decode kernel), 12 and 16 (two passes of 8), 17, 33 and 70
// (the tiled kernel: one and two 64-row tiles of x). The shapes (tests/packed_test_data.hpp)
// include odd column counts, where a 4-bit row starts mid-byte and a group of 128 (block of 64)
// spans two rows, and row counts that are not multiples of a block's 8 warps or a tile's 64
// rows; here also the default model's [1536, 576] projection.
//
// The decode formulas themselves are checked on the CPU, on every machine, by
// tests/chapter_unit/test_packed_decode.cpp. Without a usable GPU this executable prints
// "skipped: no CUDA device (...)" and returns 77, which CTest reports as skipped.
#define CATCH_CONFIG_RUNNER
#include "catch_compat.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "packed_kernels.hpp"
#include "packed_test_data.hpp"
#include "skip_without_gpu.hpp"
#include "tensor/memory.hpp"

using namespace infer;
using namespace infer::quant;

namespace {

const Device kGpu = Device::cuda();
const Device kCpu = Device::cpu();

// A device copy of a host array (or count uninitialised elements), freed at the end of the scope.
template <class T>
class DeviceArray {
 public:
  explicit DeviceArray(const std::vector<T>& host) : bytes_(host.size() * sizeof(T)) {
    ptr_ = device_alloc(kGpu, bytes_);
    device_copy(kGpu, ptr_, kCpu, host.data(), bytes_);
  }
  explicit DeviceArray(std::size_t count) : bytes_(count * sizeof(T)) { ptr_ = device_alloc(kGpu, bytes_); }
  ~DeviceArray() { device_free(kGpu, ptr_, bytes_); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;

  T* get() const { return static_cast<T*>(ptr_); }
  std::vector<T> to_host() const {
    std::vector<T> host(bytes_ / sizeof(T));
    device_copy(kCpu, host.data(), kGpu, ptr_, bytes_);
    return host;
  }

 private:
  std::size_t bytes_;
  void* ptr_ = nullptr;
};

// Every (format, shape) of the test: the packed matrix on both sides.
template <class Fn>
void for_each_packed_matrix(Fn fn) {
  uint32_t seed = 6;
  for (const PackedFormat format : kPackedFormats) {
    std::vector<test::PackedShape> shapes = test::packed_test_shapes(format);
    shapes.push_back({1536, 576});  // the default model's MLP up/gate projection
    for (const test::PackedShape s : shapes) {
      const test::PackedTestMatrix m = test::packed_test_matrix(format, s, ++seed);
      const DeviceArray<uint8_t> w_gpu(m.packed.bytes);
      fn(format, s, m, w_gpu.get());
    }
  }
}

}  // namespace

TEST_CASE("packed_matmul_cuda equals dequantize-then-multiply", "[cuda][packed]") {
  for_each_packed_matrix([](PackedFormat format, test::PackedShape s, const test::PackedTestMatrix& m, const uint8_t* w) {
    for (const int64_t n : {1, 5, 12, 16, 17, 33, 70}) {
      if (s.rows * s.cols > 100000 && n != 1 && n != 33) continue;  // the large shape: one decode, one tiled
      CAPTURE(format_flag(format), s.rows, s.cols, n);
      const std::vector<float> x = test::packed_test_x(n, s.cols, static_cast<uint32_t>(n));
      const DeviceArray<float> x_gpu(x);
      DeviceArray<float> y_gpu(static_cast<std::size_t>(n * s.rows));
      packed_matmul_cuda(format, w, s.rows, s.cols, x_gpu.get(), n, y_gpu.get());
      const std::vector<float> y = y_gpu.to_host();
      const double worst = test::worst_relative_error(
          m, x, n, [&](int64_t t, int64_t r) { return y[t * s.rows + r]; });
      CHECK(worst <= 1e-5);
    }
  });
}

TEST_CASE("packed_gather_rows_cuda returns dequantize()'s rows", "[cuda][packed]") {
  std::mt19937 rng(7);
  for_each_packed_matrix([&](PackedFormat format, test::PackedShape s, const test::PackedTestMatrix& m, const uint8_t* w) {
    for (const int64_t n : {1, 5, 33}) {
      CAPTURE(format_flag(format), s.rows, s.cols, n);
      std::vector<int32_t> ids(static_cast<std::size_t>(n));
      std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(s.rows - 1));
      for (int32_t& id : ids) id = pick(rng);
      ids.front() = static_cast<int32_t>(s.rows - 1);  // the last row, whose group may be short
      ids.back() = 0;
      const DeviceArray<int32_t> ids_gpu(ids);
      DeviceArray<float> out_gpu(static_cast<std::size_t>(n * s.cols));
      packed_gather_rows_cuda(format, w, s.rows, s.cols, ids_gpu.get(), n, out_gpu.get());
      const std::vector<float> out = out_gpu.to_host();
      int64_t mismatches = 0;
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < s.cols; ++c) {
          const float got = out[i * s.cols + c];
          const float expected = m.w_hat[ids[static_cast<std::size_t>(i)] * s.cols + c];
          if (std::memcmp(&got, &expected, sizeof got) != 0) ++mismatches;
        }
      CHECK(mismatches == 0);
    }
  });
}

TEST_CASE("packed kernels refuse host pointers and mark unknown ids", "[cuda][packed]") {
  const test::PackedTestMatrix m = test::packed_test_matrix(PackedFormat::nf4, {4, 64}, 8);
  const DeviceArray<uint8_t> w_gpu(m.packed.bytes);
  std::vector<float> x(64, 1.0f), y(4);
  CHECK_THROWS_AS(packed_matmul_cuda(PackedFormat::nf4, m.packed.bytes.data(), 4, 64, x.data(), 1, y.data()),
                  std::invalid_argument);

  // An id outside the matrix cannot throw inside a kernel: its row comes back as NaN.
  const DeviceArray<int32_t> ids_gpu(std::vector<int32_t>{1, 4, -1});
  DeviceArray<float> out_gpu(3 * 64);
  packed_gather_rows_cuda(PackedFormat::nf4, w_gpu.get(), 4, 64, ids_gpu.get(), 3, out_gpu.get());
  const std::vector<float> out = out_gpu.to_host();
  CHECK_FALSE(std::isnan(out[0]));
  CHECK(std::isnan(out[64]));
  CHECK(std::isnan(out[2 * 64 + 63]));
}

int main(int argc, char** argv) { return test::run_cuda_tests_or_skip(argc, argv); }
