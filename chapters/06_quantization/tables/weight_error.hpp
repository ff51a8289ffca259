// Chapter 06's study: how far each scheme moves the weights.
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

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "quant_scheme.hpp"
#include "quantize_model.hpp"  // NamedMatrix, projection_matrices

namespace infer::quant {

struct OutlierStats {
  int64_t count = 0;
  double mean_abs = 0;      // mean |w|
  double mean = 0, std = 0; // of w (population standard deviation)
  double max_abs = 0;       // max |w|
  double max_over_std = 0;  // max |w| / std: how many standard deviations the largest weight is out
  int64_t beyond_6_sigma = 0;  // weights with |w − mean| > 6·std
  double beyond_6_sigma_fraction() const { return count > 0 ? static_cast<double>(beyond_6_sigma) / count : 0.0; }
};
OutlierStats outlier_stats(std::span<const float> w);

struct SchemeErrors {
  std::string scheme;
  std::vector<double> errors;  // per matrix, in projection_matrices order
  int64_t packed_bytes = 0;    // all matrices packed
  int64_t weights = 0;
  double mean() const;
  std::size_t worst() const;   // index of the largest error
  double bits_per_weight() const { return weights > 0 ? 8.0 * packed_bytes / weights : 0; }
};

// Round-trips every matrix through every scheme. progress_label: a progress bar (empty: none).
std::vector<SchemeErrors> weight_errors(const std::vector<NamedMatrix>& matrices,
                                        const std::vector<std::unique_ptr<QuantScheme>>& schemes,
                                        const std::string& progress_label = "");

// The printed tables: every scheme's error over every projection matrix, then the outlier
// statistics of the matrices INT4 per-tensor treats worst and best.
void weight_error_tables(const Llama& model, const CommonOptions& o, nlohmann::json& figures);

}  // namespace infer::quant
