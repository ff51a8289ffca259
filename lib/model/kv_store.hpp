// Where attention finds the keys and values of the positions a sequence has already seen.
//
// The forward pass (model/llama.cpp) computes q, k and v for the new tokens of a sequence and
// hands them to the sequence's KvStore, which decides what to remember and attends. Its answers
// differ in what they keep: nothing (every pass recomputes the whole sequence from position 0),
// a preallocated cache with a key/value copy per query head, the same with each key/value head
// stored once (grouped-query attention), or the cache in fixed-size blocks found through a
// block table.
#pragma once

#include <cstdint>

#include "tensor/tensor.hpp"

namespace infer {

class KvStore {
 public:
  virtual ~KvStore() = default;
  // For layer `layer`: accept the keys and values of T new positions pos0 … pos0+T-1
  // (k, v: [T, H_kv·D], already rotated), then write into out[T, H·D] the causal attention of
  // their queries q[T, H·D] over every position up to each query's own.
  virtual void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v,
                      Tensor& out) = 0;
};

}  // namespace infer
