#include "llm_int8.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/timing.hpp"
#include "tensor/ops.hpp"

namespace infer::quant {

std::vector<int64_t> outlier_columns(const Tensor& x, float threshold) {
  const int64_t n = x.dim(0), d = x.dim(1);
  const float* p = x.host<float>();
  std::vector<uint8_t> flagged(static_cast<std::size_t>(d), 0);
  for (int64_t t = 0; t < n; ++t)  // row by row: the reads stay contiguous
    for (int64_t j = 0; j < d; ++j) flagged[j] |= std::fabs(p[t * d + j]) >= threshold ? 1 : 0;
  std::vector<int64_t> columns;
  for (int64_t j = 0; j < d; ++j)
    if (flagged[j]) columns.push_back(j);
  return columns;
}

LlmInt8Linear::LlmInt8Linear(Tensor int8_weights, Tensor column_weights, float threshold, OutlierCounts* counts)
    : int8_(int8_weights, {}),
      columns_(std::move(column_weights)),
      separate_columns_(columns_.host<float>() != int8_weights.host<float>()),
      threshold_(threshold),
      counts_(counts) {
  if (columns_.shape() != int8_weights.shape()) throw std::invalid_argument("LlmInt8Linear: the two matrices differ in shape");
  if (!(threshold >= 0)) throw std::invalid_argument("LlmInt8Linear: the threshold must be ≥ 0");
  if (counts_ != nullptr) {
    *counts_ = OutlierCounts{};
    counts_->in_features = in_features();
    counts_->out_features = out_features();
    counts_->calls_flagged.assign(static_cast<std::size_t>(in_features()), 0);
  }
}

std::size_t LlmInt8Linear::weight_bytes() const {
  return int8_.weight_bytes() + (separate_columns_ ? columns_.nbytes() : 0);
}

void LlmInt8Linear::forward(const Tensor& x, Tensor& y) const {
  const int64_t n = x.dim(0), d = x.dim(1), out = out_features();
  const std::vector<int64_t> o = outlier_columns(x, threshold_);
  const int64_t k = std::ssize(o);
  if (counts_ != nullptr) {
    counts_->calls += 1;
    counts_->columns += d;
    counts_->outlier_columns += k;
    counts_->elements += n * d;
    counts_->outlier_elements += n * k;
    for (int64_t j : o) counts_->calls_flagged[j] += 1;
  }
  if (k == 0) {  // no outliers: the W8A8 layer alone, on the caller's x
    int8_.forward(x, y);
    return;
  }
  // The INT8 part: x without its outlier columns, so that they no longer set any token's step.
  Tensor rest({n, d});
  Tensor x_o({n, k}), w_o({out, k}), y_o({n, out});
  const float* xp = x.host<float>();
  const float* wp = columns_.host<float>();
  float* rp = rest.host<float>();
  float* xop = x_o.host<float>();
  float* wop = w_o.host<float>();
  std::copy(xp, xp + n * d, rp);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t c = 0; c < k; ++c) {
      xop[t * k + c] = xp[t * d + o[c]];
      rp[t * d + o[c]] = 0.0f;
    }
  for (int64_t r = 0; r < out; ++r)
    for (int64_t c = 0; c < k; ++c) wop[r * k + c] = wp[r * d + o[c]];
  int8_.forward(rest, y);
  // The fp32 part: the outlier columns of x times the same columns of the weights, added on.
  ops::matmul_t(x_o, w_o, y_o);
  ops::add_inplace(y, y_o);
}

QuantizedModel quantize_model_llm_int8(Llama& model, const ReferenceWeights& reference, float threshold,
                                       OutlierWeights source, std::vector<OutlierCounts>& counts,
                                       const std::string& name) {
  Stopwatch clock;
  QuantizedModel info = quantize_model_w8a8(model, reference, {}, name);
  counts.assign(reference.projections.size(), OutlierCounts{});
  std::size_t i = 0;
  for (LayerWeights& L : model.weights().layers)
    for (std::unique_ptr<Linear>* slot : projection_slots(L)) {
      const auto* w8a8 = dynamic_cast<const W8A8Linear*>(slot->get());
      if (w8a8 == nullptr) throw std::logic_error("quantize_model_llm_int8: expected the W8A8 layer in place");
      const Tensor int8_weights = w8a8->weight();
      const Tensor& columns = source == OutlierWeights::original ? reference.projections.at(i) : int8_weights;
      const auto int8_bytes = static_cast<int64_t>(w8a8->weight_bytes());
      *slot = std::make_unique<LlmInt8Linear>(int8_weights, columns, threshold, &counts[i]);
      info.packed_bytes += static_cast<int64_t>((*slot)->weight_bytes()) - int8_bytes;  // the fp32 copy, if kept
      ++i;
    }
  info.seconds = clock.seconds();
  return info;
}

