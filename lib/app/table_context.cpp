#include "app/table_context.hpp"

#include <fmt/format.h>

#include "tensor/ops.hpp"  // num_threads

namespace infer {

std::string machine_line(const BandwidthResult& bw) {
  return fmt::format("{} threads, read bandwidth {:.1f} GB/s", num_threads(), bw.bytes_per_second / 1e9);
}

}  // namespace infer
