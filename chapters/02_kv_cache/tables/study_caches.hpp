// Two KvStores that chapter 02's lesson argues against, written the way the course's Python
// writes them, so that their costs can be measured beside the real thing.
//
//   EagerAttention  no cache, and attention as `softmax(q @ k.T / √D + mask) @ v`: the whole
//                   n × n score matrix of every head is a tensor of its own (the course's naive
//                   loop; chapter 01 computes the same numbers one row at a time, never holding
//                   more than one row).
//   ConcatKvCache   a cache grown by concatenation, `k = torch.cat([past_k, k])`: every step
//                   allocates a buffer one step longer and copies the old one into it (chapter
//                   02's KvCache allocates once and writes each step in place).
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.hpp"
#include "model/kv_store.hpp"
#include "tensor/tensor.hpp"

namespace infer::kv {

// CPU only (the softmax runs on the host).
class EagerAttention : public KvStore {
 public:
  explicit EagerAttention(const LlamaConfig& config) : n_heads_(config.n_heads), n_kv_heads_(config.n_kv_heads) {}
  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override;
  // Bytes of the largest score tensor allocated so far: H × n × n × 4.
  int64_t largest_scores_bytes() const { return largest_scores_bytes_; }

 private:
  int n_heads_, n_kv_heads_;
  int64_t largest_scores_bytes_ = 0;
};

class ConcatKvCache : public KvStore {
 public:
  // What a position stores per layer: the key/value heads as the projections made them (what
  // the course's torch.cat keeps), or one copy per query head (chapter 02 KvCache's layout).
  enum class Layout { kv_heads, query_heads };
  ConcatKvCache(const LlamaConfig& config, Layout layout, Device device = Device::cpu());

  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override;

  int64_t length() const { return length_; }
  std::size_t bytes() const;                          // held now, every layer
  int64_t bytes_copied() const { return copied_; }    // old contents copied into new buffers
  int64_t allocations() const { return allocations_; }
  double copy_seconds() const { return copy_seconds_; }  // spent allocating the new buffers and copying into them

 private:
  int n_heads_, n_kv_heads_, stored_heads_, head_dim_;
  Device device_;
  int64_t length_ = 0, copied_ = 0, allocations_ = 0;
  double copy_seconds_ = 0;
  std::vector<Tensor> keys_, values_;  // per layer [length, stored_heads·D]; empty before the first step
};

}  // namespace infer::kv
