#include "measure/bandwidth.hpp"

#include <vector>

#include "measure/timing.hpp"
#include "tensor/ops.hpp"
#include "tensor/tensor.hpp"
#include "tensor/thread_pool.hpp"

namespace infer {

ReadBandwidthProbe::ReadBandwidthProbe(std::size_t bytes)
    : buffer_({static_cast<int64_t>(bytes / (32 * sizeof(float)) * 32)}) {
  const int64_t n = buffer_.numel();
  float* p = buffer_.host<float>();
  parallel_for(n, balanced_grain(n, 1 << 16), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) p[i] = static_cast<float>(i & 255);  // touch every page
  });
}

void ReadBandwidthProbe::read_once() const {
  const float* p = buffer_.host<float>();
  const int64_t blocks = buffer_.numel() / 32;
  const int64_t grain = balanced_grain(blocks, 1 << 12);
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
  volatile float sink = total;  // keeps the sums from being optimised away
  (void)sink;
}

BandwidthResult ReadBandwidthProbe::result(double seconds_per_read) const {
  return {static_cast<double>(bytes()) / seconds_per_read, bytes(), num_threads()};
}

BandwidthResult measure_read_bandwidth(std::size_t bytes, int repeats) {
  const ReadBandwidthProbe probe(bytes);
  return probe.result(median_seconds(repeats, [&] { probe.read_once(); }));
}

}  // namespace infer
