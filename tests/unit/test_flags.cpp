// The command-line checks every binary shares (lib/app/flags, lib/app/cli): readable messages
// for bad numbers, refused NaN and infinities, output paths probed before any work, flags a mode
// would ignore refused, --seed -1 drawn at random, and the exit statuses of run_main.
#include "catch_compat.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "app/flags.hpp"

using namespace infer;
namespace fs = std::filesystem;

namespace {

// The message a parse of `args` ends with ("" when it succeeds).
std::string parse_error(CLI::App& app, std::vector<std::string> args) {
  std::vector<char*> argv{const_cast<char*>("test")};
  for (std::string& a : args) argv.push_back(a.data());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

// The message of the common flags parsed from `args`, as a chapter binary declares them.
std::string common_error(std::vector<std::string> args, PromptFlags prompt = PromptFlags::offered) {
  CLI::App app;
  CommonOptions o;
  add_common_options(app, o, prompt);
  return parse_error(app, std::move(args));
}

// The message of the exception `f` throws ("" if none).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// A fresh empty directory for one test.
fs::path scratch_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("infer_test_flags_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("counts are checked with messages a person can read", "[flags]") {
  CHECK(common_error({"-n", "0"}) == "--n-predict: must be at least 1, not '0'");
  CHECK(common_error({"-n", "-3"}) == "--n-predict: must be at least 1, not '-3'");
  CHECK(common_error({"-n", "abc"}) == "--n-predict: 'abc' is not a whole number");
  CHECK(common_error({"-n", "2.5"}) == "--n-predict: '2.5' is not a whole number");
  CHECK(common_error({"-t", "-1"}) == "--threads: must be at least 0, not '-1'");
  CHECK(common_error({"--top-k", "x"}) == "--top-k: 'x' is not a whole number");
  CHECK(common_error({"-n", "5"}).empty());

  // A number too large for any integer: named by what was typed, cut short, never 309 digits.
  const std::string huge(400, '9');
  const std::string msg = common_error({"-n", huge});
  INFO(msg);
  CHECK_THAT(msg, Catch::StartsWith("--n-predict: must be at most 2147483647, not '9999"));
  CHECK(msg.size() < 80);
  CHECK_THAT(common_error({"-n", "1e309"}), Catch::Contains("is not a whole number"));
}

TEST_CASE("real numbers: NaN and infinities are refused, --top-p 0 at parse time", "[flags]") {
  for (const std::string bad : {"nan", "NaN", "inf", "-inf", "infinity", "1e400"}) {
    INFO(bad);
    CHECK(common_error({"--temp", bad}) == "--temp: must be a finite number, not '" + bad + "'");
  }
  CHECK(common_error({"--temp", "-0.5"}) == "--temp: must be at least 0, not '-0.5'");
  CHECK(common_error({"--temp", "hot"}) == "--temp: 'hot' is not a number");
  CHECK(common_error({"--temp", "0.7"}).empty());
  CHECK(common_error({"--top-p", "0"}) == "--top-p: must be more than 0, not '0'");
  CHECK(common_error({"--top-p", "1.5"}) == "--top-p: must be at most 1, not '1.5'");
  CHECK(common_error({"--top-p", "nan"}) == "--top-p: must be a finite number, not 'nan'");
  CHECK(common_error({"--top-p", "1"}).empty());
  CHECK(common_error({"--top-p", "0.01"}).empty());

  // --help states the same bounds the parser enforces.
  CLI::App app;
  CommonOptions o;
  add_common_options(app, o);
  const std::string help = app.help();
  CHECK_THAT(help, Catch::Contains("> 0 and ≤ 1"));
  CHECK_THAT(help, Catch::Contains("-1: a random seed"));
}

TEST_CASE("a seed of -1 is drawn at random; other negative seeds are refused", "[flags]") {
  const auto seed_of = [](const std::string& value) {
    CLI::App app;
    CommonOptions o;
    add_common_options(app, o);
    REQUIRE(parse_error(app, {"--seed", value}).empty());
    return o.sampling.seed;
  };
  CHECK(seed_of("7") == 7);
  CHECK(seed_of("0") == 0);
  // Random seeds fit in 32 bits (short to type back) and differ between runs: three draws
  // agreeing by chance has probability 2^-64.
  const uint64_t a = seed_of("-1"), b = seed_of("-1"), c = seed_of("-1");
  CHECK(a < (uint64_t{1} << 32));
  CHECK_FALSE((a == b && b == c));
  CHECK(common_error({"--seed", "-2"}) == "--seed: must be at least -1, not '-2'");
  CHECK(common_error({"--seed", "18446744073709551615"}) ==
        "--seed: must be at most 9223372036854775807, not '18446744073709551615'");
}

TEST_CASE("a binary without prompts does not accept -p, -n or --chat", "[flags]") {
  CHECK_FALSE(common_error({"-p", "hello"}, PromptFlags::absent).empty());
  CHECK_FALSE(common_error({"-n", "4"}, PromptFlags::absent).empty());
  CHECK_FALSE(common_error({"--chat"}, PromptFlags::absent).empty());
  CHECK(common_error({"--temp", "0.5", "-t", "1"}, PromptFlags::absent).empty());
}

TEST_CASE("refuse_flags names the first flag the mode does not use", "[flags]") {
  CLI::App app;
  CommonOptions o;
  add_common_options(app, o);
  REQUIRE(parse_error(app, {"-p", "hi", "--temp", "0.5"}).empty());
  CHECK_NOTHROW(refuse_flags(app, "--sweep", {"--csv", "--chat"}));
  CHECK_THROWS_AS(refuse_flags(app, "--sweep", {"--n-predict", "--prompt"}), UsageError);
  CHECK(error_of([&] { refuse_flags(app, "--sweep", {"--n-predict", "--prompt"}); }) == "--prompt is not used by --sweep");
  CHECK(error_of([&] { refuse_flags(app, "--memory", {"--temp"}); }) == "--temp is not used by --memory");
  CHECK_THROWS_AS(refuse_flags(app, "x", {"--no-such-flag"}), std::logic_error);
}

TEST_CASE("check_output_path refuses a path that cannot be written, at once", "[flags]") {
  const fs::path dir = scratch_dir("output");
  const auto started = std::chrono::steady_clock::now();
  CHECK(error_of([&] { check_output_path("/nonexistent-dir/sub/r.json", "--json"); }) ==
        "--json /nonexistent-dir/sub/r.json: directory /nonexistent-dir/sub does not exist");
  CHECK(error_of([&] { check_output_path(dir.string(), "--csv"); }) == "--csv " + dir.string() + ": that is a directory");
  CHECK_THROWS_AS(check_output_path((dir / "missing" / "p.svg").string(), "--plot"), UsageError);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(1));

  // A writable path passes and is left as it was: a new file is not created, an old one not truncated.
  CHECK_NOTHROW(check_output_path((dir / "new.json").string(), "--json"));
  CHECK_FALSE(fs::exists(dir / "new.json"));
  std::ofstream(dir / "old.csv") << "kept\n";
  CHECK_NOTHROW(check_output_path((dir / "old.csv").string(), "--csv"));
  std::ifstream in(dir / "old.csv");
  std::string line;
  std::getline(in, line);
  CHECK(line == "kept");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no probe left behind
  CHECK_NOTHROW(check_output_path("", "--json"));  // not given
  fs::remove_all(dir);
}

TEST_CASE("check_common_options: output paths and the model file before any work", "[flags]") {
  CommonOptions o;
  o.model_path = "/nonexistent/model.gguf";
  CHECK(error_of([&] { check_common_options(o); }) == "model file /nonexistent/model.gguf not found");
  o.model_path = "/proc/self/status";  // exists; never read here
  o.json_path = "/nonexistent/r.json";
  CHECK_THROWS_AS(check_common_options(o), UsageError);
  o.json_path.clear();
  o.device = "gpu";
  CHECK_THAT(error_of([&] { check_common_options(o); }), Catch::Contains("unknown device 'gpu'"));
}

TEST_CASE("run_main: 0 for success, 2 for bad usage, 1 for a failed run", "[flags]") {
  const auto status = [](std::vector<std::string> args, const std::function<void()>& body) {
    CLI::App app;
    int n = 0;
    app.add_option("-n", n)->check(whole_number(1));
    std::vector<char*> argv{const_cast<char*>("test")};
    for (std::string& a : args) argv.push_back(a.data());
    return run_main(app, static_cast<int>(argv.size()), argv.data(), body);
  };
  CHECK(status({"-n", "2"}, [] {}) == 0);
  CHECK(status({"-n", "0"}, [] {}) == 2);
  CHECK(status({"--unknown"}, [] {}) == 2);
  CHECK(status({}, [] { throw UsageError("bad input"); }) == 2);
  CHECK(status({}, [] { throw std::runtime_error("disk full"); }) == 1);
}
