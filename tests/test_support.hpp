// Shared by the tests that need the real model: load it once per test executable.
#pragma once

#include "app/cli.hpp"
#include "tensor/ops.hpp"

namespace infer::test {

// Runs lib's CPU operations on `backend` until the end of the scope, then restores the backend
// chosen before (INFER_BACKEND's, in a test binary run on the other one).
class ScopedCpuBackend {
 public:
  explicit ScopedCpuBackend(CpuBackend backend) : before_(cpu_backend()) { set_cpu_backend(backend); }
  ~ScopedCpuBackend() { set_cpu_backend(before_); }
  ScopedCpuBackend(const ScopedCpuBackend&) = delete;
  ScopedCpuBackend& operator=(const ScopedCpuBackend&) = delete;

 private:
  CpuBackend before_;
};

// The default model, loaded once (fp32 weights, CPU, 2 threads). Returns nullptr when the file
// is missing outside CI (the caller WARNs and returns); in CI (CI=true) a missing model fails
// the test with the instruction to fetch it.
LoadedModel* default_model();

}  // namespace infer::test

// Use at the top of a test: returns from it (with a warning) when the model is absent.
#define REQUIRE_MODEL(var)                                                      \
  infer::LoadedModel* var = infer::test::default_model();                      \
  if (var == nullptr) {                                                         \
    WARN("model missing: run data/fetch_model.sh (test skipped)");              \
    return;                                                                     \
  }
