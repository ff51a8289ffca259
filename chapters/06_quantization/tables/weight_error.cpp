#include "weight_error.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/progress.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "tensor/ops.hpp"  // num_threads
#include "tensor/thread_pool.hpp"

namespace infer::quant {

OutlierStats outlier_stats(std::span<const float> w) {
  OutlierStats s;
  s.count = std::ssize(w);
  if (w.empty()) return s;
  double sum = 0, sum_abs = 0, max_abs = 0;
  for (float x : w) {
    sum += x;
    sum_abs += std::fabs(x);
    max_abs = std::max<double>(max_abs, std::fabs(x));
  }
  const double n = s.count;
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
  return errors.empty() ? 0 : sum / errors.size();
}

std::size_t SchemeErrors::worst() const {
  return std::max_element(errors.begin(), errors.end()) - errors.begin();
}

std::vector<SchemeErrors> weight_errors(const std::vector<NamedMatrix>& matrices,
                                        const std::vector<std::unique_ptr<QuantScheme>>& schemes,
                                        const std::string& progress_label) {
  std::vector<SchemeErrors> result;
  std::unique_ptr<ProgressBar> bar;
  if (!progress_label.empty())
    bar = std::make_unique<ProgressBar>(progress_label, std::ssize(schemes) * std::ssize(matrices));
  for (const auto& scheme : schemes) {
    SchemeErrors se{scheme->name(), std::vector<double>(matrices.size()), 0, 0};
    std::vector<int64_t> bytes(matrices.size());
    // One matrix per thread (the schemes' own loops then run serially inside each).
    std::mutex bar_mutex;
    const int64_t count = std::ssize(matrices);
    parallel_for(count, 1, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        const NamedMatrix& m = matrices[i];
        const int64_t rows = m.weight.dim(0), cols = m.weight.dim(1);
        const std::span<const float> w(m.weight.host<float>(), rows * cols);
        const PackedMatrix packed = scheme->quantize(w, rows, cols);
        std::vector<float> w_hat(w.size());
        scheme->dequantize(packed, w_hat);
        se.errors[i] = relative_error(w, w_hat);
        bytes[i] = std::ssize(packed.bytes);
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

// --- the printed tables ---

namespace {

std::string fixed(double x, int digits) { return fmt::format("{:.{}f}", x, digits); }
// An error: fixed digits, or two significant digits when it would print as 0.0000.
std::string error_text(double e) { return e > 0 && e < 5e-5 ? fmt::format("{:.1e}", e) : fixed(e, 4); }

}  // namespace

void weight_error_tables(const Llama& model, const CommonOptions& o, nlohmann::json& figures) {
  const std::vector<NamedMatrix> matrices = projection_matrices(model.weights());
  const auto schemes = table_schemes();
  Stopwatch clock;
  const std::vector<SchemeErrors> errors = weight_errors(matrices, schemes, "weight error");
  const double seconds = clock.seconds();

  int64_t params = 0;
  for (const NamedMatrix& m : matrices) params += m.weight.numel();
  Table table(fmt::format("Weight error: relative error ‖W − Ŵ‖/‖W‖ over all {} projection matrices ({} weights)",
                          matrices.size(), format_count(params)),
              {"scheme", "bits/weight", "mean error", "worst error", "worst matrix", "shape"});
  for (const SchemeErrors& e : errors) {
    const NamedMatrix& worst = matrices[e.worst()];
    const bool exact = e.errors[e.worst()] == 0;
    table.add_row({e.scheme, fixed(e.bits_per_weight(), 3), error_text(e.mean()), error_text(e.errors[e.worst()]),
                   exact ? "(every matrix exact)" : worst.name, exact ? "" : shape_string(worst.weight.shape())});
    figures["weight_error"].push_back({{"scheme", e.scheme}, {"bits_per_weight", e.bits_per_weight()},
                                       {"mean", e.mean()}, {"worst", e.errors[e.worst()]}, {"worst_matrix", worst.name},
                                       {"errors", e.errors}});
  }
  table.add_note("bits/weight = 8 × packed bytes / weights, scales included (16-bit scales: INT4 g128 = 4 + 16/128; "
                 "with an 8-bit zero point per group, asym = 4 + 24/128). fp16, bf16, fp8: each weight rounded to the "
                 "nearest value of the format (ties to even), no scale; NF4 b128: NF4's levels in INT4 g128's blocks.");
  table.add_note("W is the model file's weights dequantized to fp32 — and the file ships them as Q4_1, so re-quantizing "
                 "to Q4_1 recovers them almost exactly: its error here is flattered, not a fair 5-bit figure.");
  table.add_note(fmt::format("Computed in {} on {} threads.", format_seconds(seconds), num_threads()));
  table.emit(o.csv_path);

  // The outlier statistics of the matrix that INT4 per-tensor treats worst, beside the one it treats best.
  const SchemeErrors& int4 = *std::find_if(errors.begin(), errors.end(), [](const SchemeErrors& e) { return e.scheme == "INT4 per-tensor"; });
  const std::size_t worst = int4.worst();
  const std::size_t best = std::min_element(int4.errors.begin(), int4.errors.end()) - int4.errors.begin();
  Table stats(fmt::format("Outlier statistics: the matrix with the largest and the smallest {} error", int4.scheme),
              {"matrix", "shape", int4.scheme + " error", "mean |w|", "std", "max |w|", "max/std", "beyond 6σ", "share"});
  for (std::size_t i : {worst, best}) {
    const NamedMatrix& m = matrices[i];
    const OutlierStats s = outlier_stats(std::span<const float>(m.weight.host<float>(), m.weight.numel()));
    stats.add_row({m.name, shape_string(m.weight.shape()), fixed(int4.errors[i], 4), fmt::format("{:.5f}", s.mean_abs),
                   fmt::format("{:.5f}", s.std), fmt::format("{:.5f}", s.max_abs), fixed(s.max_over_std, 1),
                   fmt::format("{} of {}", format_count(s.beyond_6_sigma), format_count(s.count)),
                   fmt::format("{:.3f}%", 100 * s.beyond_6_sigma_fraction())});
    figures["outlier_stats"].push_back({{"matrix", m.name}, {"int4_per_tensor_error", int4.errors[i]},
                                        {"mean_abs", s.mean_abs}, {"std", s.std}, {"max_abs", s.max_abs},
                                        {"max_over_std", s.max_over_std}, {"beyond_6_sigma", s.beyond_6_sigma},
                                        {"count", s.count}});
  }
  stats.add_note("One scale per tensor is set by max |w|: the step is max|w|/7 for INT4, so in a matrix whose largest "
                 "weight is many σ out most weights round to the zero level or its two neighbours.");
  stats.emit(o.csv_path);
}

}  // namespace infer::quant
