#include "paged_kv_cache.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tensor/ops.hpp"
#include "tensor/thread_pool.hpp"

namespace infer {

PagedKvCache::PagedKvCache(BlockPool& pool, const LlamaConfig& c, PrefixCache* prefix, PagedRead read)
    : pool_(pool),
      prefix_(prefix),
      read_(pool.device().is_cpu() ? read : PagedRead::gather),
      n_heads_(c.n_heads),
      n_kv_heads_(c.n_kv_heads),
      n_layers_(c.n_layers),
      table_(pool.block_size()) {
  if (pool.n_layers() != c.n_layers) throw std::invalid_argument("PagedKvCache: the pool was made for another model");
}

PagedKvCache::~PagedKvCache() { table_.release(pool_); }

bool PagedKvCache::reserve(int64_t n_new) {
  if (!table_.reserve(pool_, n_new, &copies_)) return false;
  // The blocks about to be written are now ours alone. One of them may still be indexed by the
  // prefix cache as a full block (a sample forked before position p writes a different token at
  // p than the sequence that filled the block): its contents are about to change, so forget it.
  if (prefix_ != nullptr && n_new > 0) {
    const int B = pool_.block_size();
    for (int64_t i = table_.length() / B; i <= (table_.length() + n_new - 1) / B; ++i)
      prefix_->forget(table_.blocks()[static_cast<std::size_t>(i)]);
  }
  return true;
}

// the-change: begin PagedKvCache::attend
void PagedKvCache::attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  const int64_t n_new = k.dim(0);
  const int B = pool_.block_size();
  if (pos0 != table_.length())
    throw std::logic_error(fmt::format("PagedKvCache: new positions start at {}, the cache holds {}", pos0, table_.length()));
  if (pos0 + n_new > table_.capacity())
    throw std::logic_error(fmt::format("PagedKvCache: positions up to {} not reserved (capacity {})", pos0 + n_new - 1,
                                       table_.capacity()));

  // Write the new rows, one run per block they fall in. Every block written here was made
  // private by reserve(); a shared one would change every holder's cache.
  for (int64_t i = 0; i < n_new;) {
    const int64_t p = pos0 + i, offset = p % B, run = std::min<int64_t>(B - offset, n_new - i);
    const int block = table_.physical_block(p);
    if (layer == 0 && pool_.refcount(block) != 1)
      throw std::logic_error(fmt::format("PagedKvCache: write into block {}, shared {} times (reserve first)", block,
                                         pool_.refcount(block)));
    Tensor key_rows = pool_.keys(layer, block).rows(offset, run), value_rows = pool_.values(layer, block).rows(offset, run);
    key_rows.copy_from(k.rows(i, run));
    value_rows.copy_from(v.rows(i, run));
    i += run;
  }

  if (read_ == PagedRead::in_place) attend_in_place(layer, pos0, q, out);
  else attend_gathered(layer, pos0, q, out);
  if (layer == n_layers_ - 1) table_.advance(n_new);
}
// the-change: end PagedKvCache::attend

