// SwiGLU's elementwise half on the CPU (declared in tensor/ops_cpu.hpp):
//   out = silu(gate) · up,   silu(g) = g / (1 + e^−g)
// The exponentials are vectorised (Highway's Exp, a register of floats at a time): std::exp is a
// library call per element, and a decode step's 30 × 1 536 of them, spread over the threads in a
// region of their own, cost more than the work. Every element goes through the same vector code,
// the last few through a padded register, so its bits do not depend on where it sits or on how
// the threads split the work. Compiled once per SIMD target (foreach_target.h); each call runs
// the best one this CPU has (tensor/simd_target.hpp).
#include <algorithm>
#include <cstdint>

#include "tensor/ops_cpu.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tensor/cpu_silu.cpp"
#include <hwy/foreach_target.h>  // this file again, once per SIMD target
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>  // Exp

#include "tensor/simd_target.hpp"
#include "tensor/thread_pool.hpp"

HWY_BEFORE_NAMESPACE();
namespace infer::cpu::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;

void SiluMul(const float* g, const float* u, float* o, int64_t n) {
  using D = hn::ScalableTag<float>;
  using Batch = hn::Vec<D>;
  constexpr int64_t kWidth = static_cast<int64_t>(hn::MaxLanes(D()));
  const auto silu_times = [](Batch gv, Batch uv) {
    const D d;
    return hn::Mul(hn::Div(gv, hn::Add(hn::Set(d, 1.0f), hn::Exp(d, hn::Neg(gv)))), uv);
  };
  parallel_for(n, (balanced_grain(n, 16384) + kWidth - 1) / kWidth * kWidth, [&](int64_t first, int64_t last) {
    const D d;
    int64_t i = first;
    for (; i + kWidth <= last; i += kWidth) hn::StoreU(silu_times(hn::LoadU(d, g + i), hn::LoadU(d, u + i)), d, o + i);
    if (i < last) {  // fewer than kWidth left: through a zero-padded register
      alignas(64) float gt[kWidth] = {}, ut[kWidth] = {}, ot[kWidth];
      std::copy(g + i, g + last, gt);
      std::copy(u + i, u + last, ut);
      hn::Store(silu_times(hn::Load(d, gt), hn::Load(d, ut)), d, ot);
      std::copy(ot, ot + (last - i), o + i);
    }
  });
}

}  // namespace infer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace infer::cpu {

HWY_EXPORT(SiluMul);

void silu_mul(const Tensor& gate, const Tensor& up, Tensor& out) {
  simd::init();
  // out may be gate itself: each element is read before it is written.
  HWY_DYNAMIC_DISPATCH(SiluMul)(gate.host<float>(), up.host<float>(), out.host<float>(), gate.numel());
}

}  // namespace infer::cpu
#endif  // HWY_ONCE
