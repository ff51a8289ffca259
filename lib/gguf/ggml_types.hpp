// The tensor storage types of ggml (llama.cpp's tensor library) that GGUF files use, and the
// dequantization of each to fp32. Block formats store `block_size` weights in `block_bytes`
// bytes: for example Q4_1 keeps 32 weights as an fp16 scale d, an fp16 minimum m and 32 4-bit
// codes q, and w = d·q + m.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace infer::gguf {

enum class GgmlType : uint32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  BF16 = 30,
};

struct TypeTraits {
  std::string_view name;
  uint32_t block_size;   // weights per block (1 for F32/F16/BF16)
  uint32_t block_bytes;  // bytes per block
  bool can_dequantize;   // this library implements its dequantizer
};

// Traits of a known type id, or nullopt for an id this library does not know.
std::optional<TypeTraits> type_traits(uint32_t type_id);
const TypeTraits& traits(GgmlType type);  // for a known type

// Dequantizes n weights (a multiple of the type's block size) from src into dst.
// Throws std::invalid_argument for a type without a dequantizer or a bad n.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);

// IEEE half and bfloat16 conversions used by the block formats.
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);

// fp16_to_fp32's value without its branches, for kernels that convert a scale per block where
// the CPU has no conversion instruction (inline, a dozen instructions instead of a call). fp16's
// 15 bits of exponent and fraction, moved to fp32's positions (shifted up 13), read as an fp32
// are the fp16 value times 2^−112 — normal and subnormal fp16 alike, since fp32's exponent range
// holds both — so one exact multiplication by 2^112 gives the value. An exponent of all ones
// (infinity, NaN with its payload) becomes fp32's all ones instead.
inline float fp16_to_fp32_branchless(uint16_t h) {
  const uint32_t magnitude = static_cast<uint32_t>(h & 0x7FFFu) << 13;
  const uint32_t scaled = std::bit_cast<uint32_t>(std::bit_cast<float>(magnitude) * 0x1p112f);
  const uint32_t bits = (h & 0x7C00u) == 0x7C00u ? (magnitude | 0x70000000u) : scaled;
  return std::bit_cast<float>(bits | (static_cast<uint32_t>(h & 0x8000u) << 16));
}

// The fp16 at p (2 bytes, any alignment) as fp32, for kernels that read a scale per block: one
// instruction where the compiler targets F16C, else fp16_to_fp32_branchless (the same value).
inline float load_fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  return fp16_to_fp32_branchless(h);
#endif
}

}  // namespace infer::gguf