// ops_cpu's attention (lib/tensor/ops_cpu.cpp), with key j found through the block table:
// logical block j / B, row j % B. Same statements, same order of summation.
void PagedKvCache::attend_in_place(int layer, int64_t pos0, const Tensor& q, Tensor& out) const {
  const int64_t n_queries = q.dim(0);
  const int64_t head_dim = q.dim(1) / n_heads_;
  const int64_t q_stride = q.dim(1), kv_stride = int64_t{n_kv_heads_} * head_dim;
  const int group = n_heads_ / n_kv_heads_;  // query heads per key/value head
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int64_t B = pool_.block_size();
  const float* qp = q.host<float>();
  float* op = out.host<float>();

  // The block table resolved once per layer: where each logical block's rows start.
  const int64_t n_blocks = (pos0 + n_queries + B - 1) / B;
  std::vector<const float*> key_block(static_cast<std::size_t>(n_blocks)), value_block(static_cast<std::size_t>(n_blocks));
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int physical = table_.blocks()[static_cast<std::size_t>(b)];
    key_block[static_cast<std::size_t>(b)] = pool_.key_data(layer, physical);
    value_block[static_cast<std::size_t>(b)] = pool_.value_data(layer, physical);
  }

  // One (query, head) pair per item; every pair is independent.
  const int64_t pairs = n_queries * n_heads_;
  parallel_for(pairs, balanced_grain(pairs, 1), [&](int64_t first, int64_t last) {
    thread_local std::vector<float> scores;
    scores.resize(static_cast<std::size_t>(pos0 + n_queries));
    for (int64_t pair = first; pair < last; ++pair) {
      const int64_t t = pair / n_heads_;
      const int h = static_cast<int>(pair % n_heads_);
      {
        const int64_t n_keys = pos0 + t + 1;  // causal: keys 0 … pos0 + t
        const float* qh = qp + t * q_stride + h * head_dim;
        const int64_t kv_offset = (h / group) * head_dim;  // the shared key/value head

        // scores[j] = q·k_j / sqrt(D), block by block, and their maximum for a stable softmax.
        float max_score = -std::numeric_limits<float>::infinity();
        for (int64_t j0 = 0; j0 < n_keys; j0 += B) {
          const float* rows = key_block[static_cast<std::size_t>(j0 / B)] + kv_offset;
          const int64_t in_block = std::min(B, n_keys - j0);
          for (int64_t o = 0; o < in_block; ++o) {
            const float* kj = rows + o * kv_stride;
            float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
            for (int64_t i = 0; i < head_dim; ++i) dot += qh[i] * kj[i];
            scores[static_cast<std::size_t>(j0 + o)] = dot * scale;
            max_score = std::max(max_score, dot * scale);
          }
        }
        // softmax: p_j = exp(s_j - max) / Σ exp(s - max)
        double sum = 0.0;
        for (int64_t j = 0; j < n_keys; ++j) {
          const float e = std::exp(scores[static_cast<std::size_t>(j)] - max_score);
          scores[static_cast<std::size_t>(j)] = e;
          sum += e;
        }
        const float inv_sum = static_cast<float>(1.0 / sum);
        // out = Σ_j p_j · v_j, block by block
        float* oh = op + t * q_stride + h * head_dim;
        std::fill(oh, oh + head_dim, 0.0f);
        for (int64_t j0 = 0; j0 < n_keys; j0 += B) {
          const float* rows = value_block[static_cast<std::size_t>(j0 / B)] + kv_offset;
          const int64_t in_block = std::min(B, n_keys - j0);
          for (int64_t o = 0; o < in_block; ++o) {
            const float p = scores[static_cast<std::size_t>(j0 + o)] * inv_sum;
            const float* vj = rows + o * kv_stride;
#pragma omp simd
            for (int64_t i = 0; i < head_dim; ++i) oh[i] += p * vj[i];
          }
        }
      }
    }
  });
}

// The device-independent way: copy the sequence's rows out of its blocks into contiguous
// [S, H_kv·D] tensors (S = pos0 + T), then the library's attention.
void PagedKvCache::attend_gathered(int layer, int64_t pos0, const Tensor& q, Tensor& out) const {
  const int64_t n_keys = pos0 + q.dim(0), B = pool_.block_size();
  const int64_t width = pool_.keys(layer, table_.blocks().front()).dim(1);
  Tensor keys({n_keys, width}, DType::f32, pool_.device()), values({n_keys, width}, DType::f32, pool_.device());
  for (int64_t j0 = 0; j0 < n_keys; j0 += B) {
    const int block = table_.blocks()[static_cast<std::size_t>(j0 / B)];
    const int64_t in_block = std::min(B, n_keys - j0);
    Tensor key_rows = keys.rows(j0, in_block), value_rows = values.rows(j0, in_block);
    key_rows.copy_from(pool_.keys(layer, block).rows(0, in_block));
    value_rows.copy_from(pool_.values(layer, block).rows(0, in_block));
  }
  ops::attention(q, keys, values, n_heads_, n_kv_heads_, pos0, out);
}

}  // namespace infer
