// The main of the CUDA test executables: without a usable GPU, print "skipped: no CUDA device
// (<reason>)" and return 77, which CTest (SKIP_RETURN_CODE 77) reports as skipped; otherwise run
// the Catch2 tests. Include it in exactly one file of an executable built with CATCH_CONFIG_RUNNER.
#pragma once

#include <cstdio>
#include <string>

#include "tensor/device.hpp"

namespace infer::test {

inline int run_cuda_tests_or_skip(int argc, char** argv) {
  if (!cuda_available()) {
    std::string reason = cuda_unavailable_reason();
    const std::string prefix = "no CUDA device: ";
    if (reason.starts_with(prefix)) reason = reason.substr(prefix.size());
    std::printf("skipped: no CUDA device (%s)\n", reason.c_str());
    return 77;
  }
  return Catch::Session().run(argc, argv);
}

}  // namespace infer::test
