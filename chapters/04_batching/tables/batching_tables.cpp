#include "batching_tables.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "measure/timing.hpp"
#include "tensor/ops.hpp"

namespace infer::batching {

double measure_peak_flops(int repeats) {
  constexpr int64_t n = 512, k = 2048, m = 2048;
  Tensor x({n, k}), w({m, k}), y({n, m});
  std::fill_n(x.host<float>(), n * k, 0.5f);
  std::fill_n(w.host<float>(), m * k, 0.25f);
  const double seconds = median_seconds(repeats, [&] { ops::matmul_t(x, w, y); });
  return 2.0 * static_cast<double>(n * k * m) / seconds;
}

}  // namespace infer::batching
