#include "smoothing.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "03_gqa/grouped_kv_cache.hpp"

namespace infer::quant {
namespace {

// A projection that notes the largest |x| of each input channel, then multiplies as before.
class RecordingLinear : public Linear {
 public:
  RecordingLinear(Tensor weight, std::vector<float>* maxima) : dense_(std::move(weight)), maxima_(maxima) {
    maxima_->assign(dense_.in_features(), 0.0f);
  }
  void forward(const Tensor& x, Tensor& y) const override {
    const int64_t n = x.dim(0), d = x.dim(1);
    const float* p = x.host<float>();
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < d; ++j) {
        float& m = (*maxima_)[j];
        m = std::max(m, std::fabs(p[t * d + j]));
      }
    dense_.forward(x, y);
  }
  int64_t in_features() const override { return dense_.in_features(); }
  int64_t out_features() const override { return dense_.out_features(); }
  std::size_t weight_bytes() const override { return dense_.weight_bytes(); }
  std::string storage() const override { return "f32 (recording inputs)"; }

 private:
  DenseLinear dense_;
  std::vector<float>* maxima_;
};

// Projections of a layer that read the same input (indices into its 7 slots: q k v o gate up down).
const std::vector<std::vector<std::size_t>> kSharedInputs = {{0, 1, 2}, {3}, {4, 5}, {6}};

}  // namespace

InputMaxima calibrate_input_maxima(Llama& model, const ReferenceWeights& reference, std::span<const int32_t> tokens) {
  if (tokens.empty()) throw std::invalid_argument("calibrate_input_maxima: no tokens");
  InputMaxima result;
  result.tokens = std::ssize(tokens);
  result.channels.resize(reference.projections.size());
  std::size_t i = 0;
  for (LayerWeights& L : model.weights().layers)
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) {
      *slot = std::make_unique<RecordingLinear>(reference.projections.at(i), &result.channels[i]);
      ++i;
    }
  GroupedKvCache cache(model.config(), result.tokens, model.device());
  (void)model.forward(tokens, 0, cache);
  quantize_model(model, reference, nullptr);  // the plain reference again
  return result;
}

std::vector<std::vector<float>> smoothing_factors(const InputMaxima& maxima, const ReferenceWeights& reference, float alpha) {
  const std::size_t n = reference.projections.size();
  if (maxima.channels.size() != n || n % 7 != 0) throw std::invalid_argument("smoothing_factors: 7 projections per layer");
  std::vector<std::vector<float>> s(n);
  for (std::size_t layer = 0; layer < n; layer += 7) {
    for (const std::vector<std::size_t>& group : kSharedInputs) {
      const std::vector<float>& act = maxima.channels[layer + group[0]];  // the same input for the whole group
      std::vector<float> w_max(act.size(), 0.0f);
      for (std::size_t k : group) {
        const Tensor& w = reference.projections[layer + k];
        const int64_t rows = w.dim(0), cols = w.dim(1);
        if (cols != std::ssize(act)) throw std::invalid_argument("smoothing_factors: shapes differ");
        const float* p = w.host<float>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < cols; ++j)
            w_max[j] = std::max(w_max[j], std::fabs(p[r * cols + j]));
      }
      std::vector<float> factors(act.size(), 1.0f);
      for (std::size_t j = 0; j < act.size(); ++j)
        if (act[j] > 0 && w_max[j] > 0)
          factors[j] = static_cast<float>(std::pow(act[j], alpha) / std::pow(w_max[j], 1.0f - alpha));
      for (std::size_t k : group) s[layer + k] = factors;
    }
  }
  return s;
}

}  // namespace infer::quant
