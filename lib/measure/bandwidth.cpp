#include "measure/bandwidth.hpp"

#include <vector>

#include "measure/timing.hpp"
#include "tensor/ops.hpp"
#include "tensor/tensor.hpp"
#include "tensor/thread_pool.hpp"

namespace infer {

BandwidthResult measure_read_bandwidth(std::size_t bytes, int repeats) {
  const int64_t n = static_cast<int64_t>(bytes / sizeof(float));
  Tensor buffer({n});
  float* p = buffer.host<float>();
  const int threads = num_threads();
  parallel_for(n, balanced_grain(n, 1 << 16), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) p[i] = static_cast<float>(i & 255);  // touch every page
  });

  volatile float sink = 0;  // keeps the sums from being optimised away
  const double seconds = median_seconds(repeats, [&] {
    const int64_t blocks = n / 32, grain = balanced_grain(blocks, 1 << 12);
    std::vector<float> chunk_sums((blocks + grain - 1) / grain);
    parallel_for(blocks, grain, [&](int64_t first, int64_t last) {
      // Each chunk is summed into 32 independent lanes (four AVX registers), so the adds never
      // wait on each other and the loop runs at the speed of the loads.
      float lanes[32] = {};
      for (int64_t block = first; block < last; ++block) {
        const float* src = p + block * 32;
#pragma omp simd
        for (int j = 0; j < 32; ++j) lanes[j] += src[j];
      }
      float total = 0;
      for (float lane : lanes) total += lane;
      chunk_sums[first / grain] = total;
    });
    float total = 0;
    for (float s : chunk_sums) total += s;
    sink = total;
  });
  (void)sink;
  return {static_cast<double>(n) * sizeof(float) / seconds, static_cast<std::size_t>(n) * sizeof(float), threads};
}

}  // namespace infer
