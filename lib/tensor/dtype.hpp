// Element types a Tensor can hold. fp32 is what the CPU computes in; fp16/bf16 weights are for
// the CUDA backend; i32 holds token ids and positions.
#pragma once

#include <cstddef>
#include <string_view>

namespace infer {

enum class DType { f32, f16, bf16, i32 };

constexpr std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::i32: return 4;
  }
  return 0;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::i32: return "i32";
  }
  return "?";
}

}  // namespace infer
