// Exercise 03 (keep one head) — reference solution.
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "keep_head.hpp"

namespace exercise {

infer::Tensor keep_head(const infer::Tensor& w, int n_heads, int keep) {
  if (w.rank() != 2 || n_heads <= 0 || w.dim(0) % n_heads != 0 || keep < 0 || keep >= n_heads)
    throw std::invalid_argument(fmt::format("keep_head: cannot keep head {} of {} in a {} matrix", keep, n_heads,
                                            infer::shape_string(w.shape())));
  const int64_t head_dim = w.dim(0) / n_heads, in = w.dim(1);
  const std::vector<float> all = w.to_vector();  // row-major [n_heads·D, in]
  // Head `keep` is one contiguous stretch of D rows: copy it, nothing else.
  const auto begin = all.begin() + static_cast<std::ptrdiff_t>(keep * head_dim * in);
  const std::vector<float> kept(begin, begin + static_cast<std::ptrdiff_t>(head_dim * in));
  return infer::Tensor::from_vector(kept, {head_dim, in});
}

}  // namespace exercise
