// Like REQUIRE_MODEL, for the evaluation text (data/fetch_eval_text.sh): outside CI a missing text
// skips the test with a warning; in CI (CI=true) it fails it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "catch_compat.hpp"

#include "eval/evaluation.hpp"

inline bool eval_text_present() {
  if (std::filesystem::exists(infer::eval_text_path())) return true;
  const char* ci = std::getenv("CI");
  if (ci != nullptr && std::string(ci) == "true") FAIL("evaluation text missing: run data/fetch_eval_text.sh");
  WARN("evaluation text missing: run data/fetch_eval_text.sh (test skipped)");
  return false;
}
