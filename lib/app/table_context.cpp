#include "app/table_context.hpp"

#include <fmt/format.h>

#include "tensor/ops.hpp"  // num_threads
#include "tensor/simd_target.hpp"

namespace infer {

std::string machine_line(const BandwidthResult& bw) {
  if (cpu_backend() == CpuBackend::reference)  // lib's operations in plain loops on one thread
    return fmt::format("reference backend, one thread, read bandwidth {:.1f} GB/s", bw.bytes_per_second / 1e9);
  return fmt::format("{} threads, {} kernels, read bandwidth {:.1f} GB/s", num_threads(), simd::target_name(),
                     bw.bytes_per_second / 1e9);
}

}  // namespace infer
