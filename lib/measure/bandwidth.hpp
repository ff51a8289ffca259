// The machine's memory read bandwidth, measured the way a decode step uses memory: stream a
// buffer much larger than the caches once, with the same threads the model uses.
#pragma once

#include <cstddef>

#include "tensor/tensor.hpp"

namespace infer {

struct BandwidthResult {
  double bytes_per_second = 0;  // median over repeats
  std::size_t buffer_bytes = 0;
  int threads = 0;
};

constexpr std::size_t kBandwidthBufferBytes = std::size_t{512} << 20;

// Reads a buffer of `bytes` (default 512 MiB) `repeats` times with num_threads() threads.
BandwidthResult measure_read_bandwidth(std::size_t bytes = kBandwidthBufferBytes, int repeats = 7);

// The same read, one pass at a time: for timing it in turn with the work it is compared with
// (medians_in_turn), so that "x% of read bandwidth" divides figures from the same minutes — on
// a machine whose bandwidth drifts (a neighbour's traffic), one measured before the work can be
// 10% off the bandwidth the work actually had.
class ReadBandwidthProbe {
 public:
  explicit ReadBandwidthProbe(std::size_t bytes = kBandwidthBufferBytes);
  void read_once() const;  // streams the whole buffer once
  std::size_t bytes() const { return buffer_.nbytes(); }
  BandwidthResult result(double seconds_per_read) const;  // from a (median) time of read_once

 private:
  Tensor buffer_;  // fp32, a multiple of 32 values
};

}  // namespace infer
