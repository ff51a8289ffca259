// lib's choice of SIMD kernels (tensor/simd_target.hpp): the target it names is the one the
// kernels run, and a test or INFER_SIMD can move every kernel to another compiled target.
// (tests/run_each_simd_target.sh runs the kernel tests on each target in turn.)
#include "catch_compat.hpp"

#include <stdexcept>
#include <string>

#include "tensor/simd_target.hpp"

using namespace infer;

TEST_CASE("the kernels run a compiled target this CPU supports, and can be moved to any other", "[simd]") {
  const auto targets = simd::compiled_targets();
  REQUIRE(!targets.empty());
  const std::string chosen = simd::target_name();
  bool found = false;
  for (const auto& t : targets)
    if (t.name == chosen) {
      found = true;
      CHECK(t.supported);
    }
  CHECK(found);
  for (const auto& t : targets) {
    if (!t.supported) {
      CHECK_THROWS_AS(simd::use_target(t.name), std::runtime_error);
      continue;
    }
    simd::use_target(t.name);
    CHECK(simd::target_name() == t.name);  // a dispatched call lands in that target
  }
  simd::use_target("");  // the best target the CPU has: the first supported one of the list
  for (const auto& t : targets)
    if (t.supported) {
      CHECK(simd::target_name() == t.name);
      break;
    }
  CHECK_THROWS_AS(simd::use_target("NO_SUCH_TARGET"), std::runtime_error);
  simd::use_target(chosen);  // as this process started (INFER_SIMD may have chosen it)
  CHECK(simd::target_name() == chosen);
  CHECK(simd::describe().find(chosen) == 0);
}