namespace {

// The projections that read the same input, by their index in a layer (q k v o gate up down).
struct InputGroup {
  const char* name;
  std::vector<std::size_t> members;
};
const std::vector<InputGroup> kInputGroups = {{"q, k, v (attention norm's output)", {0, 1, 2}},
                                              {"o (attention's output)", {3}},
                                              {"gate, up (MLP norm's output)", {4, 5}},
                                              {"down (SwiGLU's output)", {6}}};

double share(int64_t part, int64_t whole) { return whole > 0 ? static_cast<double>(part) / whole : 0.0; }

}  // namespace

Table outlier_column_table(const std::vector<OutlierCounts>& counts, float threshold, const InputMaxima& calibration,
                           const std::vector<float>& thresholds, nlohmann::json& figures) {
  if (counts.empty() || counts.size() % 7 != 0 || calibration.channels.size() != counts.size())
    throw std::invalid_argument("outlier_column_table: 7 projections per layer, calibrated and counted");
  std::vector<std::string> headers = {"input of", "width", "flagged per call", "x·W in fp32", "flagged at least once"};
  for (float t : thresholds) headers.push_back(fmt::format("calibration, ≥ {:g}", t));
  Table table(fmt::format("LLM.int8's outlier columns at threshold {:g}: share of the input columns computed in fp32, by "
                          "the input the projections read ({} layers)", threshold, counts.size() / 7),
              headers);

  struct Sums {
    int64_t columns = 0, outlier_columns = 0, products = 0, outlier_products = 0, width = 0, ever = 0, calls = 0;
    std::vector<int64_t> calibration_width, calibration_over;
    std::vector<int64_t> per_column;  // calls flagged, summed over the group's layers (one member per layer)
  };
  auto add_row = [&](const std::string& name, const Sums& s, int64_t width) {
    std::vector<std::string> row = {name, width > 0 ? std::to_string(width) : "",
                                    cell::percent(share(s.outlier_columns, s.columns), 2),
                                    cell::percent(share(s.outlier_products, s.products), 2),
                                    cell::percent(share(s.ever, s.width), 1)};
    nlohmann::json calib = nlohmann::json::object();
    for (std::size_t k = 0; k < thresholds.size(); ++k) {
      const double c = share(s.calibration_over[k], s.calibration_width[k]);
      row.push_back(cell::percent(c, 2));
      calib[fmt::format("{:g}", thresholds[k])] = c;
    }
    table.add_row(row);
    figures["llm_int8"]["inputs"].push_back({{"input", name},
                                             {"flagged_per_call", share(s.outlier_columns, s.columns)},
                                             {"fp32_products", share(s.outlier_products, s.products)},
                                             {"flagged_at_least_once", share(s.ever, s.width)},
                                             {"calibration", calib}});
  };

  Sums all;
  all.calibration_width.assign(thresholds.size(), 0);
  all.calibration_over.assign(thresholds.size(), 0);
  std::vector<std::string> most_flagged;
  int64_t int8_bytes = 0, fp32_bytes = 0, fixed_set_bytes = 0, calls = 0;
  for (const InputGroup& g : kInputGroups) {
    Sums s;
    s.calibration_width.assign(thresholds.size(), 0);
    s.calibration_over.assign(thresholds.size(), 0);
    int64_t width = 0;
    for (std::size_t layer = 0; layer < counts.size(); layer += 7) {
      for (std::size_t m : g.members) {
        const OutlierCounts& c = counts[layer + m];
        const int64_t ever = std::count_if(c.calls_flagged.begin(), c.calls_flagged.end(), [](int64_t v) { return v > 0; });
        s.columns += c.columns;
        s.outlier_columns += c.outlier_columns;
        s.products += c.elements * c.out_features;  // multiply-adds: each x value meets a column of out weights
        s.outlier_products += c.outlier_elements * c.out_features;
        s.width += c.in_features;
        s.ever += ever;
        int8_bytes += c.in_features * c.out_features + 2 * c.out_features;
        fp32_bytes += 4 * c.in_features * c.out_features;
        fixed_set_bytes += 4 * ever * c.out_features;
        calls += c.calls;
        const std::vector<float>& maxima = calibration.channels[layer + m];
        for (std::size_t k = 0; k < thresholds.size(); ++k) {
          s.calibration_width[k] += std::ssize(maxima);
          s.calibration_over[k] += std::count_if(maxima.begin(), maxima.end(), [&](float v) { return v >= thresholds[k]; });
        }
        width = c.in_features;
      }
      const OutlierCounts& first = counts[layer + g.members[0]];  // the group's members read the same x
      if (s.per_column.empty()) s.per_column.assign(first.calls_flagged.size(), 0);
      for (std::size_t j = 0; j < first.calls_flagged.size(); ++j) s.per_column[j] += first.calls_flagged[j];
      s.calls += first.calls;
    }
    add_row(g.name, s, width);
    all.columns += s.columns;
    all.outlier_columns += s.outlier_columns;
    all.products += s.products;
    all.outlier_products += s.outlier_products;
    all.width += s.width;
    all.ever += s.ever;
    for (std::size_t k = 0; k < thresholds.size(); ++k) {
      all.calibration_width[k] += s.calibration_width[k];
      all.calibration_over[k] += s.calibration_over[k];
    }
    // The columns flagged most often, over the group's calls in every layer.
    std::vector<std::size_t> order(s.per_column.size());
    std::iota(order.begin(), order.end(), 0);
    const std::size_t top = std::min<std::size_t>(3, order.size());
    std::partial_sort(order.begin(), order.begin() + top, order.end(),
                      [&](std::size_t a, std::size_t b) { return s.per_column[a] > s.per_column[b]; });
    std::string list;
    for (std::size_t r = 0; r < top && s.per_column[order[r]] > 0; ++r)
      list += fmt::format("{}{} ({})", r ? ", " : "", order[r], cell::percent(share(s.per_column[order[r]], s.calls), 1));
    most_flagged.push_back(fmt::format("{}: {}", g.name, list.empty() ? "none" : list));
  }
  add_row("all 7 projections", all, 0);

  figures["llm_int8"]["threshold"] = threshold;
  figures["llm_int8"]["calls"] = calls;
  figures["llm_int8"]["int8_bytes"] = int8_bytes;
  figures["llm_int8"]["fp32_copy_bytes"] = fp32_bytes;
  figures["llm_int8"]["fixed_set_fp32_bytes"] = fixed_set_bytes;
  table.add_note(fmt::format(
      "flagged per call: Σ|O| / Σ width over the {} calls of the W8A8 LLM.int8 row's run (perplexity windows, battery "
      "decode steps of all questions at once, the agreement pass), a column flagged when |x| ≥ {:g} in any row of the "
      "call. x·W in fp32: the share of the multiply-adds in the fp32 part (calls weighted by their rows). At least "
      "once: the union over the run, per projection.", calls, threshold));
  table.add_note(fmt::format(
      "Bytes of the 210 projections: {} INT8 (a byte a weight, an fp16 scale a row). The layer picks its columns per "
      "call, so it keeps every column of W at full precision too: {} fp32 more (the W8A8 LLM.int8 row's weights). "
      "Keeping only the columns flagged at least once in this run would take {} in fp32 — a set known only after the "
      "run. The W8A8 LLM.int8 (INT8 W) row takes the columns from Ŵ and stores nothing more.",
      format_bytes(static_cast<double>(int8_bytes)), format_bytes(static_cast<double>(fp32_bytes)),
      format_bytes(static_cast<double>(fixed_set_bytes))));
  table.add_note(fmt::format("calibration: the share of columns whose largest |x| over SmoothQuant's {}-token "
                             "calibration pass (fp32 model, one call) reaches the threshold — what one call of that "
                             "length would flag.", calibration.tokens));
  std::string flagged_note = "Flagged most often (share of the calls, over all layers): ";
  for (std::size_t g = 0; g < most_flagged.size(); ++g) flagged_note += (g ? "; " : "") + most_flagged[g];
  table.add_note(flagged_note + ".");
  return table;
}

}  // namespace infer::quant
