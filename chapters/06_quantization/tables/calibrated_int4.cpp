#include "calibrated_int4.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include "absmax.hpp"
#include "awq.hpp"
#include "calibration.hpp"
#include "gptq.hpp"
#include "measure/timing.hpp"
#include "nf4.hpp"
#include "tensor/ops.hpp"  // num_threads

namespace infer::quant {
namespace {

// How far a row's projections are from the fp32 ones, as means over the 210 matrices: the weight
// error ‖Ŵ − W‖/‖W‖ (table 1's), and the output error ‖(Ŵ − W)·Xᵀ‖/‖W·Xᵀ‖ on the calibration
// inputs X (what AWQ and GPTQ minimise — on these very tokens, so it is their training error).
struct ProjectionErrors {
  double weight = 0, output = 0;
};
ProjectionErrors projection_errors(const Llama& model, const ReferenceWeights& reference,
                                   const CalibrationInputs& calibration, const std::vector<double>& energy) {
  const std::vector<NamedMatrix> now = projection_matrices(model.weights());
  ProjectionErrors e;
  for (std::size_t i = 0; i < now.size(); ++i) {
    const Tensor& w = reference.projections[i];
    const int64_t rows = w.dim(0), cols = w.dim(1);
    const std::span<const float> ref(w.host<float>(), static_cast<std::size_t>(rows * cols));
    const std::span<const float> hat(now[i].weight.host<float>(), ref.size());
    e.weight += relative_error(ref, hat) / static_cast<double>(now.size());
    e.output += std::sqrt(output_error_squared(ref, hat, rows, cols, calibration.gram[i]) / energy[i]) /
                static_cast<double>(now.size());
  }
  return e;
}

// "q/k/v 0.35, o 0, gate/up 0.5, down 0.25": the median α AWQ chose for each input, over the layers.
std::string alpha_summary(const std::vector<float>& alphas) {
  const std::vector<std::pair<std::string, std::size_t>> inputs = {{"q/k/v", 0}, {"o", 3}, {"gate/up", 4}, {"down", 6}};
  std::vector<std::string> parts;
  for (const auto& [name, slot] : inputs) {
    std::vector<float> a;
    for (std::size_t i = slot; i < alphas.size(); i += 7) a.push_back(alphas[i]);
    std::ranges::nth_element(a, a.begin() + std::ssize(a) / 2);
    parts.push_back(fmt::format("{} {:g}", name, a[a.size() / 2]));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

void calibrated_int4_table(LoadedModel& m, const CommonOptions& o, const QualityOptions& q, nlohmann::json& figures) {
  Llama& model = m.model;
  const QualityBench bench = quality_bench(m, q);
  const ReferenceWeights& reference = bench.reference;

  // One calibration pass for both methods: mean |x| (AWQ) and XᵀX (GPTQ; both for the output error).
  Stopwatch calibration_clock;
  const CalibrationInputs calibration =
      calibrate_inputs(model, reference, bench.calibration, {.mean_abs = true, .gram = true});
  const double calibration_seconds = calibration_clock.seconds();
  std::vector<double> energy;  // ‖W·Xᵀ‖² of every projection
  for (std::size_t i = 0; i < reference.projections.size(); ++i) {
    const Tensor& w = reference.projections[i];
    const std::span<const float> values(w.host<float>(), static_cast<std::size_t>(w.numel()));
    energy.push_back(output_error_squared(values, std::vector<float>(values.size(), 0.0f), w.dim(0), w.dim(1),
                                          calibration.gram[i]));
  }

  const AbsmaxScheme int4(4, Granularity::per_group, 128);
  const Nf4Scheme nf4(64);
  std::vector<float> alphas;
  std::vector<ProjectionErrors> errors;
  // Each row notes its projections' errors right after putting them in place.
  auto row = [&](auto apply) -> QualityRow {
    return [&, apply] {
      QuantizedModel info = apply();
      errors.push_back(projection_errors(model, reference, calibration, energy));
      return info;
    };
  };
  const std::vector<QualityRow> rows = {
      row([&] { return quantize_model(model, reference, nullptr); }),
      row([&] { return quantize_model(model, reference, &int4); }),
      row([&] { return quantize_model(model, reference, &nf4); }),
      row([&] { return quantize_model_awq(model, reference, calibration, "INT4 g128 AWQ", &alphas); }),
      row([&] { return quantize_model_gptq(model, reference, calibration, "INT4 g128 GPTQ"); }),
  };
  Stopwatch total;
  const std::vector<QualityResult> results = measure_quality(m, bench, q, rows, /*penalized_battery=*/false);
  const double seconds = total.seconds();

  QualityColumn weight{"weight error", {}}, output{"output error, calibration", {}};
  for (const ProjectionErrors& e : errors) {
    weight.cells.push_back(fmt::format("{:.4f}", e.weight));
    output.cells.push_back(fmt::format("{:.4f}", e.output));
  }
  Table table = quality_table("INT4 g128 calibrated on text: AWQ and GPTQ beside round-to-nearest", results, bench, q,
                              {weight, output}, figures["calibrated"]);
  table.add_note("weight error: mean over the 210 projections of ‖Ŵ − W‖/‖W‖ (table 1's). output error: mean of "
                 "‖(Ŵ − W)·Xᵀ‖/‖W·Xᵀ‖ with X each projection's input on the calibration tokens — what AWQ and GPTQ "
                 "minimise, on the tokens they were fitted to; perplexity, battery and agreement are on other text.");
  table.add_note(fmt::format(
      "Calibration: the fp32 model over the {} tokens before the held-out text, in windows of {} from position 0 like "
      "the evaluation's ({:.1f} s), recording at every projection's input mean |x| per channel (AWQ) and XᵀX (GPTQ). "
      "Every layer is calibrated on the fp32 model's inputs (the paper's GPTQ re-runs the calibration on the "
      "already-quantized earlier layers).",
      calibration.maxima.tokens, CalibrationNeeds{}.window, calibration_seconds));
  table.add_note(fmt::format(
      "AWQ: W·diag(s) rounded to INT4 g128, then ·diag(s)⁻¹, s_j = mean|x_j|^α with α from 0, 0.05 … 1 minimising the "
      "output error (q/k/v share one s, gate/up another: in a deployment s is folded into the norm before them and the "
      "matrix stays 4.125 bits; simulated in place here). Median α chosen over the layers: {}{}.",
      alpha_summary(alphas),
      reference.projections[2].dim(0) != reference.projections[3].dim(1)
          ? " (o stays round-to-nearest: with grouped-query attention its s cannot be folded into v)"
          : ""));
  table.add_note("GPTQ: columns rounded in order onto INT4 g128's grid, each error spread over the columns not yet "
                 "rounded through the Cholesky factor of (2·XᵀX + 1% of its mean diagonal)⁻¹; for q, k and v each "
                 "window's first position (the attention sink, read by every later one) weighs as much as its window. A "
                 "group's scale is set when its first column comes up. The embedding/output matrix is plain INT4 g128 in "
                 "both rows.");
  table.add_note(fmt::format("Computed in {:.1f} min on {} threads.", seconds / 60, num_threads()));
  table.emit(o.csv_path);
  figures["calibrated_awq_alpha"] = alphas;
  figures["calibration_seconds"] = calibration_seconds;
}

}  // namespace infer::quant
