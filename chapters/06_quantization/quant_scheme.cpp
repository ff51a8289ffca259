#include "quant_scheme.hpp"

#include <cmath>
#include <stdexcept>

#include "absmax.hpp"
#include "ggml_blocks.hpp"
#include "nf4.hpp"

namespace infer::quant {

std::vector<float> round_trip(const QuantScheme& scheme, std::span<const float> w, int64_t rows, int64_t cols) {
  const PackedMatrix packed = scheme.quantize(w, rows, cols);
  std::vector<float> w_hat(w.size());
  scheme.dequantize(packed, w_hat);
  return w_hat;
}

double relative_error(std::span<const float> w, std::span<const float> w_hat) {
  if (w.size() != w_hat.size()) throw std::invalid_argument("relative_error: sizes differ");
  double diff = 0, norm = 0;
#pragma omp parallel for reduction(+ : diff, norm) schedule(static)
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double a = w[i], e = a - static_cast<double>(w_hat[i]);
    diff += e * e;
    norm += a * a;
  }
  if (norm == 0) return diff == 0 ? 0.0 : INFINITY;
  return std::sqrt(diff / norm);
}

std::vector<std::unique_ptr<QuantScheme>> table_schemes() {
  std::vector<std::unique_ptr<QuantScheme>> s;
  s.push_back(std::make_unique<AbsmaxScheme>(8, Granularity::per_tensor));
  s.push_back(std::make_unique<AbsmaxScheme>(8, Granularity::per_row));
  s.push_back(std::make_unique<AbsmaxScheme>(4, Granularity::per_tensor));
  s.push_back(std::make_unique<AbsmaxScheme>(4, Granularity::per_row));
  s.push_back(std::make_unique<AbsmaxScheme>(4, Granularity::per_group, 128));
  s.push_back(std::make_unique<Nf4Scheme>(64));
  s.push_back(std::make_unique<GgmlBlockScheme>(gguf::GgmlType::Q8_0));
  s.push_back(std::make_unique<GgmlBlockScheme>(gguf::GgmlType::Q4_1));
  return s;
}

}  // namespace infer::quant
