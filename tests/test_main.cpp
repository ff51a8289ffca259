// The Catch2 main shared by every test executable, for Catch2 v2 and v3 alike (catch_compat.hpp):
// v2 compiles its implementation here (CATCH_CONFIG_RUNNER), v3 has it in the Catch2 library.
#define CATCH_CONFIG_RUNNER
#include "catch_compat.hpp"

int main(int argc, char* argv[]) { return Catch::Session().run(argc, argv); }
