#include "measure/bandwidth.hpp"

#include <vector>

#include "measure/timing.hpp"
#include "tensor/ops.hpp"
#include "tensor/tensor.hpp"

namespace infer {

BandwidthResult measure_read_bandwidth(std::size_t bytes, int repeats) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  Tensor buffer({n});
  float* p = buffer.host<float>();
  const int threads = num_threads();
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(i & 255);  // touch every page

  volatile float sink = 0;  // keeps the sum from being optimised away
  const double seconds = median_seconds(repeats, [&] {
    float total = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : total) num_threads(threads)
    for (int64_t i = 0; i < n; ++i) total += p[i];
    sink = total;
  });
  (void)sink;
  return {static_cast<double>(n) * sizeof(float) / seconds, static_cast<std::size_t>(n) * sizeof(float), threads};
}

}  // namespace infer
