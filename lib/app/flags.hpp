// Checking a command line before any work: numbers with messages a user can read, output files
// that can really be written, flags that the chosen mode would ignore, and one exit status for
// each kind of failure (2: bad usage, 1: the run failed). Nothing here loads a model, so a tool
// that only reads records (stage_diff) links this without the tensor library's weight.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

namespace infer {

// Errors a user can cause (bad input, missing files) become this; main prints its message.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Validators for numeric flags. CLI11 puts the flag's name in front of the message:
//   "--n-predict: must be at least 1, not 0"      "--n-predict: 'abc' is not a whole number"
//   "--temp: must be a finite number, not 'nan'"  "--top-p: must be more than 0, not 0"
// Numbers out of range are named as the user typed them, never as 309 digits of a double.
CLI::Validator whole_number(int64_t min, int64_t max = std::numeric_limits<int>::max());
CLI::Validator real_number(double min, double max, bool min_exclusive = false);

// Throws UsageError unless `path` (given with `flag`) can be written: its directory exists and
// a file there can be created or appended to. A file the probe creates is removed again, and
// an existing file is left as it is. An empty path (the flag not given) passes.
void check_output_path(const std::string& path, std::string_view flag);

// Throws UsageError "FLAG is not used by MODE" for the first of `flags` that the command line
// gave. Names are the options' long names ("--prompt"); a name the app does not have is a bug.
void refuse_flags(const CLI::App& app, std::string_view mode, std::initializer_list<std::string_view> flags);

// Parses the command line and runs `body`, turning every exception into one line on stderr,
// "NAME: error: MESSAGE": exit 2 for bad usage (CLI11 errors, UsageError), 1 for runtime failures.
int run_main(CLI::App& app, int argc, char** argv, const std::function<void()>& body);

}  // namespace infer
