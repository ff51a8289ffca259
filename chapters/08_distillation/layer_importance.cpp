#include "layer_importance.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace infer::train {

std::vector<double> block_influence(Student<float>& model, std::span<const int32_t> tokens, int S) {
  const LlamaConfig& c = model.config();
  const int64_t n_seq = S > 0 ? std::ssize(tokens) / S : 0;
  if (n_seq < 1) throw std::invalid_argument(fmt::format("block influence: {} tokens hold no sequence of {}", tokens.size(), S));
  const int d = c.d_model;
  std::vector<double> score(c.n_layers, 0.0);
  for (int64_t s = 0; s < n_seq; ++s) {
    model.forward(tokens.subspan(s * S, S), 1, S, /*want_logits=*/false);
    for (int l = 0; l < c.n_layers; ++l) {
      const float* in = model.hidden(l);
      const float* out = model.hidden(l + 1);
      for (int t = 0; t < S; ++t) {
        double dot = 0, nin = 0, nout = 0;
        for (int i = 0; i < d; ++i) {
          const double a = in[t * d + i], b = out[t * d + i];
          dot += a * b, nin += a * a, nout += b * b;
        }
        score[l] += 1.0 - dot / std::sqrt(nin * nout);
      }
    }
  }
  for (double& x : score) x /= static_cast<double>(n_seq * S);
  return score;
}

std::vector<int> layers_to_keep(std::span<const double> scores, int n_keep) {
  const int n = static_cast<int>(scores.size());
  if (n_keep < 1 || n_keep > n) throw std::invalid_argument(fmt::format("keep {} of {} layers: out of range", n_keep, n));
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return scores[a] > scores[b];
  });
  order.resize(n_keep);
  std::sort(order.begin(), order.end());
  return order;
}

}  // namespace infer::train
