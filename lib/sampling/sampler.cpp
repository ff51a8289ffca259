#include "sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace infer {

int32_t argmax(std::span<const float> values) {
  return static_cast<int32_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

void apply_repetition_penalty(std::span<float> logits, std::span<const int32_t> recent, float penalty) {
  if (penalty == 1.0f) return;
  // Each distinct id once: a token seen five times is penalized as much as one seen once.
  std::vector<int32_t> ids(recent.begin(), recent.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int32_t id : ids) {
    if (id < 0 || id >= std::ssize(logits)) continue;
    float& l = logits[id];
    l = l > 0 ? l / penalty : l * penalty;
  }
}

Sampler::Sampler(SamplingParams params) : params_(params), rng_(params.seed) {
  if (params.temperature < 0) throw std::invalid_argument("temperature must be >= 0");
  if (params.top_k < 0) throw std::invalid_argument("top-k must be >= 0");
  if (!(params.top_p > 0.0f && params.top_p <= 1.0f)) throw std::invalid_argument("top-p must be in (0, 1]");
  if (!(params.repeat_penalty > 0.0f)) throw std::invalid_argument("repeat penalty must be > 0");
  if (params.repeat_last_n < -1) throw std::invalid_argument("repeat-last-n must be >= -1");
}

void Sampler::remember(int32_t token) {
  if (params_.repeat_last_n == 0) return;
  recent_.push_back(token);
  // A window of n: drop the oldest. (-1 keeps everything, as llama.cpp's "the whole context".)
  if (params_.repeat_last_n > 0 && std::ssize(recent_) > params_.repeat_last_n)
    recent_.erase(recent_.begin());
}

void Sampler::accept(std::span<const int32_t> tokens) {
  for (int32_t t : tokens) remember(t);
}

double Sampler::uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

std::vector<float> Sampler::distribution(std::span<const float> logits) const {
  const std::size_t n = logits.size();
  std::vector<float> p(n, 0.0f);
  if (params_.temperature == 0.0f) {
    p[argmax(logits)] = 1.0f;
    return p;
  }
  // softmax at temperature T: token i weighs e^((logit_i - max) / T)
  double max_logit = 0.0;  // set below, from the sorted front when there is one
  auto weight = [&](int32_t id) {
    return std::exp((logits[id] - max_logit) / params_.temperature);
  };

  // Top-k and top-p keep a prefix of the candidates sorted most likely first (ties: the lower id
  // first). Only that prefix is ever needed: the k best, or the tokens that make up top_p of the
  // probability (often a handful of the 49 152). So sort_front(m) sorts just the m best to the
  // front: a short front with std::partial_sort (one pass over the rest against a heap of m,
  // which rejects most tokens with one comparison), a long one with std::nth_element (O(V))
  // and a sort of the m alone.
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto by_logit = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::size_t sorted = 0;  // order[0 … sorted) holds the `sorted` best, in order
  auto sort_front = [&](std::size_t m) {
    m = std::min(m, n);
    if (m <= sorted) return;
    const auto first = order.begin() + static_cast<std::ptrdiff_t>(sorted), middle = order.begin() + static_cast<std::ptrdiff_t>(m);
    if (m - sorted <= 256) {
      std::partial_sort(first, middle, order.end(), by_logit);
    } else {
      std::nth_element(first, middle, order.end(), by_logit);
      std::sort(first, middle, by_logit);
    }
    sorted = m;
  };

  // The candidates: the top_k best, or every token.
  std::size_t keep = n;
  double total = 0.0;
  std::vector<double> w_by_id;  // every token's weight, when every token is a candidate
  if (params_.top_k > 0) {
    keep = std::min<std::size_t>(n, params_.top_k);
    sort_front(keep);
    max_logit = logits[order[0]];
    for (std::size_t i = 0; i < keep; ++i) total += weight(order[i]);
  } else {
    max_logit = *std::max_element(logits.begin(), logits.end());
    w_by_id.resize(n);
    for (std::size_t id = 0; id < n; ++id) total += w_by_id[id] = weight(static_cast<int32_t>(id));
  }
  // top-p: the smallest prefix of the candidates whose probability reaches top_p. The sorted
  // front starts at 64 tokens and grows fourfold whenever the prefix runs past it.
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    std::size_t cut = keep;
    for (std::size_t i = 0; i < keep; ++i) {
      if (i == sorted) sort_front(std::max<std::size_t>(64, 4 * sorted));
      cumulative += weight(order[i]) / total;
      if (cumulative >= params_.top_p) { cut = i + 1; break; }
    }
    keep = cut;
    total = 0.0;
    for (std::size_t i = 0; i < keep; ++i) total += weight(order[i]);
  }
  if (keep == n && sorted < n) {  // every token kept, in no particular order
    for (std::size_t id = 0; id < n; ++id) p[id] = static_cast<float>(w_by_id[id] / total);
  } else {
    for (std::size_t i = 0; i < keep; ++i) p[order[i]] = static_cast<float>(weight(order[i]) / total);
  }
  return p;
}

std::vector<float> Sampler::distribution_after(std::span<const float> logits, std::span<const int32_t> then_seen) const {
  if (params_.repeat_penalty == 1.0f || params_.repeat_last_n == 0 || (recent_.empty() && then_seen.empty()))
    return distribution(logits);
  // The penalty's window over the recent tokens followed by then_seen (-1: everything).
  std::vector<int32_t> history = recent_;
  history.insert(history.end(), then_seen.begin(), then_seen.end());
  const std::span<const int32_t> window =
      params_.repeat_last_n > 0 && std::ssize(history) > params_.repeat_last_n
          ? std::span<const int32_t>(history).last(static_cast<std::size_t>(params_.repeat_last_n))
          : std::span<const int32_t>(history);
  std::vector<float> penalized(logits.begin(), logits.end());  // the caller's logits stay as they are
  apply_repetition_penalty(penalized, window, params_.repeat_penalty);
  return distribution(penalized);
}

int32_t Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) throw std::invalid_argument("sample: no logits");
  const std::vector<float> p = distribution_after(logits);  // one-hot on the argmax at temperature 0
  const int32_t token = params_.temperature == 0.0f ? argmax(p) : draw(p);
  remember(token);
  return token;
}

int32_t Sampler::draw(std::span<const float> p) {
  // Inverse-CDF draw over the (few) positive entries.
  double u = uniform();
  int32_t last_positive = -1;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (!(p[i] > 0.0f)) continue;  // zero, or NaN: never drawn
    last_positive = static_cast<int32_t>(i);
    u -= p[i];
    if (u < 0) return static_cast<int32_t>(i);
  }
  // A distribution with no mass has no token to give; returning some id would hide the bug.
  if (last_positive < 0) throw std::invalid_argument("draw: the distribution has no positive mass (all zero or NaN)");
  return last_positive;  // rounding left u a hair above 0
}

}  // namespace infer
