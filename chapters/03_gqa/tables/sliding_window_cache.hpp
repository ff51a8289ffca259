// A sliding-window cache (Mistral 7B's "rolling buffer"): every query attends only to the last W
// positions, its own included, so the cache never needs to hold more than the last W keys and
// values of a layer, however long the sequence grows.
//
// A pass may bring up to `max_new` positions at once (a prefill chunk). Its first query still
// needs the W − 1 positions before it, so the buffer has W − 1 + max_new slots: it holds a run
// of consecutive positions first … first + stored − 1, and when a pass would overflow it the
// positions no query can see any more are dropped and the rest moved to the front.
//
// A layer may also be global (every position): most layers local, every n-th global is how
// Gemma 3 mixes them (5 local to 1 global).
//
// This model was trained with full attention; the window is imposed at inference without
// retraining, which is what chapter 03's sliding-window study measures.
#pragma once

#include <cstdint>
#include <vector>

#include "model/config.hpp"
#include "model/kv_store.hpp"
#include "tensor/tensor.hpp"

namespace infer {

class SlidingWindowCache : public KvStore {
 public:
  // Every layer over the same window W.
  SlidingWindowCache(const LlamaConfig& config, int64_t window, int64_t max_new, Device device = Device::cpu());
  // A window per layer; 0 makes the layer global (every position, up to `capacity`): a
  // local/global mix.
  SlidingWindowCache(const LlamaConfig& config, const std::vector<int64_t>& windows, int64_t max_new, int64_t capacity,
                     Device device = Device::cpu());

  // Positions must arrive in order from 0 (pos0 = the number of positions seen so far).
  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override;

  void clear();
  int64_t slots(int layer) const { return slots_[layer]; }
  std::size_t bytes() const;  // Σ over layers of 2 × slots × H_kv × D × 4

 private:
  int n_heads_, n_kv_heads_;
  int64_t max_new_;
  std::vector<int64_t> window_, slots_;  // per layer
  std::vector<bool> global_;             // per layer: keeps every position
  std::vector<Tensor> keys_, values_;    // per layer [slots, H_kv·D]
  std::vector<int64_t> first_, seen_;    // per layer: position in slot 0; positions seen so far
};

}  // namespace infer
