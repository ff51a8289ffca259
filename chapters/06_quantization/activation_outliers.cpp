#include "activation_outliers.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

#include "03_gqa/grouped_kv_cache.hpp"
#include "tensor/ops.hpp"

namespace infer::quant {

ResidualCapture capture_residual_stream(const Llama& model, std::span<const int32_t> tokens) {
  const LlamaConfig& c = model.config();
  const LlamaWeights& W = model.weights();
  const auto N = static_cast<int64_t>(tokens.size());
  if (N < 1 || N > c.context_length) throw std::invalid_argument("capture_residual_stream: bad token count");
  const Device dev = model.device();
  GroupedKvCache cache(c, N, dev);
  std::vector<int32_t> positions(static_cast<std::size_t>(N));
  std::iota(positions.begin(), positions.end(), 0);

  Tensor x({N, c.d_model}, DType::f32, dev), h({N, c.d_model}, DType::f32, dev);
  Tensor q({N, c.q_width()}, DType::f32, dev), k({N, c.kv_width()}, DType::f32, dev),
      v({N, c.kv_width()}, DType::f32, dev), attn({N, c.q_width()}, DType::f32, dev);
  Tensor proj({N, c.d_model}, DType::f32, dev), gate({N, c.d_ff}, DType::f32, dev), up({N, c.d_ff}, DType::f32, dev);

  ResidualCapture out;
  out.tokens = N;
  out.d = c.d_model;
  ops::embedding(W.token_embedding, tokens, x);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& L = W.layers[static_cast<std::size_t>(l)];
    ops::rmsnorm(x, L.attn_norm, c.norm_eps, h);
    L.wq->forward(h, q);
    L.wk->forward(h, k);
    L.wv->forward(h, v);
    ops::rope(q, c.n_heads, positions, c.rope_theta);
    ops::rope(k, c.n_kv_heads, positions, c.rope_theta);
    cache.attend(l, 0, q, k, v, attn);
    L.wo->forward(attn, proj);
    ops::add_inplace(x, proj);
    ops::rmsnorm(x, L.ffn_norm, c.norm_eps, h);
    L.w_gate->forward(h, gate);
    L.w_up->forward(h, up);
    ops::silu_mul(gate, up, gate);
    L.w_down->forward(gate, proj);
    ops::add_inplace(x, proj);
    out.layers.push_back(x.to_vector());  // ← the capture: the residual stream after layer l
  }
  const Tensor last = x.rows(N - 1, 1);
  Tensor normed({1, c.d_model}, DType::f32, dev), logits({1, c.vocab_size}, DType::f32, dev);
  ops::rmsnorm(last, W.output_norm, c.norm_eps, normed);
  W.output->forward(normed, logits);
  out.last_logits = logits.to_vector();
  return out;
}

std::vector<float> per_dim_max(std::span<const float> x, int64_t tokens, int64_t d, int64_t first_token) {
  std::vector<float> m(static_cast<std::size_t>(d), 0.0f);
  for (int64_t t = first_token; t < tokens; ++t)
    for (int64_t j = 0; j < d; ++j)
      m[static_cast<std::size_t>(j)] = std::max(m[static_cast<std::size_t>(j)], std::fabs(x[static_cast<std::size_t>(t * d + j)]));
  return m;
}

std::vector<int> top_dims(std::span<const float> dim_max, int k) {
  std::vector<int> idx(dim_max.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min<int>(k, static_cast<int>(idx.size()));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int a, int b) {
    return dim_max[static_cast<std::size_t>(a)] > dim_max[static_cast<std::size_t>(b)];
  });
  idx.resize(static_cast<std::size_t>(k));
  return idx;
}

double median_of(std::vector<float> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  const double hi = values[mid];
  if (values.size() % 2 == 1) return hi;
  const double lo = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lo + hi);
}

std::vector<Log2Bin> log2_histogram(std::span<const float> values) {
  double max = 0;
  for (float v : values) max = std::max(max, static_cast<double>(v));
  std::vector<Log2Bin> bins{{0, 1, 0}};
  while (bins.back().hi <= max) bins.push_back({bins.back().hi, bins.back().hi * 2, 0});
  for (float v : values) {
    const auto i = v < 1 ? std::size_t{0} : static_cast<std::size_t>(std::floor(std::log2(v))) + 1;
    bins[std::min(i, bins.size() - 1)].count += 1;
  }
  return bins;
}

Int8TensorScale int8_tensor_scale(std::span<const float> x, int64_t tokens, int64_t d,
                                  std::span<const int> excluded_dims, std::span<const int> dims,
                                  int64_t first_token) {
  std::vector<bool> excluded(static_cast<std::size_t>(d), false);
  for (int e : excluded_dims) excluded.at(static_cast<std::size_t>(e)) = true;
  float amax = 0;
  for (int64_t t = first_token; t < tokens; ++t)
    for (int64_t j = 0; j < d; ++j)
      if (!excluded[static_cast<std::size_t>(j)]) amax = std::max(amax, std::fabs(x[static_cast<std::size_t>(t * d + j)]));
  Int8TensorScale r;
  r.scale = amax / 127.0f;
  const float inv = r.scale > 0 ? 1.0f / r.scale : 0.0f;
  auto level = [&](int64_t t, int64_t j) { return static_cast<int>(std::nearbyint(x[static_cast<std::size_t>(t * d + j)] * inv)); };
  std::set<int> all;
  for (int64_t t = first_token; t < tokens; ++t)
    for (int64_t j = 0; j < d; ++j)
      if (!excluded[static_cast<std::size_t>(j)]) all.insert(level(t, j));
  r.levels_used = static_cast<int64_t>(all.size());
  for (int dim : dims) {
    std::set<int> used;
    for (int64_t t = first_token; t < tokens; ++t) used.insert(level(t, dim));
    r.distinct_levels.push_back(static_cast<int64_t>(used.size()));
  }
  return r;
}

}  // namespace infer::quant
