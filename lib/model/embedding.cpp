#include "model/embedding.hpp"

#include "tensor/ops.hpp"

namespace infer {

void DenseEmbedding::lookup(std::span<const int32_t> ids, Tensor& x) const { ops::embedding(table_, ids, x); }

bool DenseEmbedding::shares_storage_with(const Linear& linear) const {
  const auto* dense = dynamic_cast<const DenseLinear*>(&linear);
  return dense != nullptr && dense->weight().raw() == table_.raw();
}

}  // namespace infer
