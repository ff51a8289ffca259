#include "app/sha256.hpp"

#include <openssl/evp.h>

#include <array>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

std::string sha256_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path + " to hash it");
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: OpenSSL could not start a digest");
  std::array<char, 1 << 20> chunk;
  while (f) {
    f.read(chunk.data(), chunk.size());
    EVP_DigestUpdate(context.get(), chunk.data(), static_cast<std::size_t>(f.gcount()));
  }
  if (f.bad()) throw std::runtime_error("error while reading " + path + " to hash it");
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(context.get(), digest.data(), &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

}  // namespace infer
