// One SIMD register's worth of floats for the CPU kernels' tiles (small_matmul.cpp,
// cpu_attention.cpp), loaded so that the compiler cannot load it again.
//
// A tile loads a piece of one operand and multiplies it with several pieces of the other: a
// weight piece with each row of x, a value piece with each output row, a tile of keys with each
// query row. GCC likes to fold a load into the multiply-add that uses it (`vfmadd231ps (mem),
// ...`), and does so for every multiply-add that uses the piece: a piece used by two rows is
// then read from memory twice, and the loads, not the multiply-adds, set the tile's pace. A
// piece used more than once is therefore pinned in its register by an empty asm statement that
// "may change" it: no instruction is emitted, but the value must now live in a register. Where
// both operands' pieces are reused (small_matmul's tiles), both need it: with only one pinned,
// the compiler loads the other once per use instead.
// A piece used once is left to the compiler (folding it is then the best code).
//
// A "-inl.h" file: included once per SIMD target by the kernels' foreach_target.h loop, so its
// include guard toggles with HWY_TARGET_TOGGLE (Highway's convention).
#if defined(INFER_TENSOR_LOAD_PIECE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef INFER_TENSOR_LOAD_PIECE_INL_H_
#undef INFER_TENSOR_LOAD_PIECE_INL_H_
#else
#define INFER_TENSOR_LOAD_PIECE_INL_H_
#endif

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace infer::cpu::HWY_NAMESPACE {

template <int uses, class D>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<D> load_piece(D d, const float* p) {
  auto v = hwy::HWY_NAMESPACE::LoadU(d, p);
#if HWY_ARCH_X86 && HWY_TARGET != HWY_EMU128 && HWY_TARGET != HWY_SCALAR
  if constexpr (uses > 1) asm("" : "+v"(v.raw));  // "v": any x86 SIMD register
#elif HWY_ARCH_ARM_A64 && HWY_TARGET == HWY_NEON
  if constexpr (uses > 1) asm("" : "+w"(v.raw));  // "w": any arm64 SIMD register
#endif
  return v;
}

}  // namespace infer::cpu::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard
