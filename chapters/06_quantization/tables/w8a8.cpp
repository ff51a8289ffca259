#include "w8a8.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "absmax.hpp"
#include "measure/timing.hpp"
#include "tensor/thread_pool.hpp"

namespace infer::quant {

void fake_quantize_rows_int8(std::span<float> x, int64_t rows, int64_t cols) {
  if (std::ssize(x) != rows * cols) throw std::invalid_argument("fake_quantize_rows_int8: wrong size");
  parallel_for(rows, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const std::span<float> row = x.subspan(t * cols, cols);
      float amax = 0;
      for (float v : row) amax = std::max(amax, std::fabs(v));
      if (amax == 0) continue;
      const float scale = amax / 127.0f;
      for (float& v : row) v = std::clamp(std::round(v / scale), -127.0f, 127.0f) * scale;
    }
  });
}

W8A8Linear::W8A8Linear(Tensor w_hat, std::vector<float> inverse_smoothing)
    : dense_(std::move(w_hat)), inverse_smoothing_(std::move(inverse_smoothing)) {
  if (!inverse_smoothing_.empty() && std::ssize(inverse_smoothing_) != dense_.in_features())
    throw std::invalid_argument("W8A8Linear: one smoothing factor per input channel");
}

std::size_t W8A8Linear::weight_bytes() const {
  return static_cast<std::size_t>(out_features() * in_features() + 2 * out_features());
}

void W8A8Linear::forward(const Tensor& x, Tensor& y) const {
  const int64_t n = x.dim(0), d = x.dim(1);
  Tensor xq({n, d});  // a copy: the caller's x (the residual stream's normed copy) stays as it is
  const float* src = x.host<float>();
  float* dst = xq.host<float>();
  const std::span<float> values(dst, static_cast<std::size_t>(n * d));
  if (inverse_smoothing_.empty()) {
    std::copy(src, src + n * d, dst);
  } else {
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < d; ++j) dst[t * d + j] = src[t * d + j] * inverse_smoothing_[j];
  }
  fake_quantize_rows_int8(values, n, d);
  dense_.forward(xq, y);
}

QuantizedModel quantize_model_w8a8(Llama& model, const ReferenceWeights& reference,
                                   const std::vector<std::vector<float>>& smoothing, const std::string& name) {
  Stopwatch clock;
  const AbsmaxScheme int8(8, Granularity::per_row);
  // First everything as the weight-only INT8 per-row model (the embedding/output matrix stays so) ...
  QuantizedModel info = quantize_model(model, reference, &int8);
  info.scheme = name;
  if (!smoothing.empty() && smoothing.size() != reference.projections.size())
    throw std::invalid_argument("quantize_model_w8a8: one smoothing vector per projection");
  // ... then every projection with its activations quantized too. Without smoothing the INT8
  // weights are those already in place; with it they are re-quantized from W·diag(s).
  std::size_t i = 0;
  for (LayerWeights& L : model.weights().layers) {
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) {
      const Tensor& w = reference.projections.at(i);
      const int64_t rows = w.dim(0), cols = w.dim(1);
      if (smoothing.empty()) {
        const auto* dense = dynamic_cast<const DenseLinear*>(slot->get());
        if (dense == nullptr) throw std::logic_error("quantize_model_w8a8: expected the INT8 matrix in place");
        *slot = std::make_unique<W8A8Linear>(dense->weight(), std::vector<float>{});
      } else {
        const std::vector<float>& s = smoothing[i];
        if (std::ssize(s) != cols) throw std::invalid_argument("quantize_model_w8a8: smoothing size");
        std::vector<float> scaled(w.host<float>(), w.host<float>() + rows * cols);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < cols; ++j) scaled[r * cols + j] *= s[j];
        Tensor w_hat({rows, cols});
        int8.dequantize(int8.quantize(scaled, rows, cols), {w_hat.host<float>(), static_cast<std::size_t>(rows * cols)});
        std::vector<float> inverse(s.size());
        for (std::size_t j = 0; j < s.size(); ++j) inverse[j] = 1.0f / s[j];
        *slot = std::make_unique<W8A8Linear>(std::move(w_hat), std::move(inverse));
      }
      ++i;
    }
  }
  info.seconds = clock.seconds();
  return info;
}

}  // namespace infer::quant
