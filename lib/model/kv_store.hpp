// Where attention finds the keys and values of the positions a sequence has already seen.
//
// The forward pass (model/llama.cpp) computes q, k and v for the new tokens of a sequence and
// hands them to the sequence's KvStore, which decides what to remember and attends. The
// chapters are, to a large degree, different answers to this one interface:
//   01  remembers nothing: every pass recomputes the whole sequence from position 0;
//   02  a preallocated cache, one key/value copy per query head;
//   03  the same with each key/value head stored once (grouped-query attention);
//   05  the cache in fixed-size blocks found through a block table.
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
