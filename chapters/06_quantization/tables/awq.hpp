// Chapter 06's study: AWQ, activation-aware weight quantization (Lin et al., "AWQ: Activation-
// aware Weight Quantization for LLM Compression and Acceleration", arXiv:2306.00978), on INT4
// g128's grid.
//
// A weight matters in proportion to the input it multiplies: an error in column j of W [out, in]
// costs |Δw|·|x_j| in the output. AWQ protects the columns with large inputs by scaling them up
// before rounding and back down after, which shrinks their relative rounding error:
//
//   s_j  = mean_t |x[t, j]|^α                    per input channel, from the calibration pass
//   Ŵ    = Q(W·diag(s)) · diag(s)⁻¹              Q: INT4 g128's round trip (absmax.hpp)
//   α    = argmin over 0, 0.05, …, 1 of ‖(Ŵ − W)·Xᵀ‖²   on the calibration inputs (α = 0: s = 1, RTN)
//
// s is normalised to √(max s · min s) = 1, as the authors' code does (Q is nearly scale-invariant,
// but an fp16 scale is not unbounded). Projections that read the same input — q, k, v and gate,
// up — share one s and one α, chosen on the sum of their errors, because of where s goes in a
// deployment: real AWQ folds diag(s)⁻¹ into the operation before the projection (the RMSNorm's
// weights for q/k/v and gate/up, up's output rows for down, v's output rows for o) and stores
// Q(W·diag(s)) as an ordinary INT4 g128 matrix, so the storage stays 4.125 bits per weight.
// Here the effective weight Q(W·diag(s))·diag(s)⁻¹ is put in place in fp32 like every other row
// of the quality table, which computes the same products. In a model with grouped-query
// attention (v's 192 outputs feed o's 576 inputs) a factor on v's output rows reaches every
// query head of its group, so o's s could not be folded per column: o stays RTN (α = 0), as
// the authors' code skips it whenever v's and o's shapes differ.
//
// Not done here: the authors' second step, a per-group clipping search (shrinking max|w| before
// the scale is set), and their code's default "duo" scales mean|x|^α / mean|w|^(1−α); this is
// the paper's s = s_X^α alone.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "quantize_model.hpp"

namespace infer::quant {

// s_j = max(mean_abs_j, 1e-4)^α, normalised so that max s · min s = 1. α = 0: every s_j = 1.
std::vector<float> awq_scales(std::span<const float> mean_abs, float alpha);

// Q(W·diag(s))·diag(s)⁻¹ for W [rows, cols], Q = INT4 g128's round trip.
std::vector<float> awq_weight(std::span<const float> w, int64_t rows, int64_t cols, std::span<const float> s);

// The α of `grid` with the smallest Σ_k ‖(Ŵ_k − W_k)·Xᵀ‖² over matrices that read the same
// input (mean |x| and XᵀX of that input), and their effective weights at that α. Ties go to the
// first α of the grid.
struct AwqChoice {
  float alpha = 0;
  double error = 0;  // Σ_k ‖(Ŵ_k − W_k)·Xᵀ‖² at alpha
  std::vector<std::vector<float>> weights;
};
AwqChoice awq_search(const std::vector<Tensor>& weights, std::span<const float> mean_abs, const Tensor& xtx,
                     std::span<const float> grid);

// 0, 0.05, …, 1.
std::vector<float> awq_grid();

// The model's 210 projections as AWQ's effective weights, from one calibration pass of the fp32
// model (needs.mean_abs and needs.gram); the embedding/output matrix is plain INT4 g128, as in
// the INT4 g128 row. alphas: per projection, the α chosen (o: 0 under grouped-query attention).
QuantizedModel quantize_model_awq(Llama& model, const ReferenceWeights& reference, const CalibrationInputs& calibration,
                                  const std::string& name, std::vector<float>* alphas = nullptr);

}  // namespace infer::quant
