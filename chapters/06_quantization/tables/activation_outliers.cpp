#include "activation_outliers.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"  // median, percentile

namespace infer::quant {

ResidualCapture capture_residual_stream(const Llama& model, std::span<const int32_t> tokens) {
  const LlamaConfig& c = model.config();
  const auto N = std::ssize(tokens);
  if (N < 1 || N > c.context_length) throw std::invalid_argument("capture_residual_stream: bad token count");
  ResidualCapture out{.tokens = N, .d = c.d_model, .layers = {}};
  GroupedKvCache cache(c, N, model.device());
  // Llama::forward's own steps (model/llama.hpp), with the residual stream x [N, d] copied to the
  // host after each layer; the output head is not needed.
  std::vector<int32_t> positions(static_cast<std::size_t>(N));
  std::iota(positions.begin(), positions.end(), 0);
  Tensor x({N, c.d_model}, DType::f32, model.device());
  model.weights().embed(tokens, x);
  Llama::Activations a(c, N, model.device());
  for (int l = 0; l < c.n_layers; ++l) {
    model.layer(l, x, a, positions, cache, 0);
    out.layers.push_back(x.to_vector());
  }
  return out;
}

std::vector<float> per_dim_max(std::span<const float> x, int64_t tokens, int64_t d, int64_t first_token) {
  std::vector<float> m(d, 0.0f);
  for (int64_t t = first_token; t < tokens; ++t)
    for (int64_t j = 0; j < d; ++j) m[j] = std::max(m[j], std::fabs(x[t * d + j]));
  return m;
}

std::vector<int> top_dims(std::span<const float> dim_max, int k) {
  std::vector<int> idx(dim_max.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, static_cast<int>(idx.size()));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) { return dim_max[a] > dim_max[b]; });
  idx.resize(k);
  return idx;
}

std::vector<Log2Bin> log2_histogram(std::span<const float> values) {
  double max = 0;
  for (float v : values) max = std::max<double>(max, v);
  std::vector<Log2Bin> bins{{0, 1, 0}};
  while (bins.back().hi <= max) bins.push_back({bins.back().hi, bins.back().hi * 2, 0});
  const int last = static_cast<int>(bins.size()) - 1;
  for (float v : values) {
    const int i = v < 1 ? 0 : static_cast<int>(std::floor(std::log2(v))) + 1;  // [2^(i-1), 2^i)
    bins[std::min(i, last)].count += 1;
  }
  return bins;
}

Int8TensorScale int8_tensor_scale(std::span<const float> x, int64_t tokens, int64_t d,
                                  std::span<const int> excluded_dims, std::span<const int> dims,
                                  int64_t first_token) {
  std::vector<bool> excluded(d, false);
  for (int e : excluded_dims) excluded.at(e) = true;
  float amax = 0;
  for (int64_t t = first_token; t < tokens; ++t)
    for (int64_t j = 0; j < d; ++j)
      if (!excluded[j]) amax = std::max(amax, std::fabs(x[t * d + j]));
  Int8TensorScale r;
  r.scale = amax / 127.0f;
  const float inv = r.scale > 0 ? 1.0f / r.scale : 0.0f;
  auto level = [&](int64_t t, int64_t j) { return std::lrint(x[t * d + j] * inv); };  // the nearest level, ties to even
  std::set<long> all;
  for (int64_t t = first_token; t < tokens; ++t)
    for (int64_t j = 0; j < d; ++j)
      if (!excluded[j]) all.insert(level(t, j));
  r.levels_used = std::ssize(all);
  for (int dim : dims) {
    std::set<long> used;
    for (int64_t t = first_token; t < tokens; ++t) used.insert(level(t, dim));
    r.distinct_levels.push_back(std::ssize(used));
  }
  return r;
}

// --- the printed tables ---

namespace {

std::string fixed(double x, int digits) { return fmt::format("{:.{}f}", x, digits); }

double median_of(const std::vector<float>& values) { return median(std::vector<double>(values.begin(), values.end())); }

}  // namespace

