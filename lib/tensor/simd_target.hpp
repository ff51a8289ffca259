// Which SIMD kernels this process runs: chosen at run time from the targets compiled in.
//
// The CPU kernels (lib's small-n product, attention and SwiGLU; chapter 06's packed kernels) are
// compiled once per SIMD target with Highway's foreach_target.h — SSSE3, SSE4, AVX2, AVX-512
// (AVX3), AVX-512 with VNNI (AVX3_DL) on x86-64, NEON on arm64 — and each call goes to the best
// one the CPU has (HWY_DYNAMIC_DISPATCH). Which targets are compiled depends on the build:
//   INFER_ARCH=portable   baseline x86-64-v2 (SSSE3 to Highway, whose SSE4 also wants AES and
//                         CLMUL): every target above, so one binary runs on any x86-64
//   INFER_ARCH=native     -march=native: only this CPU's best target (and any better ones)
//
// INFER_SIMD=<target> in the environment restricts the choice to that target (it must be
// compiled in and supported by the CPU): the tests run each compiled target in turn this way,
// and a student can time AVX2 against AVX-512 on one machine.
#pragma once

#include <string>
#include <vector>

namespace infer::simd {

// Applies INFER_SIMD once; every dispatching kernel calls it before its first dispatch.
// Throws std::runtime_error naming the choices when INFER_SIMD names no usable target.
void init();

// The target the kernels run on, as Highway names it: "AVX3_DL", "AVX3", "AVX2", "SSE4", "NEON".
std::string target_name();

// Every target compiled into this build, best first, and whether this CPU can run it.
struct CompiledTarget {
  std::string name;
  bool supported;
};
std::vector<CompiledTarget> compiled_targets();

// "AVX2 (compiled: AVX3_DL AVX3 AVX2 SSE4)".
std::string describe();

// From now on every kernel runs `name` (a compiled target this CPU supports; else
// std::runtime_error), or the best one again for "". What INFER_SIMD does at start-up, and what
// the tests use to run each target in turn.
void use_target(const std::string& name);

}  // namespace infer::simd
