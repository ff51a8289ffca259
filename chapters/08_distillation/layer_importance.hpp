// Which layers a depth-pruned student keeps: a score per block, measured on calibration text.
//
// Block influence (ShortGPT, Men et al. 2024): 1 − the mean over tokens of the cosine similarity
// of the residual stream entering and leaving the block. A block that hardly turns the stream
// (score near 0) changes little of what later blocks see, so removing it costs least; Minitron
// (Muralidharan et al. 2024) then repairs the pruned model by distilling from the original.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "student.hpp"

namespace infer::train {

// One score per block of `model` over the whole sequences of S tokens in `tokens`, run one
// sequence at a time (the activations of a 30-block model are large).
std::vector<double> block_influence(Student<float>& model, std::span<const int32_t> tokens, int S);

// The n_keep blocks with the highest scores, in ascending order (ties: the lower index).
std::vector<int> layers_to_keep(std::span<const double> scores, int n_keep);

}  // namespace infer::train
