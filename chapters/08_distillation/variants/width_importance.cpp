#include "width_importance.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>  // std::ssize
#include <numeric>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

namespace infer::train {

WidthImportance width_importance(Student<float>& model, std::span<const int32_t> tokens, int S) {
  const LlamaConfig& c = model.config();
  const int64_t n_seq = S > 0 ? std::ssize(tokens) / S : 0;
  if (n_seq < 1) throw std::invalid_argument(fmt::format("width importance: {} tokens hold no sequence of {}", tokens.size(), S));
  const int G = c.n_kv_heads, F = c.d_ff, group_width = c.q_width() / G;  // a group's query heads, side by side
  WidthImportance w{std::vector<std::vector<double>>(c.n_layers, std::vector<double>(G, 0.0)),
                    std::vector<std::vector<double>>(c.n_layers, std::vector<double>(F, 0.0))};
  for (int64_t s = 0; s < n_seq; ++s) {
    model.forward(tokens.subspan(s * S, S), 1, S, /*want_logits=*/false);
    for (int l = 0; l < c.n_layers; ++l) {
      const BlockActivations<float>& A = model.activations(l);
      for (int t = 0; t < S; ++t) {
        const float* att = A.att.data() + int64_t{t} * c.q_width();  // query head h at h·D: group g at g·group_width
        for (int g = 0; g < G; ++g) {
          double sq = 0;
          for (int i = 0; i < group_width; ++i) sq += double{att[g * group_width + i]} * att[g * group_width + i];
          w.group[l][g] += std::sqrt(sq);
        }
        const float* a = A.a.data() + int64_t{t} * F;
        for (int j = 0; j < F; ++j) w.neuron[l][j] += std::abs(double{a[j]});
      }
    }
  }
  const double n = static_cast<double>(n_seq * S);
  for (int l = 0; l < c.n_layers; ++l) {
    for (double& x : w.group[l]) x /= n;
    for (double& x : w.neuron[l]) x /= n;
  }
  return w;
}

namespace {

// The `keep` indices of `scores` chosen as `choice` says, ascending.
std::vector<int> chosen(const std::vector<double>& scores, int keep, WidthChoice choice, std::mt19937_64& rng) {
  const int n = static_cast<int>(scores.size());
  if (keep < 1 || keep > n) throw std::invalid_argument(fmt::format("width cut: keep {} of {}: out of range", keep, n));
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  if (choice == WidthChoice::random) {
    std::shuffle(order.begin(), order.end(), rng);
  } else {
    const bool most = choice == WidthChoice::most_important;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return most ? scores[a] > scores[b] : scores[a] < scores[b];
    });
  }
  order.resize(keep);
  std::sort(order.begin(), order.end());
  return order;
}

// Copies the listed rows (each `row` numbers long, in blocks of `block` consecutive rows per index)
// of a row-major [rows, row] matrix.
template <class T>
void copy_rows(const T* src, std::span<const int> kept, int block, int64_t row, T* dst) {
  for (int k : kept) {
    std::copy_n(src + int64_t{k} * block * row, block * row, dst);
    dst += block * row;
  }
}

// The listed columns (blocks of `block` consecutive columns per index) of a row-major [rows, cols] matrix.
template <class T>
void copy_columns(const T* src, int64_t rows, int64_t cols, std::span<const int> kept, int block, T* dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int k : kept) {
      std::copy_n(src + r * cols + int64_t{k} * block, block, dst);
      dst += block;
    }
}

void check_indices(const std::vector<std::vector<int>>& kept, int layers, int n, const char* what) {
  if (std::ssize(kept) != layers)
    throw std::invalid_argument(fmt::format("width cut: {} lists of {} for {} layers", kept.size(), what, layers));
  for (const std::vector<int>& k : kept) {
    if (k.size() != kept[0].size() || k.empty())
      throw std::invalid_argument(fmt::format("width cut: every layer must keep as many {} (at least one)", what));
    for (std::size_t i = 0; i < k.size(); ++i)
      if (k[i] < 0 || k[i] >= n || (i > 0 && k[i] <= k[i - 1]))
        throw std::invalid_argument(fmt::format("width cut: kept {} must rise within 0…{}, got {}", what, n - 1, k[i]));
  }
}

}  // namespace

