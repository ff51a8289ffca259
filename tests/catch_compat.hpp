// Catch2 for every test and exercise, v2 or v3 alike: include this instead of a Catch2 header.
//
// Debian 12 and Ubuntu 22.04 ship Catch2 2.13 (one header, <catch2/catch.hpp>); Debian 13 and
// Ubuntu 24.04 ship Catch2 3 (split headers, a compiled library). tests/CMakeLists.txt finds
// either and defines INFER_CATCH2_MAJOR. The tests are written in v2's spelling, which v3 moved:
//   Approx                 v3: Catch::Approx
//   Catch::Contains(s)     v3: Catch::Matchers::ContainsSubstring(s)
//   Catch::StartsWith(s), Catch::EndsWith(s)    v3: in Catch::Matchers
// so under v3 this header brings those names back. Catch::Session (the CUDA tests' own main,
// tests/test_main.cpp) is declared by both.
#pragma once

#if !defined(INFER_CATCH2_MAJOR)
#if __has_include(<catch2/catch_all.hpp>)
#define INFER_CATCH2_MAJOR 3
#else
#define INFER_CATCH2_MAJOR 2
#endif
#endif

#if INFER_CATCH2_MAJOR >= 3

#include <string>

#include <catch2/catch_approx.hpp>
#include <catch2/catch_session.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/matchers/catch_matchers.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

using Catch::Approx;

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& s,
                                                CaseSensitive cs = CaseSensitive::Yes) {
  return Matchers::ContainsSubstring(s, cs);
}
using Matchers::EndsWith;
using Matchers::StartsWith;
}  // namespace Catch

#else

// CATCH_CONFIG_RUNNER (tests/test_main.cpp, the CUDA tests' mains) compiles v2's implementation
// into that one file; every other file sees only the declarations.
#include <catch2/catch.hpp>

#endif
