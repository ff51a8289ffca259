// Grades exercise 03 (cache bytes) against sizes counted by hand for the course's model and
// published shapes. Links nothing of the course's library.
#include <cstdint>
#include <iostream>

#include "catch_compat.hpp"
#include <fmt/format.h>

#include "cache_bytes.hpp"

using exercise::quantized_kv_bytes_per_token;
using exercise::tokens_in_budget;

// SmolLM2-135M, the course's model: 30 layers, 3 key/value heads of dimension 64.
TEST_CASE("16 bits without scales is the plain fp16 cache", "[exercise]") {
  CHECK(quantized_kv_bytes_per_token(30, 3, 64, 16, 64, 0) == 2 * 30 * 3 * 64 * 2);  // 23 040
}

TEST_CASE("INT8 and INT4 with an fp16 scale per group", "[exercise]") {
  // INT8, one scale per head: 2 × 30 × (192 + 3·2) bytes.
  CHECK(quantized_kv_bytes_per_token(30, 3, 64, 8, 64, 2) == 60 * (192 + 6));
  // INT4, groups of 32: 2 × 30 × (96 + 3·2·2).
  CHECK(quantized_kv_bytes_per_token(30, 3, 64, 4, 32, 2) == 60 * (96 + 12));
  // Llama-3-8B's shape (32 layers, 8 heads of 128), INT4 g128: 2 × 32 × (512 + 8·2).
  CHECK(quantized_kv_bytes_per_token(32, 8, 128, 4, 128, 2) == 64 * (512 + 16));
}

TEST_CASE("a group never spans two heads", "[exercise]") {
  // Heads of 64 in groups of 48: 2 groups per head (48 + 16), 6 scales, not ⌈192 / 48⌉ = 4.
  CHECK(quantized_kv_bytes_per_token(30, 3, 64, 4, 48, 2) == 60 * (96 + 6 * 2));
}

TEST_CASE("codes are packed bit by bit, rounded up once", "[exercise]") {
  // One head of 5 elements at 3 bits: 15 bits, 2 bytes (not 5 × 1 byte, not 1 byte).
  CHECK(quantized_kv_bytes_per_token(1, 1, 5, 3, 5, 2) == 2 * (2 + 2));
  // 3 heads of 64 at 3 bits: 576 bits, exactly 72 bytes.
  CHECK(quantized_kv_bytes_per_token(30, 3, 64, 3, 64, 0) == 60 * 72);
}

TEST_CASE("only whole blocks fit in a memory budget", "[exercise]") {
  // 1 GiB of fp16 SmolLM2 cache in blocks of 16: a block is 368 640 bytes, 2912 of them fit.
  CHECK(tokens_in_budget(int64_t{1} << 30, 23040, 16) == 2912 * 16);
  CHECK(tokens_in_budget(int64_t{1} << 30, 23040, 1) == 46603);
  CHECK(tokens_in_budget(368639, 23040, 16) == 0);  // one byte short of a block
  CHECK(tokens_in_budget(368640, 23040, 16) == 16);
}

TEST_CASE("impossible formats are refused", "[exercise]") {
  CHECK_THROWS_AS(quantized_kv_bytes_per_token(30, 3, 64, 0, 32, 2), std::invalid_argument);
  CHECK_THROWS_AS(quantized_kv_bytes_per_token(30, 3, 64, 17, 32, 2), std::invalid_argument);
  CHECK_THROWS_AS(quantized_kv_bytes_per_token(30, 3, 64, 4, 0, 2), std::invalid_argument);
  CHECK_THROWS_AS(tokens_in_budget(1000, 0, 16), std::invalid_argument);
  CHECK_THROWS_AS(tokens_in_budget(1000, 100, 0), std::invalid_argument);
}

TEST_CASE("figure: cache bytes per token and tokens in 8 GiB, by cache format", "[exercise][figure]") {
  struct Shape {
    const char* name;
    int layers, kv_heads, head_dim;
  };
  struct Format {
    const char* name;
    int bits, group, scale_bytes;
  };
  const Shape shapes[] = {{"SmolLM2-135M", 30, 3, 64}, {"Llama-3-8B", 32, 8, 128}, {"Llama-2-70B", 80, 8, 128}};
  const Format formats[] = {{"fp16", 16, 1, 0}, {"INT8 g32", 8, 32, 2}, {"INT4 g32", 4, 32, 2}, {"INT4 g128", 4, 128, 2}, {"INT2 g32", 2, 32, 2}};
  std::cout << "K/V cache per token (KiB) and tokens in 8 GiB of blocks of 16\n  model          ";
  for (const Format& f : formats) std::cout << fmt::format("  {:>17}", f.name);
  std::cout << "\n";
  for (const Shape& s : shapes) {
    std::cout << fmt::format("  {:<14} ", s.name);
    for (const Format& f : formats) {
      const int64_t b = quantized_kv_bytes_per_token(s.layers, s.kv_heads, s.head_dim, f.bits, f.group, f.scale_bytes);
      std::cout << fmt::format("  {:>6.1f} {:>10}", static_cast<double>(b) / 1024.0, tokens_in_budget(int64_t{8} << 30, b, 16));
    }
    std::cout << "\n";
  }
}
