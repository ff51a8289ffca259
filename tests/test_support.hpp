// Shared by the tests that need the real model: load it once per test executable.
#pragma once

#include "app/cli.hpp"

namespace infer::test {

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
