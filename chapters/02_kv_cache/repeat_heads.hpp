// The one tensor operation this chapter adds to lib's (tensor/ops.hpp): how a cache without
// grouping stores key/value heads that several query heads share.
#pragma once

#include "tensor/tensor.hpp"

namespace infer::ops {

// out[T, H_kv·r·D]: each of the H_kv heads of x[T, H_kv·D] written r times side by side (head h
// of out is head h / r of x). On any device: a gather of head rows by lib's embedding lookup.
void repeat_heads(const Tensor& x, int n_kv_heads, int repeats, Tensor& out);

}  // namespace infer::ops
