#include "awq.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "absmax.hpp"
#include "measure/timing.hpp"

namespace infer::quant {
namespace {

const AbsmaxScheme& int4_g128() {
  static const AbsmaxScheme scheme(4, Granularity::per_group, 128);
  return scheme;
}

}  // namespace

std::vector<float> awq_scales(std::span<const float> mean_abs, float alpha) {
  std::vector<float> s(mean_abs.size());
  if (s.empty()) return s;
  for (std::size_t j = 0; j < s.size(); ++j) s[j] = std::pow(std::max(mean_abs[j], 1e-4f), alpha);
  const auto [lo, hi] = std::ranges::minmax_element(s);
  const float norm = std::sqrt(*lo * *hi);
  for (float& v : s) v /= norm;
  return s;
}

std::vector<float> awq_weight(std::span<const float> w, int64_t rows, int64_t cols, std::span<const float> s) {
  if (std::ssize(w) != rows * cols || std::ssize(s) != cols) throw std::invalid_argument("awq_weight: shapes differ");
  std::vector<float> scaled(w.begin(), w.end());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) scaled[r * cols + j] *= s[j];
  std::vector<float> w_hat = round_trip(int4_g128(), scaled, rows, cols);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) w_hat[r * cols + j] /= s[j];
  return w_hat;
}

std::vector<float> awq_grid() {
  std::vector<float> grid;
  for (int i = 0; i <= 20; ++i) grid.push_back(static_cast<float>(i) / 20.0f);
  return grid;
}

AwqChoice awq_search(const std::vector<Tensor>& weights, std::span<const float> mean_abs, const Tensor& xtx,
                     std::span<const float> grid) {
  if (grid.empty()) throw std::invalid_argument("awq_search: empty grid");
  AwqChoice best;
  for (float alpha : grid) {
    const std::vector<float> s = awq_scales(mean_abs, alpha);
    AwqChoice c{.alpha = alpha, .error = 0, .weights = {}};
    for (const Tensor& w : weights) {
      const int64_t rows = w.dim(0), cols = w.dim(1);
      const std::span<const float> values(w.host<float>(), static_cast<std::size_t>(rows * cols));
      c.weights.push_back(awq_weight(values, rows, cols, s));
      c.error += output_error_squared(values, c.weights.back(), rows, cols, xtx);
    }
    if (best.weights.empty() || c.error < best.error) best = std::move(c);
  }
  return best;
}

QuantizedModel quantize_model_awq(Llama& model, const ReferenceWeights& reference, const CalibrationInputs& calibration,
                                  const std::string& name, std::vector<float>* alphas) {
  Stopwatch clock;
  QuantizedModel info = quantize_model(model, reference, &int4_g128());  // the embedding/output matrix as INT4 g128
  info.scheme = name;
  const std::size_t n = reference.projections.size();
  if (calibration.gram.size() != n || calibration.mean_abs.size() != n)
    throw std::invalid_argument("quantize_model_awq: calibrate with needs.mean_abs and needs.gram");
  if (alphas) alphas->assign(n, 0.0f);
  const std::vector<float> grid = awq_grid(), rtn = {0.0f};
  for (std::size_t layer = 0; layer < n; layer += 7) {
    std::vector<std::unique_ptr<Linear>*> slots = projection_slots(model.weights().layers.at(layer / 7));
    // o (slot 3) reads attention's output, a function of v's (slot 2) output rows: foldable only when they match.
    const bool o_foldable = reference.projections[layer + 2].dim(0) == reference.projections[layer + 3].dim(1);
    for (const std::vector<std::size_t>& group : shared_input_groups()) {
      std::vector<Tensor> ws;
      for (std::size_t k : group) ws.push_back(reference.projections[layer + k]);
      const std::size_t first = layer + group[0];
      const bool fixed = group[0] == 3 && !o_foldable;
      const AwqChoice c = awq_search(ws, calibration.mean_abs[first], calibration.gram[first], fixed ? rtn : grid);
      for (std::size_t m = 0; m < group.size(); ++m) {
        *slots[group[m]] = std::make_unique<DenseLinear>(Tensor::from_vector(c.weights[m], {ws[m].dim(0), ws[m].dim(1)}));
        if (alphas) (*alphas)[layer + group[m]] = c.alpha;
      }
    }
  }
  info.seconds = clock.seconds();
  return info;
}

}  // namespace infer::quant
