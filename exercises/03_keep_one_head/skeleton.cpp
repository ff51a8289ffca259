// Exercise 03 (keep one head) — your answer goes here (see README.md).
#include <stdexcept>

#include "keep_head.hpp"

namespace exercise {

infer::Tensor keep_head(const infer::Tensor& w, int n_heads, int keep) {
  // Head g is a block of D = rows / n_heads consecutive rows, each `in` floats long.
  // w.to_vector() gives the elements row-major; Tensor::from_vector builds the result.
  (void)w; (void)n_heads; (void)keep;
  throw std::logic_error("exercise 03_keep_one_head: keep_head is not written yet");
}

}  // namespace exercise
