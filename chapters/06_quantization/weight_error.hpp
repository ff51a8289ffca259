// Chapter 06's layer, part 5: how far each scheme moves the weights.
//
// For every projection matrix W of the model (q, k, v, o, gate, up, down in each layer: 7 × 30
// = 210 in the default model) and every scheme, the relative error of the round trip
//
//   e = ‖W − Ŵ‖ / ‖W‖        (Frobenius norms: the square root of the sum of squares)
//
// 0 is perfect; 1 means Ŵ keeps nothing of W (Ŵ = 0 already gives e = 1). The matrix with the
// largest error tells why through its outlier statistics: a weight many standard deviations
// from the rest sets the scale that every other weight sharing it must live with.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/weights.hpp"
#include "quant_scheme.hpp"

namespace infer::quant {

struct NamedMatrix {
  std::string name;  // GGUF-style, e.g. "blk.12.ffn_down"
  Tensor weight;     // [out, in] f32 on the CPU (shares the model's storage)
};

// The model's projection matrices, layer by layer in the order q, k, v, o, gate, up, down.
// Throws std::runtime_error when a projection is not a DenseLinear of f32 on the CPU.
std::vector<NamedMatrix> projection_matrices(const LlamaWeights& weights);

struct OutlierStats {
  int64_t count = 0;
  double mean_abs = 0;      // mean |w|
  double mean = 0, std = 0; // of w (population standard deviation)
  double max_abs = 0;       // max |w|
  double max_over_std = 0;  // max |w| / std: how many standard deviations the largest weight is out
  int64_t beyond_6_sigma = 0;  // weights with |w − mean| > 6·std
  double beyond_6_sigma_fraction() const { return count > 0 ? static_cast<double>(beyond_6_sigma) / static_cast<double>(count) : 0.0; }
};
OutlierStats outlier_stats(std::span<const float> w);

struct SchemeErrors {
  std::string scheme;
  std::vector<double> errors;  // per matrix, in projection_matrices order
  int64_t packed_bytes = 0;    // all matrices packed
  int64_t weights = 0;
  double mean() const;
  std::size_t worst() const;   // index of the largest error
  double bits_per_weight() const { return weights > 0 ? 8.0 * static_cast<double>(packed_bytes) / static_cast<double>(weights) : 0; }
};

// Round-trips every matrix through every scheme. progress_label: a progress bar (empty: none).
std::vector<SchemeErrors> weight_errors(const std::vector<NamedMatrix>& matrices,
                                        const std::vector<std::unique_ptr<QuantScheme>>& schemes,
                                        const std::string& progress_label = "");

}  // namespace infer::quant
