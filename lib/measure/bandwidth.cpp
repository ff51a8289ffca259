// The read loop of measure/bandwidth.hpp. It is compiled once per SIMD target (Highway's
// foreach_target.h) and runs the best one this CPU has, like the kernels it is compared with:
// compiled for the build's baseline alone, a portable build's loop (16-byte SSE loads) read
// 19 GB/s where the same machine's AVX-512 loop read 28, and every "% of read bandwidth" came
// out a third too high (fp32 decode at 130%).
#include "measure/bandwidth.hpp"

#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "measure/bandwidth.cpp"
#include <hwy/foreach_target.h>  // this file again, once per SIMD target
#include <hwy/highway.h>

#include "measure/timing.hpp"
#include "tensor/ops.hpp"
#include "tensor/simd_target.hpp"
#include "tensor/tensor.hpp"
#include "tensor/thread_pool.hpp"

HWY_BEFORE_NAMESPACE();
namespace infer::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

// The sum of p[0 … n) (n a multiple of 32) in four registers of independent lanes, so that the
// adds never wait on each other and the loop runs at the speed of the loads.
float SumFloats(const float* p, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t w = static_cast<int64_t>(hn::Lanes(d));
  auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 4 * w <= n; i += 4 * w) {
    a0 = hn::Add(a0, hn::LoadU(d, p + i));
    a1 = hn::Add(a1, hn::LoadU(d, p + i + w));
    a2 = hn::Add(a2, hn::LoadU(d, p + i + 2 * w));
    a3 = hn::Add(a3, hn::LoadU(d, p + i + 3 * w));
  }
  float total = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
  for (; i < n; ++i) total += p[i];
  return total;
}

}  // namespace infer::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace infer {

HWY_EXPORT(SumFloats);

ReadBandwidthProbe::ReadBandwidthProbe(std::size_t bytes)
    : buffer_({static_cast<int64_t>(bytes / (32 * sizeof(float)) * 32)}) {
  const int64_t n = buffer_.numel();
  float* p = buffer_.host<float>();
  parallel_for(n, balanced_grain(n, 1 << 16), [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) p[i] = static_cast<float>(i & 255);  // touch every page
  });
}

void ReadBandwidthProbe::read_once() const {
  simd::init();
  const float* p = buffer_.host<float>();
  const int64_t blocks = buffer_.numel() / 32;
  const int64_t grain = balanced_grain(blocks, 1 << 12);
  std::vector<float> chunk_sums((blocks + grain - 1) / grain);
  parallel_for(blocks, grain, [&](int64_t first, int64_t last) {
    chunk_sums[first / grain] = HWY_DYNAMIC_DISPATCH(SumFloats)(p + first * 32, (last - first) * 32);
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
#endif  // HWY_ONCE
