#include "repeat_heads.hpp"

#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "tensor/ops.hpp"

namespace infer::ops {

void repeat_heads(const Tensor& x, int n_kv_heads, int repeats, Tensor& out) {
  if (x.rank() != 2 || n_kv_heads <= 0 || repeats <= 0 || x.dim(1) % n_kv_heads != 0)
    throw std::invalid_argument(fmt::format("repeat_heads: x {} is not {} heads", shape_string(x.shape()), n_kv_heads));
  if (out.shape() != Shape{x.dim(0), x.dim(1) * repeats})
    throw std::invalid_argument(fmt::format("repeat_heads: out is {}, not [{}, {}]", shape_string(out.shape()), x.dim(0),
                                            x.dim(1) * repeats));
  // Seen as one head per row, x is [T·H_kv, D] and out [T·H_kv·r, D]: row t·H_kv·r + h of out
  // is row t·H_kv + h / r of x.
  const int64_t rows = x.dim(0), head_dim = x.dim(1) / n_kv_heads, out_heads = int64_t{n_kv_heads} * repeats;
  std::vector<int32_t> source(rows * out_heads);
  for (int64_t t = 0; t < rows; ++t)
    for (int64_t h = 0; h < out_heads; ++h)
      source[t * out_heads + h] = static_cast<int32_t>(t * n_kv_heads + h / repeats);
  Tensor heads_out = out.reshape({rows * out_heads, head_dim});
  embedding(x.reshape({rows * n_kv_heads, head_dim}), source, heads_out);
}

}  // namespace infer::ops
