// Output files that never hold half a run: --csv tables and --plot files are written like the
// run records, through a temporary file renamed over the target (measure/atomic_file.hpp).
#include "catch_compat.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include "measure/atomic_file.hpp"
#include "measure/svg_plot.hpp"
#include "measure/table.hpp"

using namespace infer;

namespace {

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("infer_test_atomic_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string contents(std::istream& in) { return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}; }

std::string contents(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return contents(in);
}

std::size_t files_in(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
}

Table small_table(const std::string& title) {
  Table t(title, {"batch", "ms"});
  t.add_row({"1", "20.5"});
  t.add_row({"8", "31.0"});
  return t;
}

}  // namespace

TEST_CASE("append_csv adds each table to the file, written whole", "[table][atomic]") {
  const auto dir = scratch("csv");
  const std::string path = (dir / "t.csv").string();
  small_table("first").append_csv(path);
  small_table("second").append_csv(path);
  CHECK(contents(path) == "# first\nbatch,ms\n1,20.5\n8,31.0\n\n# second\nbatch,ms\n1,20.5\n8,31.0\n\n");
  CHECK(files_in(dir) == 1);  // no temporary file left beside it
  std::filesystem::remove_all(dir);
}

// The property that in-place appending lacks: a reader that opened the file before a table was
// added (a plotting script, `tail`) keeps reading the file as it was, never a half-written table,
// because the new contents arrive as a new file under the same name.
TEST_CASE("append_csv replaces the file atomically: an open reader sees the old file whole", "[table][atomic]") {
  const auto dir = scratch("csv_reader");
  const std::string path = (dir / "t.csv").string();
  small_table("first").append_csv(path);
  const std::string before = contents(path);

  std::ifstream reader(path, std::ios::binary);  // opened before the second table
  struct stat old_file{};
  REQUIRE(::stat(path.c_str(), &old_file) == 0);
  small_table("second").append_csv(path);
  struct stat new_file{};
  REQUIRE(::stat(path.c_str(), &new_file) == 0);

  CHECK(new_file.st_ino != old_file.st_ino);  // a new file took the name (rename), not an append
  CHECK(contents(reader) == before);          // the reader's file is unchanged
  CHECK(contents(path) == before + "# second\nbatch,ms\n1,20.5\n8,31.0\n\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("append_csv to a directory that does not exist fails and leaves nothing", "[table][atomic]") {
  const auto dir = scratch("csv_missing");
  CHECK_THROWS_WITH(small_table("t").append_csv((dir / "no-such-dir" / "t.csv").string()),
                    Catch::Contains("cannot write"));
  CHECK(files_in(dir) == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a plot replaces the old file atomically", "[plot][atomic]") {
  const auto dir = scratch("plot");
  const std::string path = (dir / "p.svg").string();
  write_file_atomically(path, "old plot");
  std::ifstream reader(path, std::ios::binary);
  LinePlot plot("title", "x", "y");
  plot.add_series("s", {1, 2, 3}, {1, 4, 9});
  plot.write(path);
  CHECK(contents(reader) == "old plot");
  CHECK(contents(path).rfind("<svg", 0) == 0);
  CHECK(files_in(dir) == 1);
  std::filesystem::remove_all(dir);
}