void activation_tables(const Llama& model, const Tokenizer& tokenizer, const CommonOptions& o, nlohmann::json& figures) {
  const std::vector<int32_t> tokens = tokenizer.encode(kOutlierPrompt, false);
  const ResidualCapture cap = capture_residual_stream(model, tokens);
  const int n_layers = model.config().n_layers;
  const int64_t N = cap.tokens;
  const int d = static_cast<int>(cap.d);  // a dimension is an int, as top_dims returns them

  // Position 0 is special: with nothing before it to attend to, the model parks enormous values
  // there (an "attention sink"). The right-hand columns leave it out.
  std::vector<std::vector<float>> dim_max, dim_max_rest;  // [layer][dimension]
  for (const auto& x : cap.layers) {
    dim_max.push_back(per_dim_max(x, N, d));
    dim_max_rest.push_back(per_dim_max(x, N, d, 1));
  }

  Table table(fmt::format("Activation outliers: per-dimension max |x| of the residual stream after each layer "
                          "({}-token prompt, {} dimensions)", N, d),
              {"layer", "largest dim", "max |x|", "2nd", "3rd", "4th", "median dim", "largest / median",
               "without position 0: largest", "median", "largest / median"});
  std::vector<int> top1_count(d, 0);  // per dimension: at how many layers it is the largest
  for (int l = 0; l < n_layers; ++l) {
    const std::vector<float>& m = dim_max[l];
    const std::vector<int> top = top_dims(m, 4);
    const double med = median_of(m);
    const std::vector<float>& m_rest = dim_max_rest[l];
    const int top_rest = top_dims(m_rest, 1)[0];
    const double med_rest = median_of(m_rest);
    auto cell = [&](int i) { return fmt::format("{} ({:.1f})", top[i], m[top[i]]); };
    table.add_row({std::to_string(l), std::to_string(top[0]), fixed(m[top[0]], 1), cell(1), cell(2), cell(3),
                   fixed(med, 2), fmt::format("{:.0f}×", m[top[0]] / med),
                   fmt::format("{} ({:.1f})", top_rest, m_rest[top_rest]), fixed(med_rest, 2),
                   fmt::format("{:.0f}×", m_rest[top_rest] / med_rest)});
    top1_count[top[0]] += 1;
    figures["activation_outliers"].push_back({{"layer", l}, {"top_dims", top},
                                              {"top_values", {m[top[0]], m[top[1]], m[top[2]], m[top[3]]}},
                                              {"median", med}, {"top_dim_without_position_0", top_rest},
                                              {"top_value_without_position_0", m_rest[top_rest]},
                                              {"median_without_position_0", med_rest}});
  }
  const auto most = static_cast<int>(std::max_element(top1_count.begin(), top1_count.end()) - top1_count.begin());
  // Which dimensions are among the top 4 at most layers?
  std::vector<int> in_top4(d, 0);
  for (const auto& m : dim_max)
    for (int dim : top_dims(m, 4)) in_top4[dim] += 1;
  std::string persistent;
  for (int dim : top_dims(std::vector<float>(in_top4.begin(), in_top4.end()), 4))
    persistent += fmt::format("{}{} ({} of {} layers)", persistent.empty() ? "" : ", ", dim, in_top4[dim], n_layers);
  table.add_note(fmt::format("Dimension {} is the largest at {} of {} layers. In the top 4 most often: {}.", most,
                             top1_count[most], n_layers, persistent));
  table.add_note("Position 0 (the first token) has nothing before it to attend to, and the model parks very large "
                 "values there (an \"attention sink\"); the last three columns leave it out. The outlier dimensions "
                 "are the same either way.");
  table.emit(o.csv_path);
  figures["activation_persistence"] = {{"most_frequent_top_dim", most}, {"layers_as_top", top1_count[most]}};

  // Histogram at the middle layer, in powers of two.
  const int mid = n_layers / 2;
  const std::vector<float>& m = dim_max[mid];
  const std::vector<Log2Bin> bins = log2_histogram(m);
  int64_t most_in_bin = 1;
  for (const Log2Bin& b : bins) most_in_bin = std::max(most_in_bin, b.count);
  fmt::print("Histogram of the {} per-dimension maxima at layer {} (bins of powers of two, # ∝ count):\n", d, mid);
  for (const Log2Bin& b : bins) {
    const long width = b.count == 0 ? 0 : std::max(1L, std::lround(40.0 * b.count / most_in_bin));
    fmt::print("  {:>6g} - {:>6g} | {:<40} {}\n", b.lo, b.hi, std::string(width, '#'), b.count);
    figures["activation_histogram"].push_back({{"lo", b.lo}, {"hi", b.hi}, {"count", b.count}});
  }
  fmt::print("\n");

  // INT8 with one scale for the whole layer-`mid` tensor, then without the 4 largest dimensions.
  const std::vector<float>& x = cap.layers[mid];
  const std::vector<int> top4 = top_dims(m, 4);
  std::vector<double> magnitudes;
  for (float v : x) magnitudes.push_back(std::fabs(v));
  // A few ordinary dimensions: the ones whose max sits at the 90th, 50th and 10th percentile.
  std::vector<int> order(d);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return m[a] < m[b]; });
  const std::vector<int> dims = {order[d * 9 / 10], order[d / 2], order[d / 10]};
  const Int8TensorScale all = int8_tensor_scale(x, N, d, {}, dims);
  const Int8TensorScale rest = int8_tensor_scale(x, N, d, top4, dims);
  const Int8TensorScale later = int8_tensor_scale(x, N, d, {}, dims, 1);
  Table q(fmt::format("INT8 with one tensor-wide scale on the layer-{} residual stream ({} tokens × {} dims; median |x| "
                      "{:.2f}, 99th percentile {:.2f})", mid, N, d, median(magnitudes), percentile(magnitudes, 99)),
          {"scale from", "step (scale)", "levels used, whole tensor", fmt::format("dim {} (max {:.2f})", dims[0], m[dims[0]]),
           fmt::format("dim {} (max {:.2f})", dims[1], m[dims[1]]), fmt::format("dim {} (max {:.2f})", dims[2], m[dims[2]])});
  auto levels = [](int64_t n) { return fmt::format("{} of 256", n); };
  auto add = [&](std::string from, const Int8TensorScale& s) {
    q.add_row({std::move(from), fmt::format("{:.4f}", s.scale), levels(s.levels_used), levels(s.distinct_levels[0]),
               levels(s.distinct_levels[1]), levels(s.distinct_levels[2])});
  };
  add("all dimensions", all);
  add(fmt::format("without dims {}, {}, {}, {}", top4[0], top4[1], top4[2], top4[3]), rest);
  add("all dimensions, position 0 left out", later);
  q.add_note(fmt::format("scale = max |x| / 127; levels = distinct round(x / scale) over the tokens. Excluding the top 4 "
                         "dimensions makes the step {:.0f}× smaller. The three dimensions are those whose max sits at "
                         "the 90th, 50th and 10th percentile of the {} dimensions.", all.scale / rest.scale, d));
  q.add_note("The residual stream is read between the layers of the model's own forward pass (Llama::layer, one call "
             "per layer).");
  q.emit(o.csv_path);
  figures["activation_int8"] = {{"layer", mid}, {"dims", dims}, {"scale_all", all.scale}, {"levels_all", all.levels_used},
                                {"dim_levels_all", all.distinct_levels}, {"excluded", top4}, {"scale_rest", rest.scale},
                                {"levels_rest", rest.levels_used}, {"dim_levels_rest", rest.distinct_levels},
                                {"scale_without_position_0", later.scale}, {"levels_without_position_0", later.levels_used},
                                {"dim_levels_without_position_0", later.distinct_levels}};
}

}  // namespace infer::quant
