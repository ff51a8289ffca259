// Chapter 06's study: SmoothQuant's scale migration (Xiao et al., "SmoothQuant: Accurate and
// Efficient Post-Training Quantization for Large Language Models", arXiv:2211.10438).
//
// Activations are hard to quantize because a few input channels are huge; weights are easy.
// SmoothQuant divides input channel j of the activations by s_j and multiplies column j of the
// weights by the same s_j, which leaves x·Wᵀ unchanged and moves part of the range across:
//
//   s_j = max|X_j|^α / max|W_j|^(1−α)          α = 0.5: both sides end with range √(max|X_j|·max|W_j|)
//
// max|X_j| comes from a calibration pass: the largest |x| of channel j at this projection's input
// over a few hundred tokens of text. max|W_j| is the largest |w| in column j. Projections that
// read the same input — q, k, v (after the attention norm) and gate, up (after the MLP norm) —
// share one s, with max|W_j| taken over all of them, because in a deployment x / s is folded into
// the norm's weights before them (for o and down, into v's and up's output rows), so no extra
// operation runs. Channels whose maximum is 0 keep s_j = 1.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "quantize_model.hpp"

namespace infer::quant {

// max |x[t, j]| over the calibration tokens at the input of every projection, in
// projection_matrices() order (210 vectors of in_features values for the default model).
struct InputMaxima {
  std::vector<std::vector<float>> channels;
  int64_t tokens = 0;
};
// Runs `tokens` through the reference model once (a fresh cache, position 0) with every
// projection recording its input, then puts the reference weights back.
InputMaxima calibrate_input_maxima(Llama& model, const ReferenceWeights& reference, std::span<const int32_t> tokens);

// The smoothing factors s of every projection (shared within q/k/v and within gate/up).
std::vector<std::vector<float>> smoothing_factors(const InputMaxima& maxima, const ReferenceWeights& reference, float alpha);

}  // namespace infer::quant
