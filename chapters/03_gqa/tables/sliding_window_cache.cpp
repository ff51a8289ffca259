#include "sliding_window_cache.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "tensor/ops.hpp"

namespace infer {

SlidingWindowCache::SlidingWindowCache(const LlamaConfig& c, int64_t window, int64_t max_new, Device device)
    : SlidingWindowCache(c, std::vector<int64_t>(c.n_layers, window), max_new, 0, device) {}

SlidingWindowCache::SlidingWindowCache(const LlamaConfig& c, const std::vector<int64_t>& windows, int64_t max_new, int64_t capacity,
                                       Device device)
    : n_heads_(c.n_heads),
      n_kv_heads_(c.n_kv_heads),
      max_new_(max_new),
      first_(c.n_layers, 0),
      seen_(c.n_layers, 0) {
  if (std::ssize(windows) != c.n_layers || max_new < 1)
    throw std::invalid_argument(fmt::format("SlidingWindowCache: {} windows for {} layers, max_new {}", windows.size(), c.n_layers, max_new));
  for (int64_t w : windows) {
    if (w < 0 || (w == 0 && capacity < 1))
      throw std::invalid_argument(fmt::format("SlidingWindowCache: window {} (a global layer needs a capacity, got {})", w, capacity));
    // A global layer is a window as long as its capacity: it never drops a position.
    global_.push_back(w == 0);
    window_.push_back(w > 0 ? w : capacity);
    slots_.push_back(w > 0 ? w + max_new - 1 : capacity);
    keys_.emplace_back(Shape{slots_.back(), int64_t{c.kv_width()}}, DType::f32, device);
    values_.emplace_back(Shape{slots_.back(), int64_t{c.kv_width()}}, DType::f32, device);
  }
}

void SlidingWindowCache::clear() {
  std::fill(first_.begin(), first_.end(), 0);
  std::fill(seen_.begin(), seen_.end(), 0);
}

std::size_t SlidingWindowCache::bytes() const {
  std::size_t total = 0;
  for (std::size_t l = 0; l < keys_.size(); ++l) total += keys_[l].nbytes() + values_[l].nbytes();
  return total;
}

void SlidingWindowCache::attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  const int64_t n_new = k.dim(0), window = window_[layer], slots = slots_[layer];
  if (pos0 != seen_[layer])
    throw std::logic_error(fmt::format("SlidingWindowCache: layer {} has seen {} positions, got new ones from {}", layer, seen_[layer], pos0));
  if (n_new > max_new_)
    throw std::invalid_argument(fmt::format("SlidingWindowCache: {} new positions, at most {} per pass", n_new, max_new_));
  Tensor& keys = keys_[layer];
  Tensor& values = values_[layer];
  int64_t& first = first_[layer];

  // Room for the new positions: drop those no query of this pass or later can see (before
  // pos0 − W + 1) and move the rest to the front, in pieces that never overlap.
  if (pos0 + n_new - first > slots) {
    const int64_t keep_from = std::max<int64_t>(0, pos0 - window + 1);
    const int64_t shift = keep_from - first, keep = pos0 - keep_from;
    if (global_[layer])  // a global layer keeps every position: out of room is an error, not a window
      throw std::out_of_range(fmt::format("SlidingWindowCache: global layer {} holds {} positions, no room for {} more", layer,
                                          slots, pos0 + n_new));
    for (int64_t done = 0; done < keep; done += shift) {
      const int64_t count = std::min(shift, keep - done);
      for (Tensor* buffer : {&keys, &values}) {
        Tensor dst = buffer->rows(done, count);
        dst.copy_from(buffer->rows(shift + done, count));
      }
    }
    first = keep_from;
  }
  Tensor key_slots = keys.rows(pos0 - first, n_new), value_slots = values.rows(pos0 - first, n_new);
  key_slots.copy_from(k);
  value_slots.copy_from(v);

  // Query i sits at position p = pos0 + i and sees positions max(0, p − W + 1) … p. The queries
  // whose window still starts at position 0 go together; each later one alone.
  int64_t i = 0;
  if (first == 0) {
    const int64_t together = std::clamp<int64_t>(window - pos0, 0, n_new);
    if (together > 0) {
      Tensor o = out.rows(0, together);
      ops::attention(q.rows(0, together), keys.rows(0, pos0 + together), values.rows(0, pos0 + together), n_heads_, n_kv_heads_, pos0, o);
      i = together;
    }
  }
  for (; i < n_new; ++i) {
    const int64_t p = pos0 + i, lo = std::max<int64_t>(0, p - window + 1);
    Tensor o = out.row(i);
    ops::attention(q.row(i), keys.rows(lo - first, p - lo + 1), values.rows(lo - first, p - lo + 1), n_heads_, n_kv_heads_, p - lo, o);
  }
  seen_[layer] = pos0 + n_new;
}

}  // namespace infer
