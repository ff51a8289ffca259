// Exercise 03 — multi-query attention by keeping one key/value head instead of pooling.
#pragma once

#include "tensor/tensor.hpp"

namespace exercise {

// w: a key or value projection [n_heads·D, in] whose rows [g·D, (g+1)·D) produce head g.
// Returns head `keep`'s block of rows as a new [D, in] matrix (f32, on the CPU): the projection
// of a model that keeps only that head. The alternative to chapter 03's pool_heads(w, n, 1),
// which averages all n blocks. Throws std::invalid_argument unless 0 ≤ keep < n_heads and
// n_heads divides the rows.
infer::Tensor keep_head(const infer::Tensor& w, int n_heads, int keep);

}  // namespace exercise
