// Exercise 02 (fp16 KV cache) — reference solution.
#include <stdexcept>

#include <fmt/format.h>

#include "fp16_kv_cache.hpp"
#include "gguf/ggml_types.hpp"
#include "tensor/ops.hpp"

namespace exercise {

void Fp16KvCache::attend(int layer, int64_t pos0, const infer::Tensor& q, const infer::Tensor& k, const infer::Tensor& v,
                         infer::Tensor& out) {
  const int64_t T = k.dim(0), S = pos0 + T;  // new positions; positions attended over
  if (S > max_tokens_) throw std::out_of_range(fmt::format("Fp16KvCache: position {} past its {} slots", S - 1, max_tokens_));
  auto& keys = keys_[layer];
  auto& values = values_[layer];

  // Store: the rounding to 11 significant bits happens here, once, as the values go in.
  const float* kh = k.host<float>();
  const float* vh = v.host<float>();
  const auto first = static_cast<std::size_t>(pos0 * width_);
  for (std::size_t i = 0; i < static_cast<std::size_t>(T * width_); ++i) {
    keys[first + i] = infer::gguf::fp32_to_fp16(kh[i]);
    values[first + i] = infer::gguf::fp32_to_fp16(vh[i]);
  }

  // Read: widen every stored position to fp32, the precision attention computes in.
  infer::Tensor k_all({S, width_}), v_all({S, width_});
  float* ka = k_all.host<float>();
  float* va = v_all.host<float>();
  for (std::size_t i = 0; i < static_cast<std::size_t>(S * width_); ++i) {
    ka[i] = infer::gguf::fp16_to_fp32(keys[i]);
    va[i] = infer::gguf::fp16_to_fp32(values[i]);
  }
  infer::ops::attention(q, k_all, v_all, n_heads_, n_kv_heads_, pos0, out);
}

}  // namespace exercise
