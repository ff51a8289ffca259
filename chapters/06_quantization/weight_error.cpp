#include "weight_error.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/progress.hpp"
#include "tensor/thread_pool.hpp"

namespace infer::quant {

std::vector<NamedMatrix> projection_matrices(const LlamaWeights& weights) {
  std::vector<NamedMatrix> out;
  auto add = [&](const std::string& name, const std::unique_ptr<Linear>& linear) {
    const auto* dense = dynamic_cast<const DenseLinear*>(linear.get());
    if (dense == nullptr || dense->weight().dtype() != DType::f32 || !dense->weight().device().is_cpu())
      throw std::runtime_error(fmt::format("{}: not a dense f32 matrix on the CPU (storage {})", name,
                                           linear ? linear->storage() : "none"));
    out.push_back({name, dense->weight()});
  };
  for (std::size_t l = 0; l < weights.layers.size(); ++l) {
    const LayerWeights& L = weights.layers[l];
    const std::string p = fmt::format("blk.{}.", l);
    add(p + "attn_q", L.wq);
    add(p + "attn_k", L.wk);
    add(p + "attn_v", L.wv);
    add(p + "attn_output", L.wo);
    add(p + "ffn_gate", L.w_gate);
    add(p + "ffn_up", L.w_up);
    add(p + "ffn_down", L.w_down);
  }
  return out;
}

OutlierStats outlier_stats(std::span<const float> w) {
  OutlierStats s;
  s.count = static_cast<int64_t>(w.size());
  if (w.empty()) return s;
  double sum = 0, sum_abs = 0, max_abs = 0;
  for (float x : w) {
    sum += x;
    sum_abs += std::fabs(x);
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(x)));
  }
  const auto n = static_cast<double>(w.size());
  s.mean = sum / n;
  s.mean_abs = sum_abs / n;
  s.max_abs = max_abs;
  double var = 0;
  for (float x : w) var += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(var / n);
  s.max_over_std = s.std > 0 ? max_abs / s.std : 0;
  for (float x : w) s.beyond_6_sigma += std::fabs(x - s.mean) > 6 * s.std ? 1 : 0;
  return s;
}

double SchemeErrors::mean() const {
  double sum = 0;
  for (double e : errors) sum += e;
  return errors.empty() ? 0 : sum / static_cast<double>(errors.size());
}

std::size_t SchemeErrors::worst() const {
  return static_cast<std::size_t>(std::max_element(errors.begin(), errors.end()) - errors.begin());
}

std::vector<SchemeErrors> weight_errors(const std::vector<NamedMatrix>& matrices,
                                        const std::vector<std::unique_ptr<QuantScheme>>& schemes,
                                        const std::string& progress_label) {
  std::vector<SchemeErrors> result;
  std::unique_ptr<ProgressBar> bar;
  if (!progress_label.empty())
    bar = std::make_unique<ProgressBar>(progress_label, static_cast<int64_t>(schemes.size() * matrices.size()));
  for (const auto& scheme : schemes) {
    SchemeErrors se{scheme->name(), std::vector<double>(matrices.size()), 0, 0};
    std::vector<int64_t> bytes(matrices.size());
    // One matrix per thread (the schemes' own loops then run serially inside each).
    std::mutex bar_mutex;
    const auto count = static_cast<int64_t>(matrices.size());
    parallel_for(count, 1, [&](int64_t first, int64_t last) {
      for (auto i = static_cast<std::size_t>(first); i < static_cast<std::size_t>(last); ++i) {
        const NamedMatrix& m = matrices[i];
        const int64_t rows = m.weight.dim(0), cols = m.weight.dim(1);
        const std::span<const float> w(m.weight.host<float>(), static_cast<std::size_t>(rows * cols));
        const PackedMatrix packed = scheme->quantize(w, rows, cols);
        std::vector<float> w_hat(w.size());
        scheme->dequantize(packed, w_hat);
        se.errors[i] = relative_error(w, w_hat);
        bytes[i] = static_cast<int64_t>(packed.bytes.size());
        if (bar) {
          const std::lock_guard<std::mutex> lock(bar_mutex);
          bar->advance();
        }
      }
    });
    for (std::size_t i = 0; i < matrices.size(); ++i) {
      se.packed_bytes += bytes[i];
      se.weights += matrices[i].weight.numel();
    }
    result.push_back(std::move(se));
  }
  return result;
}

}  // namespace infer::quant
