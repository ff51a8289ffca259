#include "model/linear.hpp"

#include "tensor/ops.hpp"

namespace infer {

void DenseLinear::forward(const Tensor& x, Tensor& y) const { ops::matmul_t(x, weight_, y); }

}  // namespace infer
