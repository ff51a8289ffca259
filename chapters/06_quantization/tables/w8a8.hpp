// Chapter 06's study: 8-bit activations as well as 8-bit weights (W8A8), simulated.
//
// Weight-only schemes keep the activations x in fp32. W8A8 quantizes both operands of every
// projection y = x·Wᵀ, so that an integer matrix unit could multiply int8 × int8:
//
//   weights      per output channel (row): INT8 per-row absmax, the chapter's AbsmaxScheme
//   activations  per token (row of x [N, d]): scale_t = max_j |x[t, j]| / 127, x̂ = round(x / scale_t)·scale_t
//
// Per-token scales follow the token's own range, so position 0's attention-sink values
// cost nothing to the other tokens. What per-token scales cannot fix is the outlier *channels*:
// within one token, dimension 507 may be a hundred times the median dimension, and it sets the
// step for all 576. SmoothQuant (smoothing.hpp) moves that range into the weights first: with
// per-input-channel factors s, x·Wᵀ = (x / s)·(W·diag(s))ᵀ exactly, and the quantized operands
// are x / s (flattened) and W·diag(s).
//
// Simulated ("fake") quantization: both operands are rounded to their int8 grids and multiplied
// in fp32, as if an integer kernel accumulated exactly and rescaled. An int8 kernel computes the
// same products up to summation order; the quality measured here is the scheme's.
//
// Which layers: the 210 projections. The tied embedding/output matrix gets INT8 per-row weights
// only (its input stays fp32), as in the "INT8 per-row" row, so the difference between that row
// and "W8A8" is the activations alone. Attention's own products (q·kᵀ, p·v) stay fp32.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/linear.hpp"
#include "quantize_model.hpp"

namespace infer::quant {

// x [rows, cols] row-major, in place: each row rounded to 255 levels of its own absmax / 127.
void fake_quantize_rows_int8(std::span<float> x, int64_t rows, int64_t cols);

class W8A8Linear : public Linear {
 public:
  // w_hat [out, in]: the INT8 per-row round trip of W·diag(s). inverse_smoothing: 1 / s per input
  // channel, or empty for no smoothing (s = 1).
  W8A8Linear(Tensor w_hat, std::vector<float> inverse_smoothing);

  // y = fake_int8(x / s) · ŵᵀ
  void forward(const Tensor& x, Tensor& y) const override;
  int64_t in_features() const override { return dense_.in_features(); }
  int64_t out_features() const override { return dense_.out_features(); }
  std::size_t weight_bytes() const override;  // INT8 per-row: a byte per weight and an fp16 scale per row
  std::string storage() const override { return inverse_smoothing_.empty() ? "W8A8" : "W8A8 smoothed"; }
  const Tensor& weight() const { return dense_.weight(); }  // ŵ

 private:
  DenseLinear dense_;
  std::vector<float> inverse_smoothing_;
};

// The model with every projection as a W8A8Linear and the embedding/output matrix INT8 per-row
// (weight-only). smoothing: one factor vector per projection in projection_matrices() order
// (smoothing.hpp), or empty for plain W8A8. `name` is the row's label.
QuantizedModel quantize_model_w8a8(Llama& model, const ReferenceWeights& reference,
                                   const std::vector<std::vector<float>>& smoothing, const std::string& name);

}  // namespace infer::quant
