#include "split_heads.hpp"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tensor/ops.hpp"

namespace infer::ops {

void split_heads(const Tensor& x, int64_t pos0, Tensor& cache) {
  if (x.rank() != 2 || cache.rank() != 3 || x.dim(1) != cache.dim(0) * cache.dim(2))
    throw std::invalid_argument(fmt::format("split_heads: x {} is not the heads of cache {}", shape_string(x.shape()),
                                            shape_string(cache.shape())));
  const int64_t rows = x.dim(0), n_heads = cache.dim(0), capacity = cache.dim(1), head_dim = cache.dim(2);
  if (pos0 < 0 || pos0 + rows > capacity)
    throw std::out_of_range(fmt::format("split_heads: positions {}…{} outside a capacity of {}", pos0, pos0 + rows - 1,
                                        capacity));
  // Seen as one head per row, x is [T·H, D] and the cache [H·S, D]: head h of position t is row
  // t·H + h of x, and goes to row h·S + t of the cache.
  const Tensor x_heads = x.reshape({rows * n_heads, head_dim});
  Tensor cache_heads = cache.reshape({n_heads * capacity, head_dim});
  std::vector<int32_t> source(rows);
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t t = 0; t < rows; ++t) source[t] = static_cast<int32_t>(t * n_heads + h);
    Tensor slots = cache_heads.rows(h * capacity + pos0, rows);  // positions pos0 … of head h: contiguous
    embedding(x_heads, source, slots);
  }
}

}  // namespace infer::ops
