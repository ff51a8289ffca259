// Chapter 06's study: the calibration pass — what every projection reads on real text.
//
// Methods that calibrate (SmoothQuant, AWQ, GPTQ) need statistics of the input x [T, in] of each
// projection over a few hundred tokens: SmoothQuant the largest |x_j| of each input channel,
// AWQ the mean |x_j|, GPTQ the Gram matrix XᵀX (its Hessian H = 2·XᵀX). One pass collects all of
// them: every projection is wrapped by a recording Linear that notes what was asked for, then
// multiplies as before, and the reference model runs the tokens once.
//
// Projections that read the same input — q, k, v (after the attention norm) and gate, up (after
// the MLP norm) — see the same X, so their Gram matrix is recorded once and shared.
//
// The text runs in windows like the evaluation's (each from position 0 with an empty cache), not
// as one long sequence: the first position of every window is the attention sink, the position
// heads attend to when nothing else is relevant, whose keys and values every later position reads.
// In one pass of 8192 tokens it would be 1 token in 8192; in the evaluation it is 1 in every 512.
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

// What a consumer asks the pass for beyond the maxima (which are always recorded: they are cheap).
struct CalibrationNeeds {
  bool mean_abs = false;  // AWQ
  bool gram = false;      // GPTQ, and both methods' output error
  int64_t window = 512;   // tokens per forward pass (the evaluation's window)
};

struct CalibrationInputs {
  InputMaxima maxima;
  std::vector<std::vector<float>> mean_abs;  // per projection: mean_t |x[t, j]| [in]; empty unless asked
  std::vector<Tensor> gram;                  // per projection: XᵀX [in, in] f32, one storage per shared
                                             // input (handles to it); empty unless asked
  // q, k and v only (the attention input; empty tensors elsewhere): Σ over windows of
  // (T_w − 1)·x₀x₀ᵀ, x₀ the window's first position and T_w its length — added to XᵀX it makes that
  // position weigh as much as the whole window that reads its keys and values (gptq_gram).
  std::vector<Tensor> first_gram;
};

// Runs `tokens` through the reference model in windows of needs.window (each with a fresh cache,
// from position 0) with every projection recording its input, then puts the reference weights back.
CalibrationInputs calibrate_inputs(Llama& model, const ReferenceWeights& reference, std::span<const int32_t> tokens,
                                   CalibrationNeeds needs);
// The maxima alone (SmoothQuant, LLM.int8's table).
InputMaxima calibrate_input_maxima(Llama& model, const ReferenceWeights& reference, std::span<const int32_t> tokens);

// Projections of a layer that read the same input (indices into its 7 slots: q k v o gate up down).
const std::vector<std::vector<std::size_t>>& shared_input_groups();

// ‖(Ŵ − W)·Xᵀ‖² from the Gram matrix alone: Σ_r Δ_r · XᵀX · Δ_rᵀ with Δ = Ŵ − W [rows, cols] —
// the squared error of the layer's outputs over the calibration tokens. With w_hat all zero it
// is ‖W·Xᵀ‖², the outputs' own energy. Accumulated in double.
double output_error_squared(std::span<const float> w, std::span<const float> w_hat, int64_t rows, int64_t cols,
                            const Tensor& gram);

}  // namespace infer::quant
