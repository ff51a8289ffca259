// The one tensor operation this chapter adds to lib's (tensor/ops.hpp): how the grouped cache
// stores its key/value heads head by head.
#pragma once

#include <cstdint>

#include "tensor/tensor.hpp"

namespace infer::ops {

// Writes x[T, H·D] (T positions, each H heads of D side by side, as a projection makes them)
// into cache[H, S, D] (each head's positions one after another) at positions pos0 … pos0 + T − 1:
// cache[h, pos0 + t, :] = x[t, h·D : (h + 1)·D]. On any device: a gather of head rows by lib's
// embedding lookup, one head at a time.
void split_heads(const Tensor& x, int64_t pos0, Tensor& cache);

}  // namespace infer::ops
