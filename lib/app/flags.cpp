#include "app/flags.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace infer {

namespace {

// What the user typed, quoted, and cut short if it is long (a 309-digit number stays readable).
std::string as_typed(const std::string& text) {
  return text.size() <= 24 ? "'" + text + "'" : "'" + text.substr(0, 20) + "…'";
}

// 1e6 as "1000000", 0.5 as "0.5": limits printed the way a person writes them.
std::string plain(double x) { return fmt::format("{:.10g}", x); }

}  // namespace

CLI::Validator whole_number(int64_t min, int64_t max) {
  const std::string description =
      max >= std::numeric_limits<int>::max() ? fmt::format("≥ {}", min) : fmt::format("{} to {}", min, max);
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || stop != end || error == std::errc::invalid_argument)
          return as_typed(text) + " is not a whole number";
        const bool too_far = error == std::errc::result_out_of_range;  // beyond 64 bits
        if ((too_far && text.front() == '-') || (!too_far && value < min))
          return fmt::format("must be at least {}, not {}", min, as_typed(text));
        if (too_far || value > max) return fmt::format("must be at most {}, not {}", max, as_typed(text));
        return {};
      },
      description);
}

CLI::Validator real_number(double min, double max, bool min_exclusive) {
  std::string description = fmt::format("{} {}", min_exclusive ? ">" : "≥", plain(min));
  if (std::isfinite(max)) description += fmt::format(" and ≤ {}", plain(max));
  return CLI::Validator(
      [min, max, min_exclusive](std::string& text) -> std::string {
        char* stop = nullptr;
        errno = 0;
        const double value = std::strtod(text.c_str(), &stop);
        if (text.empty() || stop != text.c_str() + text.size()) return as_typed(text) + " is not a number";
        if (!std::isfinite(value)) return "must be a finite number, not " + as_typed(text);
        if (min_exclusive ? !(value > min) : !(value >= min))
          return fmt::format("must be {} {}, not {}", min_exclusive ? "more than" : "at least", plain(min), as_typed(text));
        if (value > max) return fmt::format("must be at most {}, not {}", plain(max), as_typed(text));
        return {};
      },
      description);
}

void check_output_path(const std::string& path, std::string_view flag) {
  namespace fs = std::filesystem;
  if (path.empty()) return;
  std::error_code ignored;
  const fs::path file(path);
  if (fs::is_directory(file, ignored)) throw UsageError(fmt::format("{} {}: that is a directory", flag, path));
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ignored))
    throw UsageError(fmt::format("{} {}: directory {} does not exist", flag, path, dir.string()));
  // An existing file must take appends (tables are appended as CSV) ...
  if (fs::exists(file, ignored)) {
    std::FILE* f = std::fopen(path.c_str(), "a");
    if (f == nullptr) throw UsageError(fmt::format("{} {}: cannot write it ({})", flag, path, std::strerror(errno)));
    std::fclose(f);
  }
  // ... and the directory must take a new file (records are written to a temporary file there,
  // then renamed over the target).
  const fs::path probe = dir / fmt::format(".{}.probe-{}", file.filename().string(), ::getpid());
  std::FILE* f = std::fopen(probe.c_str(), "w");
  if (f == nullptr)
    throw UsageError(fmt::format("{} {}: cannot create files in {} ({})", flag, path, dir.string(), std::strerror(errno)));
  std::fclose(f);
  fs::remove(probe, ignored);
}

void refuse_flags(const CLI::App& app, std::string_view mode, std::initializer_list<std::string_view> flags) {
  for (std::string_view name : flags) {
    const CLI::Option* option = app.get_option_no_throw(std::string(name));
    if (option == nullptr) throw std::logic_error(fmt::format("refuse_flags: the app has no flag {}", name));
    if (option->count() > 0) throw UsageError(fmt::format("{} is not used by {}", name, mode));
  }
}

int run_main(CLI::App& app, int argc, char** argv, const std::function<void()>& body) {
  const std::string name = argc > 0 ? std::filesystem::path(argv[0]).filename().string() : app.get_name();
  app.failure_message([name](const CLI::App*, const CLI::Error& e) {
    return fmt::format("{}: error: {} (see --help)\n", name, e.what());
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // CLI11 prints the help (exit 0) or the error; any parse error is bad usage: exit 2.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    body();
    return 0;
  } catch (const UsageError& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: error: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace infer
