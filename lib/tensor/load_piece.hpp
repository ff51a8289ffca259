// One SIMD register's worth of floats for the CPU kernels' tiles (small_matmul.cpp,
// cpu_attention.cpp), loaded so that the compiler cannot load it again.
//
// A tile loads a piece of one operand and multiplies it with several pieces of the other: a
// weight piece with each row of x, a key piece with each query row. GCC likes to fold a load
// into the multiply-add that uses it (`vfmadd231ps (mem), ...`), and does so for every
// multiply-add that uses the piece: a piece used by two rows is then read from memory twice, and
// the loads, not the multiply-adds, set the tile's pace. A piece used more than once is
// therefore pinned in its register by an empty asm statement that "may change" it: no
// instruction is emitted, but the value must now live in a register. Both operands' pieces need
// it: with only the keys pinned, attention's tile loaded each query piece once per key instead.
// A piece used once is left to the compiler (folding it is then the best code).
#pragma once

namespace infer::cpu {

template <int uses, class Batch>
inline Batch load_piece(const float* p) {
  const Batch v = Batch::load_unaligned(p);
#if defined(__x86_64__) || defined(__i386__)  // "v": any SIMD register (an x86 constraint)
  if constexpr (uses > 1) {
    auto r = static_cast<typename Batch::register_type>(v);
    asm("" : "+v"(r));
    return Batch(r);
  }
#endif
  return v;
}

}  // namespace infer::cpu
