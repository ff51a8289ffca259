// Prints, one per line, the SIMD targets this build compiled that this CPU can run (best
// first): the list tests/run_each_simd_target.sh runs the kernel tests on.
#include <cstdio>

#include "tensor/simd_target.hpp"

int main() {
  for (const auto& t : infer::simd::compiled_targets())
    if (t.supported) std::printf("%s\n", t.name.c_str());
  return 0;
}
