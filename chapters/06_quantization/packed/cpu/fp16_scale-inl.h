// A block's fp16 scale as fp32, inside the per-target kernels (packed_kernels.cpp,
// int8_activations.cpp): one instruction where the target converts halves (x86 from AVX2 on has
// F16C; arm64 converts natively), else lib's conversion (the same value). lib's own
// gguf::load_fp16 can use the instruction only when the whole build targets F16C (-march=native),
// not inside one target of a portable build.
//
// A "-inl.h" file: included once per SIMD target by the kernels' foreach_target.h loop, so its
// include guard toggles with HWY_TARGET_TOGGLE (Highway's convention).
#if defined(CH06_FP16_SCALE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef CH06_FP16_SCALE_INL_H_
#undef CH06_FP16_SCALE_INL_H_
#else
#define CH06_FP16_SCALE_INL_H_
#endif

#include <cstdint>
#include <cstring>

#include <hwy/highway.h>
#if HWY_ARCH_X86
#include <immintrin.h>  // _cvtsh_ss
#endif

#include "gguf/ggml_types.hpp"

HWY_BEFORE_NAMESPACE();
namespace infer::quant::HWY_NAMESPACE {

HWY_INLINE float load_scale(const uint8_t* p) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
#elif HWY_ARCH_ARM_A64
  __fp16 h;
  std::memcpy(&h, p, 2);
  return static_cast<float>(h);
#else
  return gguf::load_fp16(p);
#endif
}

}  // namespace infer::quant::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
