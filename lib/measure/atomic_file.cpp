#include "measure/atomic_file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

void write_file_atomically(const std::string& path, std::string_view contents) {
  namespace fs = std::filesystem;
  // In the target's directory (a rename across file systems would be a copy, not atomic), hidden,
  // and named for this process so that two runs writing the same file do not share it.
  const fs::path target(path);
  const fs::path temp = target.parent_path() / fmt::format(".{}.tmp-{}", target.filename().string(), ::getpid());
  {
    std::ofstream f(temp, std::ios::binary | std::ios::trunc);
    f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    f.close();
    if (!f) {
      std::error_code ignored;
      fs::remove(temp, ignored);
      throw std::runtime_error("cannot write " + temp.string());
    }
  }
  std::error_code error;
  fs::rename(temp, target, error);
  if (error) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    throw std::runtime_error("cannot write " + path + ": " + error.message());
  }
}

void append_file_atomically(const std::string& path, std::string_view text) {
  std::string contents;
  if (std::ifstream old(path, std::ios::binary); old) {
    contents.assign(std::istreambuf_iterator<char>(old), std::istreambuf_iterator<char>());
    if (old.bad()) throw std::runtime_error("cannot read " + path + " to add to it");
  }
  contents.append(text);
  write_file_atomically(path, contents);
}

}  // namespace infer
