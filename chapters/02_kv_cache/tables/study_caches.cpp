#include "study_caches.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/timing.hpp"
#include "repeat_heads.hpp"
#include "tensor/ops.hpp"

namespace infer::kv {
namespace {

// Columns [col0, col0 + width) of x[rows, *] as a tensor of their own.
Tensor columns(const Tensor& x, int64_t col0, int64_t width) {
  const int64_t rows = x.dim(0), stride = x.dim(1);
  Tensor out({rows, width});
  const float* src = x.host<float>();
  float* dst = out.host<float>();
  for (int64_t r = 0; r < rows; ++r) std::copy_n(src + r * stride + col0, width, dst + r * width);
  return out;
}

}  // namespace

void EagerAttention::attend(int, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  if (pos0 != 0) throw std::logic_error("EagerAttention: every pass must start at position 0");
  if (!q.device().is_cpu()) throw std::logic_error("EagerAttention: CPU tensors only");
  const int64_t n = q.dim(0), D = q.dim(1) / n_heads_;
  const int group = n_heads_ / n_kv_heads_;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  // scores = q @ k.T for every head at once, as a PyTorch [H, n, n] tensor: rows h·n … h·n+n−1.
  Tensor scores({int64_t{n_heads_} * n, n});
  largest_scores_bytes_ = std::max(largest_scores_bytes_, static_cast<int64_t>(scores.nbytes()));
  float* o = out.host<float>();
  for (int h = 0; h < n_heads_; ++h) {
    const int64_t kv_col = h / group * D;
    const Tensor qh = columns(q, h * D, D), kh = columns(k, kv_col, D);
    Tensor s = scores.rows(h * n, n);
    ops::matmul_t(qh, kh, s);  // [n, D] · [n, D]ᵀ = [n, n]
    // / √D, the causal mask (−∞ above the diagonal), softmax over each row, in place.
    float* sp = s.host<float>();
    for (int64_t i = 0; i < n; ++i) {
      float* row = sp + i * n;
      float max_score = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j <= i; ++j) max_score = std::max(max_score, row[j] * scale);
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        row[j] = j <= i ? std::exp(row[j] * scale - max_score) : 0.0f;
        sum += row[j];
      }
      for (int64_t j = 0; j <= i; ++j) row[j] = static_cast<float>(row[j] / sum);
    }
    // out_h = P @ v_h: matmul_t wants the second factor transposed, [D, n].
    const Tensor vh = columns(v, kv_col, D);
    Tensor vt({D, n});
    const float* vp = vh.host<float>();
    float* vtp = vt.host<float>();
    for (int64_t j = 0; j < n; ++j)
      for (int64_t i = 0; i < D; ++i) vtp[i * n + j] = vp[j * D + i];
    Tensor oh({n, D});
    ops::matmul_t(s, vt, oh);
    const float* ohp = oh.host<float>();
    for (int64_t r = 0; r < n; ++r) std::copy_n(ohp + r * D, D, o + r * out.dim(1) + h * D);
  }
}

ConcatKvCache::ConcatKvCache(const LlamaConfig& c, Layout layout, Device device)
    : n_heads_(c.n_heads),
      n_kv_heads_(c.n_kv_heads),
      stored_heads_(layout == Layout::kv_heads ? c.n_kv_heads : c.n_heads),
      head_dim_(c.head_dim),
      device_(device),
      keys_(c.n_layers),
      values_(c.n_layers) {}

std::size_t ConcatKvCache::bytes() const {
  std::size_t total = 0;
  for (std::size_t l = 0; l < keys_.size(); ++l)
    total += (keys_[l].defined() ? keys_[l].nbytes() : 0) + (values_[l].defined() ? values_[l].nbytes() : 0);
  return total;
}

void ConcatKvCache::attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  Tensor& keys = keys_[layer];
  Tensor& values = values_[layer];
  const int64_t old = keys.defined() ? keys.dim(0) : 0, n_new = k.dim(0);
  if (pos0 != old) throw std::logic_error(fmt::format("ConcatKvCache: holds {} positions, got new ones from {}", old, pos0));
  const int64_t width = int64_t{stored_heads_} * head_dim_;
  // k = cat([past_k, k]): a new buffer, the old contents copied in, the new rows after them.
  Stopwatch clock;
  for (Tensor* buffer : {&keys, &values}) {
    const Tensor& fresh = buffer == &keys ? k : v;
    Tensor grown({old + n_new, width}, DType::f32, device_);
    ++allocations_;
    if (old > 0) {
      Tensor head = grown.rows(0, old);
      head.copy_from(*buffer);
      copied_ += static_cast<int64_t>(buffer->nbytes());
    }
    Tensor tail = grown.rows(old, n_new);
    if (stored_heads_ == n_kv_heads_)
      tail.copy_from(fresh);
    else
      ops::repeat_heads(fresh, n_kv_heads_, n_heads_ / n_kv_heads_, tail);
    *buffer = grown;  // the old buffer is freed here
  }
  if (!keys.device().is_cpu()) (void)keys.rows(0, 1).to(Device::cpu());  // wait for the device's copies
  copy_seconds_ += clock.seconds();
  ops::attention(q, keys, values, n_heads_, stored_heads_, pos0, out);
  if (layer == std::ssize(keys_) - 1) length_ = old + n_new;
}

}  // namespace infer::kv