WidthCut width_cut(const WidthImportance& importance, int n_groups, int n_neurons, WidthChoice choice, uint64_t seed) {
  std::mt19937_64 rng(seed);
  WidthCut cut;
  for (std::size_t l = 0; l < importance.group.size(); ++l) {
    cut.groups.push_back(chosen(importance.group[l], n_groups, choice, rng));
    cut.neurons.push_back(chosen(importance.neuron[l], n_neurons, choice, rng));
  }
  return cut;
}

WidthCut full_width(const LlamaConfig& c) {
  std::vector<int> groups(c.n_kv_heads), neurons(c.d_ff);
  std::iota(groups.begin(), groups.end(), 0);
  std::iota(neurons.begin(), neurons.end(), 0);
  return {std::vector<std::vector<int>>(c.n_layers, groups), std::vector<std::vector<int>>(c.n_layers, neurons)};
}

LlamaConfig width_config(const LlamaConfig& c, int n_groups, int n_neurons) {
  if (n_groups < 1 || n_groups > c.n_kv_heads || n_neurons < 1 || n_neurons > c.d_ff)
    throw std::invalid_argument(fmt::format("width: {} of {} key/value groups and {} of {} neurons: out of range",
                                            n_groups, c.n_kv_heads, n_neurons, c.d_ff));
  LlamaConfig w = c;
  w.n_heads = n_groups * (c.n_heads / c.n_kv_heads);
  w.n_kv_heads = n_groups;
  w.d_ff = n_neurons;
  return w;  // d_model and head_dim stay: q_width() = H'·D is now narrower than d
}

// the-change: begin width_pruned
template <class T>
Student<T> width_pruned(const Student<T>& full, const WidthCut& cut) {
  const LlamaConfig& c = full.config();
  check_indices(cut.groups, c.n_layers, c.n_kv_heads, "key/value groups");
  check_indices(cut.neurons, c.n_layers, c.d_ff, "neurons");
  const LlamaConfig w = width_config(c, static_cast<int>(cut.groups[0].size()), static_cast<int>(cut.neurons[0].size()));
  const int d = c.d_model, D = c.head_dim, r = c.n_heads / c.n_kv_heads;  // r query heads per group
  Student<T> s(w, full.embedding(), full.output_weights());
  for (int l = 0; l < c.n_layers; ++l) {
    const BlockTensors<const T> from = full.block(l, full.params.data());
    const BlockTensors<T> to = s.block(l, s.params.data());
    const std::span<const int> groups = cut.groups[l], neurons = cut.neurons[l];
    std::copy_n(from.attn_norm, d, to.attn_norm);
    copy_rows(from.wq, groups, r * D, d, to.wq);  // group g: query heads g·r … g·r + r − 1, rows of D each
    copy_rows(from.wk, groups, D, d, to.wk);      // key/value head g: D rows
    copy_rows(from.wv, groups, D, d, to.wv);
    copy_columns(from.wo, d, c.q_width(), groups, r * D, to.wo);
    std::copy_n(from.ffn_norm, d, to.ffn_norm);
    copy_rows(from.w_gate, neurons, 1, d, to.w_gate);
    copy_rows(from.w_up, neurons, 1, d, to.w_up);
    copy_columns(from.w_down, d, c.d_ff, neurons, 1, to.w_down);
  }
  std::copy_n(full.output_norm(full.params.data()), d, s.output_norm(s.params.data()));
  return s;
}
// the-change: end width_pruned

template Student<float> width_pruned<float>(const Student<float>&, const WidthCut&);
template Student<double> width_pruned<double>(const Student<double>&, const WidthCut&);

WidthShape matched_width(const LlamaConfig& c, int64_t parameters, int groups) {
  const int G = c.n_kv_heads, F = c.d_ff;
  const int64_t per_neuron = int64_t{3} * c.d_model * c.n_layers;  // a row of W_gate and W_up, a column of W_down, per layer
  WidthShape best;
  double best_gap = INFINITY;
  for (int g = groups > 0 ? groups : 1; g <= (groups > 0 ? groups : G); ++g) {
    const int64_t rest = width_config(c, g, 1).parameter_count() - per_neuron;  // everything but the MLP
    const int64_t f = std::llround(static_cast<double>(parameters - rest) / static_cast<double>(per_neuron));
    if (f < 1 || f > F) continue;
    const double gap = std::abs(static_cast<double>(g) / G - static_cast<double>(f) / F);  // attention's share kept − the MLP's
    if (gap < best_gap) best_gap = gap, best = {g, static_cast<int>(f)};
  }
  return best;
}

}  // namespace infer::train
