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

  volatile float sink = 0;  // keeps the sums from being optimised away
  const double seconds = median_seconds(repeats, [&] {
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      // Each thread sums its share into 32 independent lanes (four AVX registers), so the
      // adds never wait on each other and the loop runs at the speed of the loads.
      float lanes[32] = {};
#pragma omp for schedule(static)
      for (int64_t block = 0; block < n / 32; ++block) {
        const float* src = p + block * 32;
#pragma omp simd
        for (int j = 0; j < 32; ++j) lanes[j] += src[j];
      }
      for (float lane : lanes) total += lane;
    }
    sink = total;
  });
  (void)sink;
  return {static_cast<double>(n) * sizeof(float) / seconds, static_cast<std::size_t>(n) * sizeof(float), threads};
}

}  // namespace infer
