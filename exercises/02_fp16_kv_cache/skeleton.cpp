// Exercise 02 (fp16 KV cache) — your answer goes here (see README.md).
#include <stdexcept>

#include "fp16_kv_cache.hpp"
#include "gguf/ggml_types.hpp"  // infer::gguf::fp32_to_fp16, infer::gguf::fp16_to_fp32
#include "tensor/ops.hpp"       // infer::ops::attention

namespace exercise {

void Fp16KvCache::attend(int layer, int64_t pos0, const infer::Tensor& q, const infer::Tensor& k, const infer::Tensor& v,
                         infer::Tensor& out) {
  // 1. Round every element of k and v to fp16 into keys_[layer] / values_[layer], rows pos0 … .
  // 2. Widen rows 0 … pos0+T−1 back to fp32 tensors [pos0+T, H_kv·D].
  // 3. infer::ops::attention(q, keys, values, n_heads_, n_kv_heads_, pos0, out).
  (void)layer; (void)pos0; (void)q; (void)k; (void)v; (void)out;
  throw std::logic_error("exercise 02_fp16_kv_cache: Fp16KvCache::attend is not written yet");
}

}  // namespace exercise
