// Chapter 06's study: outlier features in the activations.
//
// Weights are bad enough; activations are worse. Run a prompt through the model and record the
// residual stream x (the running sum every layer adds to) after each layer. For every one of its
// d dimensions take the largest |x| over the prompt's tokens: a few dimensions are tens to
// hundreds of times larger than the median one, at almost every layer and for almost any input.
// These "outlier features" (Dettmers et al., LLM.int8(), 2022) are a property of the trained
// model. With one INT8 scale for the whole tensor the outliers set the step, and an ordinary
// dimension is left with a handful of the 256 levels — or one.
//
// The capture runs the model's own forward pass a layer at a time (Llama::layer, the step
// Llama::forward loops over: model/llama.hpp) and keeps the residual stream after each layer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "model/llama.hpp"

namespace infer::quant {

struct ResidualCapture {
  int64_t tokens = 0, d = 0;
  std::vector<std::vector<float>> layers;  // layers[l]: x after layer l, [tokens, d] row-major
};

// One pass of Llama::forward over `tokens` from position 0 with a fresh cache.
ResidualCapture capture_residual_stream(const Llama& model, std::span<const int32_t> tokens);

// Per dimension, the largest |x| over the tokens first_token … tokens−1: [d].
std::vector<float> per_dim_max(std::span<const float> x, int64_t tokens, int64_t d, int64_t first_token = 0);

// The k dimensions with the largest values, largest first.
std::vector<int> top_dims(std::span<const float> dim_max, int k);

// Counts of the per-dimension maxima in powers-of-two bins: [0, 1), [1, 2), [2, 4), [4, 8) …,
// up to the bin holding the largest value.
struct Log2Bin {
  double lo, hi;
  int64_t count;
};
std::vector<Log2Bin> log2_histogram(std::span<const float> values);

// INT8 with one symmetric scale for the tensor: scale = max |x| over the included dimensions / 127,
// q = round(x / scale). distinct_levels(dim) counts the different q a dimension uses over the
// tokens (out of 256).
struct Int8TensorScale {
  float scale = 0;
  int64_t levels_used = 0;  // distinct q over all included values
  std::vector<int64_t> distinct_levels;  // per dimension asked for
};
// Tokens before first_token are left out of the tensor.
Int8TensorScale int8_tensor_scale(std::span<const float> x, int64_t tokens, int64_t d,
                                  std::span<const int> excluded_dims, std::span<const int> dims,
                                  int64_t first_token = 0);

// The prompt the tables capture: a fixed 78-token English paragraph.
inline constexpr const char* kOutlierPrompt =
    "The old lighthouse keeper climbed the spiral stairs every evening at dusk. He trimmed the wick, polished the "
    "great lens and wound the clockwork that turned the light. Ships passing the rocky headland counted the flashes "
    "to know where they were. One winter night a storm tore the shutters from the windows, but the keeper stayed at "
    "his post until morning, and the light never went out.";

// The printed tables: per-dimension maxima after every layer, the histogram at the middle layer,
// and INT8 with one tensor-wide scale there (with and without the outlier dimensions).
void activation_tables(const Llama& model, const Tokenizer& tokenizer, const CommonOptions& o, nlohmann::json& figures);

}  // namespace infer::quant
