// Chapter 06's study: GPTQ (Frantar et al., "GPTQ: Accurate Post-Training Quantization for
// Generative Pre-trained Transformers", arXiv:2210.17323), into INT4 g128's own format.
//
// Round-to-nearest (RTN) rounds every weight on its own. GPTQ rounds the columns of W [out, in]
// one after another and, after each, changes the columns not yet rounded so that the layer's
// output on calibration inputs X [T, in] moves as little as possible. The error that matters is
// ‖(Ŵ − W)·Xᵀ‖², whose Hessian in each row of W is H = 2·XᵀX [in, in]. Rounding w_j to q_j
// costs (w_j − q_j)² / [H⁻¹]_jj, and the best compensation is
//
//   w_{j+1:} −= (w_j − q_j) / U_jj · U_{j, j+1:}          U: upper triangular, UᵀU = H⁻¹
//
// — the rows of H⁻¹'s Cholesky factor hold, for every step at once, the inverse Hessian of the
// columns still free (the paper's Cholesky reformulation, numerically stable at this size).
// H gets 1% of its mean diagonal added first (the paper's dampening), so it is invertible even
// where calibration left a direction unseen; a column never seen (H_jj = 0) is set to 0.
//
// The grid is INT4 g128's (absmax.hpp): one fp16 scale per 128 consecutive weights of the
// row-major matrix, scale = max|w|/7, codes −7…7. As in the paper, a group's scale is set from
// the current, already error-updated weights when the group's first column comes up, and later
// updates may push a weight past ±7·scale: it is clamped. 576 = 4.5 × 128, so half of a
// 576-wide matrix's groups span two rows; such a group holds column 0 of its second row, so its
// first column comes up before any update and its scale is RTN's. The result is exactly a packed
// INT4 g128 matrix, 4.125 bits per weight: with H = I nothing is compensated and GPTQ is RTN
// bit for bit (a test).
//
// Which tokens H weighs. ‖(Ŵ − W)·Xᵀ‖² counts every calibration token once, but in the attention
// projections one token is not like the others: the first position of a window, the attention
// sink, which heads attend to when nothing else in the window is relevant, so that every later
// position reads its keys and values. Its input is small — from layer 12 on about a third of a typical position's norm,
// its value vector a tenth to a third — so, counted once, errors along it cost GPTQ almost
// nothing, and GPTQ moves the other positions' error onto it: its q, k and v come out about twice
// as wrong as round-to-nearest's, and every position pays through attention. For q, k and v, H
// therefore weighs each window's first position as much as the whole window that reads it
// (gptq_gram); the other projections act on each position alone and keep XᵀX.
//
// The rows of W are independent given U (one row's errors only ever move the same row), so this
// runs row by row, the row in cache and U streamed; the paper's lazy batch updates make the
// same arithmetic GPU-friendly and are not needed here.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "quantize_model.hpp"

namespace infer::quant {

// U, upper triangular [n, n] row-major, with UᵀU = H⁻¹, for a symmetric positive-definite H
// (LAPACK's Cholesky through xtensor-blas: H = LLᵀ, H⁻¹ from the factor, then H⁻¹'s own
// factor). Throws std::runtime_error when H is not positive definite.
std::vector<double> inverse_cholesky_upper(std::span<const double> h, int64_t n);

struct GptqOptions {
  double damp = 0.01;   // added to H's diagonal: this share of its mean diagonal
  int64_t group = 128;  // consecutive weights sharing a scale (INT4 g128)
};

// Ŵ [rows, cols] on INT4 g`group`'s grid, GPTQ-rounded for inputs whose Gram matrix is `xtx`
// (XᵀX [cols, cols]; H = 2·XᵀX as the paper writes it — the 2 cancels in U_jk / U_jj).
std::vector<float> gptq_quantize(std::span<const float> w, int64_t rows, int64_t cols, const Tensor& xtx,
                                 const GptqOptions& options = {});

// The Gram matrix GPTQ rounds projection `projection` (an index in projection_matrices() order)
// for: XᵀX, plus calibration.first_gram for q, k and v (a new tensor then; else a handle to XᵀX).
Tensor gptq_gram(const CalibrationInputs& calibration, std::size_t projection);

// The model's 210 projections GPTQ-rounded, each with gptq_gram of its own input from one
// calibration pass of the fp32 model (every layer sees the fp32 model's inputs, not those of the
// already-quantized layers before it as in the paper, which runs the calibration again after
// each layer so that later layers can absorb earlier errors: one pass here, for every method).
// The embedding/output matrix is plain INT4 g128, as in the INT4 g128 row.
QuantizedModel quantize_model_gptq(Llama& model, const ReferenceWeights& reference, const CalibrationInputs& calibration,
                                   const std::string& name);

}  // namespace infer::quant
