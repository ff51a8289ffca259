// The sha256 of a file, as 64 hex digits: how a run record names the exact model file it used.
// OpenSSL's implementation (libssl-dev) uses the CPU's SHA extensions where it has them, so a
// 100 MB model takes a fraction of a second.
#pragma once

#include <string>

namespace infer {

// Throws std::runtime_error when the file cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace infer
