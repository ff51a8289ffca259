// Chapter 06's study: SmoothQuant's scale migration (Xiao et al., "SmoothQuant: Accurate and
// Efficient Post-Training Quantization for Large Language Models", arXiv:2211.10438).
//
// Activations are hard to quantize because a few input channels are huge; weights are easy.
// SmoothQuant divides input channel j of the activations by s_j and multiplies column j of the
// weights by the same s_j, which leaves x·Wᵀ unchanged and moves part of the range across:
//
//   s_j = max|X_j|^α / max|W_j|^(1−α)          α = 0.5: both sides end with range √(max|X_j|·max|W_j|)
//
// max|X_j| comes from the calibration pass (calibration.hpp): the largest |x| of channel j at this
// projection's input over a few hundred tokens of text. max|W_j| is the largest |w| in column j. Projections that
// read the same input — q, k, v (after the attention norm) and gate, up (after the MLP norm) —
// share one s, with max|W_j| taken over all of them, because in a deployment x / s is folded into
// the norm's weights before them (for o and down, into v's and up's output rows), so no extra
// operation runs. Channels whose maximum is 0 keep s_j = 1.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "calibration.hpp"  // InputMaxima, calibrate_input_maxima: the calibration pass
#include "quantize_model.hpp"

namespace infer::quant {

// The smoothing factors s of every projection (shared within q/k/v and within gate/up).
std::vector<std::vector<float>> smoothing_factors(const InputMaxima& maxima, const ReferenceWeights& reference, float alpha);

}  // namespace infer::quant
