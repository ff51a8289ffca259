// The machine's memory read bandwidth, measured the way a decode step uses memory: stream a
// buffer much larger than the caches once, with the same threads the model uses.
#pragma once

#include <cstddef>

namespace infer {

struct BandwidthResult {
  double bytes_per_second = 0;  // median over repeats
  std::size_t buffer_bytes = 0;
  int threads = 0;
};

// Reads a buffer of `bytes` (default 512 MiB) `repeats` times with num_threads() threads.
BandwidthResult measure_read_bandwidth(std::size_t bytes = std::size_t{512} << 20, int repeats = 7);

}  // namespace infer
