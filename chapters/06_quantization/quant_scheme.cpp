#include "quant_scheme.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

#include "absmax.hpp"
#include "asymmetric.hpp"
#include "float_formats.hpp"
#include "ggml_blocks.hpp"
#include "nf4.hpp"
#include "tensor/thread_pool.hpp"

namespace infer::quant {

std::vector<float> round_trip(const QuantScheme& scheme, std::span<const float> w, int64_t rows, int64_t cols) {
  const PackedMatrix packed = scheme.quantize(w, rows, cols);
  std::vector<float> w_hat(w.size());
  scheme.dequantize(packed, w_hat);
  return w_hat;
}

double relative_error(std::span<const float> w, std::span<const float> w_hat) {
  if (w.size() != w_hat.size()) throw std::invalid_argument("relative_error: sizes differ");
  // Sums per fixed chunk, added in chunk order: the same bits however the threads run.
  const auto n = std::ssize(w);
  const int64_t grain = 1 << 16;
  std::vector<double> chunk_diff((n + grain - 1) / grain), chunk_norm(chunk_diff.size());
  parallel_for(n, grain, [&](int64_t first, int64_t last) {
    double d = 0, m = 0;
    for (int64_t i = first; i < last; ++i) {
      const double a = w[i], e = a - static_cast<double>(w_hat[i]);
      d += e * e;
      m += a * a;
    }
    chunk_diff[first / grain] = d;
    chunk_norm[first / grain] = m;
  });
  double diff = 0, norm = 0;
  for (std::size_t c = 0; c < chunk_diff.size(); ++c) diff += chunk_diff[c], norm += chunk_norm[c];
  if (norm == 0) return diff == 0 ? 0.0 : INFINITY;
  return std::sqrt(diff / norm);
}

std::vector<std::unique_ptr<QuantScheme>> table_schemes() {
  std::vector<std::unique_ptr<QuantScheme>> s;
  // Floats by rounding, no scale.
  s.push_back(std::make_unique<FloatScheme>(FloatFormat::fp16));
  s.push_back(std::make_unique<FloatScheme>(FloatFormat::bf16));
  s.push_back(std::make_unique<FloatScheme>(FloatFormat::fp8_e4m3));
  s.push_back(std::make_unique<AbsmaxScheme>(8, Granularity::per_tensor));
  s.push_back(std::make_unique<AbsmaxScheme>(8, Granularity::per_row));
  s.push_back(std::make_unique<AbsmaxScheme>(4, Granularity::per_tensor));
  s.push_back(std::make_unique<AbsmaxScheme>(4, Granularity::per_row));
  s.push_back(std::make_unique<AbsmaxScheme>(4, Granularity::per_group, 128));
  s.push_back(std::make_unique<AsymmetricInt4Scheme>(128));  // the same groups with a zero point
  s.push_back(std::make_unique<Nf4Scheme>(64));
  s.push_back(std::make_unique<Nf4Scheme>(128));  // NF4's levels at INT4 g128's block: levels vs block size
  s.push_back(std::make_unique<GgmlBlockScheme>(gguf::GgmlType::Q8_0));
  s.push_back(std::make_unique<GgmlBlockScheme>(gguf::GgmlType::Q4_1));
  return s;
}

}  // namespace infer::quant
