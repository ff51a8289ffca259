#include "calibration.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include "03_gqa/grouped_kv_cache.hpp"
#include "tensor/ops.hpp"

namespace infer::quant {
namespace {

// Where one projection's statistics go; nullptr: not recorded by this projection.
struct Record {
  std::vector<float>* maxima = nullptr;   // [in]
  std::vector<double>* sum_abs = nullptr; // [in]: Σ_t |x[t, j]|, divided by T after the pass
  Tensor* gram = nullptr;                 // [in, in]: Σ over calls of XᵀX
  Tensor* first_gram = nullptr;           // [in, in]: Σ over calls of (n − 1)·x₀x₀ᵀ (every call is one window)
};

// A projection that notes what its Record asks for about its input, then multiplies as before.
class RecordingLinear : public Linear {
 public:
  RecordingLinear(Tensor weight, Record record) : dense_(std::move(weight)), record_(record) {}
  void forward(const Tensor& x, Tensor& y) const override {
    const int64_t n = x.dim(0), d = x.dim(1);
    const float* p = x.host<float>();
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < d; ++j) {
        const float a = std::fabs(p[t * d + j]);
        float& m = (*record_.maxima)[j];
        m = std::max(m, a);
        if (record_.sum_abs) (*record_.sum_abs)[j] += a;
      }
    if (record_.gram) {
      // XᵀX = (Xᵀ)·(Xᵀ)ᵀ: lib's product y = a·bᵀ with a = b = Xᵀ [in, n].
      Tensor xt({d, n});
      float* q = xt.host<float>();
      for (int64_t t = 0; t < n; ++t)
        for (int64_t j = 0; j < d; ++j) q[j * n + t] = p[t * d + j];
      Tensor step({d, d});
      ops::matmul_t(xt, xt, step);
      float* g = record_.gram->host<float>();
      const float* s = step.host<float>();
      for (int64_t i = 0; i < d * d; ++i) g[i] += s[i];
    }
    if (record_.first_gram) {
      float* f = record_.first_gram->host<float>();
      const float extra = static_cast<float>(n - 1);
      for (int64_t i = 0; i < d; ++i)
        for (int64_t j = 0; j < d; ++j) f[i * d + j] += extra * p[i] * p[j];
    }
    dense_.forward(x, y);
  }
  int64_t in_features() const override { return dense_.in_features(); }
  int64_t out_features() const override { return dense_.out_features(); }
  std::size_t weight_bytes() const override { return dense_.weight_bytes(); }
  std::string storage() const override { return "f32 (recording inputs)"; }

 private:
  DenseLinear dense_;
  Record record_;
};

}  // namespace

const std::vector<std::vector<std::size_t>>& shared_input_groups() {
  static const std::vector<std::vector<std::size_t>> groups = {{0, 1, 2}, {3}, {4, 5}, {6}};
  return groups;
}

CalibrationInputs calibrate_inputs(Llama& model, const ReferenceWeights& reference, std::span<const int32_t> tokens,
                                   CalibrationNeeds needs) {
  if (tokens.empty()) throw std::invalid_argument("calibrate_inputs: no tokens");
  if (needs.window < 1) throw std::invalid_argument("calibrate_inputs: window < 1");
  const std::size_t n = reference.projections.size();
  if (n % 7 != 0) throw std::invalid_argument("calibrate_inputs: 7 projections per layer");
  CalibrationInputs result;
  result.maxima.tokens = std::ssize(tokens);
  result.maxima.channels.resize(n);
  std::vector<std::vector<double>> sums(needs.mean_abs ? n : 0);
  if (needs.gram) {
    result.gram.resize(n);
    result.first_gram.resize(n);
  }
  std::size_t i = 0;
  for (LayerWeights& L : model.weights().layers) {
    const std::size_t layer = i;
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) {
      const int64_t in = reference.projections.at(i).dim(1);
      Record r;
      result.maxima.channels[i].assign(in, 0.0f);
      r.maxima = &result.maxima.channels[i];
      if (needs.mean_abs) {
        sums[i].assign(in, 0.0);
        r.sum_abs = &sums[i];
      }
      // The Gram matrix only at the first projection of each shared input; the others share it below.
      const std::size_t k = i - layer;
      if (needs.gram && std::ranges::any_of(shared_input_groups(), [&](const auto& g) { return g[0] == k; })) {
        result.gram[i] = Tensor::zeros({in, in});
        r.gram = &result.gram[i];
        if (k == 0) {  // the attention input: q, k, v
          result.first_gram[i] = Tensor::zeros({in, in});
          r.first_gram = &result.first_gram[i];
        }
      }
      *slot = std::make_unique<RecordingLinear>(reference.projections.at(i), r);
      ++i;
    }
  }
  const int64_t window = std::min(needs.window, result.maxima.tokens);
  GroupedKvCache cache(model.config(), window, model.device());
  for (int64_t start = 0; start < result.maxima.tokens; start += window) {
    cache.clear();
    (void)model.forward(tokens.subspan(start, std::min(window, result.maxima.tokens - start)), 0, cache);
  }
  quantize_model(model, reference, nullptr);  // the plain reference again

  for (std::size_t p = 0; p < sums.size(); ++p) {
    result.mean_abs.emplace_back(sums[p].size());
    for (std::size_t j = 0; j < sums[p].size(); ++j)
      result.mean_abs[p][j] = static_cast<float>(sums[p][j] / static_cast<double>(result.maxima.tokens));
  }
  if (needs.gram)
    for (std::size_t layer = 0; layer < n; layer += 7)
      for (const std::vector<std::size_t>& g : shared_input_groups())
        for (std::size_t k : g) {
          result.gram[layer + k] = result.gram[layer + g[0]];  // a handle: the same storage
          if (g[0] == 0) result.first_gram[layer + k] = result.first_gram[layer];
        }
  return result;
}

InputMaxima calibrate_input_maxima(Llama& model, const ReferenceWeights& reference, std::span<const int32_t> tokens) {
  return calibrate_inputs(model, reference, tokens, {}).maxima;
}

double output_error_squared(std::span<const float> w, std::span<const float> w_hat, int64_t rows, int64_t cols,
                            const Tensor& gram) {
  if (std::ssize(w) != rows * cols || std::ssize(w_hat) != rows * cols || gram.rank() != 2 || gram.dim(0) != cols ||
      gram.dim(1) != cols)
    throw std::invalid_argument("output_error_squared: shapes differ");
  Tensor delta({rows, cols});
  float* d = delta.host<float>();
  for (int64_t i = 0; i < rows * cols; ++i) d[i] = w_hat[i] - w[i];
  Tensor dg({rows, cols});
  ops::matmul_t(delta, gram, dg);  // Δ·(XᵀX)ᵀ = Δ·XᵀX: the Gram matrix is symmetric
  const float* p = dg.host<float>();
  double sum = 0;
  for (int64_t i = 0; i < rows * cols; ++i) sum += static_cast<double>(d[i]) * p[i];
  return sum;
}

}  // namespace infer::quant
